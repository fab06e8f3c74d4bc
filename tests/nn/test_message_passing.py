import math

import pytest
import torch

from chemgraph.batches import gcn_normalisation
from chemgraph.nn import (
    GCNConv,
    MessagePassingLayer,
    Neighbourhood,
    NeighbourhoodAggregation,
    SubsetBatchNorm,
    message_passing_layer,
)

# a triangle 0-1-2 with a tail 2-3, both directions of every bond
EDGES = torch.tensor([[0, 1, 1, 2, 2, 0, 2, 3], [1, 0, 2, 1, 0, 2, 3, 2]])
BONDS = [5, 6, 2]  # categories per bond-feature column (the ogb preset's)


def neighbourhood(edge_index, features, num_nodes, vocabulary_sizes=BONDS):
    edge_weight, self_weight = gcn_normalisation(edge_index, num_nodes)
    return Neighbourhood(edge_index, features, edge_weight, self_weight, vocabulary_sizes)


def random_graph(seed, num_nodes=12, num_bonds=20):
    """Random bonds (both directions, a few repeated, some atoms without any) and features."""
    generator = torch.Generator().manual_seed(seed)
    ends = torch.randint(0, num_nodes - 2, (2, num_bonds), generator=generator)
    ends = ends[:, ends[0] != ends[1]]
    edge_index = torch.cat([ends, ends.flip(0)], dim=1)
    features = torch.stack(
        [torch.randint(0, size, (edge_index.shape[1],), generator=generator) for size in BONDS],
        dim=1,
    )
    return edge_index, features


def reference_sums(x, edge_index, features, tables, kind, root=None, eps=None):
    """Per atom, edge by edge: the neighbourhood sums of the module docstring (no shortcut)."""
    num_nodes = x.shape[0]
    edge_weight, self_weight = gcn_normalisation(edge_index, num_nodes)
    out = []
    for i in range(num_nodes):
        total = (x[i] + root) * self_weight[i] if kind == "linear-gcn" else (1 + eps) * x[i]
        for e in range(edge_index.shape[1]):
            if edge_index[1, e] != i:
                continue
            j = edge_index[0, e]
            bond = sum(table[value] for table, value in zip(tables, features[e].tolist()))
            if kind == "linear-gcn":
                total = total + edge_weight[e] * (x[j] + bond)
            else:
                total = total + torch.relu(x[j] + bond)
        out.append(total)
    return torch.stack(out)


def reference_gcn_conv(conv, x, edge_index, features):
    """OGB's GCNConv edge by edge: n_ij · ReLU(u_j + e_ij) summed, plus ReLU(u_i + r) / d_i."""
    num_nodes = x.shape[0]
    edge_weight, self_weight = gcn_normalisation(edge_index, num_nodes)
    u = conv.linear(x)
    tables = [table.weight for table in conv.bond_encoder.tables]
    out = []
    for i in range(num_nodes):
        total = torch.relu(u[i] + conv.root) * self_weight[i]
        for e in range(edge_index.shape[1]):
            if edge_index[1, e] == i:
                bond = sum(table[value] for table, value in zip(tables, features[e].tolist()))
                total = total + edge_weight[e] * torch.relu(u[edge_index[0, e]] + bond)
        out.append(total)
    return conv.norm(torch.stack(out))


def test_gcn_normalisation_by_hand():
    # atom 2 has three bonds (d = 4), atoms 0 and 1 two (d = 3), atom 3 one (d = 2)
    edge_weight, self_weight = gcn_normalisation(EDGES, 4)
    torch.testing.assert_close(self_weight, torch.tensor([1 / 3, 1 / 3, 1 / 4, 1 / 2]))
    # bonds 0-1: 1/√(3·3); 1-2 and 2-0: 1/√(3·4); 2-3: 1/√(4·2), each in both directions
    expected = [1 / 3] * 2 + [1 / math.sqrt(12)] * 4 + [1 / math.sqrt(8)] * 2
    torch.testing.assert_close(edge_weight, torch.tensor(expected))


