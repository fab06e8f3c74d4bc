"""chemgraph.chem.reactions: reaction SMILES fields, atom-map roles, canonical SMILES."""

from __future__ import annotations

import pickle

import pytest
from rdkit import Chem

from chemgraph.chem.reactions import (
    Reaction,
    ReactionParseError,
    atom_map_numbers,
    canonical_smiles,
    parse_reaction_smiles,
    strip_atom_maps,
)

# The first reaction of USPTO-MIT test.txt (rexgen_direct), edit labels after the space.
MIT_LINE = (
    "[CH2:23]1[O:24][CH2:25][CH2:26][CH2:27]1.[F:1][c:2]1[c:3]([N+:10](=[O:11])[O-:12])[cH:4]"
    "[c:5]([F:9])[c:6]([F:8])[cH:7]1.[H-:22].[NH2:13][c:14]1[s:15][cH:16][cH:17][c:18]1[C:19]#"
    "[N:20].[Na+:21]>>[c:2]1([NH:13][c:14]2[s:15][cH:16][cH:17][c:18]2[C:19]#[N:20])[c:3]"
    "([N+:10](=[O:11])[O-:12])[cH:4][c:5]([F:9])[c:6]([F:8])[cH:7]1 1-2;2-13"
)


def test_reagent_field_kept_and_to_smiles_round_trip():
    reaction = parse_reaction_smiles("CC(=O)O.OCC>[H+]>CCOC(C)=O")
    assert reaction == Reaction(
        reactants=("CC(=O)O", "CCO"),
        reagents=("[H+]",),
        products=("CCOC(C)=O",),
        mapped="CC(=O)O.OCC>[H+]>CCOC(C)=O",
    )
    assert reaction.to_smiles() == "CC(=O)O.CCO>[H+]>CCOC(C)=O"
    assert parse_reaction_smiles(reaction.to_smiles()) == Reaction(
        reaction.reactants, reaction.reagents, reaction.products, reaction.to_smiles()
    )


def test_empty_reagent_field():
    reaction = parse_reaction_smiles("  c1ccccc1.O>>Oc1ccccc1 ")
    assert reaction.reactants == ("c1ccccc1", "O")
    assert reaction.reagents == ()
    assert reaction.products == ("Oc1ccccc1",)
    assert reaction.to_smiles() == "c1ccccc1.O>>Oc1ccccc1"


def test_atom_maps_stripped_and_kept_in_mapped():
    text = "[CH3:2][OH:1].[Na+]>>[CH3:2][O-:1]"
    reaction = parse_reaction_smiles(text)
    assert reaction.reactants == ("CO",)
    assert reaction.reagents == ("[Na+]",)  # unmapped molecule moved to reagents
    assert reaction.products == ("C[O-]",)
    assert reaction.mapped == text
    assert ":" not in reaction.to_smiles()


def test_mapped_molecule_contributing_nothing_is_a_reagent_and_edits_are_ignored():
    reaction = parse_reaction_smiles(MIT_LINE)
    # THF (maps 23-27), hydride (22) and sodium (21) contribute no atom to the product.
    assert reaction.reactants == ("O=[N+]([O-])c1cc(F)c(F)cc1F", "N#Cc1ccsc1N")
    assert reaction.reagents == ("C1CCOC1", "[H-]", "[Na+]")
    assert reaction.products == ("N#Cc1ccsc1Nc1cc(F)c(F)cc1[N+](=O)[O-]",)
    assert reaction.mapped == MIT_LINE.split()[0]


def test_mapped_reactant_written_in_reagent_field_moves_to_reactants():
    reaction = parse_reaction_smiles(
        "[CH3:1][OH:2]>[CH3:3][C:4](=[O:5])[OH:6]>[CH3:3][C:4](=[O:5])[O:2][CH3:1]"
    )
    assert reaction.reactants == ("CO", "CC(=O)O")
    assert reaction.reagents == ()
    kept = parse_reaction_smiles(
        "[CH3:1][OH:2]>[CH3:3][C:4](=[O:5])[OH:6]>[CH3:3][C:4](=[O:5])[O:2][CH3:1]",
        split_reagents=False,
    )
    assert kept.reactants == ("CO",)
    assert kept.reagents == ("CC(=O)O",)


def test_unmapped_reaction_keeps_fields_as_written():
    reaction = parse_reaction_smiles("CCO.[Na+]>>CC[O-]")
    assert reaction.reactants == ("CCO", "[Na+]")
    assert reaction.reagents == ()


def test_canonical_smiles_ignores_atom_order_and_maps():
    a = Chem.MolFromSmiles("[OH:1][CH2:7][CH3:3]")
    b = Chem.MolFromSmiles("CCO")
    assert canonical_smiles(a) == canonical_smiles(b) == "CCO"
    assert atom_map_numbers(a) == frozenset({1, 3, 7})
    stripped = strip_atom_maps(a)
    assert atom_map_numbers(stripped) == frozenset()
    assert atom_map_numbers(a) == frozenset({1, 3, 7})  # input untouched


def test_stereo_kept():
    reaction = parse_reaction_smiles(
        "[CH3:1][C@H:2]([OH:3])[CH2:4][CH3:5]>>[CH3:1][C@H:2]([O-:3])[CH2:4][CH3:5]"
    )
    assert reaction.reactants == ("CC[C@H](C)O",) == (Chem.CanonSmiles("C[C@H](O)CC"),)
    assert reaction.products == ("CC[C@H](C)[O-]",)


@pytest.mark.parametrize(
    ("text", "expected_in_reason"),
    [
        ("CCO>>C1CC", "products molecule 1 of 1 ('C1CC'): SMILES parse error"),
        ("CCO.N(C)(C)(C)(C)C>>CC", "reactants molecule 2 of 2"),
        ("CCO.N(C)(C)(C)(C)C>>CC", "Explicit valence for atom # 0 N, 5"),
        ("CCO>c1cccc1>CC", "kekulize"),
        ("CCO>CC", "2 '>' separators), found 1"),
        ("CCO>>CC>>C", "found 4"),
        (">>CC", "the reactants field is empty"),
        ("CC>>", "the products field is empty"),
        ("CC..O>>CC", "empty molecule in the reactants field"),
        ("   ", "empty reaction SMILES"),
        ("[CH3:1][OH:2]>>[CH3:7][O-:8]", "no molecule left of '>>' contributes"),
    ],
)
def test_invalid_reactions_raise_with_reason(text, expected_in_reason, capfd):
    with pytest.raises(ReactionParseError) as info:
        parse_reaction_smiles(text)
    assert expected_in_reason in info.value.reason
    assert isinstance(info.value, ValueError)
    assert capfd.readouterr().err == ""


def test_parse_error_pickles_and_non_string():
    with pytest.raises(ReactionParseError) as info:
        parse_reaction_smiles("CC>>C1CC")
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.reason, copy.record, str(copy)) == (
        info.value.reason,
        info.value.record,
        str(info.value),
    )
    assert info.value.record == "CC>>C1CC"
    with pytest.raises(ReactionParseError, match="must be a str"):
        parse_reaction_smiles(None)  # type: ignore[arg-type]


def test_empty_products_allowed_only_on_request():
    with pytest.raises(ReactionParseError, match="the products field is empty"):
        parse_reaction_smiles("CC(=O)Cl.OCC>c1ccncc1>")
    reaction = parse_reaction_smiles("CC(=O)Cl.OCC>c1ccncc1>", allow_empty_products=True)
    assert reaction.reactants == ("CC(=O)Cl", "CCO")
    assert reaction.reagents == ("c1ccncc1",)
    assert reaction.products == ()
