"""Radius graphs (free and periodic) against brute force and ASE."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from ase import Atoms
from ase.build import fcc111
from ase.neighborlist import primitive_neighbor_list

from chemgraph.chem import embed_conformers, mol_from_smiles
from chemgraph.graph_keys import (
    ATOMIC_NUMBERS,
    DISTANCE,
    EDGE_FEATURES,
    NODE_FEATURES,
    OFFSET,
    POSITIONS,
    SHIFT,
    VECTOR,
)
from chemgraph.graphs import mol_to_radius_graph, periodic_radius_graph, radius_graph


def _brute_force(pos: np.ndarray, cutoff: float) -> dict[tuple[int, int], float]:
    edges = {}
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i == j:
                continue
            d = math.dist(pos[i], pos[j])
            if d < cutoff:
                edges[(i, j)] = d
    return edges


def _edges(graph) -> list[tuple[int, int]]:
    src, dst = graph.edges()
    return list(zip(src.tolist(), dst.tolist()))


def _check_against_brute_force(graph, pos: np.ndarray, cutoff: float) -> None:
    expected = _brute_force(pos, cutoff)
    edges = _edges(graph)
    assert edges == sorted(expected)  # same set, sorted by (src, dst)
    distance = graph.edata[DISTANCE].double().numpy()
    np.testing.assert_allclose(distance, [expected[e] for e in edges], rtol=1e-6)
    src, dst = (t.numpy() for t in graph.edges())
    np.testing.assert_allclose(
        graph.edata[VECTOR].double().numpy(), pos[dst] - pos[src], rtol=1e-6, atol=1e-6
    )
    assert set(edges) == {(j, i) for i, j in edges}  # both directions


def test_random_points_equal_brute_force():
    pos = np.random.default_rng(0).uniform(0, 8, size=(80, 3)).astype(np.float32)
    graph = radius_graph(torch.from_numpy(pos), 3.0)
    assert graph.num_nodes() == 80 and graph.num_edges() > 0
    assert graph.edata[DISTANCE].dtype == torch.float32
    assert graph.edata[VECTOR].shape == (graph.num_edges(), 3)
    torch.testing.assert_close(graph.ndata[POSITIONS], torch.from_numpy(pos))
    _check_against_brute_force(graph, pos.astype(np.float64), 3.0)


def test_conformer_equals_brute_force(canonical):
    result = embed_conformers(mol_from_smiles("CC(C)Cc1ccc(cc1)C(C)C(=O)O"), seed=0)
    mol = result.mol
    graph = mol_to_radius_graph(mol, canonical, cutoff=4.0)
    pos = mol.GetConformer().GetPositions()
    n = mol.GetNumAtoms()
    assert graph.num_nodes() == n == 33
    assert graph.ndata[NODE_FEATURES].shape == (n, len(canonical.atom))
    assert graph.ndata[ATOMIC_NUMBERS].tolist() == [a.GetAtomicNum() for a in mol.GetAtoms()]
    assert EDGE_FEATURES not in graph.edata  # radius edges are not bonds
    np.testing.assert_allclose(graph.ndata[POSITIONS].numpy(), pos, rtol=0, atol=1e-5)
    _check_against_brute_force(graph, pos, 4.0)


def test_conformer_id_and_missing_conformer(canonical):
    result = embed_conformers(mol_from_smiles("CCCC"), num_conformers=2, seed=3)
    second = mol_to_radius_graph(result.mol, canonical, 3.0, conformer_id=result.conformer_ids[1])
    np.testing.assert_allclose(
        second.ndata[POSITIONS].numpy(),
        result.mol.GetConformer(result.conformer_ids[1]).GetPositions(),
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="no conformer with id 99"):
        mol_to_radius_graph(result.mol, canonical, 3.0, conformer_id=99)
    with pytest.raises(ValueError, match="has no conformer"):
        mol_to_radius_graph(mol_from_smiles("CCO"), canonical, 3.0)


def test_cutoff_boundary_is_strict():
    # Distances 2.0 (exactly the cutoff) and 1.5: only the pair below the cutoff is connected.
    pos = torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.5, 0.0]])
    assert _edges(radius_graph(pos, 2.0)) == [(0, 2), (2, 0)]
    assert _edges(radius_graph(pos, 2.0001)) == [(0, 1), (0, 2), (1, 0), (2, 0)]  # 1-2: 2.5 Å
    # Same convention as ASE's neighbour list.
    one = Atoms("Cu", positions=[[0.0, 0.0, 0.0]], cell=np.eye(3) * 2.0, pbc=True)
    assert periodic_radius_graph(one, 2.0).num_edges() == 0


def test_small_and_degenerate_inputs():
    assert radius_graph(torch.zeros(0, 3), 2.0).num_edges() == 0
    single = radius_graph(torch.zeros(1, 3), 2.0)
    assert single.num_nodes() == 1 and single.num_edges() == 0
    twins = radius_graph(torch.zeros(2, 3), 2.0)  # coincident distinct atoms are connected
    assert _edges(twins) == [(0, 1), (1, 0)] and twins.edata[DISTANCE].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        radius_graph(torch.zeros(3, 2), 2.0)
    with pytest.raises(ValueError):
        radius_graph(torch.zeros(3, 3), 0.0)
    with pytest.raises(ValueError):
        radius_graph(torch.tensor([[0.0, 0.0, float("nan")]]), 1.0)


def test_self_loops():
    pos = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    graph = radius_graph(pos, 2.0, self_loops=True)
    assert _edges(graph) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)]
    assert graph.edata[DISTANCE].tolist() == [0.0, 1.0, 1.0, 0.0, 0.0]


def test_max_neighbors_keeps_nearest_incoming():
    pos = np.random.default_rng(1).uniform(0, 6, size=(50, 3))
    k = 3
    graph = radius_graph(pos, 4.0, max_neighbors=k)
    full = _brute_force(pos, 4.0)
    expected = set()
    for j in range(len(pos)):
        incoming = sorted((d, i) for (i, jj), d in full.items() if jj == j)
        expected.update((i, j) for _, i in incoming[:k])
    edges = _edges(graph)
    assert edges == sorted(expected)
    assert graph.in_degrees().max().item() == k


def test_periodic_single_atom_cubic_cell():
    atoms = Atoms("Cu", positions=[[0.3, 0.2, 0.1]], cell=np.eye(3) * 2.0, pbc=True)
    graph = periodic_radius_graph(atoms, 2.1)
    assert graph.num_nodes() == 1 and graph.num_edges() == 6
    assert _edges(graph) == [(0, 0)] * 6
    torch.testing.assert_close(graph.edata[DISTANCE], torch.full((6,), 2.0))
    shifts = graph.edata[SHIFT]
    assert shifts.dtype == torch.int64
    unit = [tuple(s * v for v in row) for row in np.eye(3, dtype=int).tolist() for s in (1, -1)]
    assert sorted(map(tuple, shifts.tolist())) == sorted(unit)
    assert shifts.tolist() == sorted(shifts.tolist())  # deterministic order
    torch.testing.assert_close(graph.edata[VECTOR], 2.0 * shifts.float())
    torch.testing.assert_close(graph.edata[OFFSET], 2.0 * shifts.float())
    assert graph.ndata[ATOMIC_NUMBERS].tolist() == [29]


def _slab() -> Atoms:
    slab = fcc111("Pt", size=(2, 2, 3), vacuum=6.0)  # pbc = (True, True, False)
    slab.rattle(stdev=0.05, seed=0)
    slab.positions[0] += slab.cell[0] * 1.0 + slab.cell[1] * -1.0  # one atom outside the cell
    return slab


def _brute_force_periodic(atoms: Atoms, cutoff: float) -> dict[tuple[int, int, tuple], float]:
    cell = atoms.cell.array
    pos = atoms.positions
    volume = abs(np.linalg.det(cell))
    ranges = []
    for axis in range(3):
        if not atoms.pbc[axis]:
            ranges.append([0])
            continue
        others = [cell[a] for a in range(3) if a != axis]
        height = volume / np.linalg.norm(np.cross(*others))
        # +2: the wrapped-out atom sits one cell away from the others
        m = math.ceil(cutoff / height) + 2
        ranges.append(range(-m, m + 1))
    out = {}
    for shift in itertools.product(*ranges):
        offset = np.asarray(shift) @ cell
        for i in range(len(pos)):
            for j in range(len(pos)):
                if i == j and shift == (0, 0, 0):
                    continue
                d = float(np.linalg.norm(pos[j] + offset - pos[i]))
                if d < cutoff:
                    out[(i, j, shift)] = d
    return out


def test_periodic_slab_equals_brute_force_over_shifts():
    slab = _slab()
    assert tuple(slab.pbc) == (True, True, False)
    graph = periodic_radius_graph(slab, 4.0)
    expected = _brute_force_periodic(slab, 4.0)
    src, dst = (t.tolist() for t in graph.edges())
    keys = [(i, j, tuple(s)) for i, j, s in zip(src, dst, graph.edata[SHIFT].tolist())]
    assert keys == sorted(expected)  # same neighbour set, sorted by (src, dst, shift)
    assert all(s[2] == 0 for _, _, s in keys)  # no images across the non-periodic axis
    np.testing.assert_allclose(
        graph.edata[DISTANCE].double().numpy(), [expected[k] for k in keys], rtol=1e-6
    )
    pos = slab.positions
    shift = graph.edata[SHIFT].numpy()
    vector = pos[dst] - pos[src] + shift @ slab.cell.array
    np.testing.assert_allclose(graph.edata[VECTOR].double().numpy(), vector, atol=1e-5)
    np.testing.assert_allclose(
        graph.edata[DISTANCE].double().numpy(), np.linalg.norm(vector, axis=1), rtol=1e-6
    )
    # Differentiable recomputation from the graph alone.
    recomputed = graph.ndata[POSITIONS][dst] - graph.ndata[POSITIONS][src] + graph.edata[OFFSET]
    torch.testing.assert_close(recomputed, graph.edata[VECTOR], atol=1e-4, rtol=0)


def test_periodic_equals_ase_primitive_neighbor_list():
    slab = _slab()
    i, j, d, shifts = primitive_neighbor_list(
        "ijdS", slab.pbc, slab.cell.array, slab.positions, 4.0
    )
    expected = sorted(zip(i.tolist(), j.tolist(), map(tuple, shifts.tolist())))
    graph = periodic_radius_graph(slab, 4.0)
    src, dst = (t.tolist() for t in graph.edges())
    got = list(zip(src, dst, map(tuple, graph.edata[SHIFT].tolist())))
    assert got == expected


def test_periodic_without_pbc_equals_radius_graph():
    pos = np.random.default_rng(2).uniform(0, 7, size=(40, 3))
    atoms = Atoms(f"C{len(pos)}", positions=pos)  # no cell, pbc all False
    periodic = periodic_radius_graph(atoms, 3.0)
    free = radius_graph(pos, 3.0)
    assert _edges(periodic) == _edges(free)
    torch.testing.assert_close(periodic.edata[DISTANCE], free.edata[DISTANCE])
    assert periodic.edata[SHIFT].abs().sum() == 0


def test_periodic_max_neighbors_and_self_loops():
    slab = _slab()
    limited = periodic_radius_graph(slab, 6.0, max_neighbors=5)
    assert limited.in_degrees().max().item() == 5
    full = periodic_radius_graph(slab, 6.0)
    src, dst = full.edges()
    for node in range(len(slab)):
        nearest = torch.sort(full.edata[DISTANCE][dst == node]).values[:5]
        kept = torch.sort(limited.edata[DISTANCE][limited.edges()[1] == node]).values
        torch.testing.assert_close(kept, nearest)
    loops = periodic_radius_graph(slab, 4.0, self_loops=True)
    assert loops.num_edges() == periodic_radius_graph(slab, 4.0).num_edges() + len(slab)
