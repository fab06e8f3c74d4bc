import itertools

import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.batches import (
    batch_builder,
    edge_adjacency,
    edge_mask_mod,
    edge_pairs,
    edge_set_batch,
    node_adjacency,
    node_pairs,
    node_set_batch,
)
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES

# a salt, a spiro ring, zero-bond atoms, and small molecules
MOLECULES = ["CC(=O)[O-].[Na+]", "C1CCC2(C1)CCC2", "[Na+]", "C", "CCO", "[Cl-].[Na+]"]


def brute_force_tokens(graph):
    """Directed edges in DGL order, then a self-loop per bond-less atom."""
    src, dst = (t.tolist() for t in graph.edges())
    tokens = list(zip(src, dst))
    degree = (graph.in_degrees() + graph.out_degrees()).tolist()
    tokens += [(i, i) for i in range(graph.num_nodes()) if degree[i] == 0]
    return tokens


def test_edge_mask_equals_brute_force(graph_of):
    graphs = [graph_of(s) for s in MOLECULES]
    batch = edge_set_batch(dgl.batch(graphs))
    length = max(len(brute_force_tokens(g)) for g in graphs)
    assert batch.edge_mask.shape == (len(graphs), length, length)
    for b, graph in enumerate(graphs):
        tokens = brute_force_tokens(graph)
        assert int(batch.num_edges[b]) == len(tokens)
        expected = torch.zeros(length, length, dtype=torch.bool)
        for i, j in itertools.product(range(len(tokens)), repeat=2):
            expected[i, j] = bool(set(tokens[i]) & set(tokens[j]))
        assert torch.equal(batch.edge_mask[b], expected), MOLECULES[b]
        assert batch.pad_mask[b].sum() == len(tokens)
        assert not batch.pad_mask[b, len(tokens) :].any()
        assert batch.src[b, : len(tokens)].tolist() == [t[0] for t in tokens]
        assert batch.dst[b, : len(tokens)].tolist() == [t[1] for t in tokens]


def test_edge_tokens_are_source_target_bond_features(graph_of, canonical):
    graphs = [graph_of(s) for s in MOLECULES]
    batch = edge_set_batch(dgl.batch(graphs))
    d_n, d_e = len(canonical.atom), len(canonical.bond)
    assert batch.x.shape[-1] == 2 * d_n + d_e
    for b, graph in enumerate(graphs):
        x, e = graph.ndata[NODE_FEATURES], graph.edata[EDGE_FEATURES]
        for k, (i, j) in enumerate(brute_force_tokens(graph)):
            bond = e[k] if k < graph.num_edges() else torch.zeros(d_e)
            assert torch.equal(batch.x[b, k], torch.cat([x[i], x[j], bond]))
        assert not batch.x[b, len(brute_force_tokens(graph)) :].any()  # padding is zero


def test_bond_less_atoms_become_self_loop_tokens(graph_of):
    batch = edge_set_batch(dgl.batch([graph_of("[Na+]"), graph_of("CC(=O)[O-].[Na+]")]))
    # [Na+] alone: one token; acetate: 3 bonds -> 6 directed edges, plus Na -> 7
    assert batch.num_edges.tolist() == [1, 7]
    assert batch.src[1, 6] == batch.dst[1, 6] == 4  # sodium is atom 4


def test_padding_never_connects_graphs(graph_of):
    batch = edge_set_batch(dgl.batch([graph_of("C"), graph_of("CCCCCC")]))
    # graph 0 has no bonds: a single token; everything else in its row/column is padding
    assert batch.edge_mask[0].sum() == 1
    assert batch.edge_mask[0, 0, 0]


def test_node_adjacency_equals_brute_force(graph_of):
    graphs = [graph_of(s) for s in MOLECULES]
    batch = node_set_batch(dgl.batch(graphs))
    length = max(g.num_nodes() for g in graphs)
    for b, graph in enumerate(graphs):
        n = graph.num_nodes()
        expected = torch.zeros(length, length, dtype=torch.bool)
        for i in range(n):
            expected[i, i] = True
        for u, v in zip(*(t.tolist() for t in graph.edges())):
            expected[u, v] = True
        assert torch.equal(batch.adjacency[b], expected)
        assert torch.equal(batch.x[b, :n], graph.ndata[NODE_FEATURES])
        assert not batch.x[b, n:].any()
        assert batch.num_nodes[b] == n


def test_sparse_mask_option_and_device_move(graph_of):
    batch = edge_set_batch(dgl.batch([graph_of("CCO")]), dense_mask=False)
    assert batch.edge_mask is None
    moved = batch.to("cpu")
    assert torch.equal(moved.src, batch.src) and moved.edge_mask is None


