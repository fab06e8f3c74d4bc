"""Radius graphs: point clouds, molecular conformers and periodic structures -> DGL graphs.

A radius graph connects every ordered pair of distinct atoms ``(i, j)`` closer than a cutoff,
the way 3D models (SchNet, Graphormer-3D, ESA/NSA on Open Catalyst data, Buterez et al. 2024
SI 9) build their edges; PyTorch Geometric's ``radius_graph`` and ASE's ``neighbor_list`` are
the reference behaviours. Radius edges are not bonds: they carry geometry (``edata["distance"]``,
``edata["vector"]``), no bond features, and a bonded pair farther apart than the cutoff has no
edge. Expand the distances with :class:`chemgraph.featurize.GaussianBasis`.

Conventions shared by every function here:

- Edge ``src -> dst`` exists iff ``0 < |pos[dst] - pos[src]| < cutoff``, strictly below the
  cutoff, as in ASE's ``neighbor_list`` (a pair at exactly ``cutoff`` has no edge; its
  :func:`~chemgraph.featurize.cosine_cutoff` envelope would be 0 anyway). Coincident distinct
  atoms (distance 0) are connected. Self-loops only on request.
- Both directions: ``i -> j`` is an edge iff ``j -> i`` is (unless ``max_neighbors`` cuts).
- ``edata["vector"] = pos[dst] - pos[src]`` (+ the periodic image offset), pointing from the
  source atom to the destination atom; ``edata["distance"]`` is its norm. Both are computed in
  float64 and stored as float32, in Å.
- Edges are in a deterministic order: sorted by ``src``, then ``dst`` (then the image shift,
  for periodic graphs), whatever the input order of the neighbour search.

Public API
----------
- :func:`radius_graph` — ``float32 [N, 3]`` positions -> graph.
- :func:`mol_to_radius_graph` — RDKit conformer + featurizer preset -> graph.
- :func:`periodic_radius_graph` — ``ase.Atoms`` with a cell and pbc -> graph with image shifts.
- :func:`atoms_to_radius_graph` — atomic numbers + positions -> the 3D ESA input graph (atom
  types, Gaussian distance features; :class:`chemgraph.featurize.RadiusGraphFeaturizer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.featurize import FeaturizerPreset, GaussianBasis, RadiusGraphFeaturizer
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

if TYPE_CHECKING:  # ASE is imported lazily: only periodic graphs need it.
    import ase

__all__ = [
    "add_distance_features",
    "atoms_to_radius_graph",
    "mol_to_radius_graph",
    "periodic_radius_graph",
    "radius_graph",
]

# Rows of the distance matrix computed at once: keeps memory at ~_BLOCK_ELEMENTS float64
# values whatever N.
_BLOCK_ELEMENTS = 1 << 22

# With max_neighbors, distances equal to this many decimals (Å) tie: rounding noise of the same
# distance computed between symmetric atoms does not decide which are kept.
_TIE_DECIMALS = 6


def _check_cutoff(cutoff: float) -> float:
    cutoff = float(cutoff)
    if not (cutoff > 0 and np.isfinite(cutoff)):
        raise ValueError(f"cutoff must be a finite number > 0 Å, got {cutoff}")
    return cutoff


def _check_max_neighbors(max_neighbors: int | None) -> None:
    if max_neighbors is not None and max_neighbors < 0:
        raise ValueError(f"max_neighbors must be >= 0 or None, got {max_neighbors}")


def _as_positions(positions: torch.Tensor | np.ndarray) -> np.ndarray:
    pos = np.asarray(
        positions.detach().cpu().numpy() if isinstance(positions, torch.Tensor) else positions,
        dtype=np.float64,
    )
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"positions must have shape [N, 3], got {tuple(pos.shape)}")
    if not np.isfinite(pos).all():
        raise ValueError("positions contain NaN or Inf")
    return pos


def _keep_nearest(
    src: np.ndarray,
    dst: np.ndarray,
    dist: np.ndarray,
    k: int,
    *tie: np.ndarray,
    before_src: tuple[np.ndarray, ...] = (),
) -> np.ndarray:
    """Boolean mask keeping, for every ``dst``, its ``k`` nearest sources.

    Ties in distance are broken by the ``before_src`` keys (in priority order), then by
    ``src``, then by the extra ``tie`` keys (e.g. image shifts), so the choice is deterministic.
    """
    if len(src) == 0:
        return np.ones(0, dtype=bool)
    # np.lexsort: the last key is the primary one
    keys = tuple(reversed(tie)) + (src,) + tuple(reversed(before_src)) + (dist, dst)
    order = np.lexsort(keys)
    sorted_dst = dst[order]
    starts = np.flatnonzero(np.r_[True, sorted_dst[1:] != sorted_dst[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    rank = np.arange(len(order)) - group_start
    keep = np.zeros(len(src), dtype=bool)
    keep[order[rank < k]] = True
    return keep


def _build_graph(
    num_nodes: int,
    src: np.ndarray,
    dst: np.ndarray,
    vector: np.ndarray,
    distance: np.ndarray,
) -> dgl.DGLGraph:
    graph = dgl.graph(
        (torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))),
        num_nodes=num_nodes,
    )
    graph.edata[DISTANCE] = torch.from_numpy(distance.astype(np.float32)).reshape(-1)
    graph.edata[VECTOR] = torch.from_numpy(vector.astype(np.float32)).reshape(-1, 3)
    return graph


def radius_graph(
    positions: torch.Tensor | np.ndarray,
    cutoff: float,
    max_neighbors: int | None = None,
    self_loops: bool = False,
    *,
    atomic_numbers: np.ndarray | torch.Tensor | None = None,
) -> dgl.DGLGraph:
    """Connect every pair of points closer than ``cutoff`` (no periodic boundaries).

    Exhaustive search: the distance matrix is computed in blocks of rows with
    ``torch.cdist(..., compute_mode="donot_use_mm_for_euclid_dist")`` (exact differences, not
    the ``|a|^2 + |b|^2 - 2ab`` shortcut, whose rounding misplaces pairs near the cutoff), in
    float64. Time ``O(N^2)``, memory ``O(N + E)`` plus a block of about 4M distances. For
    larger or periodic systems use :func:`periodic_radius_graph` (ASE's cell list, ``O(N)``).

    Args:
        positions: ``float32 [N, 3]`` coordinates in Å (torch or numpy; any float dtype).
        cutoff: radius in Å, > 0. Pairs at distance ``< cutoff`` (strictly) are connected.
        max_neighbors: keep at most this many incoming edges per node: for each ``dst``, its
            ``max_neighbors`` nearest sources, as PyTorch Geometric's ``max_num_neighbors``
            limits the neighbours of each target. The graph may then no longer be symmetric.
            Distances equal to 1e-6 Å tie, and ties are broken without the atom order: by
            higher atomic number of the source (with ``atomic_numbers``: heavy atoms before
            hydrogens), then by the source's position (lower ``x``, then ``y``, then ``z``),
            then, only for coincident atoms, by ``src`` index. So the kept edges (up to node
            numbering) do not depend on the atom order; the position rule does depend on the
            frame, so among truly equidistant atoms of the same element a rotated molecule
            may keep others. ``None`` (default): no limit.
        self_loops: also add ``i -> i`` for every node (distance 0, vector 0). Self-loops do
            not count toward ``max_neighbors``.
        atomic_numbers: ``int [N]``, only used to break ties under ``max_neighbors``.

    Returns:
        A graph with ``N`` nodes and ``E`` edges sorted by ``(src, dst)``:
        ``ndata["pos"]``: ``float32 [N, 3]`` (Å);
        ``edata["distance"]``: ``float32 [E]`` (Å);
        ``edata["vector"]``: ``float32 [E, 3]`` (Å), ``pos[dst] - pos[src]``.
        A single point or an empty point set gives a graph without edges.

    Raises:
        ValueError: positions not ``[N, 3]`` or not finite; ``cutoff <= 0``;
            ``max_neighbors < 0``; ``atomic_numbers`` not of length ``N``.
    """
    cutoff = _check_cutoff(cutoff)
    _check_max_neighbors(max_neighbors)
    pos = _as_positions(positions)
    n = len(pos)
    if atomic_numbers is not None:
        atomic_numbers = np.asarray(atomic_numbers, dtype=np.int64).reshape(-1)
        if len(atomic_numbers) != n:
            raise ValueError(f"{len(atomic_numbers)} atomic numbers but {n} positions")
    pos_t = torch.from_numpy(pos)
    block = max(1, _BLOCK_ELEMENTS // max(n, 1))
    srcs, dsts = [], []
    for start in range(0, n, block):
        rows = pos_t[start : start + block]
        dist = torch.cdist(rows, pos_t, compute_mode="donot_use_mm_for_euclid_dist")
        mask = dist < cutoff
        idx = torch.arange(start, start + len(rows))
        mask[idx - start, idx] = False  # no self-pairs here; coincident distinct atoms stay
        s, d = torch.nonzero(mask, as_tuple=True)  # row-major: sorted by (src, dst)
        srcs.append(s.numpy() + start)
        dsts.append(d.numpy())
    src = np.concatenate(srcs) if srcs else np.zeros(0, dtype=np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros(0, dtype=np.int64)
    vector = pos[dst] - pos[src]
    distance = np.linalg.norm(vector, axis=1)
    if max_neighbors is not None:
        ties = () if atomic_numbers is None else (-atomic_numbers[src],)
        ties += tuple(pos[src].T)
        keep = _keep_nearest(
            src, dst, np.round(distance, _TIE_DECIMALS), max_neighbors, before_src=ties
        )
        src, dst, vector, distance = src[keep], dst[keep], vector[keep], distance[keep]
    if self_loops:
        loops = np.arange(n, dtype=np.int64)
        src = np.concatenate([src, loops])
        dst = np.concatenate([dst, loops])
        vector = np.concatenate([vector, np.zeros((n, 3))])
        distance = np.concatenate([distance, np.zeros(n)])
        order = np.lexsort((dst, src))
        src, dst, vector, distance = src[order], dst[order], vector[order], distance[order]
    graph = _build_graph(n, src, dst, vector, distance)
    graph.ndata[POSITIONS] = torch.from_numpy(pos.astype(np.float32))
    return graph


def mol_to_radius_graph(
    mol: Chem.Mol,
    preset: FeaturizerPreset,
    cutoff: float,
    conformer_id: int = -1,
    *,
    max_neighbors: int | None = None,
    self_loops: bool = False,
) -> dgl.DGLGraph:
    """Radius graph of one conformer of a molecule, with the preset's atom features.

    Every atom of ``mol`` is a node, explicit hydrogens included (molecules from
    :func:`chemgraph.chem.embed_conformers` carry all their hydrogens; ``Chem.RemoveHs`` keeps
    the heavy atoms' coordinates if you want them without). Edges come from the geometry only
    (:func:`radius_graph`), not from the bonds: there is no ``edata["e"]``, two bonded atoms
    farther apart than ``cutoff`` are not connected and non-bonded atoms within it are. Use
    :func:`chemgraph.graphs.mol_to_graph` for the bond graph.

    Args:
        mol: an RDKit molecule with at least one conformer (coordinates in Å).
        preset: the atom featurizer (``preset.atom``) for ``ndata["x"]``; bonds are not used.
        cutoff: radius in Å, > 0 (strict: distance ``< cutoff``).
        conformer_id: RDKit conformer id; ``-1`` (default) is the molecule's default
            (first) conformer.
        max_neighbors: see :func:`radius_graph`.
        self_loops: see :func:`radius_graph`.

    Returns:
        A graph with ``N = mol.GetNumAtoms()`` nodes and ``E`` edges sorted by ``(src, dst)``:
        ``ndata["x"]``: ``preset.atom.dtype [N, len(preset.atom)]`` atom features;
        ``ndata["z"]``: ``int64 [N]`` atomic numbers;
        ``ndata["pos"]``: ``float32 [N, 3]`` coordinates (Å);
        ``edata["distance"]``: ``float32 [E]`` (Å); ``edata["vector"]``: ``float32 [E, 3]``
        (Å), ``pos[dst] - pos[src]``.

    Raises:
        ValueError: the molecule has no conformer, or no conformer ``conformer_id``; the
            arguments of :func:`radius_graph`.
    """
    if mol.GetNumConformers() == 0:
        raise ValueError(
            f"molecule {Chem.MolToSmiles(mol)} has no conformer; generate one with "
            "chemgraph.chem.embed_conformers"
        )
    try:
        conformer = mol.GetConformer(conformer_id)
    except ValueError as exc:
        raise ValueError(
            f"molecule {Chem.MolToSmiles(mol)} has no conformer with id {conformer_id} "
            f"(ids: {[c.GetId() for c in mol.GetConformers()]})"
        ) from exc
    pos = np.asarray(conformer.GetPositions(), dtype=np.float64).reshape(-1, 3)
    z = torch.tensor([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=torch.int64)
    graph = radius_graph(
        pos, cutoff, max_neighbors=max_neighbors, self_loops=self_loops, atomic_numbers=z.numpy()
    )
    atom_features = preset.atom.featurize_atoms(mol)
    graph.ndata[NODE_FEATURES] = torch.as_tensor(atom_features, dtype=preset.atom.dtype).reshape(
        mol.GetNumAtoms(), len(preset.atom)
    )
    graph.ndata[ATOMIC_NUMBERS] = z
    return graph


def periodic_radius_graph(
    atoms: ase.Atoms,
    cutoff: float,
    max_neighbors: int | None = None,
    self_loops: bool = False,
) -> dgl.DGLGraph:
    """Radius graph of a crystal, slab or molecule under periodic boundary conditions.

    Neighbours come from ASE's cell-list search, ``ase.neighborlist.neighbor_list("ijdDS",
    atoms, cutoff)`` (``O(N)`` for a fixed density), using ``atoms.cell`` and ``atoms.pbc``
    (e.g. ``pbc=(True, True, False)`` for a slab, all ``False`` for a molecule in vacuum, where
    the result equals :func:`radius_graph`). An edge ``i -> j`` with image shift ``S`` (integer
    multiples of the cell vectors) means atom ``j`` translated by ``S @ cell`` lies within the
    cutoff of atom ``i``. The same pair can appear with several shifts (different images), and
    an atom can neighbour its own images (``i -> i`` with ``S != 0``: one atom in a 2 Å cubic
    cell with a 2.1 Å cutoff has 6 such edges). Because every edge carries its shift, its
    distance is exact, however small the cell relative to the cutoff.

    Args:
        atoms: an ``ase.Atoms`` (positions in Å; they need not be wrapped into the cell).
        cutoff: radius in Å, > 0 (strict, as in ASE: distance ``< cutoff``).
        max_neighbors: keep at most this many incoming edges per node, nearest first (ties by
            ``src``, then shift: atom-order dependent at an exact tie, unlike
            :func:`radius_graph`). ``None``: no limit.
        self_loops: also add ``i -> i`` with shift 0 (ASE's ``self_interaction=True``); they do
            count toward ``max_neighbors`` here.

    Returns:
        A graph with ``N = len(atoms)`` nodes and ``E`` edges sorted by ``(src, dst, shift)``:
        ``ndata["z"]``: ``int64 [N]`` atomic numbers;
        ``ndata["pos"]``: ``float32 [N, 3]`` the positions as given (Å);
        ``edata["shift"]``: ``int64 [E, 3]`` image shift ``S`` of the destination atom;
        ``edata["offset"]``: ``float32 [E, 3]`` its Cartesian translation ``S @ cell`` (Å);
        ``edata["vector"]``: ``float32 [E, 3]`` ``pos[dst] - pos[src] + S @ cell`` (Å), from
        the source atom to the destination image;
        ``edata["distance"]``: ``float32 [E]`` its norm (Å).
        ``vector`` and ``distance`` are ASE's ``D`` and ``d``, computed in float64 from the
        unrounded positions and cell; recompute them differentiably as
        ``pos[dst] - pos[src] + offset``.

    Raises:
        ImportError: ASE is not installed.
        ValueError: ``cutoff <= 0``, ``max_neighbors < 0``; ASE's own errors (e.g. a periodic
            direction with a zero cell vector).
    """
    from ase.neighborlist import neighbor_list

    cutoff = _check_cutoff(cutoff)
    _check_max_neighbors(max_neighbors)
    i, j, d, big_d, s = neighbor_list("ijdDS", atoms, cutoff, self_interaction=self_loops)
    src = np.asarray(i, dtype=np.int64)
    dst = np.asarray(j, dtype=np.int64)
    distance = np.asarray(d, dtype=np.float64).reshape(-1)
    vector = np.asarray(big_d, dtype=np.float64).reshape(-1, 3)  # pos[j] - pos[i] + S @ cell
    shift = np.asarray(s, dtype=np.int64).reshape(-1, 3)
    pos = np.asarray(atoms.get_positions(), dtype=np.float64).reshape(-1, 3)
    cell = np.asarray(atoms.get_cell(), dtype=np.float64).reshape(3, 3)
    offset = shift.astype(np.float64) @ cell
    if max_neighbors is not None:
        keep = _keep_nearest(src, dst, distance, max_neighbors, *shift.T)
        src, dst, shift = src[keep], dst[keep], shift[keep]
        offset, vector, distance = offset[keep], vector[keep], distance[keep]
    order = np.lexsort((shift[:, 2], shift[:, 1], shift[:, 0], dst, src))
    src, dst, shift = src[order], dst[order], shift[order]
    offset, vector, distance = offset[order], vector[order], distance[order]
    graph = _build_graph(len(atoms), src, dst, vector, distance)
    graph.edata[SHIFT] = torch.from_numpy(shift)
    graph.edata[OFFSET] = torch.from_numpy(offset.astype(np.float32)).reshape(-1, 3)
    graph.ndata[ATOMIC_NUMBERS] = torch.from_numpy(
        np.asarray(atoms.get_atomic_numbers(), dtype=np.int64)
    )
    graph.ndata[POSITIONS] = torch.from_numpy(pos.astype(np.float32))
    return graph


def atoms_to_radius_graph(
    atomic_numbers: np.ndarray | torch.Tensor,
    positions: np.ndarray | torch.Tensor,
    featurizer: RadiusGraphFeaturizer,
    edge_features: bool = True,
) -> dgl.DGLGraph:
    """Radius graph with atom-type node features and Gaussian distance edge features.

    The input of 3D ESA in the setup of Buterez et al. 2024 Table 5 (coordinates and atom types
    only): edges from :func:`radius_graph` (``featurizer.cutoff``; at most
    ``featurizer.max_neighbors`` incoming edges per atom, the nearest, equidistant ones chosen
    by higher atomic number, then position), ``ndata["x"]`` the element
    one-hot (:class:`chemgraph.featurize.ElementOneHot`) and ``edata["e"]`` the distances
    expanded in :class:`chemgraph.featurize.GaussianBasis` (``featurizer.num_basis`` Gaussians
    on ``[0, cutoff]``, cosine envelope), so :func:`chemgraph.batches.edge_set_batch` builds the
    tokens ``onehot(z_src) ‖ onehot(z_dst) ‖ phi(d)`` unchanged. With
    ``featurizer.atom_distance_basis`` each atom's features also hold the Gaussian sum of its
    distances to every other atom (:meth:`RadiusGraphFeaturizer.atom_distance_features`). An
    atom with no neighbour within the cutoff becomes an ESA self-loop token.

    Args:
        atomic_numbers: ``int64 [N]``.
        positions: ``float [N, 3]`` coordinates in Å.
        featurizer: cutoff, number of Gaussians and element list.
        edge_features: add ``edata["e"]`` now. False leaves it to
            :func:`add_distance_features` at batching time, which keeps ``K`` times less in
            memory for large datasets (a float per edge instead of ``K``).

    Returns:
        A graph with ``N`` nodes and ``E`` edges sorted by ``(src, dst)``: ``ndata["x"]``
        ``float32 [N, featurizer.node_features]``, ``ndata["z"]`` ``int64 [N]``,
        ``ndata["pos"]`` ``float32 [N, 3]`` (Å), ``edata["e"]`` ``float32 [E, K]``,
        ``edata["distance"]`` ``float32 [E]`` (Å), ``edata["vector"]`` ``float32 [E, 3]`` (Å).

    Raises:
        ValueError: ``atomic_numbers`` and ``positions`` disagree in length; the arguments of
            :func:`radius_graph`.
    """
    z = torch.as_tensor(np.asarray(atomic_numbers), dtype=torch.int64).reshape(-1)
    graph = radius_graph(
        positions, featurizer.cutoff, featurizer.max_neighbors, atomic_numbers=z.numpy()
    )
    graph.ndata[ATOMIC_NUMBERS] = z
    atom_features = featurizer.atom(z)
    if featurizer.atom_distance_basis:
        atom_features = torch.cat(
            [atom_features, featurizer.atom_distance_features(positions)], dim=1
        )
    graph.ndata[NODE_FEATURES] = atom_features
    return add_distance_features(graph, featurizer) if edge_features else graph


def add_distance_features(graph: dgl.DGLGraph, featurizer: RadiusGraphFeaturizer) -> dgl.DGLGraph:
    """Set ``edata["e"]`` ``float32 [E, K]``: ``edata["distance"]`` (Å) in the featurizer's
    Gaussian basis (:class:`chemgraph.featurize.GaussianBasis`, cosine envelope). Works on a
    batched graph too. Returns the same graph."""
    basis = GaussianBasis(featurizer.num_basis, featurizer.cutoff)
    with torch.no_grad():
        graph.edata[EDGE_FEATURES] = basis(graph.edata[DISTANCE])
    return graph
