import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.batches import (
    SparseGraphBatch,
    gcn_normalisation,
    sparse_graph_batch,
    two_hop_walks,
)
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graph_keys import EDGE_FEATURES
from chemgraph.graphs import mol_to_graph

OGB = get_preset("ogb")


def graph(smiles):
    return mol_to_graph(mol_from_smiles(smiles), OGB)


def test_gcn_normalisation_of_a_three_atom_chain():
    # 0 - 1 - 2: degrees 1, 2, 1 -> with self-loops 2, 3, 2
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    edge_weight, self_weight = gcn_normalisation(edge_index, 3)
    expected = 1 / torch.sqrt(torch.tensor([6.0, 6.0, 6.0, 6.0]))
    torch.testing.assert_close(edge_weight, expected)
    torch.testing.assert_close(self_weight, torch.tensor([1 / 2, 1 / 3, 1 / 2]))


def test_two_hop_walks_skip_bonded_pairs_and_backtracking():
    # CCO.[Na+], methylcyclopropane, cyclobutane
    batch = sparse_graph_batch(
        dgl.batch([graph("CCO.[Na+]"), graph("CC1CC1"), graph("C1CCC1")]), two_hop=True
    )
    pairs = sorted(zip(*batch.hop2_edge_index.tolist()))
    # CCO: 0 <-> 2; methylcyclopropane (atoms 4-7): methyl 4 reaches ring atoms 6, 7;
    # cyclobutane (8-11): opposite corners, two walks each
    expected = [(0, 2), (2, 0), (4, 6), (4, 7), (6, 4), (7, 4)]
    expected += [(8, 10), (8, 10), (9, 11), (9, 11), (10, 8), (10, 8), (11, 9), (11, 9)]
    assert pairs == sorted(expected)
    # features: the two bonds' features side by side (all single here: bond type 0)
    assert batch.hop2_edge_features.shape == (len(expected), 6)
    assert (batch.hop2_edge_features[:, [0, 3]] == 0).all()
    # degrees in hop-2 edges: the sodium (3) has none, cyclobutane atoms have 2
    assert batch.hop2_self_weight[3] == 1.0 and batch.hop2_self_weight[8] == pytest.approx(1 / 3)


def test_layout_and_optional_hop_two():
    batch = sparse_graph_batch(dgl.batch([graph("CCO"), graph("[Na+]")]))
    assert isinstance(batch, SparseGraphBatch)
    assert batch.graph_index.tolist() == [0, 0, 0, 1]
    assert batch.num_nodes.tolist() == [3, 1] and batch.batch_size == 2
    assert batch.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert batch.hop2_edge_index is None
    with pytest.raises(ValueError, match="two_hop=True"):
        batch.neighbourhood(2)
    assert batch.to("cpu").hop2_edge_index is None


def test_two_hop_walks_equal_the_non_backtracking_line_graph():
    smiles = ["CC(=O)Nc1ccc(O)cc1", "C1CC1C(=O)O", "C12C3C4C1C5C2C3C45", "[Na+].[Cl-]", "C"]
    batched = dgl.batch([graph(s) for s in smiles])
    src, dst = batched.edges()
    first, second = dgl.line_graph(batched, backtracking=False).edges()
    bonds = set(zip(src.tolist(), dst.tolist()))
    expected = sorted(
        (int(src[a]), int(dst[b]), int(a), int(b))
        for a, b in zip(first, second)
        if (int(src[a]), int(dst[b])) not in bonds
    )
    walks, features = two_hop_walks(batched)
    e = batched.edata[EDGE_FEATURES]
    found = []
    for (i, j), row in zip(walks.T.tolist(), features):
        # recover the two bonds from the walk and check the concatenated features
        middle = [
            (int(a), int(b))
            for a in (src == i).nonzero().flatten()
            for b in (dst == j).nonzero().flatten()
            if dst[a] == src[b] and torch.equal(torch.cat([e[a], e[b]]), row)
        ]
        assert middle
        found.append((i, j))
    assert sorted(found) == [w[:2] for w in expected]
