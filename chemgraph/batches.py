"""Batched DGL graphs -> padded plain-tensor batches for the attention models.

DGL 2.1 cannot hold CUDA tensors, so the models never see a DGLGraph: the DataLoader collate
turns a batched DGLGraph into the dataclasses below (built once, on the CPU, in the loader
workers) and the training loop moves them with ``.to(device)``.

Adjacency conventions (seed 000, section 3.1, Algorithm 1 and 2):

* Edge set (ESA): the tokens of a graph are its directed edges, ``x_ij = n_i ‖ n_j ‖ e_ij``.
  Two edges are adjacent iff they share an atom: same source, same target, or crossed (the
  source of one is the target of the other). By this definition every edge is adjacent to
  itself; whether a token may attend to itself is decided by the model
  (:attr:`chemgraph.models.esa.ESAConfig.attend_to_self`), not here.
* Atoms without bonds (single-atom molecules such as ``[Na+]``, the counter-ion of a salt)
  would otherwise vanish from the edge set, so each enters as one self-loop token
  ``x_ii = n_i ‖ n_i ‖ 0`` with an all-zero bond feature vector (a real bond never encodes as
  all zeros). A graph with zero bonds therefore still has tokens and a finite embedding.
* Node set (NSA): the tokens are the atoms; two atoms are adjacent iff a bond joins them, and
  each atom is adjacent to itself.

Graphs of one batch never see each other: tokens are padded per graph and every mask is built
per graph from local (per-graph) atom indices.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from chemgraph._dgl import dgl

__all__ = [
    "EdgeSetBatch",
    "NodeSetBatch",
    "batch_builder",
    "edge_adjacency",
    "edge_set_batch",
    "node_set_batch",
]


class _TensorBatch:
    """``.to(device)`` and ``.pin_memory()`` over every tensor field of a dataclass."""

    def to(self, device: torch.device | str, non_blocking: bool = False):
        values = {f.name: _move(getattr(self, f.name), device, non_blocking) for f in fields(self)}
        return type(self)(**values)

    def pin_memory(self):
        values = {f.name: _pin(getattr(self, f.name)) for f in fields(self)}
        return type(self)(**values)

    @property
    def batch_size(self) -> int:
        return self.pad_mask.shape[0]


def _move(value, device, non_blocking):
    return value.to(device, non_blocking=non_blocking) if torch.is_tensor(value) else value


def _pin(value):
    return value.pin_memory() if torch.is_tensor(value) else value


@dataclass
class EdgeSetBatch(_TensorBatch):
    """Padded edge sets of ``B`` graphs (ESA input).

    Attributes:
        x: ``float32 [B, L, 2·d_n + d_e]`` edge tokens ``n_src ‖ n_dst ‖ e``; zero at padding.
        src: ``int64 [B, L]`` per-graph index of each token's source atom; -1 at padding.
        dst: ``int64 [B, L]`` per-graph index of each token's target atom; -1 at padding.
        pad_mask: ``bool [B, L]`` True for real tokens.
        edge_mask: ``bool [B, L, L]`` True where two tokens share an atom (diagonal True for
            real tokens), False for every pair involving padding; ``None`` when the batch was
            built with ``dense_mask=False`` (the model then derives it from ``src``/``dst``).
        num_edges: ``int64 [B]`` tokens per graph (directed edges plus bond-less atoms).
    """

    x: torch.Tensor
    src: torch.Tensor
    dst: torch.Tensor
    pad_mask: torch.Tensor
    edge_mask: torch.Tensor | None
    num_edges: torch.Tensor


@dataclass
class NodeSetBatch(_TensorBatch):
    """Padded node sets of ``B`` graphs (NSA input).

    Attributes:
        x: ``float32 [B, N, d_n]`` atom features; zero at padding.
        adjacency: ``bool [B, N, N]`` True where a bond joins two atoms or on the diagonal of
            real atoms; False for every pair involving padding.
        pad_mask: ``bool [B, N]`` True for real atoms.
        num_nodes: ``int64 [B]`` atoms per graph.
    """

    x: torch.Tensor
    adjacency: torch.Tensor
    pad_mask: torch.Tensor
    num_nodes: torch.Tensor


def edge_adjacency(src: torch.Tensor, dst: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Edge-adjacency mask from per-graph atom indices (seed 000, Algorithm 1).

    Args:
        src: ``int64 [B, L]`` source atom of each token (any value at padding).
        dst: ``int64 [B, L]`` target atom of each token (any value at padding).
        pad_mask: ``bool [B, L]`` True for real tokens.

    Returns:
        ``bool [B, L, L]``: True iff both tokens are real and share an atom (source = source,
        target = target, or crossed). The diagonal of real tokens is True.
    """
    s_i, s_j = src.unsqueeze(2), src.unsqueeze(1)
    d_i, d_j = dst.unsqueeze(2), dst.unsqueeze(1)
    shared = (s_i == s_j) | (d_i == d_j) | (s_i == d_j) | (d_i == s_j)
    return shared & pad_mask.unsqueeze(2) & pad_mask.unsqueeze(1)


