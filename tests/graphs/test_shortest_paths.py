from collections import deque

import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graph_keys import BOND, EDGE_FEATURES, NODE_FEATURES, PAIR, PATH, SPD
from chemgraph.graphs import add_shortest_paths, has_shortest_paths, mol_to_graph
from chemgraph.graphs.shortest_paths import shortest_paths


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
    distance = cached.edges[PAIR].data[SPD].long()
    path = cached.edges[PAIR].data[PATH].long()
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
    assert cached.edges[PAIR].data[SPD].tolist() == [1, 2, 1, 1, 2, 1]
    # bonds: 0 = C0->C1, 1 = C1->C0, 2 = C1->O2, 3 = O2->C1
    assert cached.edges[PAIR].data[PATH].tolist() == [
        [0, -1], [0, 2], [1, -1], [2, -1], [3, 1], [3, -1]
    ]  # fmt: skip


def test_cache_keeps_features_and_survives_batching_and_saving(tmp_path, graph_of):
    graph = graph_of("c1ccccc1O")
    cached = add_shortest_paths(graph)
    assert has_shortest_paths(cached) and not has_shortest_paths(graph)
    torch.testing.assert_close(cached.ndata[NODE_FEATURES], graph.ndata[NODE_FEATURES])
    torch.testing.assert_close(cached.edges[BOND].data[EDGE_FEATURES], graph.edata[EDGE_FEATURES])
    assert cached.edges[PAIR].data[SPD].dtype == torch.int16
    batched = dgl.batch([cached, add_shortest_paths(graph_of("[Na+]"))])
    assert batched.batch_num_edges(PAIR).tolist() == [42, 0]
    dgl.save_graphs(str(tmp_path / "g.bin"), [cached])
    loaded = dgl.load_graphs(str(tmp_path / "g.bin"))[0][0]
    torch.testing.assert_close(loaded.edges[PAIR].data[PATH], cached.edges[PAIR].data[PATH])


def test_bad_inputs_are_refused_with_a_reason(graph_of):
    graph = graph_of("CCO")
    with pytest.raises(ValueError, match="already holds"):
        add_shortest_paths(add_shortest_paths(graph))
    with pytest.raises(ValueError, match="batch of 2"):
        add_shortest_paths(dgl.batch([graph, graph]))
    with pytest.raises(ValueError, match="at least 0"):
        add_shortest_paths(graph, max_path_edges=-1)


def test_function_form_on_a_disconnected_square():
    # 0-1-2-3-0 square plus an isolated node 4; edges 0-1 and 1-2 have key 1, the others 0
    src = np.array([0, 1, 1, 2, 2, 3, 3, 0])
    dst = np.array([1, 0, 2, 1, 3, 2, 0, 3])
    keys = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    pair_src, pair_dst, distance, path = shortest_paths(5, src, dst, keys, 3)
    assert 4 not in pair_src and 4 not in pair_dst
    pairs = list(zip(pair_src.tolist(), pair_dst.tolist()))
    assert dict(zip(pairs, distance.tolist()))[(0, 2)] == 2
    assert path.shape == (12, 3)
    # 0 -> 2: via 3 (keys 0, 0; edges 7 = 0->3, 5 = 3->2), not via 1 (keys 1, 1)
    assert path[pairs.index((0, 2))].tolist() == [7, 5, -1]
    # 1 -> 3: via 0 (keys 1, 0) or via 2 (keys 1, 0): equal sequences, either is right
    assert path[pairs.index((1, 3))].tolist() in ([1, 7, -1], [2, 4, -1])
    # with the keys swapped the other way round wins
    _, _, _, swapped = shortest_paths(5, src, dst, 1 - keys, 3)
    assert swapped[pairs.index((0, 2))].tolist() == [0, 2, -1]


def _all_shortest_paths(src, dst, start, goal, length):
    """Every shortest path start -> goal as a list of edge ids (brute force)."""
    paths, frontier = [], [(start, [])]
    while frontier:
        node, taken = frontier.pop()
        if node == goal:
            paths.append(taken)
        elif len(taken) < length:
            frontier += [(int(dst[e]), [*taken, e]) for e in np.flatnonzero(src == node)]
    return [p for p in paths if len(p) == length]


@pytest.mark.parametrize(
    "smiles",
    [
        "C1=CCC=CC1",  # cyclohexa-1,4-diene: C=C-C and C-C=C between opposite atoms
        "O=C1C=CC(=O)N1CC1=CCC=C1",  # maleimide and cyclopentadiene rings
        "c1ccc2c(c1)CC=CC2",  # fused rings with different bonds
        "C1CC2CCC1CC2",  # bicyclo[2.2.2]octane: three equal ways
    ],
)
def test_kept_path_has_the_smallest_bond_features_and_ignores_atom_order(graph_of, smiles):
    graph = graph_of(smiles)
    cached = add_shortest_paths(graph, max_path_edges=3)
    src, dst = (t.numpy() for t in graph.edges())
    rows = [tuple(row) for row in graph.edata[EDGE_FEATURES].tolist()]
    pair_src, pair_dst = (t.numpy() for t in cached.edges(etype=PAIR))
    distance = cached.edges[PAIR].data[SPD].numpy()
    path = cached.edges[PAIR].data[PATH].numpy()
    for i, j, d, kept in zip(pair_src, pair_dst, distance, path):
        candidates = _all_shortest_paths(src, dst, i, j, d)
        smallest = min([rows[e] for e in p[:3]] for p in candidates)
        assert [rows[e] for e in kept[: min(d, 3)]] == smallest
    # the same molecule from another atom: the same feature sequence for every atom pair
    mol = mol_from_smiles(smiles)
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(mol.GetNumAtoms()).tolist()
        other = mol_to_graph(Chem.RenumberAtoms(mol, order), get_preset("canonical"))
        assert _feature_paths(other, order) == _feature_paths(graph, list(range(len(order))))


def _feature_paths(graph, order):
    """{(original i, original j): bond feature rows along the kept path}."""
    cached = add_shortest_paths(graph, max_path_edges=3)
    rows = [tuple(row) for row in graph.edata[EDGE_FEATURES].tolist()]
    pair_src, pair_dst = (t.tolist() for t in cached.edges(etype=PAIR))
    path = cached.edges[PAIR].data[PATH].tolist()
    return {
        (order[i], order[j]): [rows[e] for e in kept if e >= 0]
        for i, j, kept in zip(pair_src, pair_dst, path)
    }
