"""Atom maps for unmapped reactions (rxnmapper) and the reaction-centre data that uses them."""

from __future__ import annotations

import sys
import types

import pytest
from rdkit import Chem

from chemgraph.chem.atom_mapping import (
    AtomMapperMissingError,
    has_product_atom_maps,
    map_problem,
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


ESTER = "[CH3:1][C:2](=[O:3])[OH:4].[OH:5][CH2:6][CH3:7]>>[CH3:1][C:2](=[O:3])[O:5][CH2:6][CH3:7]"


@pytest.mark.parametrize(
    ("mapped", "problem"),
    [
        (ESTER, None),
        ("[CH3:1][OH:2]>[Na+:3]>[CH3:1][OH:2]", None),  # a reagent field counts as reactants
        ("[CH3:1][OH:2]>>[CH3:2][OH:1]", "product atom C:2 is mapped to a reactant O"),
        ("[CH3:1][CH2:1][OH:2]>>[CH3:1][OH:2]", "map number 1 is on reactant atoms twice"),
        ("[CH3:1][OH:2]>>[CH3:1][O:2][CH3:1]", "map number 1 is on product atoms twice"),
        ("[CH3:1][OH:2]>>[CH3:1][OH:3]", "product atom O:3 is mapped to no reactant atom"),
        ("CC>>C(", "its product field 'C(' does not parse"),
    ],
)
def test_implausible_maps_are_named(mapped, problem):
    assert map_problem(mapped) == problem


# the carbons of octane mapped out of chain order: every one of its 7 bonds breaks and 7 others
# form, 14 bond changes where USPTO-MIT's recorded maps have at most 6
SCRAMBLED = (
    "[CH3:1][CH2:2][CH2:3][CH2:4][CH2:5][CH2:6][CH2:7][CH3:8]>>"
    "[CH3:1][CH2:3][CH2:5][CH2:7][CH2:2][CH2:4][CH2:6][CH3:8]"
)


def _fake_rxnmapper(monkeypatch, answers: dict[str, str]) -> None:
    """rxnmapper replaced by one that answers ``answers[text]`` with confidence 0.9."""

    class RXNMapper:
        def get_attention_guided_atom_maps(self, texts):
            return [{"mapped_rxn": answers[t], "confidence": 0.9} for t in texts]

    monkeypatch.setitem(sys.modules, "rxnmapper", types.SimpleNamespace(RXNMapper=RXNMapper))


def test_an_implausible_rxnmapper_map_is_rejected_with_its_reason(tmp_path, monkeypatch):
    """A map pairing atoms of other elements, and one with more bond changes than the bound,
    are rejected (row, input, reason); a plausible one of the same file is kept."""
    swapped = "[CH3:1][OH:2]>>[CH3:2][OH:1]"
    _fake_rxnmapper(monkeypatch, {"CO>>CO": swapped, "CCCCCCCC>>CCCCCCCC": SCRAMBLED,
                                  "CC(=O)O.OCC>>CC(=O)OCC": ESTER})  # fmt: skip
    answers = map_reactions(["CO>>CO", "CC(=O)O.OCC>>CC(=O)OCC"], progress=False)
    assert answers[0].mapped == swapped and answers[0].confidence == 0.9
    assert answers[0].error == (
        "rxnmapper's atom map is implausible (confidence 0.900): product atom C:2 is mapped "
        "to a reactant O"
    )
    assert answers[1].error is None
    path = tmp_path / "reactions.txt"
    path.write_text("CO>>CO\nCCCCCCCC>>CCCCCCCC\nCC(=O)O.OCC>>CC(=O)OCC\n")
    examples, rows, rejected = load_reaction_centre_examples(path, 8, progress=False)
    assert rows == [2] and examples[0].mapping_confidence == 0.9
    assert rejected["row"].tolist() == [0, 1]
    assert rejected["input"].tolist() == ["CO>>CO", SCRAMBLED]  # the map judged, once made
    assert rejected["reason"][0] == answers[0].error
    assert rejected["reason"][1] == (
        "rxnmapper's atom map (confidence 0.900) gives 14 bond changes, more than the 6 of any "
        "recorded map of USPTO-MIT: an implausible map"
    )
    # the bound is inclusive: 14 changes pass a bound of 14
    _, rows, _ = load_reaction_centre_examples(path, 8, progress=False, max_mapped_bond_changes=14)
    assert rows == [1, 2]
