"""chemgraph.chem.reactions: reaction SMILES fields, atom-map roles, canonical SMILES."""

from __future__ import annotations

import csv
import gzip
import itertools
import pickle
from pathlib import Path

import pytest
from rdkit import Chem

from chemgraph.chem.reactions import (
    Reaction,
    ReactionParseError,
    atom_map_numbers,
    canonical_smiles,
    parse_reaction_smiles,
    split_reaction_smiles,
    strip_atom_maps,
)

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # as tests/conftest.py

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
        ("CCO->[K+]>CC", "2 '>' separators), found 1"),  # '->' is a dative bond, not an arrow
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


# RDKit writes potassium benzoate with a dative bond from the carboxylate oxygen to potassium.
POTASSIUM_BENZOATE = "O=C([O-]->[K+])c1ccccc1"


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("O->[Mg+2]<-O.CCBr>>CCO", ("O->[Mg+2]<-O.CCBr", "", "CCO")),
        (
            "CC(=O)Cl.OCC>[NH3]->[Cu+2]<-[NH3]>CCOC(C)=O",
            ("CC(=O)Cl.OCC", "[NH3]->[Cu+2]<-[NH3]", "CCOC(C)=O"),
        ),
        ("c1ccncc1.[Cu+2]>>[Cu+2]<-n1ccccc1", ("c1ccncc1.[Cu+2]", "", "[Cu+2]<-n1ccccc1")),
        ("[K+]<-[O-]C(=O)C>>CC(=O)O", ("[K+]<-[O-]C(=O)C", "", "CC(=O)O")),
        (f" CC(=O)O.[K+]>>{POTASSIUM_BENZOATE} |f:0.1|", ("CC(=O)O.[K+]", "", POTASSIUM_BENZOATE)),
        ("A>B>C 1-2;2-3", ("A", "B", "C")),
        ("A.B>>", ("A.B", "", "")),
    ],
)
def test_split_reaction_smiles_splits_on_arrows_only(text, fields):
    assert split_reaction_smiles(text) == fields


def test_split_reaction_smiles_errors():
    with pytest.raises(ReactionParseError, match=r"found 3"):
        split_reaction_smiles("O->[Mg+2]<-O.CCBr>>CCO>C")
    with pytest.raises(ReactionParseError, match="empty reaction SMILES"):
        split_reaction_smiles(" \t")
    with pytest.raises(ReactionParseError, match="must be a str"):
        split_reaction_smiles(b"CC>>CC")  # type: ignore[arg-type]


def test_potassium_benzoate_is_written_with_a_dative_bond():
    for text in ("[K+]<-[O-]C(=O)c1ccccc1", "c1ccccc1C(=O)[O-]->[K+]"):
        assert Chem.MolToSmiles(Chem.MolFromSmiles(text)) == POTASSIUM_BENZOATE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # dative bonds in a reactant (the reaction of issue 12)
            "O->[Mg+2]<-O.CCBr>>CCO",
            (("[OH2]->[Mg+2]<-[OH2]", "CCBr"), (), ("CCO",)),
        ),
        (  # in a reagent
            "CC(=O)Cl.OCC>[NH3]->[Cu+2]<-[NH3]>CCOC(C)=O",
            (("CC(=O)Cl", "CCO"), ("[NH3]->[Cu+2]<-[NH3]",), ("CCOC(C)=O",)),
        ),
        (  # in a product, written '<-'
            "c1ccncc1.[Cu+2]>>[Cu+2]<-n1ccccc1",
            (("c1ccncc1", "[Cu+2]"), (), ("[Cu+2]<-[n]1ccccc1",)),
        ),
        (  # potassium benzoate as a product
            f"O=C(O)c1ccccc1.[K+].[OH-]>>{POTASSIUM_BENZOATE}.O",
            (("O=C(O)c1ccccc1", "[K+]", "[OH-]"), (), (POTASSIUM_BENZOATE, "O")),
        ),
        (  # mapped: the roles still come from the maps; unmapped hydroxide is a reagent
            "[OH:1][C:2](=[O:3])[c:4]1[cH:5][cH:6][cH:7][cH:8][cH:9]1.[K+:10].[OH-]>>"
            "[K+:10]<-[O-:1][C:2](=[O:3])[c:4]1[cH:5][cH:6][cH:7][cH:8][cH:9]1",
            (("O=C(O)c1ccccc1", "[K+]"), ("[OH-]",), (POTASSIUM_BENZOATE,)),
        ),
        (  # potassium benzoate as a reactant and as a reagent
            f"{POTASSIUM_BENZOATE}.CI>{POTASSIUM_BENZOATE}>COC(=O)c1ccccc1",
            ((POTASSIUM_BENZOATE, "CI"), (POTASSIUM_BENZOATE,), ("COC(=O)c1ccccc1",)),
        ),
    ],
)
def test_dative_bonds_parse_and_round_trip(text, expected):
    reaction = parse_reaction_smiles(text)
    assert (reaction.reactants, reaction.reagents, reaction.products) == expected
    assert reaction.mapped == text
    again = parse_reaction_smiles(reaction.to_smiles())
    assert again == Reaction(*expected, mapped=reaction.to_smiles())


