"""chemgraph.featurize.bond: exact canonical one-hot rows and OGB indices, by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rdkit import Chem
from rdkit.Chem.rdchem import BondStereo

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize.bond import (
    BondFeaturizer,
    CanonicalBondFeaturizer,
    OGBBondFeaturizer,
    bond_stereo_labels,
)

CANONICAL = CanonicalBondFeaturizer()
OGB = OGBBondFeaturizer()

CANONICAL_FIELDS = (
    "bond_type=SINGLE", "bond_type=DOUBLE", "bond_type=TRIPLE", "bond_type=AROMATIC",
    "bond_type=DATIVE", "bond_type=unknown",
    "is_conjugated", "is_in_ring",
    "stereo=none", "stereo=any", "stereo=Z", "stereo=E", "stereo=M", "stereo=P",
    "stereo=unknown",
)  # fmt: skip


def expected(*hot: str) -> np.ndarray:
    """The canonical row with exactly the named columns at 1.0."""
    row = np.zeros(len(CANONICAL_FIELDS), dtype=np.float32)
    for name in hot:
        row[CANONICAL_FIELDS.index(name)] = 1.0
    return row


def bonds(smiles: str, featurizer=CANONICAL) -> np.ndarray:
    return featurizer.featurize_bonds(mol_from_smiles(smiles))


SINGLE = ("bond_type=SINGLE", "stereo=none")


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
    row = expected("bond_type=AROMATIC", "is_conjugated", "is_in_ring", "stereo=none")
    np.testing.assert_array_equal(e, np.tile(row, (6, 1)))


def test_canonical_acetate():
    e = bonds("CC(=O)[O-]")  # bonds: C-C, C=O, C-O(-)
    np.testing.assert_array_equal(e[0], expected(*SINGLE))
    np.testing.assert_array_equal(
        e[1], expected("bond_type=DOUBLE", "is_conjugated", "stereo=none")
    )
    np.testing.assert_array_equal(
        e[2], expected("bond_type=SINGLE", "is_conjugated", "stereo=none")
    )


def test_zero_bond_molecule_gives_empty_matrix():
    for featurizer, width, dtype in ((CANONICAL, 15, np.float32), (OGB, 3, np.int64)):
        e = bonds("[NH4+]", featurizer)
        assert e.shape == (0, width) and e.dtype == dtype


def test_canonical_chiral_amino_acid_bonds():
    e = bonds("N[C@@H](C)C(=O)O")  # N-C, C-C, C-C, C=O, C-O
    np.testing.assert_array_equal(e[:3], np.tile(expected(*SINGLE), (3, 1)))
    np.testing.assert_array_equal(
        e[3], expected("bond_type=DOUBLE", "is_conjugated", "stereo=none")
    )
    np.testing.assert_array_equal(
        e[4], expected("bond_type=SINGLE", "is_conjugated", "stereo=none")
    )


def test_dative_bond_is_its_own_type_and_undirected():
    mol = mol_from_smiles("[NH3]->[Cu+2]")
    assert mol.GetBondWithIdx(0).GetBondType() == Chem.BondType.DATIVE
    e = CANONICAL.featurize_bonds(mol)
    np.testing.assert_array_equal(e, expected("bond_type=DATIVE", "stereo=none")[None])
    assert not np.array_equal(e[0], expected(*SINGLE))
    np.testing.assert_array_equal(bonds("[Cu+2]<-[NH3]"), e)  # written the other way round


@pytest.mark.parametrize(
    ("smiles", "stereo", "ogb_stereo"),
    [
        ("C/C=C/C", "E", 2),
        ("C/C=C\\C", "Z", 1),
        ("C(/C)=C/C", "Z", 1),  # the same Z-but-2-ene written from another atom
        ("CC=CC", "none", 0),
    ],
)
def test_double_bond_stereo(smiles, stereo, ogb_stereo):
    e = bonds(smiles)
    np.testing.assert_array_equal(e[1], expected("bond_type=DOUBLE", f"stereo={stereo}"))
    assert bonds(smiles, OGB)[1].tolist() == [1, ogb_stereo, 0]


@pytest.mark.parametrize("legacy", [True, False])
def test_stereo_is_the_cip_descriptor_whatever_rdkit_perceives(legacy):
    # (E)-1-chloro-1-fluoropropene written twice: with RDKit's new stereo perception the bond
    # is STEREOTRANS in one and STEREOCIS in the other (relative to other stereo atoms)
    was = Chem.GetUseLegacyStereoPerception()
    Chem.SetUseLegacyStereoPerception(legacy)
    try:
        first, second = Chem.MolFromSmiles("Cl/C(F)=C/C"), Chem.MolFromSmiles("F/C(Cl)=C\\C")
    finally:
        Chem.SetUseLegacyStereoPerception(was)
    assert Chem.MolToSmiles(first) == Chem.MolToSmiles(second)
    stereo = {first.GetBondWithIdx(2).GetStereo(), second.GetBondWithIdx(2).GetStereo()}
    expected_stereo = (
        {BondStereo.STEREOE} if legacy else {BondStereo.STEREOTRANS, BondStereo.STEREOCIS}
    )
    assert stereo == expected_stereo
    for mol in (first, second):
        assert bond_stereo_labels(mol) == ["none", "none", "E", "none"]
        np.testing.assert_array_equal(
            CANONICAL.featurize_bonds(mol)[2], expected("bond_type=DOUBLE", "stereo=E")
        )
        assert OGB.featurize_bonds(mol)[2].tolist() == [1, 2, 0]


# Coordinates and wedges of RDKit's CIP-labeller test atropisomer (a pyrrolyl-succinimide);
# the wedge on bond 0-8 (wU up, wD down) sets the sense of the N-N axis.
_ATROPISOMER = (
    "N1(n2c(C)ccc2Br)C(=O)[C@H](C)[C@H](C)C1=O |(-11.1517,1.8306,;-11.1517,3.3708,;"
    "-12.4855,4.1411,;-13.8193,3.371,;-12.4855,5.6813,;-9.8177,5.6813,;-9.8177,4.1411,;"
    "-8.4839,3.371,;-12.3975,0.9252,;-13.8622,1.4011,;-11.9217,-0.5394,;-12.8269,-1.7852,;"
    "-10.3817,-0.5394,;-9.4765,-1.7852,;-9.9059,0.9252,;-8.4413,1.4011,),{wedges}|"
)


@pytest.mark.parametrize(
    ("wedges", "stereo", "ogb_stereo"),
    [("wU:0.8,10.11,12.13", "P", 4), ("wD:0.8,wU:10.11,12.13", "M", 3)],
)
def test_atropisomer_axis_is_m_or_p(wedges, stereo, ogb_stereo):
    params = Chem.SmilesParserParams()
    params.removeHs = False
    mol = Chem.MolFromSmiles(_ATROPISOMER.format(wedges=wedges), params)
    assert mol.GetBondWithIdx(0).GetStereo() in (
        BondStereo.STEREOATROPCW, BondStereo.STEREOATROPCCW,
    )  # fmt: skip
    np.testing.assert_array_equal(
        CANONICAL.featurize_bonds(mol)[0],
        expected("bond_type=SINGLE", "is_conjugated", f"stereo={stereo}"),
    )
    assert OGB.featurize_bonds(mol)[0].tolist() == [0, ogb_stereo, 1]


def test_stereo_of_unknown_configuration_is_any():
    mol = Chem.RWMol(mol_from_smiles("CC=CC"))
    mol.GetBondWithIdx(1).SetStereo(BondStereo.STEREOANY)
    assert bond_stereo_labels(mol) == ["none", "any", "none"]
    np.testing.assert_array_equal(
        CANONICAL.featurize_bonds(mol)[1], expected("bond_type=DOUBLE", "stereo=any")
    )
    assert OGB.featurize_bonds(mol)[1].tolist() == [1, 5, 0]


def test_unknown_bond_type_and_stereo():
    np.testing.assert_array_equal(
        bonds("[Mo]$[Mo]"), expected("bond_type=unknown", "stereo=none")[None]
    )  # QUADRUPLE
    assert bonds("[Mo]$[Mo]", OGB).tolist() == [[4, 0, 0]]
    mol = Chem.RWMol(mol_from_smiles("CC"))
    bond = mol.GetBondWithIdx(0)
    bond.SetStereo(BondStereo.STEREOATROPCW)  # an axis RDKit cannot label (no stereo atoms)
    assert bond_stereo_labels(mol) == ["other"]
    np.testing.assert_array_equal(CANONICAL(bond), expected("bond_type=SINGLE", "stereo=unknown"))
    assert OGB(bond).tolist() == [0, 5, 0]  # OGB has no misc stereo slot: last index


def test_call_matches_featurize_bonds():
    for smiles in ("CC(=O)[O-]", "C/C=C/[C@@H](F)C=C"):
        mol = mol_from_smiles(smiles)
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
    assert OGB.categories[1] == ("none", "Z", "E", "M", "P", "any")
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
