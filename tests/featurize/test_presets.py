"""chemgraph.featurize.presets: registry, widths, dtypes, checkpoint round trip."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import torch

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import (
    PRESETS,
    CanonicalAtomFeaturizer,
    CanonicalBondFeaturizer,
    FeaturizerPreset,
    OGBAtomFeaturizer,
    OGBBondFeaturizer,
    available_presets,
    get_preset,
)


@pytest.mark.parametrize(
    ("name", "atom_dim", "bond_dim", "dtype", "atom_cls", "bond_cls"),
    [
        ("canonical", 76, 15, torch.float32, CanonicalAtomFeaturizer, CanonicalBondFeaturizer),
        ("ogb", 9, 3, torch.int64, OGBAtomFeaturizer, OGBBondFeaturizer),
    ],
)
def test_preset_widths_and_dtypes(name, atom_dim, bond_dim, dtype, atom_cls, bond_cls):
    preset = get_preset(name)
    assert preset.name == name
    assert isinstance(preset.atom, atom_cls) and isinstance(preset.bond, bond_cls)
    assert (len(preset.atom), len(preset.bond)) == (atom_dim, bond_dim)
    assert len(preset.atom.field_names) == atom_dim
    assert len(preset.bond.field_names) == bond_dim
    assert preset.dtype == preset.atom.dtype == preset.bond.dtype == dtype
    mol = mol_from_smiles("CC(=O)[O-]")
    x = preset.atom.featurize_atoms(mol)
    e = preset.bond.featurize_bonds(mol)
    assert x.shape == (4, atom_dim) and e.shape == (3, bond_dim)
    assert torch.from_numpy(x).dtype == dtype and torch.from_numpy(e).dtype == dtype


def test_registry():
    assert available_presets() == ("canonical", "ogb")
    assert set(PRESETS) == {"canonical", "ogb"}
    with pytest.raises(TypeError):
        PRESETS["mine"] = PRESETS["ogb"]  # type: ignore[index]


def test_unknown_preset_lists_available_names():
    with pytest.raises(ValueError, match="unknown featurizer preset 'morgan'.*canonical, ogb"):
        get_preset("morgan")


@pytest.mark.parametrize("name", ["canonical", "ogb"])
def test_dict_round_trip(name):
    preset = get_preset(name)
    saved = preset.to_dict()
    expected_dims = {"canonical": (76, 15), "ogb": (9, 3)}[name]
    assert saved == {
        "name": name,
        "atom_dim": expected_dims[0],
        "bond_dim": expected_dims[1],
        "stereo": "cip",
    }
    assert FeaturizerPreset.from_dict(saved) == preset
    assert FeaturizerPreset.from_dict({"name": name}) == preset
    assert pickle.loads(pickle.dumps(preset)) == preset


def test_from_dict_rejects_mismatched_widths_and_missing_name():
    with pytest.raises(ValueError, match="atom_dim=74"):
        FeaturizerPreset.from_dict({"name": "canonical", "atom_dim": 74, "bond_dim": 15})
    with pytest.raises(ValueError, match="name"):
        FeaturizerPreset.from_dict({"atom_dim": 76})
    with pytest.raises(ValueError, match="available"):
        FeaturizerPreset.from_dict({"name": "nope"})


def test_from_dict_rejects_another_stereo_encoding_and_accepts_dicts_without_one():
    with pytest.raises(ValueError, match="stereo='rdkit_tag'.*featurised again"):
        FeaturizerPreset.from_dict({"name": "ogb", "stereo": "rdkit_tag"})
    saved_before = {"name": "canonical", "atom_dim": 76, "bond_dim": 15}
    assert FeaturizerPreset.from_dict(saved_before) == get_preset("canonical")


def test_presets_are_frozen():
    preset = get_preset("canonical")
    with pytest.raises(dataclasses.FrozenInstanceError):
        preset.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        preset.atom.symbols = ("C",)  # type: ignore[misc]


def test_mixed_dtypes_are_rejected():
    with pytest.raises(ValueError, match="dtype"):
        FeaturizerPreset("mixed", CanonicalAtomFeaturizer(), OGBBondFeaturizer())


def test_canonical_rows_are_one_hot_per_block():
    # Each atom row of a varied molecule has exactly 6 hot one-hot columns (one per block)
    # plus the two flags and the mass; each bond row one bond type and one stereo.
    preset = get_preset("canonical")
    mol = mol_from_smiles("O=C([O-])c1ccc(Cl)cc1.[Na+]")
    x = preset.atom.featurize_atoms(mol)
    assert (x[:, :73].sum(axis=1) == 6).all()
    assert np.all(x[:, 73:75] >= 0) and np.all(x[:, 73:75] <= 1)
    e = preset.bond.featurize_bonds(mol)
    assert (e[:, :6].sum(axis=1) == 1).all() and (e[:, 8:].sum(axis=1) == 1).all()