def _positions_in_graph(graph_of_item: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Index of each item within its graph, for items sorted by graph."""
    offsets = torch.cumsum(counts, 0) - counts
    return torch.arange(graph_of_item.numel()) - offsets[graph_of_item]


def edge_set_batch(graph: dgl.DGLGraph, dense_mask: bool = True) -> EdgeSetBatch:
    """Build the ESA batch of a batched DGLGraph (:func:`dgl.batch`).

    Args:
        graph: batched graph with ``ndata["x"]`` ``[N_tot, d_n]`` and ``edata["e"]``
            ``[E_tot, d_e]`` (integer features are cast to float32).
        dense_mask: also build the ``[B, L, L]`` edge-adjacency mask (memory ``B·L²`` bytes).

    Returns:
        The padded :class:`EdgeSetBatch`; within a graph, tokens keep DGL's edge order,
        followed by one self-loop token per bond-less atom in atom order.
    """
    num_graphs = graph.batch_size
    node_counts = graph.batch_num_nodes()
    node_graph = torch.repeat_interleave(torch.arange(num_graphs), node_counts)
    node_offset = (torch.cumsum(node_counts, 0) - node_counts)[node_graph]
    node_x = graph.ndata["x"].float()
    edge_x = graph.edata["e"].float()

    src, dst = graph.edges()
    isolated = torch.nonzero((graph.in_degrees() + graph.out_degrees()) == 0).flatten()
    token_src = torch.cat([src, isolated])
    token_dst = torch.cat([dst, isolated])
    token_bond = torch.cat([edge_x, edge_x.new_zeros(isolated.numel(), edge_x.shape[1])])
    token_x = torch.cat([node_x[token_src], node_x[token_dst], token_bond], dim=1)

    token_graph = node_graph[token_src]
    order = torch.sort(token_graph, stable=True).indices
    token_graph = token_graph[order]
    counts = torch.bincount(token_graph, minlength=num_graphs)
    position = _positions_in_graph(token_graph, counts)
    length = int(counts.max()) if num_graphs else 0

    x = node_x.new_zeros(num_graphs, length, token_x.shape[1])
    x[token_graph, position] = token_x[order]
    local_src = torch.full((num_graphs, length), -1, dtype=torch.int64)
    local_dst = torch.full((num_graphs, length), -1, dtype=torch.int64)
    local_src[token_graph, position] = (token_src - node_offset[token_src])[order]
    local_dst[token_graph, position] = (token_dst - node_offset[token_dst])[order]
    pad_mask = torch.zeros(num_graphs, length, dtype=torch.bool)
    pad_mask[token_graph, position] = True
    mask = edge_adjacency(local_src, local_dst, pad_mask) if dense_mask else None
    return EdgeSetBatch(x, local_src, local_dst, pad_mask, mask, counts)


def node_set_batch(graph: dgl.DGLGraph) -> NodeSetBatch:
    """Build the NSA batch of a batched DGLGraph (seed 000, Algorithm 2).

    Args:
        graph: batched graph with ``ndata["x"]`` ``[N_tot, d_n]``.

    Returns:
        The padded :class:`NodeSetBatch`.
    """
    num_graphs = graph.batch_size
    counts = graph.batch_num_nodes()
    node_graph = torch.repeat_interleave(torch.arange(num_graphs), counts)
    position = _positions_in_graph(node_graph, counts)
    length = int(counts.max()) if num_graphs else 0
    node_x = graph.ndata["x"].float()

    x = node_x.new_zeros(num_graphs, length, node_x.shape[1])
    x[node_graph, position] = node_x
    pad_mask = torch.zeros(num_graphs, length, dtype=torch.bool)
    pad_mask[node_graph, position] = True
    adjacency = torch.zeros(num_graphs, length, length, dtype=torch.bool)
    src, dst = graph.edges()
    adjacency[node_graph[src], position[src], position[dst]] = True
    adjacency[node_graph, position, position] = True
    return NodeSetBatch(x, adjacency, pad_mask, counts)


def batch_builder(set_type: str):
    """The collate-time builder of a set type: ``"edge"`` (ESA) or ``"node"`` (NSA).

    Raises:
        ValueError: unknown set type.
    """
    builders = {"edge": edge_set_batch, "node": node_set_batch}
    if set_type not in builders:
        raise ValueError(f"unknown set type {set_type!r}; available: {', '.join(builders)}")
    return builders[set_type]