def test_ogb_gcn_layer_by_hand():
    """OGB's GCN (Hu et al. 2020, conv.py) on the path 0-1-2 with weights set by hand: the
    linear map comes first, every message goes through a ReLU, BatchNorm comes last."""
    conv = GCNConv(2, [2]).eval()
    with torch.no_grad():
        conv.linear.weight.copy_(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))  # swaps the channels
        conv.linear.bias.copy_(torch.tensor([0.1, -0.2]))
        conv.bond_encoder.tables[0].weight.copy_(torch.tensor([[0.5, -1.0], [-2.0, 0.25]]))
        conv.root.copy_(torch.tensor([0.1, -0.3]))
        conv.norm.running_mean.copy_(torch.tensor([0.0, 0.5]))
        conv.norm.running_var.copy_(torch.tensor([4.0, 1.0]))
    conv.norm.eps = 0.0
    x = torch.tensor([[1.0, -1.0], [2.0, 0.5], [-1.0, 3.0]])
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    features = torch.tensor([[0], [0], [1], [1]])  # bond 0-1: category 0, bond 1-2: category 1
    # d = (2, 3, 2), n_01 = n_12 = 1/√6; u = (x1 + 0.1, x0 − 0.2):
    # u0 = (-0.9, 0.8), u1 = (0.6, 1.8), u2 = (3.1, -1.2); e0 = (0.5, -1), e1 = (-2, 0.25)
    n = 1 / math.sqrt(6)
    aggregated = torch.tensor(
        [
            # ReLU(u1 + e0) = (1.1, 0.8); ReLU(u0 + r) / 2 = (0, 0.5) / 2
            [1.1 * n, 0.8 * n + 0.25],
            # ReLU(u0 + e0) = 0; ReLU(u2 + e1) = (1.1, 0); ReLU(u1 + r) / 3 = (0.7, 1.5) / 3
            [1.1 * n + 0.7 / 3, 0.5],
            # ReLU(u1 + e1) = (0, 2.05); ReLU(u2 + r) / 2 = (3.2, 0) / 2
            [1.6, 2.05 * n],
        ]
    )
    expected = (aggregated - torch.tensor([0.0, 0.5])) / torch.tensor([2.0, 1.0])  # BatchNorm
    with torch.no_grad():
        out = conv(x, neighbourhood(edge_index, features, 3, [2]))
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gcn_conv_equals_an_edge_by_edge_reference(seed):
    torch.manual_seed(seed)
    edge_index, features = random_graph(seed)
    x = torch.randn(12, 6)
    conv = GCNConv(6, BONDS).eval()
    with torch.no_grad():
        conv.norm.running_mean.normal_()
        hood = neighbourhood(edge_index, features, 12)
        expected = reference_gcn_conv(conv, x, edge_index, features)
        torch.testing.assert_close(conv(x, hood), expected, atol=1e-5, rtol=1e-5)
        nodes = torch.tensor([0, 3, 4, 10, 11])  # 10 and 11 have no bonds
        torch.testing.assert_close(conv(x, hood, nodes), expected[nodes], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["linear-gcn", "gin"])
def test_shared_aggregation_equals_an_edge_by_edge_reference(kind, seed):
    """The CSR product and per-atom bond counts (linear GCN), and the one-bag messages
    (GIN), give the plain edge-by-edge sums, for every atom and for chosen atoms."""
    torch.manual_seed(seed)
    edge_index, features = random_graph(seed)
    x = torch.randn(12, 6)
    aggregate = NeighbourhoodAggregation(kind, 6, BONDS)
    with torch.no_grad():
        if kind == "gin":
            aggregate.eps.fill_(0.3)
        tables = [table.weight for table in aggregate.bond_encoder.tables]
        expected = reference_sums(
            x, edge_index, features, tables, kind, getattr(aggregate, "root", None), 0.3
        )
        hood = neighbourhood(edge_index, features, 12)
        torch.testing.assert_close(aggregate(x, hood), expected, atol=1e-5, rtol=1e-5)
        nodes = torch.tensor([5, 0, 11, 5, 2])  # repeats allowed, any order
        torch.testing.assert_close(aggregate(x, hood, nodes), expected[nodes], atol=1e-5, rtol=1e-5)