def test_batch_builder_names():
    assert batch_builder("edge").func is edge_set_batch
    assert batch_builder("node").func is node_set_batch
    assert batch_builder("edge", "auto").keywords == {"dense_mask": True}
    assert batch_builder("edge", "sparse").keywords == {"dense_mask": False}
    with pytest.raises(ValueError, match="unknown set type"):
        batch_builder("bond")


def brute_force_pairs(token_lists, length, attend_to_self=True):
    """(query, key) pairs in flattened token indexing, by a loop over every pair of tokens."""
    pairs = set()
    for b, tokens in enumerate(token_lists):
        for i, j in itertools.product(range(len(tokens)), repeat=2):
            if set(tokens[i]) & set(tokens[j]) and (attend_to_self or i != j):
                pairs.add((b * length + i, b * length + j))
    return sorted(pairs)


@pytest.mark.parametrize("attend_to_self", [True, False])
def test_edge_pairs_equal_brute_force(graph_of, attend_to_self):
    graphs = [graph_of(s) for s in MOLECULES + ["[H][H]", "c1ccccc1"]]
    batch = edge_set_batch(dgl.batch(graphs))
    pairs = edge_pairs(batch.src, batch.dst, batch.pad_mask, attend_to_self)
    assert pairs.dtype == torch.int64
    token_lists = [brute_force_tokens(g) for g in graphs]
    expected = brute_force_pairs(token_lists, batch.pad_mask.shape[1], attend_to_self)
    assert [tuple(p) for p in pairs.t().tolist()] == expected  # sorted, each pair once


def test_edge_pairs_of_a_random_multigraph_equal_the_dense_mask():
    torch.manual_seed(0)
    src, dst = torch.randint(0, 6, (2, 4, 15))  # repeated and reversed edges, self-loops
    pad_mask = torch.rand(4, 15) > 0.3
    dense = edge_adjacency(src, dst, pad_mask)
    for attend_to_self in (True, False):
        expected = dense if attend_to_self else dense & ~torch.eye(15, dtype=torch.bool)
        query, key = torch.nonzero(expected.flatten(0, 1)).t()  # (b·L + q, k)
        flattened = torch.stack([query, query - query % 15 + key])
        assert torch.equal(edge_pairs(src, dst, pad_mask, attend_to_self), flattened)


def test_edge_pairs_of_an_empty_batch():
    empty = torch.zeros(2, 0, dtype=torch.int64)
    assert edge_pairs(empty, empty, torch.zeros(2, 0, dtype=torch.bool)).shape == (2, 0)


@pytest.mark.parametrize("attend_to_self", [True, False])
def test_edge_mask_mod_equals_the_dense_mask(graph_of, attend_to_self):
    from torch.nn.attention.flex_attention import create_mask

    batch = edge_set_batch(dgl.batch([graph_of(s) for s in MOLECULES]))
    size, length = batch.pad_mask.shape
    mask_mod = edge_mask_mod(batch.src, batch.dst, batch.pad_mask, attend_to_self)
    expected = batch.edge_mask
    if not attend_to_self:
        expected = expected & ~torch.eye(length, dtype=torch.bool)
    assert torch.equal(create_mask(mask_mod, size, 1, length, length, "cpu")[:, 0], expected)


@pytest.mark.parametrize("attend_to_self", [True, False])
def test_node_pairs_equal_brute_force(graph_of, attend_to_self):
    graphs = [graph_of(s) for s in MOLECULES]
    batch = node_set_batch(dgl.batch(graphs))
    length = batch.pad_mask.shape[1]
    expected = set()
    for b, graph in enumerate(graphs):
        if attend_to_self:
            expected |= {(b * length + i,) * 2 for i in range(graph.num_nodes())}
        for u, v in zip(*(t.tolist() for t in graph.edges())):
            expected.add((b * length + u, b * length + v))
    pairs = node_pairs(batch.edge_index, batch.pad_mask, attend_to_self)
    assert [tuple(p) for p in pairs.t().tolist()] == sorted(expected)


def test_node_batch_without_dense_mask_keeps_the_bonds(graph_of):
    graph = dgl.batch([graph_of("CCO"), graph_of("[Na+]"), graph_of("c1ccccc1")])
    dense, sparse = node_set_batch(graph), node_set_batch(graph, dense_mask=False)
    assert sparse.adjacency is None
    assert torch.equal(sparse.edge_index, dense.edge_index)
    assert torch.equal(node_adjacency(sparse.edge_index, sparse.pad_mask), dense.adjacency)
    length = dense.pad_mask.shape[1]  # benzene is graph 2: its bonds are 2·L + (0..5)
    assert dense.edge_index.shape == (2, 2 * (2 + 6))
    assert (dense.edge_index[:, -12:] // length == 2).all()
    assert torch.equal(sparse.to("cpu").edge_index, dense.edge_index)
