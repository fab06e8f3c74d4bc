"""Edge-set (ESA) and node-set (NSA) batches.

Adjacency conventions (Buterez et al. 2024, section 3.1, Algorithm 1 and 2):

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

Each adjacency comes in three forms, all equal as sets of (query, key) token pairs:

* dense: ``bool [B, L, L]`` (:func:`edge_adjacency`, :func:`node_adjacency`), memory ``B·L²``;
* a pair list: ``int64 [2, P]`` in flattened ``[B·L]`` token indexing (:func:`edge_pairs`,
  :func:`node_pairs`), memory ``P`` = the number of adjacent pairs, for ESA at most the sum over
  atoms of (bond tokens at the atom)²;
* a FlexAttention ``mask_mod`` that looks the atoms up in ``src``/``dst`` for each (query, key)
  (:func:`edge_mask_mod`), memory ``B·L``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from chemgraph._dgl import dgl
from chemgraph.batches.base import TensorBatch, positions_in_graph
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES

__all__ = [
    "EdgeSetBatch",
    "NodeSetBatch",
    "batch_builder",
    "edge_adjacency",
    "edge_mask_mod",
    "edge_pairs",
    "edge_set_batch",
    "node_adjacency",
    "node_pairs",
    "node_set_batch",
]


@dataclass
class EdgeSetBatch(TensorBatch):
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
class NodeSetBatch(TensorBatch):
    """Padded node sets of ``B`` graphs (NSA input).

    Attributes:
        x: ``float32 [B, N, d_n]`` atom features; zero at padding.
        adjacency: ``bool [B, N, N]`` True where a bond joins two atoms or on the diagonal of
            real atoms (a departure from Buterez et al. 2024, Algorithm 2, whose node mask holds
            the bonds alone: the diagonal lets an atom attend to itself, as the edge mask of
            Algorithm 1 lets an edge, so that an atom without bonds has a key; ``ESAConfig(
            attend_to_self=False)`` drops it); False for every pair involving padding;
            ``None`` when the batch was built with ``dense_mask=False`` (the model then derives
            it from ``edge_index``).
        pad_mask: ``bool [B, N]`` True for real atoms.
        num_nodes: ``int64 [B]`` atoms per graph.
        edge_index: ``int64 [2, E]`` directed bonds (both directions of every bond) as
            flattened atom indices ``b·N + i`` into the ``[B·N]`` atoms of the batch.
    """

    x: torch.Tensor
    adjacency: torch.Tensor | None
    pad_mask: torch.Tensor
    num_nodes: torch.Tensor
    edge_index: torch.Tensor


def _share_atom(src_q, dst_q, src_k, dst_k):
    """Whether a query and a key edge share an atom: same source, same target, or crossed."""
    return (src_q == src_k) | (dst_q == dst_k) | (src_q == dst_k) | (dst_q == src_k)


def edge_adjacency(src: torch.Tensor, dst: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Edge-adjacency mask from per-graph atom indices (Buterez et al. 2024, Algorithm 1).

    Args:
        src: ``int64 [B, L]`` source atom of each token (any value at padding).
        dst: ``int64 [B, L]`` target atom of each token (any value at padding).
        pad_mask: ``bool [B, L]`` True for real tokens.

    Returns:
        ``bool [B, L, L]``: True iff both tokens are real and share an atom (source = source,
        target = target, or crossed). The diagonal of real tokens is True.

    Computed as a product of incidences: ``T [B, L, A]`` is 1 where a real token touches atom
    ``a`` (its source or target; ``A`` = the most atoms of a graph), and two tokens share an
    atom iff ``(T Tᵀ) > 0`` (counts of at most 2, exact in float32): fewer passes over
    ``B·L²`` than comparing the four atom pairs, and the same mask.
    """
    batch, length = src.shape
    atoms = int(torch.maximum(src, dst).masked_fill(~pad_mask, 0).max()) + 1 if length else 1
    touches = torch.zeros(batch, length, atoms + 1, device=src.device)  # column A: padding
    for end in (src, dst):
        touches.scatter_(2, end.masked_fill(~pad_mask, atoms).unsqueeze(2), 1.0)
    touches = touches[:, :, :atoms]
    return torch.bmm(touches, touches.transpose(1, 2)) > 0


