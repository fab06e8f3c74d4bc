"""MoleculeNet loaders on fixtures with the real files' quirks."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.data.datasets import load_dataset

from .conftest import FIXTURES

ROOT = FIXTURES / "moleculenet"


def _load(name):
    return load_dataset(name, root=ROOT, download=False)


def test_esol_trailing_spaces_stripped():
    table = _load("esol").parse().table
    assert table["smiles"].tolist() == ["CCO", "c1ccccc1", "Oc1ccccc1"]


def test_freesolv_crlf():
    dataset = _load("freesolv")
    assert dataset.parse().table["expt"].tolist() == [-5.10, 1.83]
    assert dataset.metric == "rmse" and dataset.task == "regression"


def test_hiv_blank_lines_and_rejected_smiles():
    dataset = _load("hiv")
    parsed = dataset.parse()
    assert parsed.table["smiles"].tolist() == ["CCO", "c1ccncc1"]
    assert parsed.table["row"].tolist() == [0, 2]
    (bad,) = parsed.rejected.to_dict("records")
    assert bad["row"] == 1 and bad["input"] == "N(C)(C)(C)(C)C"
    assert "Explicit valence for atom # 0 N, 5" in bad["reason"]
    assert dataset.metric == "roc_auc"


def test_tox21_multitask_missing_labels():
    dataset = _load("tox21")
    graphs, rejected = dataset.featurize("canonical", cache=False)
    assert graphs.labels.shape == (2, 12)
    assert np.isnan(graphs.labels[0, 3].item()) and graphs.labels[0, 2].item() == 1.0
    assert int(np.isnan(graphs.labels[1].numpy()).sum()) == 11
    assert rejected["input"].tolist() == ["[Al](Cl)(Cl)(Cl)(Cl)(Cl)Cl"]


def test_scaffold_and_random_splits_cover_the_dataset():
    dataset = _load("esol")
    graphs, _ = dataset.featurize("canonical", cache=False)
    for method in ("random", "scaffold"):
        parts = dataset.split(graphs, method=method)
        assert sorted(np.concatenate(list(parts.values())).tolist()) == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown split method"):
        dataset.split(method="cluster")
