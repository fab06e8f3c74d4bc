"""Atom maps for unmapped reactions (rxnmapper) and the reaction-centre data that uses them."""

from __future__ import annotations

import sys

import pytest
from rdkit import Chem

from chemgraph.chem.atom_mapping import (
    AtomMapperMissingError,
    has_product_atom_maps,
    map_reactions,
)
from chemgraph.data.reaction_centre import load_reaction_centre_examples, reaction_centre_example

AMIDE = "CC(=O)Cl.NCc1ccccc1>>CC(=O)NCc1ccccc1"
SN2 = "CCBr.[OH-].[Na+]>>CCO"


def test_product_atom_maps_are_told_from_aromatic_bonds():
    assert has_product_atom_maps("[CH3:1][OH:2]>>[CH3:1][OH:2]")
    assert has_product_atom_maps("CO>[Na+]>[CH3:1]O")
    assert not has_product_atom_maps("c1ccccc1>>c:1:c:c:c:c:c1")  # aromatic bonds, no maps
    assert not has_product_atom_maps("[CH3:1][OH:2]>>CO")  # maps on the reactants only
    assert not has_product_atom_maps("not a reaction")


def test_a_missing_mapper_is_named_with_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rxnmapper", None)
    with pytest.raises(AtomMapperMissingError, match=r"pip install 'chemgraph\[mapping\]'"):
        map_reactions([AMIDE], progress=False)


def _changed_bonds(text: str) -> set[tuple[str, str, int]]:
    """The recorded edits as (element, element, new bond order), elements sorted."""
    example = reaction_centre_example(text, 8)
    atoms = example.reaction.inputs.GetAtoms()
    return {
        (*sorted((atoms[i].GetSymbol(), atoms[j].GetSymbol())), order)
        for i, j, order in example.edits
    }


def test_rxnmapper_maps_give_the_textbook_reaction_centres():
    pytest.importorskip("rxnmapper")
    amide, sn2 = map_reactions([AMIDE, SN2], progress=False)
    assert amide.error is None and 0.5 < amide.confidence <= 1
    assert has_product_atom_maps(amide.mapped)
    # acylation: the C-Cl bond breaks, an amide C-N bond forms
    assert _changed_bonds(amide.mapped) == {("C", "Cl", 0), ("C", "N", 1)}
    # SN2: bromide leaves, hydroxide bonds to the same carbon
    assert _changed_bonds(sn2.mapped) == {("Br", "C", 0), ("C", "O", 1)}
    product = reaction_centre_example(amide.mapped, 8).product_smiles
    assert product == Chem.CanonSmiles("CC(=O)NCc1ccccc1")


def test_unmapped_reactions_are_mapped_and_low_confidence_ones_rejected(tmp_path):
    pytest.importorskip("rxnmapper")
    mapped = (
        "[CH3:1][C:2](=[O:3])[OH:4].[OH:5][CH2:6][CH3:7]>>[CH3:1][C:2](=[O:3])[O:5][CH2:6][CH3:7]"  # noqa: E501
    )
    path = tmp_path / "reactions.csv"
    path.write_text(f"id,reaction\nr0,{AMIDE}\nr1,{mapped}\nr2,{SN2}\n")
    examples, rows, rejected = load_reaction_centre_examples(path, 8, progress=False)
    assert rows == [0, 1, 2] and rejected.empty
    confidences = [e.mapping_confidence for e in examples]
    assert confidences[1] is None  # mapped in the file: used as given
    assert all(0 < c <= 1 for c in (confidences[0], confidences[2]))
    threshold = max(confidences[0], confidences[2]) + 1e-9
    examples, rows, rejected = load_reaction_centre_examples(
        path, 8, progress=False, min_mapping_confidence=threshold
    )
    assert rows == [1] and rejected["row"].tolist() == [0, 2]
    assert rejected["input"].tolist() == [AMIDE, SN2]
    assert all("below min_mapping_confidence" in reason for reason in rejected["reason"])
