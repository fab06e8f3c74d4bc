"""chemgraph.featurize.bond: exact canonical one-hot rows and OGB indices, by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rdkit import Chem
from rdkit.Chem.rdchem import BondStereo

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize.bond import BondFeaturizer, CanonicalBondFeaturizer, OGBBondFeaturizer

CANONICAL = CanonicalBondFeaturizer()
OGB = OGBBondFeaturizer()

CANONICAL_FIELDS = (
    "bond_type=SINGLE", "bond_type=DOUBLE", "bond_type=TRIPLE", "bond_type=AROMATIC",
    "bond_type=DATIVE", "bond_type=unknown",
    "is_conjugated", "is_in_ring",
    "stereo=STEREONONE", "stereo=STEREOANY", "stereo=STEREOZ", "stereo=STEREOE",
    "stereo=STEREOCIS", "stereo=STEREOTRANS", "stereo=unknown",
)  # fmt: skip


def expected(*hot: str) -> np.ndarray:
    """The canonical row with exactly the named columns at 1.0."""
    row = np.zeros(len(CANONICAL_FIELDS), dtype=np.float32)
    for name in hot:
        row[CANONICAL_FIELDS.index(name)] = 1.0
    return row


def bonds(smiles: str, featurizer=CANONICAL) -> np.ndarray:
    return featurizer.featurize_bonds(mol_from_smiles(smiles))


SINGLE = ("bond_type=SINGLE", "stereo=STEREONONE")


# --- canonical ------------------------------------------------------------------------------


def test_canonical_layout():
    assert len(CANONICAL) == 15
    assert CANONICAL.field_names == CANONICAL_FIELDS
    assert len(CANONICAL.field_names) == len(CANONICAL)
    assert CANONICAL.dtype == torch.float32
    assert isinstance(CANONICAL, BondFeaturizer)


def test_canonical_ethanol():
    e = bonds("CCO")
    assert e.shape == (2, 15) and e.dtype == np.float32
    np.testing.assert_array_equal(e, np.stack([expected(*SINGLE), expected(*SINGLE)]))


def test_canonical_benzene_aromatic_bond():
    e = bonds("c1ccccc1")
    row = expected("bond_type=AROMATIC", "is_conjugated", "is_in_ring", "stereo=STEREONONE")
    np.testing.assert_array_equal(e, np.tile(row, (6, 1)))


def test_canonical_acetate():
    e = bonds("CC(=O)[O-]")  # bonds: C-C, C=O, C-O(-)
    np.testing.assert_array_equal(e[0], expected(*SINGLE))
    np.testing.assert_array_equal(
        e[1], expected("bond_type=DOUBLE", "is_conjugated", "stereo=STEREONONE")
    )
    np.testing.assert_array_equal(
        e[2], expected("bond_type=SINGLE", "is_conjugated", "stereo=STEREONONE")
    )


def test_zero_bond_molecule_gives_empty_matrix():
    for featurizer, width, dtype in ((CANONICAL, 15, np.float32), (OGB, 3, np.int64)):
        e = bonds("[NH4+]", featurizer)
        assert e.shape == (0, width) and e.dtype == dtype


def test_canonical_chiral_amino_acid_bonds():
    e = bonds("N[C@@H](C)C(=O)O")  # N-C, C-C, C-C, C=O, C-O
    np.testing.assert_array_equal(e[:3], np.tile(expected(*SINGLE), (3, 1)))
    np.testing.assert_array_equal(
        e[3], expected("bond_type=DOUBLE", "is_conjugated", "stereo=STEREONONE")
    )
    np.testing.assert_array_equal(
        e[4], expected("bond_type=SINGLE", "is_conjugated", "stereo=STEREONONE")
    )


def test_dative_bond_is_its_own_type_and_undirected():
    mol = mol_from_smiles("[NH3]->[Cu+2]")
    assert mol.GetBondWithIdx(0).GetBondType() == Chem.BondType.DATIVE
    e = CANONICAL.featurize_bonds(mol)
    np.testing.assert_array_equal(e, expected("bond_type=DATIVE", "stereo=STEREONONE")[None])
    assert not np.array_equal(e[0], expected(*SINGLE))
    np.testing.assert_array_equal(bonds("[Cu+2]<-[NH3]"), e)  # written the other way round


@pytest.mark.parametrize(
    ("smiles", "stereo", "ogb_stereo"),
    [("C/C=C/C", "STEREOE", 2), ("C/C=C\\C", "STEREOZ", 1), ("CC=CC", "STEREONONE", 0)],
)
def test_double_bond_stereo(smiles, stereo, ogb_stereo):
    e = bonds(smiles)
    np.testing.assert_array_equal(e[1], expected("bond_type=DOUBLE", f"stereo={stereo}"))
    assert bonds(smiles, OGB)[1].tolist() == [1, ogb_stereo, 0]


def test_unknown_bond_type_and_stereo():
    np.testing.assert_array_equal(
        bonds("[Mo]$[Mo]"), expected("bond_type=unknown", "stereo=STEREONONE")[None]
    )  # QUADRUPLE
    assert bonds("[Mo]$[Mo]", OGB).tolist() == [[4, 0, 0]]
    mol = Chem.RWMol(mol_from_smiles("CC"))
    bond = mol.GetBondWithIdx(0)
    bond.SetStereo(BondStereo.STEREOATROPCW)
    np.testing.assert_array_equal(CANONICAL(bond), expected("bond_type=SINGLE", "stereo=unknown"))
    assert OGB(bond).tolist() == [0, 5, 0]  # OGB has no misc stereo slot: last index


def test_call_matches_featurize_bonds():
    mol = mol_from_smiles("CC(=O)[O-]")
    for featurizer in (CANONICAL, OGB):
        rows = featurizer.featurize_bonds(mol)
        for bond in mol.GetBonds():
            np.testing.assert_array_equal(featurizer(bond), rows[bond.GetIdx()])


# --- OGB ------------------------------------------------------------------------------------


def test_ogb_layout():
    assert len(OGB) == 3
    assert OGB.field_names == ("bond_type", "bond_stereo", "is_conjugated")
    assert OGB.vocabulary_sizes == (5, 6, 2)
    assert OGB.dtype == torch.int64
    assert OGB.categories[0] == ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", "misc")
    assert OGB.categories[1] == (
        "STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY",
    )  # fmt: skip
    assert isinstance(OGB, BondFeaturizer)


# Hand-computed OGB indices: [bond type, stereo, conjugated]
@pytest.mark.parametrize(
    ("smiles", "rows"),
    [
        ("CCO", [[0, 0, 0], [0, 0, 0]]),
        ("c1ccccc1", [[3, 0, 1]] * 6),
        ("CC(=O)[O-]", [[0, 0, 0], [1, 0, 1], [0, 0, 1]]),
        ("C#N", [[2, 0, 0]]),
        ("[NH3]->[Cu+2]", [[4, 0, 0]]),  # dative -> misc, not single
    ],
)
def test_ogb_hand_computed(smiles, rows):
    e = bonds(smiles, OGB)
    assert e.dtype == np.int64
    np.testing.assert_array_equal(e, np.array(rows, dtype=np.int64))
