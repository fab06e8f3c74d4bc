"""Sparse message-passing batches (GCN, GIN, GMoE).

A :class:`SparseGraphBatch` is the graphs of a batch as one disjoint union: node features
``[N_tot, F_n]``, directed edges as an ``edge_index``, and the normalisation weights of a GCN
(Kipf & Welling 2017; Wang et al. 2023, eq. 1) precomputed here, on the CPU, so that the models only
gather and ``index_add``.

Hop-2 neighbourhoods (GMoE's hop-2 experts, Wang et al. 2023, eq. 2) are the non-backtracking walks
``i -> k -> j`` of length two between atoms that are not bonded (``j ≠ i``), one edge per walk,
as the reference implementation builds them (``construct_two_hops.py`` of
VITA-Group/Graph-Mixture-of-Experts): the pairs of bonds ``i -> k``, ``k -> j`` (the edges of
the non-backtracking line graph, :func:`two_hop_walks`), each walk carrying the features of
both bonds, concatenated. A pair joined
by two walks (e.g. across a four-membered ring) has two hop-2 edges. Walks are built only when
asked (``two_hop=True``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from chemgraph._dgl import dgl
from chemgraph.batches.base import TensorBatch, positions_in_graph
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES

__all__ = [
    "SparseGraphBatch",
    "gcn_normalisation",
    "sparse_batch_builder",
    "sparse_graph_batch",
    "two_hop_walks",
]


@dataclass
class SparseGraphBatch(TensorBatch):
    """The disjoint union of ``B`` graphs (GCN/GIN/GMoE input).

    Attributes:
        x: ``int64 [N_tot, F_n]`` (categorical presets) or ``float32 [N_tot, F_n]`` atom
            features, as featurized.
        edge_index: ``int64 [2, E]`` directed bonds (both directions of every bond), rows
            (source, target), in global atom indexing.
        edge_features: ``[E, F_e]`` bond features of each directed bond.
        edge_weight: ``float32 [E]`` GCN weight ``1 / √((d_s + 1)(d_t + 1))`` of each edge,
            ``d`` = number of edges leaving the atom (its degree).
        self_weight: ``float32 [N_tot]`` GCN self-loop weight ``1 / (d + 1)``.
        graph_index: ``int64 [N_tot]`` graph of each atom.
        num_nodes: ``int64 [B]`` atoms per graph.
        hop2_edge_index: ``int64 [2, E₂]`` hop-2 walks ``i -> j`` (source, target); ``None``
            when built with ``two_hop=False``.
        hop2_edge_features: ``[E₂, 2·F_e]`` features of the walk's first ‖ second bond.
        hop2_edge_weight: ``float32 [E₂]`` GCN weights over the hop-2 edges (degrees counted
            in hop-2 edges).
        hop2_self_weight: ``float32 [N_tot]`` GCN self-loop weights of the hop-2 neighbourhood.
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    edge_features: torch.Tensor
    edge_weight: torch.Tensor
    self_weight: torch.Tensor
    graph_index: torch.Tensor
    num_nodes: torch.Tensor
    hop2_edge_index: torch.Tensor | None = None
    hop2_edge_features: torch.Tensor | None = None
    hop2_edge_weight: torch.Tensor | None = None
    hop2_self_weight: torch.Tensor | None = None

    @property
    def batch_size(self) -> int:
        return self.num_nodes.shape[0]

    def neighbourhood(self, hop: int) -> tuple[torch.Tensor, ...]:
        """``(edge_index, edge_features, edge_weight, self_weight)`` of hop 1 or 2.

        Raises:
            ValueError: ``hop`` is not 1 or 2, or hop 2 was not built.
        """
        if hop == 1:
            return self.edge_index, self.edge_features, self.edge_weight, self.self_weight
        if hop == 2:
            if self.hop2_edge_index is None:
                raise ValueError(
                    "this batch has no hop-2 edges; build it with sparse_graph_batch(..., "
                    "two_hop=True)"
                )
            return (
                self.hop2_edge_index,
                self.hop2_edge_features,
                self.hop2_edge_weight,
                self.hop2_self_weight,
            )
        raise ValueError(f"hop must be 1 or 2, got {hop}")