def test_neighbourhood_distinct_bond_rows_and_adjacency_rows():
    features = torch.tensor([[0, 0, 0], [0, 0, 0], [3, 0, 1]] * 2 + [[1, 2, 1]] * 2)
    hood = neighbourhood(EDGES, features, 4)
    rows, index = hood.bond_rows
    assert rows.shape == (3, 3)
    torch.testing.assert_close(rows[index], hood.bond_indices)
    order = torch.argsort(EDGES[1], stable=True)  # edges by target; stacked tables' rows
    torch.testing.assert_close(hood.bond_indices, features[order] + torch.tensor([0, 5, 11]))
    edge_weight, self_weight = gcn_normalisation(EDGES, 4)
    dense = torch.diag(self_weight)
    dense[EDGES[1], EDGES[0]] = edge_weight
    # every row: the edges into the atom (by target, stable), then the self loop (bond row U = 3)
    every = hood.rows()
    assert every.pointer.tolist() == [0, 3, 6, 10, 12]
    assert every.columns.tolist() == [1, 2, 0, 0, 2, 1, 1, 0, 3, 2, 2, 3]
    loops = every.pointer[1:] - 1
    assert every.bonds[loops].tolist() == [3] * 4
    edges = torch.ones(12, dtype=torch.bool).index_fill_(0, loops, False)
    torch.testing.assert_close(every.bonds[edges], index)
    torch.testing.assert_close(dense_rows(every, 4), dense)
    chosen = hood.rows(torch.tensor([3, 0, 3]))  # any order, repeats allowed
    torch.testing.assert_close(dense_rows(chosen, 4), dense[[3, 0, 3]])
    # atom 3: bond 2-3 (features [1, 2, 1], bond row 2); atom 0: bonds 1-0 and 2-0 (row 0)
    assert chosen.pointer.tolist() == [0, 2, 5, 7]
    assert chosen.columns.tolist() == [2, 3, 1, 2, 0, 2, 3]
    assert chosen.bonds.tolist() == [2, 3, 0, 0, 3, 2, 3]
    x = torch.randn(4, 5)
    weighted = chosen.weights.unsqueeze(1) * x[chosen.columns]  # one row per entry
    torch.testing.assert_close(chosen.sums(weighted), dense[[3, 0, 3]] @ x)
    # atom 4 has no bonds (d = 1): its row is its self loop alone
    alone = neighbourhood(EDGES, features, 5).rows(torch.tensor([4, 2]))
    assert alone.pointer.tolist() == [0, 1, 5]
    assert alone.columns.tolist() == [4, 1, 0, 3, 2]
    torch.testing.assert_close(alone.weights[:1], torch.tensor([1.0]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        neighbourhood(EDGES, features + 5, 4)


def dense_rows(rows, num_nodes):
    """:class:`Rows` as a dense ``[M, N]`` matrix."""
    length = rows.pointer.diff()
    row = torch.repeat_interleave(torch.arange(length.numel()), length)
    dense = torch.zeros(length.numel(), num_nodes)
    return dense.index_put_((row, rows.columns), rows.weights, accumulate=True)


@pytest.mark.parametrize("kind", ["gcn", "linear-gcn", "gin"])
def test_layer_kinds_and_bond_less_batches(kind):
    layer = message_passing_layer(kind, 4, BONDS)
    assert isinstance(layer, GCNConv if kind == "gcn" else MessagePassingLayer)
    hood = neighbourhood(
        torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 3, dtype=torch.long), 3
    )
    out = layer.train()(torch.randn(3, 4), hood)
    assert out.shape == (3, 4) and torch.isfinite(out).all()
    with pytest.raises(ValueError, match="unknown message-passing kind"):
        message_passing_layer("gat", 4, BONDS)


def test_subset_batch_norm_accepts_one_row_in_training():
    norm = SubsetBatchNorm(3)
    with torch.no_grad():
        norm.running_mean.fill_(1.0)
        norm.running_var.fill_(4.0)
    norm.train()
    out = norm(torch.tensor([[3.0, 1.0, -1.0]]))
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.0, -1.0]]), atol=1e-4, rtol=0)
    assert norm.running_mean.tolist() == [1.0, 1.0, 1.0]  # running statistics untouched
    assert norm(torch.zeros(0, 3)).shape == (0, 3)
    two = norm(torch.tensor([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]))  # batch statistics
    torch.testing.assert_close(two[:, 0], torch.tensor([-1.0, 1.0]), atol=1e-3, rtol=0)