def edge_pairs(
    src: torch.Tensor, dst: torch.Tensor, pad_mask: torch.Tensor, attend_to_self: bool = True
) -> torch.Tensor:
    """The True entries of :func:`edge_adjacency` as a pair list, built without an ``L²`` tensor.

    Every atom ``a`` with ``c_a`` bond tokens (as source or target) contributes its ``c_a²``
    (query, key) pairs; a pair of tokens that share both atoms (``i→j`` and ``j→i``) is kept
    once. Vectorised: one sort of the (atom, token) incidences, no loop over graphs or atoms.

    Args:
        src: ``int64 [B, L]`` per-graph source atom of each token (any value at padding).
        dst: ``int64 [B, L]`` per-graph target atom of each token (any value at padding).
        pad_mask: ``bool [B, L]`` True for real tokens.
        attend_to_self: keep the diagonal pairs ``(t, t)`` of real tokens.

    Returns:
        ``int64 [2, P]``: rows (query, key) in flattened token indexing ``b·L + t``, sorted by
        query then key, without duplicates. Memory ``O(Σ_a c_a²)``.
    """
    length = pad_mask.shape[1]
    token = torch.nonzero(pad_mask.flatten()).squeeze(1)
    graph = torch.div(token, length, rounding_mode="floor")
    first, second = src.flatten()[token], dst.flatten()[token]
    # number the atoms across the batch, graph b's atom i -> b·A + i, so graphs stay apart
    atoms_per_graph = int(torch.maximum(first, second).max()) + 1 if token.numel() else 1
    first, second = first + graph * atoms_per_graph, second + graph * atoms_per_graph
    two_atoms = first != second  # a self-loop token (bond-less atom) touches one atom
    atom, order = torch.sort(torch.cat([first, second[two_atoms]]))
    member = torch.cat([token, token[two_atoms]])[order]  # token of each incidence
    size = torch.unique_consecutive(atom, return_counts=True)[1]  # c_a, for atoms in order
    entry_size = size.repeat_interleave(size)  # c_a of each incidence's atom
    entry_start = (torch.cumsum(size, 0) - size).repeat_interleave(size)
    query_entry = torch.repeat_interleave(entry_size)  # each incidence c_a times
    key_entry = entry_start[query_entry] + positions_in_graph(query_entry, entry_size)
    return _unique_pairs(member[query_entry], member[key_entry], pad_mask.numel(), attend_to_self)


def edge_mask_mod(
    src: torch.Tensor, dst: torch.Tensor, pad_mask: torch.Tensor, attend_to_self: bool = True
):
    """A FlexAttention ``mask_mod`` equal to :func:`edge_adjacency`, without an ``L²`` tensor.

    Args:
        src: ``int64 [B, L]`` per-graph source atom of each token (any value at padding).
        dst: ``int64 [B, L]`` per-graph target atom of each token (any value at padding).
        pad_mask: ``bool [B, L]`` True for real tokens.
        attend_to_self: allow the diagonal.

    Returns:
        ``mask_mod(b, h, q, k) -> bool`` (:mod:`torch.nn.attention.flex_attention`): True iff
        tokens ``q`` and ``k`` of graph ``b`` are real and share an atom (and ``q ≠ k`` when
        ``attend_to_self`` is False). Looks the atoms up in ``src``/``dst``; any head ``h``.
    """

    def mask_mod(b, h, q, k):
        allowed = _share_atom(src[b, q], dst[b, q], src[b, k], dst[b, k])
        allowed = allowed & pad_mask[b, q] & pad_mask[b, k]
        return allowed if attend_to_self else allowed & (q != k)

    return mask_mod


