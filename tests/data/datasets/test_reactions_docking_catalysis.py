"""USPTO, DOCKSTRING and OC20 loaders on fixtures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chemgraph.data.datasets import dataset_card, load_dataset
from chemgraph.data.datasets.dockstring import DockstringDataset
from chemgraph.data.datasets.oc20 import oc20_tags
from chemgraph.data.datasets.uspto import read_uspto_50k, read_uspto_mit
from chemgraph.featurize import GaussianBasis
from chemgraph.graph_keys import DISTANCE, EDGE_FEATURES, TAGS

from .conftest import FIXTURES


def test_uspto_mit_roles_edits_and_rejects():
    table, rejected = read_uspto_mit(FIXTURES / "uspto" / "test.txt", split="test")
    first, second = table.to_dict("records")
    assert (first["reactants"], first["reagents"], first["products"]) == (
        "CO.CC(=O)Cl", "[Na+]", "COC(C)=O",
    )  # fmt: skip
    assert first["edits"] == "2-4-1.0;4-6-0.0"
    assert second["reagents"] == "[K+].C1CCOC1"
    assert (second["row"], table["split"].unique().tolist()) == (1, ["test"])
    (bad,) = rejected.to_dict("records")
    assert bad["row"] == 3 and "Explicit valence" in bad["reason"]


def test_uspto_50k_classes_and_header_check(tmp_path):
    table, rejected = read_uspto_50k(FIXTURES / "uspto" / "raw_test.csv")
    assert table["reaction_class"].tolist()[1] == 6 and table["reaction_class"].isna().tolist()[0]
    assert table["reactants"].tolist()[0] == "CC(C)(C)OC(=O)OC(=O)OC(C)(C)C.CN"
    assert rejected["reason"].tolist() == ["reaction class 'X' is neither 1-10 nor UNK"]
    bad = tmp_path / "bad.csv"
    bad.write_text("id,reaction\n1,CC>>CC\n")
    with pytest.raises(ValueError, match="expected header"):
        read_uspto_50k(bad)


def test_uspto_dataset_official_splits_from_local_copy():
    dataset = load_dataset("uspto_mit", root=FIXTURES / "uspto", download=False,
                           splits=["valid", "test"])  # fmt: skip
    parts = dataset.split()
    assert [len(parts[k]) for k in ("train", "valid", "test")] == [0, 1, 2]
    graphs, rejected = dataset.featurize(cache=False)
    assert len(graphs) == 3 and graphs.num_tasks == 0 and len(rejected) == 1


def test_dockstring_targets_split_and_validation_size():
    card = dataset_card("dockstring")
    card.split["validation_size"] = 2  # 20,000 on the real data
    dataset = DockstringDataset(card, FIXTURES / "dockstring", download=False)
    parsed = dataset.parse()
    assert parsed.rejected["input"].tolist() == ["C1CC"]
    assert dataset.target_columns == ["PARP1", "F2", "KIT", "ESR2", "PGR"]
    graphs, _ = dataset.featurize(cache=False)
    assert np.isnan(graphs.labels[1, 4].item())  # PGR missing for benzene
    parts = dataset.split(graphs)
    assert [len(parts[k]) for k in ("train", "valid", "test")] == [1, 2, 2]
    again = dataset.split(graphs)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)  # seeded
    test_smiles = [graphs.smiles[i] for i in parts["test"]]
    assert test_smiles == ["c1ccncc1", "CCN"]


def test_oc20_tag_remapping():
    fixed = np.array([True, True, False, False, False])
    assert oc20_tags(np.array([0, 0, 0, 0, 1]), fixed).tolist() == [0, 0, 1, 1, 2]
    assert oc20_tags(np.array([0, 0, 1, 1, 2]), fixed).tolist() == [0, 0, 1, 1, 2]
    with pytest.raises(ValueError, match="pass tag_scheme"):
        oc20_tags(np.array([0, 1]), np.array([False, False]))
    assert oc20_tags(np.array([0, 1]), np.array([False, False]), "oc20").tolist() == [0, 1]


def test_oc20_extxyz_frame_graph():
    dataset = load_dataset("oc20", root=FIXTURES / "oc20", download=False)
    (record,) = dataset.parse().table.to_dict("records")
    assert record["tags"].tolist() == [0, 0, 1, 1, 2]
    assert record["energy"] == -12.5 and record["pbc"].all()
    graphs, _ = dataset.featurize(cutoff=2.5, num_basis=4, max_neighbors=None, cache=False)
    graph = graphs.graphs[0]
    assert graph.ndata[TAGS].tolist() == [0, 0, 1, 1, 2]
    assert graph.edata[EDGE_FEATURES].shape == (graph.num_edges(), 4)
    expected = GaussianBasis(4, 2.5)(graph.edata[DISTANCE])
    assert graph.num_edges() > 0 and torch.allclose(graph.edata[EDGE_FEATURES], expected)
    assert graphs.labels.tolist() == [[-12.5]]
