"""Shortest paths between the atoms of a molecule, computed once per graph and cached in it.

Graphormer's spatial encoding needs the shortest-path distance (SPD) of every pair of atoms, and
its edge encoding the bonds along one shortest path of every pair (Ying et al. 2021,
section 3.1.2, eq. 6 and 7). Both are computed here, once per molecule at featurization time,
with :func:`scipy.sparse.csgraph.shortest_path` (breadth-first search from every atom; no
Python Floyd–Warshall), and stored inside the molecule's graph so that :func:`dgl.batch`,
:func:`dgl.save_graphs` and dataset subsets carry them without any extra bookkeeping.

Storage: :func:`add_shortest_paths` turns the molecule graph into a heterograph with one node
type and two edge types, both with ``int32`` ids:

* :data:`~chemgraph.graph_keys.BOND` ``("atom", "bond", "atom")``: the bonds, both
  directions, in the order and with the data (``edata["e"]``) of
  :func:`chemgraph.graphs.mol_to_graph`; node data (``ndata["x"]``, ``ndata["pos"]``) unchanged.
* :data:`~chemgraph.graph_keys.PAIR` ``("atom", "pair", "atom")``: one edge ``i -> j`` per
  ordered pair of distinct atoms joined by some path (atoms of different fragments, e.g. the
  ions of a salt, have no pair edge: they are unreachable). Edge data:
  :data:`~chemgraph.graph_keys.SPD` ``"spd"``: ``int16 [P]``, the SPD in bonds;
  :data:`~chemgraph.graph_keys.PATH` ``"path"``: ``int16 [P, H]``, the local ids (in ``BOND``)
  of the first ``H`` bonds of one shortest path ``i -> j`` in walking order, ``-1`` after
  the path's end.

Which shortest path: when several join ``i`` and ``j`` (the two halves of a ring, e.g. the
``C=C-C`` and ``C-C=C`` ways between opposite atoms of cyclohexa-1,4-diene), one whose first
``H`` bonds' feature rows, read from ``i``, are the lexicographically smallest sequence. A path
picked by atom index (the first one a breadth-first search meets, or Floyd–Warshall's in
Graphormer's code) changes with the atom order, and Graphormer's edge encoding, which reads the
features along the path, would give one molecule several predictions. Paths with the same
feature sequence encode the same.

Memory: ``8 + 2 + 2·H`` bytes per ordered pair (int32 pair ids, int16 data); about 13 kB for a
25-atom molecule with ``H = 5``. Ids are ``int16``, so a graph may have at most 32,767 edges
(molecules for all-pairs models are far smaller).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import torch
from scipy.sparse import csgraph

from chemgraph._dgl import dgl
from chemgraph.graph_keys import ATOM, BOND, EDGE_FEATURES, PAIR, PATH, SPD

__all__ = ["add_shortest_paths", "has_shortest_paths", "shortest_paths"]

_INT16_MAX = int(np.iinfo(np.int16).max)


def shortest_paths(
    num_nodes: int, src: np.ndarray, dst: np.ndarray, edge_keys: np.ndarray, max_path_edges: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All-pairs shortest paths of an unweighted graph, the path of each pair chosen by keys.

    Distances by breadth-first search from every node (scipy). Among the shortest paths
    ``i -> j``, the one kept is one whose first ``H`` edge keys, read from ``i``, form the
    lexicographically smallest sequence; with keys that depend on the edges' features only
    (not on node ids), that sequence, and so anything computed from the features along the
    kept path, does not depend on the node order. Time ``O(H·E·N)`` and memory ``O(E·N)`` on
    top of the search.

    Args:
        num_nodes: ``N``.
        src: ``int [E]`` source node of each directed edge.
        dst: ``int [E]`` target node of each directed edge (molecules: both directions).
        edge_keys: ``int [E]`` order of the edges for the choice (e.g. the rank of each edge's
            feature row); among paths with equal key sequences the choice is arbitrary.
        max_path_edges: ``H``, how many edges of each path to keep.

    Returns:
        ``(pair_src, pair_dst, distance, path)`` over the ``P`` ordered pairs ``i ≠ j`` with a
        path ``i -> j``, sorted by ``(i, j)``: ``int64 [P]``, ``int64 [P]``, ``int64 [P]`` (the
        number of edges of a shortest path), ``int64 [P, H]`` (ids of the first ``H`` edges of
        the chosen shortest path in walking order, ``-1`` after its end).
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    adjacency = scipy.sparse.csr_matrix(
        (np.ones(src.size, dtype=np.float64), (src, dst)), shape=(num_nodes, num_nodes)
    )
    distance = csgraph.shortest_path(adjacency, method="D", unweighted=True)
    connected = np.isfinite(distance)
    np.fill_diagonal(connected, False)
    pair_src, pair_dst = np.nonzero(connected)
    pair_distance = distance[pair_src, pair_dst].astype(np.int64)

    path = np.full((pair_src.size, max_path_edges), -1, dtype=np.int64)
    if max_path_edges == 0 or pair_src.size == 0:
        return pair_src, pair_dst, pair_distance, path
    hops = np.where(np.isfinite(distance), distance, -1).astype(np.int32)
    pair_id = np.full((num_nodes, num_nodes), pair_src.size, dtype=np.int64)  # P: no pair
    pair_id[pair_src, pair_dst] = np.arange(pair_src.size)
    # every step u -> v towards a target j, as (edge, j): hops[v, j] = hops[u, j] - 1
    from_src = hops[src]  # [E, N]
    edge, goal = np.nonzero((from_src > 0) & (hops[dst] == from_src - 1))
    step_pair, next_pair = pair_id[src[edge], goal], pair_id[dst[edge], goal]
    step_keys = np.asarray(edge_keys)[edge]
    chosen = _smallest_steps(step_pair, next_pair, step_keys, pair_src.size, max_path_edges)
    current = np.arange(pair_src.size)
    for hop in range(max_path_edges):
        walking = pair_distance > hop
        step = chosen[max_path_edges - 1 - hop][current[walking]]
        path[walking, hop] = edge[step]
        current[walking] = next_pair[step]
    return pair_src, pair_dst, pair_distance, path


def _smallest_steps(
    step_pair: np.ndarray,
    next_pair: np.ndarray,
    step_keys: np.ndarray,
    num_pairs: int,
    length: int,
) -> list[np.ndarray]:
    """For each prefix length ``h + 1 <= length``: per pair, the step that starts its smallest
    key sequence.

    Args:
        step_pair: ``int [C]`` the pair ``(u, j)`` (id ``0 … P-1``, ``P >= 1``) of each of the
            ``C`` possible first steps ``u -> v`` of a shortest path ``u -> j``; every pair has
            at least one.
        next_pair: ``int [C]`` the pair ``(v, j)`` the step leads to; ``P`` when ``v = j``.
        step_keys: ``int [C]`` the key of each step's edge.
        num_pairs: ``P``.
        length: ``H``.

    Returns:
        ``H`` arrays ``int64 [P]``: entry ``h`` holds, per pair, the step whose key followed by
        the smallest key sequence of length ``h`` from ``next_pair`` is the smallest. A dynamic
        programme over ``h``: the sequences of one length are compared through their ranks
        (equal sequences get distinct ranks, which only decides between equal sequences).
    """
    by_pair = np.argsort(step_pair, kind="stable")  # the steps of each pair together
    group = step_pair[by_pair]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])  # one start per pair, in order
    position = np.arange(by_pair.size)
    key = np.unique(step_keys, return_inverse=True)[1].reshape(-1)[by_pair] * (num_pairs + 1)
    following = next_pair[by_pair]
    rank = np.zeros(num_pairs + 1, dtype=np.int64)  # of each pair's smallest shorter sequence
    chosen = []
    for _ in range(length):
        sequence = key + rank[following]  # key first, then the rest
        smallest = np.minimum.reduceat(sequence, starts)
        first = np.minimum.reduceat(
            np.where(sequence == smallest[group], position, by_pair.size), starts
        )
        chosen.append(by_pair[first])
        rank[np.argsort(smallest)] = np.arange(1, num_pairs + 1)
    return chosen


def _row_ranks(features: np.ndarray) -> np.ndarray:
    """``int64 [E]``: the rank of each row of ``features [E, F]`` among the distinct rows, in
    the order of their bytes (a function of the row's contents only; both directions of a bond
    share their row, so their rank)."""
    rows = np.ascontiguousarray(features)
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
    return np.unique(as_bytes, return_inverse=True)[1].reshape(-1)


def add_shortest_paths(graph: dgl.DGLGraph, max_path_edges: int = 5) -> dgl.DGLGraph:
    """The molecule's graph with its shortest paths cached (layout in the module docstring).

    Args:
        graph: one molecule (:func:`chemgraph.graphs.mol_to_graph`): a homogeneous graph with
            ``ndata["x"]`` and ``edata["e"]``; may have no edges (single atoms, ions).
        max_path_edges: ``H``, bonds kept per path (Graphormer's ``multi_hop_max_dist``).

    Returns:
        A heterograph with edge types :data:`~chemgraph.graph_keys.BOND` and ``PAIR``; node
        and bond data are the input's tensors (not copies). The path of a pair is the shortest
        one with the lexicographically smallest bond-feature rows (module docstring).

    Raises:
        ValueError: a batched graph (apply it per molecule), a graph that already holds the
            cache, a negative ``max_path_edges``, or more than 32,767 nodes or edges.
    """
    if has_shortest_paths(graph):
        raise ValueError("the graph already holds cached shortest paths")
    if graph.batch_size != 1:
        raise ValueError(
            f"add_shortest_paths takes one molecule's graph, got a batch of {graph.batch_size}; "
            "apply it to each graph before dgl.batch"
        )
    if max_path_edges < 0:
        raise ValueError(f"max_path_edges must be at least 0, got {max_path_edges}")
    num_nodes, num_edges = graph.num_nodes(), graph.num_edges()
    if max(num_nodes, num_edges) > _INT16_MAX:
        raise ValueError(
            f"graph with {num_nodes} atoms and {num_edges} edges is too large for the int16 "
            f"shortest-path cache (at most {_INT16_MAX} of each); all-pairs models do not "
            "scale to it"
        )
    src, dst = (t.numpy() for t in graph.edges())
    keys = _row_ranks(graph.edata[EDGE_FEATURES].numpy()) if max_path_edges else np.zeros(num_edges)
    pair_src, pair_dst, distance, path = shortest_paths(num_nodes, src, dst, keys, max_path_edges)
    out = dgl.heterograph(
        {
            BOND: (torch.from_numpy(src), torch.from_numpy(dst)),
            PAIR: (torch.from_numpy(pair_src), torch.from_numpy(pair_dst)),
        },
        num_nodes_dict={ATOM: num_nodes},
        idtype=torch.int32,
    )
    for name, value in graph.ndata.items():
        out.ndata[name] = value
    for name, value in graph.edata.items():
        out.edges[BOND].data[name] = value
    out.edges[PAIR].data[SPD] = torch.from_numpy(distance.astype(np.int16))
    out.edges[PAIR].data[PATH] = torch.from_numpy(path.astype(np.int16))
    return out


def has_shortest_paths(graph: dgl.DGLGraph) -> bool:
    """Whether ``graph`` (one molecule or a batch) holds the cache of :func:`add_shortest_paths`."""
    return PAIR in graph.canonical_etypes