def node_adjacency(edge_index: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Atom-adjacency mask of a node set (Buterez et al. 2024, Algorithm 2).

    Args:
        edge_index: ``int64 [2, E]`` directed bonds in flattened atom indexing ``b·N + i``.
        pad_mask: ``bool [B, N]`` True for real atoms.

    Returns:
        ``bool [B, N, N]``: True at ``[b, i, j]`` iff bond ``i→j`` exists in graph ``b``, and on
        the diagonal of real atoms.
    """
    batch, length = pad_mask.shape
    adjacency = torch.zeros(batch * length, length, dtype=torch.bool, device=pad_mask.device)
    adjacency[edge_index[0], edge_index[1] % length] = True
    adjacency = adjacency.view(batch, length, length)
    adjacency.diagonal(dim1=1, dim2=2).logical_or_(pad_mask)
    return adjacency


def node_pairs(
    edge_index: torch.Tensor, pad_mask: torch.Tensor, attend_to_self: bool = True
) -> torch.Tensor:
    """The True entries of :func:`node_adjacency` as a pair list (memory ``O(E + B·N)``).

    Args:
        edge_index: ``int64 [2, E]`` directed bonds in flattened atom indexing ``b·N + i``.
        pad_mask: ``bool [B, N]`` True for real atoms.
        attend_to_self: keep the diagonal pairs ``(i, i)`` of real atoms.

    Returns:
        ``int64 [2, P]``: rows (query, key) in flattened atom indexing, sorted by query then
        key, without duplicates.
    """
    atom = torch.nonzero(pad_mask.flatten()).squeeze(1)
    query, key = torch.cat([edge_index, atom.expand(2, -1)], dim=1)
    return _unique_pairs(query, key, pad_mask.numel(), attend_to_self)


def _unique_pairs(
    query: torch.Tensor, key: torch.Tensor, num_tokens: int, attend_to_self: bool
) -> torch.Tensor:
    """Sorted, deduplicated ``int64 [2, P]`` (query, key) pairs; no diagonal unless asked."""
    if not attend_to_self:
        off_diagonal = query != key
        query, key = query[off_diagonal], key[off_diagonal]
    pair = torch.unique(query * num_tokens + key)
    return torch.stack([torch.div(pair, num_tokens, rounding_mode="floor"), pair % num_tokens])


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
    node_x = graph.ndata[NODE_FEATURES].float()
    edge_x = graph.edata[EDGE_FEATURES].float()

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
    position = positions_in_graph(token_graph, counts)
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


def node_set_batch(graph: dgl.DGLGraph, dense_mask: bool = True) -> NodeSetBatch:
    """Build the NSA batch of a batched DGLGraph (Buterez et al. 2024, Algorithm 2).

    Args:
        graph: batched graph with ``ndata["x"]`` ``[N_tot, d_n]``.
        dense_mask: also build the ``[B, N, N]`` adjacency (memory ``B·N²`` bytes).

    Returns:
        The padded :class:`NodeSetBatch`.
    """
    num_graphs = graph.batch_size
    counts = graph.batch_num_nodes()
    node_graph = torch.repeat_interleave(torch.arange(num_graphs), counts)
    position = positions_in_graph(node_graph, counts)
    length = int(counts.max()) if num_graphs else 0
    node_x = graph.ndata[NODE_FEATURES].float()

    x = node_x.new_zeros(num_graphs, length, node_x.shape[1])
    x[node_graph, position] = node_x
    pad_mask = torch.zeros(num_graphs, length, dtype=torch.bool)
    pad_mask[node_graph, position] = True
    edge_index = (node_graph * length + position)[torch.stack(graph.edges())]
    adjacency = node_adjacency(edge_index, pad_mask) if dense_mask else None
    return NodeSetBatch(x, adjacency, pad_mask, counts, edge_index)


def batch_builder(set_type: str, attention: str = "dense"):
    """The collate-time builder of a set type: ``"edge"`` (ESA) or ``"node"`` (NSA).

    Args:
        set_type: ``"edge"`` or ``"node"``.
        attention: the model's :attr:`chemgraph.models.ESAConfig.attention`; the dense
            ``[B, L, L]`` mask is built only for ``"dense"`` and ``"auto"`` (which picks dense
            at molecule scale), never for ``"sparse"``/``"flex"``.

    Raises:
        ValueError: unknown set type.
    """
    builders = {"edge": edge_set_batch, "node": node_set_batch}
    if set_type not in builders:
        raise ValueError(f"unknown set type {set_type!r}; available: {', '.join(builders)}")
    return functools.partial(builders[set_type], dense_mask=attention in ("dense", "auto"))
