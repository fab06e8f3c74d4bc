"""Shortest paths between the atoms of a molecule, computed once per graph and cached in it.

Graphormer's spatial encoding needs the shortest-path distance (SPD) of every pair of atoms, and
its edge encoding the bonds along one shortest path of every pair (Ying et al. 2021, seed 001,
section 3.1.2, eq. 6 and 7). Both are computed here, once per molecule at featurization time,
with :func:`scipy.sparse.csgraph.shortest_path` (breadth-first search from every atom; no
Python Floyd–Warshall), and stored inside the molecule's graph so that :func:`dgl.batch`,
:func:`dgl.save_graphs` and dataset subsets carry them without any extra bookkeeping.

Storage: :func:`add_shortest_paths` turns the molecule graph into a heterograph with one node
type and two edge types, both with ``int32`` ids:

* :data:`BOND` ``("atom", "bond", "atom")``: the bonds, both directions, in the order and with
  the data (``edata["e"]``) of :func:`chemgraph.graphs.mol_to_graph`; node data (``ndata["x"]``,
  ``ndata["pos"]``) unchanged.
* :data:`PAIR` ``("atom", "pair", "atom")``: one edge ``i -> j`` per ordered pair of distinct
  atoms joined by some path (atoms of different fragments, e.g. the ions of a salt, have no
  pair edge: they are unreachable). Edge data: ``"distance"``: ``int16 [P]``, the SPD in bonds;
  ``"path"``: ``int16 [P, H]``, the local ids (in :data:`BOND`) of the first ``H`` bonds of one
  shortest path ``i -> j`` in walking order, ``-1`` after the path's end.

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

__all__ = ["BOND", "PAIR", "add_shortest_paths", "has_shortest_paths", "shortest_paths"]

BOND = ("atom", "bond", "atom")
"""Canonical edge type of the bonds in a graph with cached shortest paths."""
PAIR = ("atom", "pair", "atom")
"""Canonical edge type of the connected atom pairs (SPD and path data)."""

_INT16_MAX = int(np.iinfo(np.int16).max)


def shortest_paths(
    num_nodes: int, src: np.ndarray, dst: np.ndarray, max_path_edges: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All-pairs shortest paths of an unweighted graph (breadth-first search from every node).

    Args:
        num_nodes: ``N``.
        src: ``int [E]`` source node of each directed edge.
        dst: ``int [E]`` target node of each directed edge (molecules: both directions).
        max_path_edges: ``H``, how many edges of each path to keep.

    Returns:
        ``(pair_src, pair_dst, distance, path)`` over the ``P`` ordered pairs ``i ≠ j`` with a
        path ``i -> j``, sorted by ``(i, j)``: ``int64 [P]``, ``int64 [P]``, ``int64 [P]`` (the
        number of edges of a shortest path), ``int64 [P, H]`` (ids of the first ``H`` edges of
        one shortest path in walking order, ``-1`` after its end).
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    adjacency = scipy.sparse.csr_matrix(
        (np.ones(src.size, dtype=np.float64), (src, dst)), shape=(num_nodes, num_nodes)
    )
    distance, predecessor = csgraph.shortest_path(
        adjacency, method="D", unweighted=True, return_predecessors=True
    )
    connected = np.isfinite(distance)
    np.fill_diagonal(connected, False)
    pair_src, pair_dst = np.nonzero(connected)
    pair_distance = distance[pair_src, pair_dst].astype(np.int64)

    edge_id = np.full((num_nodes, num_nodes), -1, dtype=np.int64)
    edge_id[src, dst] = np.arange(src.size)
    # predecessor[j, u] is the node before u on a shortest path j -> u, i.e. the node after u
    # on a shortest path u -> j: walking it from i reaches j along a shortest path.
    path = np.full((pair_src.size, max_path_edges), -1, dtype=np.int64)
    current = pair_src.copy()
    for hop in range(max_path_edges):
        walking = pair_distance > hop
        following = np.where(walking, predecessor[pair_dst, current], 0)
        path[:, hop] = np.where(walking, edge_id[current, following], -1)
        current = np.where(walking, following, current)
    return pair_src, pair_dst, pair_distance, path


def add_shortest_paths(graph: dgl.DGLGraph, max_path_edges: int = 5) -> dgl.DGLGraph:
    """The molecule's graph with its shortest paths cached (layout in the module docstring).

    Args:
        graph: one molecule (:func:`chemgraph.graphs.mol_to_graph`): a homogeneous graph with
            ``ndata["x"]`` and ``edata["e"]``; may have no edges (single atoms, ions).
        max_path_edges: ``H``, bonds kept per path (Graphormer's ``multi_hop_max_dist``).

    Returns:
        A heterograph with edge types :data:`BOND` and :data:`PAIR`; node and bond data are
        the input's tensors (not copies).

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
    pair_src, pair_dst, distance, path = shortest_paths(num_nodes, src, dst, max_path_edges)
    out = dgl.heterograph(
        {
            BOND: (torch.from_numpy(src), torch.from_numpy(dst)),
            PAIR: (torch.from_numpy(pair_src), torch.from_numpy(pair_dst)),
        },
        num_nodes_dict={"atom": num_nodes},
        idtype=torch.int32,
    )
    for name, value in graph.ndata.items():
        out.ndata[name] = value
    for name, value in graph.edata.items():
        out.edges[BOND].data[name] = value
    out.edges[PAIR].data["distance"] = torch.from_numpy(distance.astype(np.int16))
    out.edges[PAIR].data["path"] = torch.from_numpy(path.astype(np.int16))
    return out


def has_shortest_paths(graph: dgl.DGLGraph) -> bool:
    """Whether ``graph`` (one molecule or a batch) holds the cache of :func:`add_shortest_paths`."""
    return PAIR in graph.canonical_etypes
