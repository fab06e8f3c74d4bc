"""QM9-GW: strict layout, join with QM9 by index, seeded count split."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.data.datasets import dataset_card, load_dataset
from chemgraph.data.datasets.qm9_gw import QM9GWLayoutError, count_split, read_qm9_gw

from .conftest import FIXTURES

LAYOUT = dataset_card("qm9_gw").raw["layout"]


def test_reads_documented_layout_with_optional_evgw():
    table = read_qm9_gw(FIXTURES / "qm9_gw" / "db_new_qm9_gw.yaml", LAYOUT)
    assert table["qm9_index"].tolist() == [1, 2, 3]
    assert table["g0w0_homo"].tolist() == [-14.20, -10.60, -12.30]
    assert np.isnan(table.loc[1, "evgw_homo"]) and table.loc[2, "evgw_lumo"] == 1.80


def test_layout_mismatch_names_what_was_expected():
    with pytest.raises(QM9GWLayoutError, match=r"record 000001: expected key path \['G0W0', "
                       r"'HOMO'\].*found \['GW', 'PBE'\]"):  # fmt: skip
        read_qm9_gw(FIXTURES / "qm9_gw" / "bad_layout.yaml", LAYOUT)


def test_join_with_qm9_and_graphs():
    dataset = load_dataset("qm9_gw", root=FIXTURES / "qm9_gw", download=False,
                           qm9_root=FIXTURES / "qm9_original")  # fmt: skip
    joined = dataset.joined()
    assert joined["qm9_index"].tolist() == [1, 2]
    assert joined["homo"].tolist()[0] == pytest.approx(-0.3877 * 27.211386245988)
    graphs, _ = dataset.featurize(geometry="radius", cutoff=2.0, cache=False)
    assert graphs.rows.tolist() == [0, 1] and graphs.labels[1].tolist() == pytest.approx(
        [-10.6, 1.4]
    )


def test_count_split_sizes_and_seed():
    parts = count_split(100, {"train": 25, "valid": 5, "test": 10}, seed=0)
    assert [len(parts[k]) for k in ("train", "valid", "test")] == [25, 5, 10]
    assert len(np.unique(np.concatenate(list(parts.values())))) == 40
    again = count_split(100, {"train": 25, "valid": 5, "test": 10}, seed=0)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
    other = count_split(100, {"train": 25, "valid": 5, "test": 10}, seed=1)
    assert not np.array_equal(parts["test"], other["test"])
    with pytest.raises(ValueError, match="only 30 given"):
        count_split(30, {"train": 25, "valid": 5, "test": 10}, seed=0)
