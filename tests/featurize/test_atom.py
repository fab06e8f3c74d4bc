"""chemgraph.featurize.atom: exact canonical one-hot rows and OGB indices, by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize.atom import (
    ATOM_STEREO_LABELS,
    CANONICAL_SYMBOLS,
    AtomFeaturizer,
    CanonicalAtomFeaturizer,
    OGBAtomFeaturizer,
    atom_stereo_labels,
    cip_descriptors,
)

CANONICAL = CanonicalAtomFeaturizer()
OGB = OGBAtomFeaturizer()

# The full canonical field order, written out (76 columns).
CANONICAL_FIELDS = (
    *(f"symbol={s}" for s in "H Li B C N O F Na Mg Al Si P S Cl K Ca Ti V Cr Mn Fe Co Ni Cu Zn "
      "Ge As Se Br Zr Ru Rh Pd Ag Sn I Cs Ir Pt Au Hg".split()),
    "symbol=unknown",
    "degree=0", "degree=1", "degree=2", "degree=3", "degree=4", "degree=5", "degree=unknown",
    "formal_charge=-2", "formal_charge=-1", "formal_charge=0", "formal_charge=1",
    "formal_charge=2", "formal_charge=unknown",
    "chirality=none", "chirality=R", "chirality=S", "chirality=other", "chirality=unknown",
    "num_hs=0", "num_hs=1", "num_hs=2", "num_hs=3", "num_hs=4", "num_hs=unknown",
    "hybridization=S", "hybridization=SP", "hybridization=SP2", "hybridization=SP3",
    "hybridization=SP3D", "hybridization=SP3D2", "hybridization=unknown",
    "is_aromatic", "is_in_ring", "atomic_mass*0.01",
)  # fmt: skip

# Fields every ordinary test atom shares unless overridden.
NEUTRAL_ACHIRAL = {"formal_charge=0", "chirality=none"}


def expected(hot: set[str], mass: float) -> np.ndarray:
    """The canonical row with exactly the named columns at 1.0 and the given atomic mass (Da)."""
    row = np.zeros(len(CANONICAL_FIELDS), dtype=np.float32)
    for name in hot:
        row[CANONICAL_FIELDS.index(name)] = 1.0
    row[-1] = mass * 0.01
    return row


def atoms(smiles: str, featurizer=CANONICAL) -> np.ndarray:
    return featurizer.featurize_atoms(mol_from_smiles(smiles))


def block(row: np.ndarray, prefix: str) -> list[str]:
    """Names of the hot columns of one one-hot block, e.g. ``block(row, "symbol")``."""
    return [
        name
        for name, value in zip(CANONICAL_FIELDS, row, strict=True)
        if name.startswith(prefix + "=") and value != 0
    ]


# --- canonical: layout ----------------------------------------------------------------------


def test_canonical_layout():
    assert len(CANONICAL) == 76
    assert CANONICAL.field_names == CANONICAL_FIELDS
    assert len(CANONICAL.field_names) == len(CANONICAL)
    assert CANONICAL.dtype == torch.float32
    assert CANONICAL.name == "canonical"
    assert len(CANONICAL_SYMBOLS) == 41
    # documented column positions
    assert CANONICAL_FIELDS.index("symbol=unknown") == 41
    assert CANONICAL_FIELDS.index("degree=0") == 42
    assert CANONICAL_FIELDS.index("formal_charge=-2") == 49
    assert CANONICAL_FIELDS.index("chirality=none") == 55
    assert CANONICAL_FIELDS.index("num_hs=0") == 60
    assert CANONICAL_FIELDS.index("hybridization=S") == 66
    assert CANONICAL_FIELDS.index("is_aromatic") == 73
    assert isinstance(CANONICAL, AtomFeaturizer)


# --- canonical: exact rows ------------------------------------------------------------------


def test_canonical_ethanol():
    x = atoms("CCO")
    assert x.shape == (3, 76) and x.dtype == np.float32
    c_methyl = {"symbol=C", "degree=4", "num_hs=3", "hybridization=SP3"} | NEUTRAL_ACHIRAL
    c_methylene = {"symbol=C", "degree=4", "num_hs=2", "hybridization=SP3"} | NEUTRAL_ACHIRAL
    o_hydroxyl = {"symbol=O", "degree=2", "num_hs=1", "hybridization=SP3"} | NEUTRAL_ACHIRAL
    np.testing.assert_array_equal(x[0], expected(c_methyl, 12.011))
    np.testing.assert_array_equal(x[1], expected(c_methylene, 12.011))
    np.testing.assert_array_equal(x[2], expected(o_hydroxyl, 15.999))


def test_canonical_benzene_aromatic_carbon():
    x = atoms("c1ccccc1")
    hot = {"symbol=C", "degree=3", "num_hs=1", "hybridization=SP2", "is_aromatic", "is_in_ring"}
    for row in x:
        np.testing.assert_array_equal(row, expected(hot | NEUTRAL_ACHIRAL, 12.011))


def test_canonical_acetate_anion():
    x = atoms("CC(=O)[O-]")
    achiral = {"chirality=none"}
    np.testing.assert_array_equal(
        x[1],
        expected(
            {"symbol=C", "degree=3", "num_hs=0", "hybridization=SP2"} | NEUTRAL_ACHIRAL, 12.011
        ),
    )
    np.testing.assert_array_equal(
        x[2],
        expected(
            {"symbol=O", "degree=1", "num_hs=0", "hybridization=SP2"} | NEUTRAL_ACHIRAL, 15.999
        ),
    )
    carboxylate_o = {"symbol=O", "degree=1", "formal_charge=-1", "num_hs=0", "hybridization=SP2"}
    np.testing.assert_array_equal(x[3], expected(carboxylate_o | achiral, 15.999))


def test_canonical_ammonium():
    x = atoms("[NH4+]")
    hot = {"symbol=N", "degree=4", "formal_charge=1", "num_hs=4", "hybridization=SP3"}
    np.testing.assert_array_equal(x, expected(hot | {"chirality=none"}, 14.007)[None])


@pytest.mark.parametrize(
    ("smiles", "label"),
    [
        ("N[C@@H](C)C(=O)O", "S"),  # L-alanine: RDKit tag CW
        ("N[C@H](C)C(=O)O", "R"),  # D-alanine: CCW
    ],
)
def test_canonical_chiral_centre(smiles, label):
    # CIP priorities at C2: N > COOH > CH3 > H; L-alanine is (S)-alanine
    x = atoms(smiles)
    hot = {"symbol=C", "degree=4", "formal_charge=0", "num_hs=1", "hybridization=SP3"}
    np.testing.assert_array_equal(x[1], expected(hot | {f"chirality={label}"}, 12.011))
    # the other atoms are not chiral
    assert all(block(row, "chirality") == ["chirality=none"] for row in x[[0, 2, 3, 4, 5]])


def test_l_alanine_written_from_any_atom_is_s():
    # four atom orders of L-alanine: RDKit's tag of the centre changes, its row does not
    orders = ["C[C@H](N)C(=O)O", "N[C@@H](C)C(=O)O", "OC(=O)[C@@H](N)C", "[C@@H](C)(N)C(=O)O"]
    tags = set()
    for smiles in orders:
        mol = mol_from_smiles(smiles)
        assert Chem.MolToSmiles(mol) == "C[C@H](N)C(=O)O"
        (centre,) = [a.GetIdx() for a in mol.GetAtoms() if a.GetChiralTag()]
        tags.add(mol.GetAtomWithIdx(centre).GetChiralTag())
        assert block(CANONICAL.featurize_atoms(mol)[centre], "chirality") == ["chirality=S"]
        assert OGB.featurize_atoms(mol)[centre, 1] == 2
        assert atom_stereo_labels(mol)[centre] == "S"
    assert tags == {Chem.ChiralType.CHI_TETRAHEDRAL_CW, Chem.ChiralType.CHI_TETRAHEDRAL_CCW}


def test_ring_stereo_and_pseudo_asymmetric_centres():
    # cis/trans-1,4-dimethylcyclohexane: no R/S centre, CIP r/s (pseudo-asymmetric) -> R/S
    cis = "C[C@H]1CC[C@@H](C)CC1"  # (1s,4s); also written C[C@@H]1CC[C@H](C)CC1
    trans = "C[C@H]1CC[C@H](C)CC1"  # (1r,4r)
    assert (
        atom_stereo_labels(mol_from_smiles(cis))
        == ["none", "S", "none", "none", "S"] + ["none"] * 3
    )
    assert atom_stereo_labels(mol_from_smiles("C[C@@H]1CC[C@H](C)CC1")) == atom_stereo_labels(
        mol_from_smiles(cis)
    )
    assert atom_stereo_labels(mol_from_smiles(trans))[1] == "R"
    assert cip_descriptors(mol_from_smiles(trans), atoms=[1, 4]) == (["r", "r"], [])


def test_cip_descriptors_leave_the_molecule_unchanged():
    mol = mol_from_smiles("C/C=C/[C@@H](F)Cl")
    before = Chem.MolToMolBlock(mol), [b.GetStereo() for b in mol.GetBonds()]
    props = [sorted(a.GetPropsAsDict(True, True)) for a in mol.GetAtoms()]
    assert cip_descriptors(mol, atoms=[3], bonds=[1]) == (["S"], ["E"])
    assert (Chem.MolToMolBlock(mol), [b.GetStereo() for b in mol.GetBonds()]) == before
    assert [sorted(a.GetPropsAsDict(True, True)) for a in mol.GetAtoms()] == props


def test_canonical_dative_complex():
    x = atoms("[NH3]->[Cu+2]")
    # The dative bond counts in N's total degree (3 H + Cu).
    n = {"symbol=N", "degree=4", "num_hs=3", "hybridization=SP3"} | NEUTRAL_ACHIRAL
    np.testing.assert_array_equal(x[0], expected(n, 14.007))
    # RDKit assigns SP3D to this copper.
    cu = {"symbol=Cu", "degree=1", "formal_charge=2", "num_hs=0", "hybridization=SP3D"}
    np.testing.assert_array_equal(x[1], expected(cu | {"chirality=none"}, 63.546))


# --- canonical: unknown slots ---------------------------------------------------------------


@pytest.mark.parametrize(("smiles", "mass"), [("[Xe]", 131.29), ("[U]", 238.029)])
def test_element_outside_vocabulary_lands_in_symbol_unknown_only(smiles, mass):
    (row,) = atoms(smiles)
    assert block(row, "symbol") == ["symbol=unknown"]
    # RDKit: Xe is SP3, U is S; both have degree 0, no H, no charge.
    hybridization = {"[Xe]": "hybridization=SP3", "[U]": "hybridization=S"}[smiles]
    hot = {"symbol=unknown", "degree=0", "num_hs=0", hybridization} | NEUTRAL_ACHIRAL
    np.testing.assert_array_equal(row, expected(hot, mass))


def test_dummy_atom_is_symbol_unknown_and_hybridization_unknown():
    row = atoms("*C")[0]
    assert block(row, "symbol") == ["symbol=unknown"]
    assert block(row, "hybridization") == ["hybridization=unknown"]  # UNSPECIFIED


def test_fluorine_never_encodes_like_oxygen():
    f_row = atoms("CF")[1]
    o_row = atoms("CO")[1]
    assert block(f_row, "symbol") == ["symbol=F"]
    assert block(o_row, "symbol") == ["symbol=O"]
    assert not np.array_equal(f_row, o_row)
    assert not np.array_equal(f_row[:42], o_row[:42])  # the symbol block alone differs
    # same for the OGB preset: atomic_num index 8 (F) vs 7 (O)
    assert atoms("CF", OGB)[1, 0] == 8
    assert atoms("CO", OGB)[1, 0] == 7


def test_out_of_range_degree_charge_chirality_hybridization_go_to_unknown():
    sulfur = atoms("FS(F)(F)(F)(F)F")[1]  # degree 6
    assert block(sulfur, "degree") == ["degree=unknown"]
    assert block(sulfur, "hybridization") == ["hybridization=SP3D2"]
    iron = atoms("[Fe+3]")[0]  # charge +3
    assert block(iron, "formal_charge") == ["formal_charge=unknown"]
    assert block(iron, "symbol") == ["symbol=Fe"]
    platinum = atoms("[Pt@SP1](Cl)(Cl)(N)N")[0]  # square planar tag, SP2D hybridization
    assert block(platinum, "chirality") == ["chirality=other"]  # no CIP descriptor
    assert block(platinum, "hybridization") == ["hybridization=unknown"]
    # every one-hot block has exactly one hot column, whatever the atom
    for row in (sulfur, iron, platinum):
        for prefix in ("symbol", "degree", "formal_charge", "chirality", "num_hs"):
            assert len(block(row, prefix)) == 1
    # a vocabulary without "other" sends it to chirality=unknown
    narrow = CanonicalAtomFeaturizer(name="narrow", chiralities=("none", "R", "S"))
    row = narrow.featurize_atoms(mol_from_smiles("[Pt@SP1](Cl)(Cl)(N)N"))[0]
    assert row[narrow.field_names.index("chirality=unknown")] == 1.0


def test_call_matches_featurize_atoms_and_empty_molecule():
    for smiles in ("CC(=O)[O-]", "N[C@@H](C)C(=O)O"):
        mol = mol_from_smiles(smiles)
        for featurizer in (CANONICAL, OGB):
            rows = featurizer.featurize_atoms(mol)
            for atom in mol.GetAtoms():
                np.testing.assert_array_equal(featurizer(atom), rows[atom.GetIdx()])
    assert CANONICAL.featurize_atoms(Chem.Mol()).shape == (0, 76)
    assert OGB.featurize_atoms(Chem.Mol()).shape == (0, 9)


def test_custom_vocabulary_changes_length_and_rejects_repeats():
    wider = CanonicalAtomFeaturizer(name="wider", degrees=(0, 1, 2, 3, 4, 5, 6))
    assert len(wider) == 77 and "degree=6" in wider.field_names
    sulfur = atoms("FS(F)(F)(F)(F)F", wider)[1]
    assert sulfur[wider.field_names.index("degree=6")] == 1.0
    with pytest.raises(ValueError, match="repeated"):
        CanonicalAtomFeaturizer(degrees=(0, 1, 1))


# --- OGB ------------------------------------------------------------------------------------


def test_ogb_layout():
    assert len(OGB) == 9
    assert OGB.field_names == (
        "atomic_num", "chirality", "degree", "formal_charge", "num_hs",
        "num_radical_electrons", "hybridization", "is_aromatic", "is_in_ring",
    )  # fmt: skip
    assert OGB.vocabulary_sizes == (119, 5, 12, 12, 10, 6, 6, 2, 2)
    assert OGB.dtype == torch.int64
    assert OGB.name == "ogb"
    assert OGB.categories[1] == (*ATOM_STEREO_LABELS, "misc")
    assert OGB.categories[1] == ("none", "R", "S", "other", "misc")
    assert OGB.categories[6] == (
        "SP", "SP2", "SP3", "SP3D", "SP3D2", "misc",
    )  # fmt: skip
    assert isinstance(OGB, AtomFeaturizer)


# Hand-computed OGB indices: [Z-1, chirality, degree, charge+5, numH, radicals, hybrid, arom, ring]
# hybridization index: SP 0, SP2 1, SP3 2, SP3D 3, SP3D2 4, misc 5
@pytest.mark.parametrize(
    ("smiles", "rows"),
    [
        (
            "CCO",
            [[5, 0, 4, 5, 3, 0, 2, 0, 0], [5, 0, 4, 5, 2, 0, 2, 0, 0],
             [7, 0, 2, 5, 1, 0, 2, 0, 0]],
        ),
        ("c1ccccc1", [[5, 0, 3, 5, 1, 0, 1, 1, 1]] * 6),
        (
            "CC(=O)[O-]",
            [[5, 0, 4, 5, 3, 0, 2, 0, 0], [5, 0, 3, 5, 0, 0, 1, 0, 0],
             [7, 0, 1, 5, 0, 0, 1, 0, 0], [7, 0, 1, 4, 0, 0, 1, 0, 0]],
        ),
        ("[NH4+]", [[6, 0, 4, 6, 4, 0, 2, 0, 0]]),
        ("[NH3]->[Cu+2]", [[6, 0, 4, 5, 3, 0, 2, 0, 0], [28, 0, 1, 7, 0, 0, 3, 0, 0]]),
        ("[Na+]", [[10, 0, 0, 6, 0, 0, 5, 0, 0]]),  # hybridization S is not in OGB's list
        ("[C]", [[5, 0, 0, 5, 0, 4, 2, 0, 0]]),  # 4 radical electrons
        ("*C", [[118, 0, 1, 5, 0, 0, 5, 0, 0], [5, 0, 4, 5, 3, 0, 2, 0, 0]]),  # Z=0 -> misc
    ],
)  # fmt: skip
def test_ogb_hand_computed(smiles, rows):
    x = atoms(smiles, OGB)
    assert x.dtype == np.int64
    np.testing.assert_array_equal(x, np.array(rows, dtype=np.int64))


@pytest.mark.parametrize(
    ("smiles", "value"),
    [
        ("N[C@@H](C)C(=O)O", 2),  # L-alanine, S (OGB: CW, 1)
        ("C[C@H](N)C(=O)O", 2),  # L-alanine again (OGB: CCW, 2)
        ("N[C@H](C)C(=O)O", 1),  # D-alanine, R
    ],
)
def test_ogb_chirality(smiles, value):
    centre = 1
    assert atoms(smiles, OGB)[centre].tolist() == [5, value, 4, 5, 1, 0, 2, 0, 0]


def test_ogb_out_of_range_values_go_to_misc():
    uranium = atoms("[U](F)(F)(F)(F)(F)(F)(F)(F)(F)(F)F", OGB)[0]  # degree 11, UNSPECIFIED
    assert uranium.tolist() == [91, 0, 11, 5, 0, 0, 5, 0, 0]
    iron = atoms("[Fe+6]", OGB)[0]  # charge +6 > 5
    assert iron[3] == 11
    platinum = atoms("[Pt@SP1](Cl)(Cl)(N)N", OGB)[0]  # square planar: other, SP2D: misc
    assert platinum[1] == 3 and platinum[6] == 5
    # every index stays inside its embedding table
    for row in (uranium, iron, platinum):
        assert all(0 <= v < size for v, size in zip(row, OGB.vocabulary_sizes, strict=True))
