import torch

from chemgraph.batches import gcn_normalisation
from chemgraph.nn import (
    MessagePassingLayer,
    SubsetBatchNorm,
    gcn_aggregate,
    gin_aggregate,
)

# a triangle 0-1-2 with a tail 2-3, both directions of every bond
EDGES = torch.tensor([[0, 1, 1, 2, 2, 0, 2, 3], [1, 0, 2, 1, 0, 2, 3, 2]])


def test_gcn_aggregate_equals_the_normalised_adjacency_with_self_loops():
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    edge_embedding = torch.randn(8, 5)
    root = torch.randn(5)
    edge_weight, self_weight = gcn_normalisation(EDGES, 4)
    out = gcn_aggregate(x, EDGES, edge_embedding, edge_weight, self_weight, root)
    # dense: D^-1/2 (A + I) D^-1/2 applied to x, plus the normalised bond and root terms
    adjacency = torch.zeros(4, 4)
    adjacency[EDGES[1], EDGES[0]] = 1.0
    degree = adjacency.sum(1) + 1
    norm = degree.rsqrt().unsqueeze(1) * (adjacency + torch.eye(4)) * degree.rsqrt()
    expected = norm @ x + (root / degree.unsqueeze(1))
    for e, (s, t) in enumerate(EDGES.T.tolist()):
        expected[t] += edge_embedding[e] / torch.sqrt(degree[s] * degree[t])
    torch.testing.assert_close(out, expected)


def test_gin_aggregate_by_a_loop():
    torch.manual_seed(1)
    x = torch.randn(4, 3)
    edge_embedding = torch.randn(8, 3)
    eps = torch.tensor(0.3)
    out = gin_aggregate(x, EDGES, edge_embedding, eps)
    expected = 1.3 * x
    for e, (s, t) in enumerate(EDGES.T.tolist()):
        expected[t] += torch.relu(x[s] + edge_embedding[e])
    torch.testing.assert_close(out, expected)


def test_gcn_layer_is_aggregate_then_linear_then_batch_norm():
    torch.manual_seed(2)
    layer = MessagePassingLayer("gcn", 6, [5, 6, 2]).eval()
    x = torch.randn(4, 6)
    features = torch.tensor([[0, 0, 0], [0, 0, 0], [3, 0, 1]] * 2 + [[1, 2, 1]] * 2)
    edge_weight, self_weight = gcn_normalisation(EDGES, 4)
    aggregated = gcn_aggregate(
        x, EDGES, layer.aggregate.bond_encoder(features), edge_weight, self_weight,
        layer.aggregate.root,
    )  # fmt: skip
    linear, norm = layer.transform
    expected = (linear(aggregated) - norm.running_mean) / torch.sqrt(norm.running_var + norm.eps)
    expected = expected * norm.weight + norm.bias
    out = layer(x, EDGES, features, edge_weight, self_weight)
    torch.testing.assert_close(out, expected)


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
