"""Every loader on the real files in ../shared/data (skipped when the folder is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chemgraph.data.datasets import load_dataset
from chemgraph.data.datasets.qm9 import read_qm9_file
from chemgraph.data.datasets.uspto import read_uspto_50k, read_uspto_mit

SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"  # as tests/conftest.py

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present"),
]

# MANIFEST.md: rows, and SMILES RDKit rejects
MOLECULENET = {"esol": (1128, 0), "freesolv": (642, 0), "lipophilicity": (4200, 0),
               "bbbp": (2050, 11), "bace": (1513, 0), "hiv": (41127, 7), "tox21": (7831, 8),
               "clintox": (1484, 4)}  # fmt: skip


@pytest.mark.parametrize("name", ["esol", "freesolv", "bbbp", "clintox", "tox21"])
def test_moleculenet_row_counts_and_rejects(name):
    parsed = load_dataset(name, root=SHARED_DATA / "moleculenet", download=False).parse()
    rows, rejected = MOLECULENET[name]
    assert (len(parsed.table) + len(parsed.rejected), len(parsed.rejected)) == (rows, rejected)


def test_qm9_formats_agree_on_shared_molecules():
    extxyz, _ = read_qm9_file(SHARED_DATA / "qm9" / "qm9pack_subset1k.extxyz.gz")
    deepchem, _ = read_qm9_file(SHARED_DATA / "qm9" / "deepchem_format" / "qm9_head10.csv")
    assert len(extxyz) == 1000
    both = deepchem.merge(extxyz, on="qm9_index", suffixes=("_dc", "_xyz"))
    assert len(both) >= 1  # gdb_10 (CC#N) is in both
    for target in ("homo", "u0", "u0_atom", "g298_atom", "A"):
        np.testing.assert_allclose(both[f"{target}_dc"], both[f"{target}_xyz"], atol=1e-3)
    sdf, rejected = read_qm9_file(SHARED_DATA / "qm9" / "deepchem_format" / "qm9_mini.sdf")
    assert (len(sdf), rejected["input"].tolist()) == (20, ["record 19"])  # gdb_20_invalid


def test_uspto_real_splits():
    table, rejected = read_uspto_mit(SHARED_DATA / "uspto" / "uspto_mit_test_human.txt")
    assert len(table) + len(rejected) == 80
    table, rejected = read_uspto_50k(SHARED_DATA / "uspto" / "uspto50k_test_class.csv.gz")
    assert (len(table), len(rejected)) == (5007, 0)
    assert table["reaction_class"].value_counts()[1] == 1516


def test_oc20_frame_tags_remapped():
    dataset = load_dataset("oc20", root=SHARED_DATA / "oc20", download=False)
    (record,) = dataset.parse().table.to_dict("records")
    assert record["energy"] == pytest.approx(-135.66393572)
    assert np.bincount(record["tags"]).tolist() == [24, 8, 2]
