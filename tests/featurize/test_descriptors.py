"""chemgraph.featurize.descriptors: RDKit's 2D descriptor list, values by hand, NaN policy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rdkit
from rdkit import Chem
from rdkit.Chem import Descriptors

from chemgraph.featurize import descriptors as descriptors_module
from chemgraph.featurize.descriptors import RDKitDescriptors, parse_descriptors


@pytest.fixture(scope="module")
def rdkit2d():
    return parse_descriptors("rdkit2d")


def test_names_follow_rdkit_list_with_ipc_log_transformed(rdkit2d):
    names = [name for name, _ in Descriptors.descList]
    assert len(rdkit2d) == len(Descriptors.descList) == len(rdkit2d.column_names)
    assert list(rdkit2d.column_names) == ["Ipc_log1p" if name == "Ipc" else name for name in names]
    assert "Ipc" not in rdkit2d.column_names and "AvgIpc" in rdkit2d.column_names
    assert len(set(names)) == len(names)
    assert rdkit2d.name == "rdkit2d"


def test_ipc_is_log1p_of_rdkit_ipc(rdkit2d):
    j = rdkit2d.column_names.index("Ipc_log1p")
    # methane: Ipc = 0 -> 0, not -inf; ethane: Ipc = 2 (RDKit) -> ln 3
    assert rdkit2d(Chem.MolFromSmiles("C"))[j] == 0.0
    assert rdkit2d(Chem.MolFromSmiles("CC"))[j] == pytest.approx(math.log(3.0))
    # a 200-carbon chain: RDKit's Ipc is 3.4e56 (beyond float32), its log1p about 130
    chain = Chem.MolFromSmiles("C" * 200)
    assert Descriptors.Ipc(chain) == pytest.approx(3.3714e56, rel=1e-3)
    assert rdkit2d(chain)[j] == pytest.approx(130.16, abs=0.01)


def test_ethanol_by_hand(rdkit2d):
    row = dict(zip(rdkit2d.column_names, rdkit2d(Chem.MolFromSmiles("CCO"))))
    # MolWt: 2 x 12.011 (C) + 6 x 1.008 (H) + 15.999 (O) = 46.069 g/mol
    assert row["MolWt"] == pytest.approx(46.069, abs=1e-3)
    # TPSA (Ertl): one hydroxyl O = 20.23 A^2
    assert row["TPSA"] == pytest.approx(20.23, abs=1e-2)
    assert row["NumHDonors"] == 1 and row["NumHAcceptors"] == 1
    assert row["HeavyAtomCount"] == 3 and row["NumHeteroatoms"] == 1
    assert row["NumRotatableBonds"] == 0  # C-O bond to a terminal OH does not count
    assert row["RingCount"] == 0 and row["NumAromaticRings"] == 0
    assert row["FractionCSP3"] == 1.0
    assert row["NumValenceElectrons"] == 20  # 2 x 4 + 6 x 1 + 6


def test_benzene_by_hand(rdkit2d):
    row = dict(zip(rdkit2d.column_names, rdkit2d(Chem.MolFromSmiles("c1ccccc1"))))
    assert row["MolWt"] == pytest.approx(6 * 12.011 + 6 * 1.008, abs=1e-3)
    assert row["TPSA"] == 0.0
    assert row["RingCount"] == 1 and row["NumAromaticRings"] == 1
    assert row["NumAromaticCarbocycles"] == 1 and row["FractionCSP3"] == 0.0
    assert row["fr_benzene"] == 1


def test_batch_matches_rdkit_calcmoldescriptors(rdkit2d):
    smiles = ["CCO", "CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C"]
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    batch = rdkit2d.featurize(mols)
    assert batch.shape == (3, len(rdkit2d)) and batch.dtype == np.float64
    for i, mol in enumerate(mols):
        expected = Descriptors.CalcMolDescriptors(mol)
        expected["Ipc_log1p"] = math.log1p(expected.pop("Ipc"))
        np.testing.assert_allclose(batch[i], [expected[n] for n in rdkit2d.column_names])


def test_metal_complexes_have_nan_bcut_and_partial_charges(rdkit2d):
    names = rdkit2d.column_names
    bcut = [j for j, n in enumerate(names) if n.startswith("BCUT2D_")]
    charges = [j for j, n in enumerate(names) if n.endswith("PartialCharge")]
    assert len(bcut) == 8 and len(charges) == 4
    cisplatin, ferrocene = rdkit2d.featurize(
        [
            Chem.MolFromSmiles("[NH3][Pt]([NH3])(Cl)Cl"),
            Chem.MolFromSmiles("[Fe+2].c1cc[cH-]c1.c1cc[cH-]c1"),
        ]
    )
    assert np.isnan(cisplatin[bcut]).all() and np.isnan(cisplatin[charges]).all()
    assert np.isnan(ferrocene[bcut]).all() and np.isfinite(ferrocene[charges]).all()
    assert cisplatin[names.index("MolWt")] == pytest.approx(300.05, abs=0.01)


def test_failing_descriptors_give_nan_not_a_crash(rdkit2d):
    # [H][H]: RDKit's SPS divides by zero heavy atoms (raises); [Na+]: the BCUT2D_* of a
    # single atom are NaN. Everything else stays finite.
    mols = [Chem.MolFromSmiles(s) for s in ["[H][H]", "[Na+]", "CCO"]]
    batch = rdkit2d.featurize(mols)
    names = rdkit2d.column_names
    assert math.isnan(batch[0, names.index("SPS")])
    assert batch[0, names.index("MolWt")] == pytest.approx(2.016, abs=1e-3)
    bcut = [j for j, n in enumerate(names) if n.startswith("BCUT2D_")]
    assert bcut and np.isnan(batch[1, bcut]).all()
    assert batch[1, names.index("MolWt")] == pytest.approx(22.99, abs=1e-2)
    assert np.isfinite(batch[2]).all()


def test_raise_none_and_inf_become_nan(rdkit2d, monkeypatch):
    def boom(mol):
        raise RuntimeError("descriptor failed")

    fake = (
        ("raises", boom),
        ("none", lambda mol: None),
        ("inf", lambda mol: float("inf")),
        ("minus_inf", lambda mol: -math.inf),
        ("ok", lambda mol: mol.GetNumAtoms()),
    )
    monkeypatch.setattr(descriptors_module, "_DESC_LIST", fake)
    row = rdkit2d(Chem.MolFromSmiles("CCO"))
    assert row.shape == (5,)
    assert np.isnan(row[:4]).all() and row[4] == 3.0


def test_input_molecule_not_modified(rdkit2d):
    # Some descriptors cache properties (e.g. _GasteigerCharge) on the atoms they see.
    def props(mol):
        return list(mol.GetPropNames(True, True)), [
            list(a.GetPropNames(True, True)) for a in mol.GetAtoms()
        ]

    mol = Chem.MolFromSmiles("CC(=O)O")
    before = props(mol)
    rdkit2d(mol)
    assert props(mol) == before


def test_to_dict_round_trip_and_version(rdkit2d):
    d = rdkit2d.to_dict()
    assert d["rdkit_version"] == rdkit.__version__
    assert d["name"] == "rdkit2d" and d["length"] == len(rdkit2d) and d["dtype"] == "float64"
    assert d["column_names"] == list(rdkit2d.column_names)
    assert RDKitDescriptors.from_dict(d) == rdkit2d
    with pytest.raises(ValueError, match="RDKit 2020.09"):
        RDKitDescriptors.from_dict(
            {**d, "rdkit_version": "2020.09", "column_names": d["column_names"][:-1]}
        )


def test_edge_cases(rdkit2d):
    assert rdkit2d.featurize([]).shape == (0, len(rdkit2d))
    with pytest.raises(ValueError, match=r"mols\[0\] is None"):
        rdkit2d.featurize([None])
    with pytest.raises(ValueError, match="rdkit2d"):
        parse_descriptors("mordred")
    assert parse_descriptors(" RDKit2D ") == rdkit2d
