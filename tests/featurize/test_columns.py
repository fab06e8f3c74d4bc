"""The batched featurizers read atoms and bonds column by column (``featurize_atoms_of``,
``featurize_bonds_of``, ``bond_ends_and_features``): every row must equal what the per-item
``featurizer(atom)`` / ``featurizer(bond)`` gives, bit for bit, on awkward molecules."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem

from chemgraph.featurize.atom import CanonicalAtomFeaturizer, OGBAtomFeaturizer
from chemgraph.featurize.bond import (
    CanonicalBondFeaturizer,
    OGBBondFeaturizer,
    bond_ends_and_features,
)

SMILES = (
    "C[C@H](N)C(=O)O", "N[C@@H](C)C(=O)O", "F/C=C/F", "F/C=C\\F", "Cl/C(F)=C/C",
    "[2H]C([2H])([2H])O", "[13CH4]", "*CC", "[*:1]CC[*:2]", "[1*]C", "[NH3]->[Cu+2]",
    "[Pt@SP1](Cl)(Cl)(N)N", "C[S@@](=O)c1ccccc1", "[O-][N+](=O)c1ccccc1", "[Na+].[Cl-]",
    "[CH3]", "[CH2]", "[Xe]", "[U+6]", "[Fe-4]", "[O-2]", "[C-4]", "C[N+](C)(C)C",
    "c1ccc2ccccc2c1", "C[C@H]1CC[C@@H](O)CC1", "C=C=C", "[H][H]", "[SiH4]", "B1OO1",
    "C[C@@]12CC[C@H]3[C@@H](CC=C4C[C@@H](O)CC[C@@]43C)[C@@H]1CC[C@@H]2O",
    "CC(C)(C)c1ccc(cc1)-c1ccccc1", "C\\C=C\\C=C/C", "[Hg]Cl", "C#N",
)  # fmt: skip

# a labelled dummy atom (R1: GetSymbol() is the label, not "*") and a query atom, from a mol file
MOLBLOCK = """
  test

  3  2  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 R#  0  0  0  0  0  0  0  0  0  0  0  0
    1.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    2.0000    0.0000    0.0000 A   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
  2  3  1  0
M  RGP  1   1   1
M  END
"""


def _molecules() -> list[Chem.Mol]:
    mols = [Chem.MolFromSmiles(s) for s in SMILES]
    assert all(m is not None for m in mols)
    mols += [Chem.AddHs(m) for m in mols[:6]]  # explicit hydrogens
    labelled = Chem.MolFromMolBlock(MOLBLOCK, sanitize=False)
    labelled.UpdatePropertyCache(strict=False)
    assert labelled.GetAtomWithIdx(0).GetSymbol() == "R1"
    any_stereo = Chem.MolFromSmiles("CC=CC")
    any_stereo.GetBondWithIdx(1).SetStereo(Chem.BondStereo.STEREOANY)
    other_tag = Chem.MolFromSmiles("CC(N)O")
    other_tag.GetAtomWithIdx(1).SetChiralTag(Chem.ChiralType.CHI_OTHER)
    return [*mols, labelled, any_stereo, other_tag, Chem.Mol()]


MOLS = _molecules()

ATOM_FEATURIZERS = (
    CanonicalAtomFeaturizer(),
    OGBAtomFeaturizer(),
    CanonicalAtomFeaturizer(
        name="custom", symbols=("C", "*", "R1", "N"), degrees=(1, 2), formal_charges=(0,),
        num_hs=(0, 1, 7), chiralities=("none", "S"),
    ),
)  # fmt: skip
BOND_FEATURIZERS = (
    CanonicalBondFeaturizer(),
    OGBBondFeaturizer(),
    CanonicalBondFeaturizer(name="custom", stereo=("none", "E")),
)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("featurizer", ATOM_FEATURIZERS, ids=lambda f: type(f).__name__)
def test_atom_columns_equal_the_per_atom_rows(featurizer):
    rows = [featurizer(atom) for mol in MOLS for atom in mol.GetAtoms()]
    expected = np.stack(rows).astype(rows[0].dtype)
    assert _same(featurizer.featurize_atoms_of(MOLS), expected)
    for mol in MOLS:  # one molecule at a time, the empty one included
        assert _same(
            featurizer.featurize_atoms(mol),
            np.array([featurizer(a) for a in mol.GetAtoms()], dtype=expected.dtype).reshape(
                mol.GetNumAtoms(), len(featurizer)
            ),
        )
    assert featurizer.featurize_atoms_of([]).shape == (0, len(featurizer))


@pytest.mark.parametrize("featurizer", BOND_FEATURIZERS, ids=lambda f: type(f).__name__)
def test_bond_columns_and_ends_equal_the_per_bond_rows(featurizer):
    rows = [featurizer(bond) for mol in MOLS for bond in mol.GetBonds()]
    expected = np.stack(rows).astype(rows[0].dtype)
    assert _same(featurizer.featurize_bonds_of(MOLS), expected)
    ends, features = bond_ends_and_features(featurizer, MOLS)
    assert _same(features, expected)
    pairs = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for mol in MOLS for b in mol.GetBonds()]
    assert _same(ends, np.array(pairs, dtype=np.int64)) and ends.flags.c_contiguous
    empty_ends, empty = bond_ends_and_features(featurizer, [Chem.Mol()])
    assert empty_ends.shape == (0, 2) and empty.shape == (0, len(featurizer))


class _OtherBondFeaturizer:
    """A featurizer of another kind (no column getters): bond_ends_and_features asks it."""

    name, dtype = "other", CanonicalBondFeaturizer.dtype

    def __len__(self) -> int:
        return 1

    def featurize_bonds_of(self, mols):
        return np.array([[b.GetIdx()] for m in mols for b in m.GetBonds()], dtype=np.float32)


def test_bond_ends_of_another_featurizer():
    ends, features = bond_ends_and_features(_OtherBondFeaturizer(), MOLS[:3])
    pairs = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for mol in MOLS[:3] for b in mol.GetBonds()]
    assert _same(ends, np.array(pairs, dtype=np.int64))
    assert features[:, 0].tolist() == [b.GetIdx() for m in MOLS[:3] for b in m.GetBonds()]