def gcn_normalisation(edge_index: torch.Tensor, num_nodes: int) -> tuple[torch.Tensor, ...]:
    """Symmetric GCN normalisation with self-loops (Kipf & Welling 2017; Wang et al. 2023, eq. 1).

    Args:
        edge_index: ``int64 [2, E]`` directed edges (symmetric: every edge in both directions).
        num_nodes: ``N``.

    Returns:
        ``(edge_weight float32 [E], self_weight float32 [N])``: ``1 / √((d_s + 1)(d_t + 1))``
        and ``1 / (d + 1)``, with ``d`` the number of edges leaving a node.
    """
    degree = torch.bincount(edge_index[0], minlength=num_nodes).float() + 1.0
    inverse_root = degree.rsqrt()
    return inverse_root[edge_index[0]] * inverse_root[edge_index[1]], degree.reciprocal()


def two_hop_walks(graph: dgl.DGLGraph) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-backtracking 2-walks between non-bonded atoms (see the module docstring).

    Each directed bond ``e1 = i -> k`` is joined with every bond ``e2 = k -> j`` leaving its
    target (a CSR lookup of the bonds by source atom; the pairs ``(e1, e2)`` are the edges of
    :func:`dgl.line_graph`, built here faster with a few vectorised tensor operations),
    then walks with ``j = i`` (backtracking) or with a bond ``i -> j`` (three-membered rings)
    are dropped.

    Args:
        graph: a (batched) molecule graph with ``edata["e"]``.

    Returns:
        ``(edge_index int64 [2, E₂], edge_features [E₂, 2·F_e])``, sorted by (first bond,
        second bond).
    """
    src, dst = graph.edges()
    num_nodes = graph.num_nodes()
    by_source = torch.argsort(src, stable=True)  # bond ids grouped by source atom
    out_degree = torch.bincount(src, minlength=num_nodes)
    first_of_source = torch.cumsum(out_degree, 0) - out_degree
    continuations = out_degree[dst]  # bonds leaving the target of each bond
    first = torch.repeat_interleave(torch.arange(src.numel()), continuations)
    second = by_source[first_of_source[dst[first]] + positions_in_graph(first, continuations)]
    walk_src, walk_dst = src[first], dst[second]
    bonded = torch.isin(walk_src * num_nodes + walk_dst, src * num_nodes + dst)
    keep = (walk_src != walk_dst) & ~bonded
    first, second = first[keep], second[keep]
    features = graph.edata[EDGE_FEATURES]
    edge_index = torch.stack([walk_src[keep], walk_dst[keep]])
    return edge_index, torch.cat([features[first], features[second]], dim=1)


def sparse_graph_batch(graph: dgl.DGLGraph, two_hop: bool = False) -> SparseGraphBatch:
    """Build the sparse batch of a batched molecule graph (:func:`dgl.batch`).

    Args:
        graph: batched homogeneous graph with ``ndata["x"]`` and ``edata["e"]``.
        two_hop: also build the hop-2 edges (GMoE with hop-2 experts).

    Returns:
        The :class:`SparseGraphBatch`; atoms and bonds in the order of ``graph``.
    """
    num_nodes = graph.num_nodes()
    counts = graph.batch_num_nodes()
    edge_index = torch.stack(graph.edges())
    edge_weight, self_weight = gcn_normalisation(edge_index, num_nodes)
    hop2 = {}
    if two_hop:
        walks, walk_features = two_hop_walks(graph)
        walk_weight, walk_self_weight = gcn_normalisation(walks, num_nodes)
        hop2 = dict(
            hop2_edge_index=walks,
            hop2_edge_features=walk_features,
            hop2_edge_weight=walk_weight,
            hop2_self_weight=walk_self_weight,
        )
    return SparseGraphBatch(
        x=graph.ndata[NODE_FEATURES],
        edge_index=edge_index,
        edge_features=graph.edata[EDGE_FEATURES],
        edge_weight=edge_weight,
        self_weight=self_weight,
        graph_index=torch.repeat_interleave(torch.arange(counts.numel()), counts),
        num_nodes=counts,
        **hop2,
    )


def sparse_batch_builder(two_hop: bool = False):
    """The collate-time builder ``DGLGraph (batched) -> SparseGraphBatch``."""
    return functools.partial(sparse_graph_batch, two_hop=two_hop)
