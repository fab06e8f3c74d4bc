"""3D ESA input graphs: radius edges against brute force, features, ESA tokens."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from chemgraph._dgl import dgl
from chemgraph.batches import edge_set_batch
from chemgraph.featurize import GaussianBasis, RadiusGraphFeaturizer
from chemgraph.graph_keys import ATOMIC_NUMBERS, DISTANCE, EDGE_FEATURES, NODE_FEATURES
from chemgraph.graphs import add_distance_features, atoms_to_radius_graph


def test_edges_and_features_match_brute_force():
    rng = np.random.default_rng(3)
    z = rng.choice([1, 6, 7, 8, 9], size=12)
    positions = rng.uniform(0, 6, size=(12, 3))
    featurizer = RadiusGraphFeaturizer(cutoff=3.0, num_basis=10)
    graph = atoms_to_radius_graph(z, positions, featurizer)
    expected = [
        (i, j)
        for i, j in itertools.product(range(12), repeat=2)
        if i != j and np.linalg.norm(positions[i] - positions[j]) < 3.0
    ]
    src, dst = graph.edges()
    assert list(zip(src.tolist(), dst.tolist())) == expected  # same pairs, (src, dst) order
    distance = np.array([np.linalg.norm(positions[j] - positions[i]) for i, j in expected])
    np.testing.assert_allclose(graph.edata[DISTANCE].numpy(), distance, rtol=1e-6)
    torch.testing.assert_close(
        graph.edata[EDGE_FEATURES],
        GaussianBasis(10, 3.0)(torch.tensor(distance, dtype=torch.float32)),
    )
    columns = {1: 0, 6: 1, 7: 2, 8: 3, 9: 4}
    assert graph.ndata[NODE_FEATURES].argmax(1).tolist() == [columns[int(v)] for v in z]
    assert graph.ndata[ATOMIC_NUMBERS].tolist() == z.tolist()


def test_esa_tokens_are_type_type_distance():
    featurizer = RadiusGraphFeaturizer(cutoff=2.0, num_basis=4)
    water = atoms_to_radius_graph(
        [8, 1, 1], [[0, 0, 0], [0.96, 0, 0], [-0.24, 0.93, 0]], featurizer
    )
    argon = atoms_to_radius_graph([18], [[0, 0, 0]], featurizer)  # no neighbour: self-loop token
    batch = edge_set_batch(dgl.batch([water, argon]))
    assert batch.x.shape == (2, 6, 2 * 6 + 4)
    # first token of water is O -> H: one-hot(O) ‖ one-hot(H) ‖ basis(0.96 Å)
    torch.testing.assert_close(batch.x[0, 0, :6], torch.tensor([0, 0, 0, 1, 0, 0.0]))
    torch.testing.assert_close(batch.x[0, 0, 6:12], torch.tensor([1, 0, 0, 0, 0, 0.0]))
    torch.testing.assert_close(batch.x[0, 0, 12:], GaussianBasis(4, 2.0)(torch.tensor([0.96]))[0])
    assert batch.num_edges.tolist() == [6, 1]
    torch.testing.assert_close(batch.x[1, 0, :6], torch.tensor([0, 0, 0, 0, 0, 1.0]))
    assert not batch.x[1, 0, 12:].any()


def test_rotation_and_translation_leave_features_unchanged():
    rng = np.random.default_rng(0)
    positions = rng.uniform(0, 3, size=(6, 3))
    z = [6, 1, 1, 8, 1, 7]
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    featurizer = RadiusGraphFeaturizer(cutoff=2.5, num_basis=8)
    first = atoms_to_radius_graph(z, positions, featurizer)
    second = atoms_to_radius_graph(z, positions @ q.T + 5.0, featurizer)
    assert torch.equal(torch.stack(first.edges()), torch.stack(second.edges()))
    torch.testing.assert_close(
        first.edata[EDGE_FEATURES], second.edata[EDGE_FEATURES], atol=1e-5, rtol=0
    )


def test_distance_features_at_batching_time_equal_eager_ones():
    rng = np.random.default_rng(1)
    featurizer = RadiusGraphFeaturizer(cutoff=2.5, num_basis=6)
    molecules = [(rng.choice([1, 6, 8], size=n), rng.uniform(0, 3, size=(n, 3))) for n in (3, 5)]
    eager = dgl.batch([atoms_to_radius_graph(z, p, featurizer) for z, p in molecules])
    lazy = dgl.batch([atoms_to_radius_graph(z, p, featurizer, False) for z, p in molecules])
    assert "e" not in lazy.edata
    add_distance_features(lazy, featurizer)
    torch.testing.assert_close(lazy.edata[EDGE_FEATURES], eager.edata[EDGE_FEATURES])


# A carbon at the origin with neighbours at 1.0 Å (H) and at 1.5 Å (O, N, H, H), and an H
# beyond the 2 Å cutoff. Index: element, position.
CAP_Z = [6, 1, 8, 1, 7, 1, 1]
CAP_POSITIONS = [
    [0.0, 0.0, 0.0],  # 0 C
    [1.0, 0.0, 0.0],  # 1 H  1.0 Å
    [0.0, 1.5, 0.0],  # 2 O  1.5 Å
    [0.0, 0.0, 1.5],  # 3 H  1.5 Å, y = 0
    [-1.5, 0.0, 0.0],  # 4 N  1.5 Å
    [0.0, -1.5, 0.0],  # 5 H  1.5 Å, y = -1.5: before atom 3 (same x, lower y)
    [3.0, 0.0, 0.0],  # 6 H  3.0 Å: beyond the cutoff
]


def _sources_of(graph, dst: int) -> list[int]:
    src, dsts = graph.edges()
    return sorted(src[dsts == dst].tolist())


def test_max_neighbors_keeps_nearest_then_heavier_then_lower_position():
    uncapped = atoms_to_radius_graph(CAP_Z, CAP_POSITIONS, RadiusGraphFeaturizer(cutoff=2.0))
    assert _sources_of(uncapped, 0) == [1, 2, 3, 4, 5]
    kept = {}
    for k in (1, 2, 3, 4, 5, 6):
        featurizer = RadiusGraphFeaturizer(cutoff=2.0, max_neighbors=k)
        graph = atoms_to_radius_graph(CAP_Z, CAP_POSITIONS, featurizer)
        kept[k] = _sources_of(graph, 0)
        assert graph.in_degrees().max().item() <= k
    assert kept[1] == [1]  # the nearest: H at 1.0 Å
    assert kept[2] == [1, 2]  # then, of the four at 1.5 Å, the heaviest: O
    assert kept[3] == [1, 2, 4]  # then N
    assert kept[4] == [1, 2, 4, 5]  # two H at 1.5 Å: the lower y (x equal) first
    assert kept[5] == kept[6] == [1, 2, 3, 4, 5]  # the cap no longer binds; atom 6 is too far


def test_max_neighbors_ties_do_not_depend_on_atom_order():
    # three H at 1.2 Å around a C, at 120°: equal distances up to rounding noise
    angles = np.deg2rad([90.0, 210.0, 330.0])
    positions = np.array(
        [[0.0, 0.0, 0.0]] + [[1.2 * np.cos(a), 1.2 * np.sin(a), 0.0] for a in angles]
    )
    z = np.array([6, 1, 1, 1])
    featurizer = RadiusGraphFeaturizer(cutoff=3.0, max_neighbors=2)
    kept = set()
    for order in itertools.permutations(range(4)):
        order = list(order)
        graph = atoms_to_radius_graph(z[order], positions[order], featurizer)
        src, dst = graph.edges()
        pairs = {
            (tuple(np.round(positions[order][s], 6)), tuple(np.round(positions[order][d], 6)))
            for s, d in zip(src.tolist(), dst.tolist())
        }
        kept.add(frozenset(pairs))
    assert len(kept) == 1  # the same edges (by atom position) for all 24 orders
    pairs = next(iter(kept))
    key = [tuple(np.round(p, 6)) for p in positions]
    # of the three equidistant H, the two with the lowest x
    assert sorted(s for s, d in pairs if d == key[0]) == sorted([key[1], key[2]])
    # into the H at 210°: the C, then of the H at 90° and at 330° (2.0785 Å, the latter nearer
    # by 1e-15 Å of rounding noise only: a tie) the one of lower x
    assert sorted(s for s, d in pairs if d == key[2]) == sorted([key[0], key[1]])


def test_atom_distance_features_reach_beyond_the_cutoff():
    featurizer = RadiusGraphFeaturizer(cutoff=1.5, num_basis=4, atom_distance_basis=5)
    positions = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    graph = atoms_to_radius_graph([6, 1, 8], positions, featurizer)
    x = graph.ndata["x"]
    assert x.shape == (3, 6 + 5)
    torch.testing.assert_close(x[:, :6], featurizer.atom(torch.tensor([6, 1, 8])))
    torch.testing.assert_close(x[:, 6:], featurizer.atom_distance_features(positions))
    assert graph.num_edges() == 2  # atom 2 has no neighbour within 1.5 Å ...
    assert x[2, 6:].sum() > 0  # ... but its distances to the others are in its features
