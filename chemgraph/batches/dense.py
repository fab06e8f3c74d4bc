"""Dense all-pairs graph batches (Graphormer, GRAT).

A :class:`DenseGraphBatch` holds every molecule as ``N`` padded atom tokens plus ``[N, N]``
pair tables: the shortest-path distance (SPD) bucket, the bond features and bond type of each
directly bonded pair, and, for Graphormer's multi-hop edge encoding, the bonds along one
shortest path of each pair (Ying et al. 2021, section 3.1.2, eq. 6 and 7).

The shortest paths are not computed here: they are computed once per molecule at featurization
time by :func:`chemgraph.graphs.add_shortest_paths` (scipy breadth-first search) and cached in
the graph as a second edge type, which :func:`dgl.batch` concatenates like any edge data; the
builder only scatters them into the padded tables. Graphs of one batch never see each other:
every pair table is per graph, padding pairs carry the unreachable bucket, no bond and no path,
and ``pad_mask`` marks the real atoms.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from chemgraph._dgl import dgl
from chemgraph.batches.base import TensorBatch, positions_in_graph
from chemgraph.featurize import FeaturizerPreset
from chemgraph.graph_keys import BOND, EDGE_FEATURES, NODE_FEATURES, PAIR, PATH, SPD
from chemgraph.graphs import has_shortest_paths

__all__ = [
    "CANONICAL_BOND_TYPE_COLUMNS",
    "DenseGraphBatch",
    "bond_type_index",
    "dense_graph_batch",
    "dense_batch_builder",
    "num_edge_types",
]

CANONICAL_BOND_TYPE_COLUMNS = 6
"""Leading one-hot bond-type columns of the ``canonical`` bond features: SINGLE, DOUBLE,
TRIPLE, AROMATIC, DATIVE, unknown (:class:`chemgraph.featurize.bond.CanonicalBondFeaturizer`)."""


@dataclass
class DenseGraphBatch(TensorBatch):
    """Padded atoms and all-pairs tables of ``B`` graphs (Graphormer and GRAT input).

    ``N`` is the largest atom count of the batch; ``D`` = ``max_distance`` and ``H`` =
    ``max_path_edges`` of :func:`dense_graph_batch`.

    Attributes:
        x: ``int64 [B, N, F_n]`` (categorical presets, e.g. ``ogb``) or ``float32 [B, N, F_n]``
            (one-hot presets) atom features, as featurized; zero at padding.
        pad_mask: ``bool [B, N]`` True for real atoms.
        num_nodes: ``int64 [B]`` atoms per graph.
        in_degree: ``int64 [B, N]`` bonds ending at each atom (incoming edges); 0 at padding.
        out_degree: ``int64 [B, N]`` bonds starting at each atom; 0 at padding. For molecules
            (both directions of every bond) equal to ``in_degree``.
        spd: ``int64 [B, N, N]`` shortest-path distance in bonds, clipped at ``D``: 0 on the
            diagonal, ``1 … D`` for connected pairs, ``D + 1`` (the unreachable bucket) for atoms
            of different fragments (a salt's ions) and for every pair involving padding. So
            ``D + 2`` buckets in all.
        edge_features: ``[B, N, N, F_e]`` (dtype of the bond features) features of the bond
            ``i -> j``; zero where no bond joins ``i`` and ``j`` and at padding.
        edge_type: ``int64 [B, N, N]`` 0 = no bond (or padding, or the diagonal), else
            ``1 +`` the bond-type category of :func:`bond_type_index` (``ogb``: SINGLE 1,
            DOUBLE 2, TRIPLE 3, AROMATIC 4, misc 5); :func:`num_edge_types` values in all.
        path_edges: ``int64 [B, N, N, H]`` the first ``H`` bonds ``u -> v`` of one shortest path
            ``i -> j``, in walking order, as flattened pair indices ``b·N² + u·N + v`` into the
            ``[B·N·N]`` rows of ``edge_features`` / ``edge_type``; ``-1`` after the path's end,
            for unreachable pairs, on the diagonal and at padding. Path ``i -> j`` has
            ``min(spd, H)`` valid entries (when connected).
    """

    x: torch.Tensor
    pad_mask: torch.Tensor
    num_nodes: torch.Tensor
    in_degree: torch.Tensor
    out_degree: torch.Tensor
    spd: torch.Tensor
    edge_features: torch.Tensor
    edge_type: torch.Tensor
    path_edges: torch.Tensor


def bond_type_index(
    edge_features: torch.Tensor, bond_type_columns: int | None = None
) -> torch.Tensor:
    """The bond-type category of each bond (the first field of every bond preset).

    Args:
        edge_features: ``int64 [E, F_e]`` categorical features (``ogb``: column 0 is the
            bond type, SINGLE 0, DOUBLE 1, TRIPLE 2, AROMATIC 3, misc 4) or ``float32
            [E, F_e]`` one-hot features whose first ``bond_type_columns`` columns one-hot
            encode the bond type (``canonical``: SINGLE, DOUBLE, TRIPLE, AROMATIC, DATIVE,
            unknown).
        bond_type_columns: width of the one-hot bond-type block of float features; None =
            :data:`CANONICAL_BOND_TYPE_COLUMNS`. Ignored for integer features.

    Returns:
        ``int64 [E]``.
    """
    if not edge_features.is_floating_point():
        return edge_features[:, 0].long()
    width = CANONICAL_BOND_TYPE_COLUMNS if bond_type_columns is None else bond_type_columns
    return edge_features[:, :width].argmax(dim=1)


def num_edge_types(preset: FeaturizerPreset) -> int:
    """Number of values of :attr:`DenseGraphBatch.edge_type` for a preset (with 0 = no bond).

    ``ogb``: 6 (no bond + 5 bond types); ``canonical``: 7 (no bond + 6).
    """
    if preset.bond.dtype == torch.int64:
        return 1 + preset.bond.vocabulary_sizes[0]
    return 1 + sum(name.startswith("bond_type=") for name in preset.bond.field_names)


def dense_graph_batch(
    graph: dgl.DGLGraph,
    max_distance: int = 20,
    max_path_edges: int = 5,
    bond_type_columns: int | None = None,
) -> DenseGraphBatch:
    """Build the dense batch of a batch of graphs with cached shortest paths.

    Args:
        graph: :func:`dgl.batch` of graphs made by :func:`chemgraph.graphs.add_shortest_paths`
            (node data ``x``, bond data ``e``, pair data ``spd`` and ``path``).
        max_distance: ``D``; longer distances are clipped to ``D``, unreachable pairs get
            ``D + 1`` (Graphormer's spatial encoding has ``D + 2`` learnable biases per head).
        max_path_edges: ``H``, bonds per path in ``path_edges``; at most the ``max_path_edges``
            the graphs were cached with.
        bond_type_columns: see :func:`bond_type_index` (float one-hot bond features only).

    Returns:
        The padded :class:`DenseGraphBatch`; atoms keep their order within each graph.

    Raises:
        ValueError: the graphs hold no cached shortest paths, or fewer path bonds than
            ``max_path_edges``, or ``max_distance < 1``.
    """
    if not has_shortest_paths(graph):
        raise ValueError(
            "the graphs hold no cached shortest paths; apply "
            "chemgraph.graphs.add_shortest_paths to each molecule's graph before dgl.batch "
            "(the model registry's graph_transform does this in chemgraph train/predict)"
        )
    if max_distance < 1:
        raise ValueError(f"max_distance must be at least 1, got {max_distance}")
    cached_path = graph.edges[PAIR].data[PATH]
    if cached_path.shape[1] < max_path_edges:
        raise ValueError(
            f"the graphs cache {cached_path.shape[1]} bonds per shortest path but "
            f"max_path_edges={max_path_edges} were asked; featurize with "
            f"add_shortest_paths(graph, max_path_edges={max_path_edges})"
        )
    num_graphs = graph.batch_size
    counts = graph.batch_num_nodes()
    node_graph = torch.repeat_interleave(torch.arange(num_graphs), counts)
    position = positions_in_graph(node_graph, counts)
    length = int(counts.max()) if num_graphs else 0
    node_slot = node_graph * length + position  # [N_tot] index into the [B·N] atoms
    pair_slot = node_graph * length * length + position * length  # + column = [B·N·N] index

    node_x = graph.ndata[NODE_FEATURES]
    x = node_x.new_zeros(num_graphs * length, *node_x.shape[1:])
    x[node_slot] = node_x
    pad_mask = torch.zeros(num_graphs * length, dtype=torch.bool)
    pad_mask[node_slot] = True

    src, dst = (t.long() for t in graph.edges(etype=BOND))
    bond_pair = pair_slot[src] + position[dst]
    ones = torch.ones(src.numel(), dtype=torch.int64)
    in_degree = torch.zeros(num_graphs * length, dtype=torch.int64).index_add_(
        0, node_slot[dst], ones
    )
    out_degree = torch.zeros(num_graphs * length, dtype=torch.int64).index_add_(
        0, node_slot[src], ones
    )
    bond_x = graph.edges[BOND].data[EDGE_FEATURES]
    num_pairs = num_graphs * length * length
    edge_features = bond_x.new_zeros(num_pairs, *bond_x.shape[1:])
    edge_features[bond_pair] = bond_x
    edge_type = torch.zeros(num_pairs, dtype=torch.int64)
    edge_type[bond_pair] = 1 + bond_type_index(bond_x, bond_type_columns)

    spd = torch.full((num_pairs,), max_distance + 1, dtype=torch.int64)
    spd[pair_slot + position] = 0
    pair_src, pair_dst = (t.long() for t in graph.edges(etype=PAIR))
    connected_pair = pair_slot[pair_src] + position[pair_dst]
    distance = graph.edges[PAIR].data[SPD].long()
    spd[connected_pair] = distance.clamp(max=max_distance)

    path_edges = torch.full((num_pairs, max_path_edges), -1, dtype=torch.int64)
    if max_path_edges and connected_pair.numel():
        bond_counts = graph.batch_num_edges(BOND)
        bond_offset = torch.cumsum(bond_counts, 0) - bond_counts
        local = cached_path[:, :max_path_edges].long()
        walked = local >= 0
        bond = torch.where(walked, local + bond_offset[node_graph[pair_src]].unsqueeze(1), 0)
        path_edges[connected_pair] = torch.where(walked, bond_pair[bond], -1)

    return DenseGraphBatch(
        x=x.view(num_graphs, length, *node_x.shape[1:]),
        pad_mask=pad_mask.view(num_graphs, length),
        num_nodes=counts.long(),
        in_degree=in_degree.view(num_graphs, length),
        out_degree=out_degree.view(num_graphs, length),
        spd=spd.view(num_graphs, length, length),
        edge_features=edge_features.view(num_graphs, length, length, *bond_x.shape[1:]),
        edge_type=edge_type.view(num_graphs, length, length),
        path_edges=path_edges.view(num_graphs, length, length, max_path_edges),
    )


def dense_batch_builder(
    max_distance: int = 20, max_path_edges: int = 5, bond_type_columns: int | None = None
):
    """The collate-time builder ``DGLGraph (batched) -> DenseGraphBatch`` with fixed options."""
    return functools.partial(
        dense_graph_batch,
        max_distance=max_distance,
        max_path_edges=max_path_edges,
        bond_type_columns=bond_type_columns,
    )
