from collections import deque

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.graphs import add_shortest_paths, has_shortest_paths
from chemgraph.graphs.shortest_paths import BOND, PAIR, shortest_paths


def bfs_distances(num_nodes, src, dst):
    """Brute force: one breadth-first search per atom; -1 = unreachable."""
    neighbours = [[] for _ in range(num_nodes)]
    for u, v in zip(src.tolist(), dst.tolist()):
        neighbours[u].append(v)
    out = np.full((num_nodes, num_nodes), -1)
    for root in range(num_nodes):
        out[root, root] = 0
        queue = deque([root])
        while queue:
            u = queue.popleft()
            for v in neighbours[u]:
                if out[root, v] < 0:
                    out[root, v] = out[root, u] + 1
                    queue.append(v)
    return out


SMILES = [
    "CC(=O)Nc1ccc(O)cc1",  # paracetamol: ring and chain
    "C1CCC2(C1)CCC2",  # spiro rings
    "CC(=O)[O-].[Na+]",  # salt: the ion is unreachable
    "[Na+].[Cl-]",
    "[He]",  # a single atom
    "CCCCCCCCCCCC",  # a chain longer than the kept path
]


@pytest.mark.parametrize("smiles", SMILES)
def test_distances_and_paths_match_breadth_first_search(graph_of, smiles):
    graph = graph_of(smiles)
    src, dst = graph.edges()
    n = graph.num_nodes()
    expected = bfs_distances(n, src, dst)
    cached = add_shortest_paths(graph, max_path_edges=4)
    pair_src, pair_dst = (t.long() for t in cached.edges(etype=PAIR))
    distance = cached.edges[PAIR].data["distance"].long()
    path = cached.edges[PAIR].data["path"].long()
    found = np.full((n, n), -1)
    np.fill_diagonal(found, 0)
    found[pair_src.numpy(), pair_dst.numpy()] = distance.numpy()
    np.testing.assert_array_equal(found, expected)
    # every cached path walks bonds from i towards j, min(d, 4) of them, then -1
    for i, j, d, edges in zip(pair_src.tolist(), pair_dst.tolist(), distance.tolist(), path):
        steps = min(d, 4)
        assert (edges[steps:] == -1).all() and (edges[:steps] >= 0).all()
        at = i
        for hop, edge in enumerate(edges[:steps].tolist()):
            assert src[edge] == at
            at = int(dst[edge])
            assert expected[at, j] == d - hop - 1  # each step gets one bond closer
        if d <= 4:
            assert at == j


def test_hand_computed_ethanol(graph_of):
    cached = add_shortest_paths(graph_of("CCO"), max_path_edges=2)
    pairs = list(zip(*(t.tolist() for t in cached.edges(etype=PAIR))))
    assert pairs == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert cached.edges[PAIR].data["distance"].tolist() == [1, 2, 1, 1, 2, 1]
    # bonds: 0 = C0->C1, 1 = C1->C0, 2 = C1->O2, 3 = O2->C1
    assert cached.edges[PAIR].data["path"].tolist() == [
        [0, -1], [0, 2], [1, -1], [2, -1], [3, 1], [3, -1]
    ]  # fmt: skip


def test_cache_keeps_features_and_survives_batching_and_saving(tmp_path, graph_of):
    graph = graph_of("c1ccccc1O")
    cached = add_shortest_paths(graph)
    assert has_shortest_paths(cached) and not has_shortest_paths(graph)
    torch.testing.assert_close(cached.ndata["x"], graph.ndata["x"])
    torch.testing.assert_close(cached.edges[BOND].data["e"], graph.edata["e"])
    assert cached.edges[PAIR].data["distance"].dtype == torch.int16
    batched = dgl.batch([cached, add_shortest_paths(graph_of("[Na+]"))])
    assert batched.batch_num_edges(PAIR).tolist() == [42, 0]
    dgl.save_graphs(str(tmp_path / "g.bin"), [cached])
    loaded = dgl.load_graphs(str(tmp_path / "g.bin"))[0][0]
    torch.testing.assert_close(loaded.edges[PAIR].data["path"], cached.edges[PAIR].data["path"])


def test_bad_inputs_are_refused_with_a_reason(graph_of):
    graph = graph_of("CCO")
    with pytest.raises(ValueError, match="already holds"):
        add_shortest_paths(add_shortest_paths(graph))
    with pytest.raises(ValueError, match="batch of 2"):
        add_shortest_paths(dgl.batch([graph, graph]))
    with pytest.raises(ValueError, match="at least 0"):
        add_shortest_paths(graph, max_path_edges=-1)


def test_function_form_on_a_disconnected_square():
    # 0-1-2-3-0 square plus an isolated node 4
    src = np.array([0, 1, 1, 2, 2, 3, 3, 0])
    dst = np.array([1, 0, 2, 1, 3, 2, 0, 3])
    pair_src, pair_dst, distance, path = shortest_paths(5, src, dst, 3)
    assert 4 not in pair_src and 4 not in pair_dst
    assert dict(zip(zip(pair_src.tolist(), pair_dst.tolist()), distance.tolist()))[(0, 2)] == 2
    assert path.shape == (12, 3)
