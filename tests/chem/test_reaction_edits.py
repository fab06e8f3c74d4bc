"""chemgraph.chem.reaction_edits: edits from atom maps, and the products the edits give back
(hydrogens and charges derived), on reactions written in the USPTO-MIT line format."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pytest
from rdkit import Chem

from chemgraph.chem.reaction_edits import (
    apply_edits,
    bond_class,
    mapped_reaction,
    product_smiles,
    reaction_edits,
)
from chemgraph.chem.reactions import ReactionParseError

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # as tests/conftest.py

# USPTO-MIT lines: mapped reactants and reagents >> mapped product, then the recorded edits
ESTERIFICATION = "[CH3:1][C:2](=[O:3])[OH:4].[OH:5][CH2:6][CH3:7]>>[CH3:1][C:2](=[O:3])[O:5][CH2:6][CH3:7] 2-4;2-5"  # noqa: E501


def _round_trip(line: str) -> tuple[str | None, str]:
    reaction = mapped_reaction(line)
    edited = apply_edits(reaction.inputs, reaction_edits(reaction))
    found = None if edited is None else product_smiles(edited, sorted(reaction.product_atoms))
    return found, reaction.product_smiles


def test_esterification_edits_by_hand():
    reaction = mapped_reaction(ESTERIFICATION)
    # atoms in the order written: C1 0, C2 1, O3 2, O4 3, O5 4, C6 5, C7 6
    assert reaction.product_atoms == frozenset({0, 1, 2, 4, 5, 6})
    assert reaction_edits(reaction) == ((1, 3, 0), (1, 4, 1))  # C-OH breaks, C-O(Et) forms
    assert _round_trip(ESTERIFICATION) == ("CCOC(C)=O", "CCOC(C)=O")


@pytest.mark.parametrize(
    "line",
    [
        # nitration: the nitro group keeps its charges
        "[cH:1]1[cH:2][cH:3][cH:4][cH:5][cH:6]1.[OH:7][N+:8](=[O:9])[O-:10]>>[O-:10][N+:8](=[O:9])[c:1]1[cH:2][cH:3][cH:4][cH:5][cH:6]1",  # noqa: E501
        # nitro reduction: the cation is neutralised before the nitrogen takes hydrogens
        "[O-:1][N+:2](=[O:3])[c:4]1[cH:5][cH:6][cH:7][cH:8][cH:9]1>>[NH2:2][c:4]1[cH:5][cH:6][cH:7][cH:8][cH:9]1",  # noqa: E501
        # quaternised pyridine: the leaving iodide becomes the counter-ion
        "[cH:1]1[cH:2][cH:3][n:4][cH:5][cH:6]1.[CH3:7][I:8]>>[CH3:7][n+:4]1[cH:3][cH:2][cH:1][cH:6][cH:5]1.[I-:8]",  # noqa: E501
        # an anion forming a bond becomes neutral
        "[CH3:1][C:2](=[O:3])[O-:4].[Na+:5].[CH3:6][I:7]>>[CH3:1][C:2](=[O:3])[O:4][CH3:6]",
        # lactam -> chloropyridine: the ring NH gives up its hydrogen, the ring stays aromatic
        "[O:1]=[c:2]1[cH:3][cH:4][cH:5][cH:6][nH:7]1.[Cl:8][P:9]([Cl:10])([Cl:11])=[O:12]>>[Cl:8][c:2]1[cH:3][cH:4][cH:5][cH:6][n:7]1",  # noqa: E501
        # SN2 with hydroxide (sodium a spectator)
        "[CH3:1][CH2:2][Br:3].[OH-:4].[Na+:5]>>[CH3:1][CH2:2][OH:4]",
        # sulfide oxidation: the sulfoxide sulfur stays neutral
        "[CH3:1][S:2][CH3:3].[OH:4][OH:5]>>[CH3:1][S:2](=[O:4])[CH3:3]",
        # Grignard addition: the magnesium left bare is a by-product's
        "[CH3:1][Mg+:2].[Br-:3].[CH3:4][C:5]([CH3:6])=[O:7]>>[CH3:1][C:5]([CH3:4])([CH3:6])[OH:7]",
        # saponification recorded as the sodium salt: the acid is deprotonated
        "[CH3:1][C:2](=[O:3])[O:4][CH3:5].[Na+:6].[OH-:7]>>[CH3:1][C:2](=[O:3])[O-:7].[Na+:6]",
        # amide coupling from an acid chloride
        "[CH3:1][C:2](=[O:3])[Cl:4].[NH2:5][CH2:6][CH3:7]>>[CH3:1][C:2](=[O:3])[NH:5][CH2:6][CH3:7]",  # noqa: E501
    ],
)
def test_derived_hydrogens_and_charges_give_the_recorded_product(line):
    found, recorded = _round_trip(line)
    assert found == recorded


def test_leaving_group_bond_is_an_edit():
    line = "[CH3:1][CH2:2][Br:3].[OH-:4].[Na+:5]>>[CH3:1][CH2:2][OH:4]"
    # Br (2) is not in the product: its bond to C2 (1) breaks; O (3) bonds to C2
    assert reaction_edits(mapped_reaction(line)) == ((1, 2, 0), (1, 3, 1))


def test_impossible_edits_give_none():
    neopentane_and_methane = Chem.MolFromSmiles("CC(C)(C)C.C")
    assert apply_edits(neopentane_and_methane, [(1, 5, 1)]) is None  # a five-bonded carbon


def test_unmapped_products_and_bad_input():
    reaction = mapped_reaction("CCO.CC(=O)O>>")
    assert reaction.product is None and reaction.product_atoms == frozenset()
    with pytest.raises(ValueError, match="no fully atom-mapped product"):
        reaction_edits(reaction)
    with pytest.raises(ReactionParseError, match="not in the input"):
        mapped_reaction("[CH3:1][OH:2]>>[CH3:1][OH:3]")
    for only_reagents in (">>", ">CCN(CC)CC>", ">c1ccncc1>CC"):  # nothing can react
        with pytest.raises(ReactionParseError, match="the reactants field is empty"):
            mapped_reaction(only_reagents)
    assert bond_class(None) == 0


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_edits_reproduce_most_uspto_mit_products():
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    with gzip.open(SHARED_DATA / "uspto" / "uspto_mit_valid.txt.gz", "rt") as lines:
        results = [_round_trip(line) for line in itertools.islice(lines, 1000)]
    share = sum(found == recorded for found, recorded in results) / len(results)
    assert share >= 0.95, share


def test_edited_stereocentres_lose_their_label_untouched_ones_keep_it():
    """The edits do not say a configuration: an SN2 at a stereocentre (which inverts it)
    leaves it unassigned instead of the label RDKit's neighbour order happens to give; a
    stereocentre next to the reacting atom keeps its label (issue 46, Mitsunobu)."""
    sn2 = "[CH3:1][C@@H:2]([Br:3])[CH2:4][CH3:5].[N-:6]=[N+:7]=[N-:8]>>[CH3:1][C@H:2]([N:6]=[N+:7]=[N-:8])[CH2:4][CH3:5]"  # noqa: E501
    found, recorded = _round_trip(sn2)
    assert recorded == "CC[C@H](C)N=[N+]=[N-]"  # the input written inverted
    assert found == "CCC(C)N=[N+]=[N-]"
    acylation = "[CH3:1][C@H:2]([NH2:3])[C:4](=[O:5])[OH:6].[CH3:7][C:8](=[O:9])[Cl:10]>>[CH3:1][C@H:2]([NH:3][C:8]([CH3:7])=[O:9])[C:4](=[O:5])[OH:6]"  # noqa: E501
    found, recorded = _round_trip(acylation)
    assert found == recorded == "CC(=O)N[C@@H](C)C(=O)O"
    # an E/Z double bond whose end the reaction changes loses its label too
    wittig_like = "[CH3:1]/[CH:2]=[CH:3]/[CH2:4][Br:5].[N-:6]=[N+:7]=[N-:8]>>[CH3:1]/[CH:2]=[CH:3]/[CH2:4][N:6]=[N+:7]=[N-:8]"  # noqa: E501
    found, recorded = _round_trip(wittig_like)
    assert found == recorded == "C/C=C/CN=[N+]=[N-]"  # the ends of C=C are not edited: kept
    # the double bond a reaction makes has no E/Z label (a Wittig reaction's alkene)
    elimination = "[CH3:1][CH:2]([Br:3])[CH2:4][CH3:5]>>[CH3:1]/[CH:2]=[CH:4]/[CH3:5]"
    found, recorded = _round_trip(elimination)
    assert (found, recorded) == ("CC=CC", "C/C=C/C")