def test_potassium_benzoate_to_smiles_reads_back():
    reaction = parse_reaction_smiles(f"O=C(O)c1ccccc1.[K+].[OH-]>>{POTASSIUM_BENZOATE}.O")
    assert reaction.to_smiles() == f"O=C(O)c1ccccc1.[K+].[OH-]>>{POTASSIUM_BENZOATE}.O"
    assert parse_reaction_smiles(reaction.to_smiles()).products == (POTASSIUM_BENZOATE, "O")


@pytest.mark.parametrize(
    ("mapped", "expected"),
    [
        # trans-4-methylcyclohexanol: with maps RDKit ranks the ring centres as R/S and wrote
        # "C[C@@H]1CC[C@H](O)CC1", which reads back as "C[C@H]1CC[C@@H](O)CC1"
        ("[CH3:1][C@H:2]1[CH2:3][CH2:4][C@@H:5]([OH:6])[CH2:7][CH2:8]1", "C[C@H]1CC[C@@H](O)CC1"),
        ("[CH3:1][C@H:2]1[CH2:3][CH2:4][C@H:5]([OH:6])[CH2:7][CH2:8]1", "C[C@H]1CC[C@H](O)CC1"),
        # only the map numbers made C2 a stereocentre: isopropanol has none
        ("[CH3:1][C@H:2]([CH3:3])[OH:4]", "CC(C)O"),
        ("[CH3:1]/[CH:2]=[CH:3]/[CH3:4]", "C/C=C/C"),
    ],
)
def test_canonical_smiles_of_mapped_molecule_equals_unmapped(mapped, expected):
    mol = Chem.MolFromSmiles(mapped)
    assert canonical_smiles(mol) == expected
    assert Chem.CanonSmiles(expected) == expected
    assert canonical_smiles(Chem.MolFromSmiles(expected)) == expected


def test_uspto_50k_ring_stereo_reaction_round_trips():
    # USPTO-50K test (GLN split), a Suzuki coupling of a trans,trans-bicyclohexyl bromide
    text = (
        "Br[C@H:1]1[CH2:2][CH2:3][C@H:4]([C@H:5]2[CH2:6][CH2:7][C@H:8]([CH2:9][CH2:10][CH3:11])"
        "[CH2:12][CH2:13]2)[CH2:14][CH2:15]1.Br[c:16]1[cH:17][cH:18][c:19]([O:20][CH2:21][CH3:22])"
        "[n:23][cH:24]1>>[C@H:1]1([c:16]2[cH:17][cH:18][c:19]([O:20][CH2:21][CH3:22])[n:23][cH:24]2)"
        "[CH2:2][CH2:3][C@H:4]([C@H:5]2[CH2:6][CH2:7][C@H:8]([CH2:9][CH2:10][CH3:11])[CH2:12]"
        "[CH2:13]2)[CH2:14][CH2:15]1"
    )
    reaction = parse_reaction_smiles(text)
    assert reaction.products == ("CCC[C@H]1CC[C@H]([C@H]2CC[C@H](c3ccc(OCC)nc3)CC2)CC1",)
    again = parse_reaction_smiles(reaction.to_smiles())
    assert (again.reactants, again.reagents, again.products) == (
        reaction.reactants,
        reaction.reagents,
        reaction.products,
    )


def _uspto_reactions(name: str):
    """The reaction SMILES of a USPTO file in ../shared/data/uspto, in file order."""
    with gzip.open(SHARED_DATA / "uspto" / name, "rt") as lines:
        if name.endswith(".csv.gz"):
            rows = csv.reader(lines)
            next(rows)  # id,class,reactants>reagents>production
            yield from (row[2] for row in rows)
        else:
            yield from lines


# The first ROUND_TRIP_ROWS reactions of each file (all 40,000 + 30,000 + 2 x 5,007 take minutes:
# over every row, only MIT test rows 17525, 24646, 25944 and MIT valid rows 9936, 17835 are
# rejected as well); the rows RDKit rejects (a carbon or iodine/phosphorus over its valence).
ROUND_TRIP_ROWS = 5000
USPTO_FILES = {
    "uspto_mit_test.txt.gz": (5000, [688, 1551, 2272]),
    "uspto_mit_valid.txt.gz": (5000, []),
    "uspto50k_test_raw.csv.gz": (5000, []),
    "uspto50k_test_class.csv.gz": (5000, []),
}


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("name", list(USPTO_FILES))
def test_uspto_reactions_round_trip_through_to_smiles(name):
    rows, rejected_rows = USPTO_FILES[name]
    read, rejected, differ = 0, [], []
    for row, text in enumerate(itertools.islice(_uspto_reactions(name), ROUND_TRIP_ROWS)):
        read += 1
        try:
            reaction = parse_reaction_smiles(text)
        except ReactionParseError as error:
            assert "Explicit valence" in error.reason
            rejected.append(row)
            continue
        written = reaction.to_smiles()
        if parse_reaction_smiles(written) != Reaction(
            reaction.reactants, reaction.reagents, reaction.products, written
        ):
            differ.append((row, written))
    assert (read, rejected, differ) == (rows, rejected_rows, [])
