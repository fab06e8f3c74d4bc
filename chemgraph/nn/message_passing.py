"""GCN and GIN message passing on plain tensors (no DGL in models).

The layers of the OGB molecule baselines (Hu et al. 2020; ``examples/graphproppred/mol/conv.py``
of the OGB repository) that GMoE builds on (Wang et al. 2023, section 4.1). Bond features enter
each message as a learnt embedding ``e_ij`` (:class:`CategoricalEmbedding`, one per layer); the
GCN weights are ``n_ij = 1 / √(d_i d_j)`` with ``d`` = 1 + the edges leaving an atom (the self
loop counted); ``j -> i`` runs over the edges into atom ``i``.

* GCN, OGB's ``GCNConv`` followed by BatchNorm (:class:`GCNConv`, kind ``"gcn"``)::

      u = x W + b
      a_i = Σ_{j -> i} n_ij · ReLU(u_j + e_ij) + ReLU(u_i + r) / d_i
      out_i = BN(a_i)

  ``r`` is a learnt self-loop ("root") embedding. The ReLU on every message makes the
  aggregation non-linear: the transform comes first, and an atom's output needs ``u`` of its
  neighbours too.
* Linear GCN (kind ``"linear-gcn"``): Kipf & Welling's linear messages (Wang et al. 2023,
  eq. 1) with the same bond and root embeddings::

      a_i = (x_i + r) / d_i + Σ_{j -> i} n_ij (x_j + e_ij)
      out_i = BN(a_i W + b)

  The aggregation is linear, so it comes before the transform (``Â (X W) = (Â X) W``), and a
  mixture of experts runs each expert's transform on its own atoms only
  (:class:`chemgraph.models.gmoe.GMoELayer`). ``a`` is one CSR product, bond and root terms
  included: one ``embedding_bag`` whose bag ``i`` is row ``i`` of ``Â``
  (:meth:`Neighbourhood.rows`), each entry ``n_ij`` times the sum of two rows, ``x_j`` and the
  embedding of the edge's bond features, of a table that stacks ``x``, the embeddings of the
  batch's distinct bond-feature rows (``U ≪ E`` of them, embedded once) and ``r``.
* GIN (Xu et al. 2019), OGB's ``GINConv`` followed by BatchNorm (kind ``"gin"``)::

      a_i = (1 + ε) x_i + Σ_{j -> i} ReLU(x_j + e_ij)
      out_i = BN(MLP(a_i)),  MLP = Linear(s, 2s) -> BN -> ReLU -> Linear(2s, s)

``BN`` is BatchNorm (OGB's, and GMoE's reference code), or with ``norm="layer"`` LayerNorm
over each atom's features (:func:`normalisation`; a departure, GMoE's ``chemgraph train``
default, :mod:`chemgraph.models.gmoe`): BatchNorm normalises an atom with statistics of the
other atoms of its training batch and with running statistics in evaluation, so that a model
trained on batches of similar molecules (``chemgraph train``'s size-bucketed batches) can
predict very differently in evaluation; LayerNorm computes the same function in training and
evaluation, whatever the batch.

A :class:`Neighbourhood` (one hop's edges grouped by target atom, the distinct bond-feature
rows, the rows of ``Â`` with their self loops in CSR form) is built once per batch and hop and
read by every layer and expert. Messages with a ReLU are one ``embedding_bag`` over the stacked
rows of ``u`` (or ``x``), of the bond embeddings of the distinct bond rows and of ``r``; as
``n_ij > 0``, ``n_ij · ReLU(z) = ReLU(n_ij · z)`` folds the weight into the bag's per-sample
weights. The OGB GCN sums an atom's messages with one more ``embedding_bag`` whose bags are the
rows of ``Â`` (:meth:`Rows.sums`), GIN with ``index_add``.

Shapes: ``x: float32 [N, s]``; a layer returns ``float32 [N, s]``, or ``[M, s]`` for ``M``
chosen atoms (:meth:`GCNConv.forward`).

References:
    T. N. Kipf, M. Welling (2017), "Semi-Supervised Classification with Graph Convolutional
    Networks", ICLR 2017, https://arxiv.org/abs/1609.02907.
    K. Xu, W. Hu, J. Leskovec, S. Jegelka (2019), "How Powerful are Graph Neural Networks?",
    ICLR 2019, https://arxiv.org/abs/1810.00826.
    W. Hu et al. (2020), "Open Graph Benchmark: Datasets for Machine Learning on Graphs",
    NeurIPS 2020, https://arxiv.org/abs/2005.00687.
    H. Wang et al. (2023), "Graph Mixture of Experts: Learning on Large-Scale Graphs with
    Explicit Diversity Modeling", NeurIPS 2023, https://arxiv.org/abs/2304.02806.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.nn.encoders import CategoricalEmbedding, flat_categorical_indices

__all__ = [
    "NORMS",
    "GCNConv",
    "MessagePassingLayer",
    "Neighbourhood",
    "NeighbourhoodAggregation",
    "Rows",
    "SubsetBatchNorm",
    "message_passing_layer",
    "node_transform",
    "normalisation",
]

Kind = Literal["gcn", "linear-gcn", "gin"]
KINDS = ("gcn", "linear-gcn", "gin")
SHARED_AGGREGATION_KINDS = ("linear-gcn", "gin")
"""Kinds whose aggregation does not depend on the layer's transform, so that the experts of a
mixture can share it (:class:`NeighbourhoodAggregation` then :func:`node_transform`)."""
Norm = Literal["batch", "layer"]
NORMS = ("batch", "layer")
"""The layers' normalisations (:func:`normalisation`)."""


def normalisation(norm: Norm, dim: int) -> nn.Module:
    """The normalisation of a layer's atoms, ``[M, dim] -> [M, dim]``: ``"batch"``
    (:class:`SubsetBatchNorm`, OGB's) or ``"layer"`` (:class:`torch.nn.LayerNorm` over the
    features of each atom; the same in training and evaluation, independent of the batch).

    Raises:
        ValueError: another name.
    """
    if norm == "batch":
        return SubsetBatchNorm(dim)
    if norm == "layer":
        return nn.LayerNorm(dim)
    raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


class Rows(NamedTuple):
    """Rows of ``Â`` (the GCN weights with self loops, module docstring) for ``M`` atoms, in
    CSR form (:meth:`Neighbourhood.rows`): row ``r`` holds the entries ``pointer[r] :
    pointer[r + 1]``, the atom's edges in :class:`Neighbourhood` order, then its self loop.

    Attributes:
        pointer: ``int64 [M + 1]`` row pointer.
        columns: ``int64 [P]`` each entry's source atom (the atom itself for the self loop).
        weights: ``float32 [P]`` ``n_ij``, or ``1 / d_i`` for the self loop.
        bonds: ``int64 [P]`` each entry's row of the ``U`` distinct bond rows
            (:attr:`Neighbourhood.bond_rows`), ``U`` for the self loop (the root embedding,
            stacked after the ``U`` bond embeddings).
    """

    pointer: torch.Tensor
    columns: torch.Tensor
    weights: torch.Tensor
    bonds: torch.Tensor

    def sums(self, values: torch.Tensor) -> torch.Tensor:
        """``out[r] = Σ_p values[p]`` over the entries ``p`` of row ``r``: one ``embedding_bag``
        with :attr:`pointer` as offsets. Shapes: ``values: float [P, s]`` -> ``[M, s]``."""
        indices = torch.arange(values.shape[0], device=values.device)
        return F.embedding_bag(indices, values, self.pointer, mode="sum", include_last_offset=True)


class Neighbourhood:
    """One hop's edges of a batch, grouped by target atom, prepared once for every layer.

    Args:
        edge_index: ``int64 [2, E]`` edges (source, target).
        edge_features: ``int64 [E, F]`` categorical edge features.
        edge_weight: ``float32 [E]`` GCN weights ``n_ij`` (positive).
        self_weight: ``float32 [N]`` GCN self-loop weights ``1 / d_i``.
        vocabulary_sizes: the ``F`` feature columns' category counts.

    Attributes:
        source, target: ``int64 [E]`` the edges, sorted by target (stable).
        edge_weight: ``float32 [E]`` their weights.
        self_weight: ``float32 [N]``.
        row_pointer: ``int64 [N + 1]``: the edges into atom ``i`` are ``row_pointer[i] :
            row_pointer[i + 1]``.
        bond_indices: ``int64 [E, F]`` rows of the stacked bond tables
            (:func:`flat_categorical_indices`).

    Raises:
        ValueError: an edge feature outside its column's vocabulary, or another number of
            columns.
    """

    def __init__(
        self,
        edge_index: torch.Tensor,
        edge_features: torch.Tensor,
        edge_weight: torch.Tensor,
        self_weight: torch.Tensor,
        vocabulary_sizes: Sequence[int],
    ) -> None:
        self.vocabulary_sizes = tuple(int(v) for v in vocabulary_sizes)
        self.num_nodes = self_weight.shape[0]
        order = torch.argsort(edge_index[1], stable=True)
        self.source, self.target = edge_index[0, order], edge_index[1, order]
        self.edge_weight = edge_weight[order]
        self.self_weight = self_weight
        self.bond_indices = flat_categorical_indices(edge_features, self.vocabulary_sizes)[order]
        counts = torch.bincount(self.target, minlength=self.num_nodes)
        self.row_pointer = F.pad(counts.cumsum(0), (1, 0))

    @functools.cached_property
    def bond_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rows int64 [U, F], index int64 [E])``: the distinct rows of
        :attr:`bond_indices` and the row of each edge (embed ``U`` rows, not ``E``)."""
        sizes = self.vocabulary_sizes
        if math.prod(sizes) >= 2**62:
            raise ValueError(f"too many edge-feature combinations {sizes} for one int64 code")
        offsets = torch.tensor((0, *sizes[:-1]), device=self.target.device).cumsum(0)
        strides = torch.tensor((1, *sizes[:-1]), device=self.target.device).cumprod(0)
        size = torch.tensor(sizes, device=self.target.device)
        code = ((self.bond_indices - offsets) * strides).sum(1)
        distinct, index = torch.unique(code, return_inverse=True)
        rows = distinct.unsqueeze(1) // strides % size + offsets
        return rows, index

    @functools.cached_property
    def _every_row(self) -> Rows:
        """:meth:`rows` of every atom, built once. Row ``i`` starts at ``row_pointer[i] + i``
        (each earlier row holds one more entry, its self loop), so edge ``e`` (edges sorted by
        target) is entry ``e + target[e]``."""
        device = self.target.device
        pointer = self.row_pointer + torch.arange(self.num_nodes + 1, device=device)
        entries = torch.arange(self.source.numel(), device=device) + self.target
        loops = pointer[1:] - 1
        columns = self.source.new_empty(int(pointer[-1]))
        columns[entries] = self.source
        columns[loops] = torch.arange(self.num_nodes, device=device)
        weights = self.self_weight.new_empty(columns.shape, dtype=torch.float32)
        weights[entries], weights[loops] = self.edge_weight.float(), self.self_weight.float()
        distinct, index = self.bond_rows
        bonds = torch.full_like(columns, distinct.shape[0])
        bonds[entries] = index
        return Rows(pointer, columns, weights, bonds)

    def rows(self, nodes: torch.Tensor | None = None) -> Rows:
        """The rows ``nodes`` of ``Â`` (``int64 [M]``, repeats allowed; None = every atom),
        gathered from the rows of every atom (built once per batch and hop, for every layer and
        expert): ``Â[i, j] = n_ij`` for each edge ``j -> i`` (two walks between the same atoms
        are two entries), then ``Â[i, i] = 1 / d_i``; :class:`Rows`."""
        every = self._every_row
        if nodes is None:
            return every
        entries, pointer = _row_entries(every.pointer, nodes)
        return Rows(pointer, every.columns[entries], every.weights[entries], every.bonds[entries])

    def edges_into(self, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The edges into ``nodes`` (``int64 [M]``): ``(edges int64 [E_M], local int64
        [E_M])``, positions in :attr:`source`/:attr:`target`, grouped by target in the order
        of ``nodes``, and the position in ``nodes`` of each edge's target. A repeated node
        repeats its edges."""
        edges, pointer = _row_entries(self.row_pointer, nodes)
        local = torch.arange(nodes.numel(), device=nodes.device)
        return edges, torch.repeat_interleave(local, pointer.diff(), output_size=edges.numel())


def _row_entries(pointer: torch.Tensor, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The entries of rows ``nodes`` (``int64 [M]``, repeats allowed) of a CSR matrix with row
    pointer ``pointer``: ``(entries int64 [P], pointer int64 [M + 1])``, their positions in the
    matrix's arrays, row by row in the order of ``nodes``, and the row pointer of those rows."""
    start = pointer[nodes]
    length = pointer[nodes + 1] - start
    chosen = F.pad(length.cumsum(0), (1, 0))
    total = int(chosen[-1])
    shift = torch.repeat_interleave(start - chosen[:-1], length, output_size=total)
    return shift + torch.arange(total, device=nodes.device), chosen


def _bond_table(encoder: CategoricalEmbedding, neighbourhood: Neighbourhood) -> torch.Tensor:
    """Embeddings of the neighbourhood's distinct bond rows, ``float32 [U, s]``."""
    rows, _ = neighbourhood.bond_rows
    return F.embedding_bag(rows, encoder.weight, mode="sum")


def _pair_sums(
    nodes: torch.Tensor,
    embeddings: torch.Tensor,
    node_rows: torch.Tensor,
    embedding_rows: torch.Tensor,
    weights: torch.Tensor | None = None,
    pointer: torch.Tensor | None = None,
) -> torch.Tensor:
    """``out[b] = Σ_m w_m · (nodes[node_rows[m]] + embeddings[embedding_rows[m]])`` over the
    messages ``m`` of bag ``b``, one ``embedding_bag`` over the stacked rows of ``nodes`` and
    ``embeddings``: bag ``b`` is message ``b`` alone (``pointer`` None) or the messages
    ``pointer[b] : pointer[b + 1]``.

    Shapes: ``nodes: float [N, s]``, ``embeddings: float [T, s]``, ``node_rows`` and
    ``embedding_rows: int64 [P]``, ``weights: float [P]`` (None = 1), ``pointer: int64 [M + 1]``
    -> ``[P, s]`` (``pointer`` None) or ``[M, s]``, dtype of ``nodes``.
    """
    table = torch.cat([nodes, embeddings.to(nodes.dtype)])
    indices = torch.stack([node_rows, embedding_rows + nodes.shape[0]], dim=1)
    if weights is not None:
        weights = weights.to(table.dtype).unsqueeze(1).expand(-1, 2)
    if pointer is None:
        return F.embedding_bag(indices, table, per_sample_weights=weights, mode="sum")
    if weights is not None:
        weights = weights.flatten()
    return F.embedding_bag(
        indices.flatten(), table, 2 * pointer, per_sample_weights=weights, mode="sum",
        include_last_offset=True,
    )  # fmt: skip


class GCNConv(nn.Module):
    """OGB's GCN layer followed by BatchNorm (module docstring, kind ``"gcn"``).

    Args:
        dim: width ``s``.
        bond_vocabulary_sizes: categories per edge-feature column (``ogb`` bonds; twice the
            bond columns for GMoE's hop-2 walks, whose features are two bonds').
        norm: ``"batch"`` (OGB) or ``"layer"`` (:func:`normalisation`).

    Shapes:
        - input: ``x: float32 [N, s]``, a :class:`Neighbourhood`, optional ``nodes: int64 [M]``
          (distinct atoms).
        - output: ``float32 [N, s]``, or ``[M, s]`` for the atoms ``nodes`` only; their batch
          statistics are those of the ``M`` rows (:class:`SubsetBatchNorm`).
    """

    def __init__(
        self, dim: int, bond_vocabulary_sizes: Sequence[int], norm: Norm = "batch"
    ) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.bond_encoder = CategoricalEmbedding(bond_vocabulary_sizes, dim)
        self.root = nn.Parameter(torch.empty(dim))
        nn.init.normal_(self.root)  # OGB: an nn.Embedding(1, dim), initialised N(0, 1)
        self.norm = normalisation(norm, dim)

    def forward(
        self, x: torch.Tensor, neighbourhood: Neighbourhood, nodes: torch.Tensor | None = None
    ) -> torch.Tensor:
        rows = neighbourhood.rows(nodes)
        if nodes is None:  # every atom: u of every atom
            u, columns = self.linear(x), rows.columns
        else:  # u of the atoms and of their neighbours only (the columns of their rows)
            needed = torch.zeros(neighbourhood.num_nodes, dtype=torch.bool, device=x.device)
            needed[rows.columns] = True
            u = self.linear(x.index_select(0, needed.nonzero().squeeze(1)))
            columns = (needed.cumsum(0) - 1)[rows.columns]
        embeddings = torch.cat(
            [_bond_table(self.bond_encoder, neighbourhood), self.root.unsqueeze(0)]
        )
        messages = _pair_sums(u, embeddings, columns, rows.bonds, rows.weights).relu_()
        return self.norm(rows.sums(messages.float()))


class SubsetBatchNorm(nn.BatchNorm1d):
    """:class:`torch.nn.BatchNorm1d` that also accepts fewer than two rows in training.

    A mixture-of-experts layer may route a single node (or none) of a batch to an expert;
    batch statistics of one row are undefined, so such a call normalises with the running
    statistics (as in evaluation) and leaves them unchanged.

    Shapes:
        - input: ``x: float [M, num_features]``, any ``M >= 0``.
        - output: ``[M, num_features]``, same dtype.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and x.shape[0] < 2:
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        return super().forward(x)


def node_transform(kind: Kind, dim: int, norm: Norm = "batch") -> nn.Module:
    """The per-node transform after a shared aggregation, followed by BatchNorm: ``[M, s] ->
    [M, s]``.

    ``"linear-gcn"``: Linear(s, s) -> BN. ``"gin"``: Linear(s, 2s) -> BN -> ReLU ->
    Linear(2s, s) -> BN. Costs ``s²`` or ``4 s²`` multiply-adds per node. With
    ``norm="layer"`` every BN is a LayerNorm (:func:`normalisation`).

    Raises:
        ValueError: another kind (``"gcn"`` transforms before it aggregates: :class:`GCNConv`),
            or another norm.
    """
    if kind == "linear-gcn":
        return nn.Sequential(nn.Linear(dim, dim), normalisation(norm, dim))
    if kind == "gin":
        return nn.Sequential(
            nn.Linear(dim, 2 * dim),
            normalisation(norm, 2 * dim),
            nn.ReLU(),
            nn.Linear(2 * dim, dim),
            normalisation(norm, dim),
        )
    raise ValueError(
        f"no shared aggregation for kind {kind!r}; use one of {SHARED_AGGREGATION_KINDS}"
    )


class NeighbourhoodAggregation(nn.Module):
    """The neighbourhood sum ``a`` of a linear-GCN or GIN layer, with its bond embedding
    (module docstring); no transform.

    Args:
        kind: ``"linear-gcn"`` or ``"gin"``.
        dim: width ``s``.
        bond_vocabulary_sizes: as :class:`GCNConv`.

    Shapes:
        - input: ``x: float32 [N, s]``, a :class:`Neighbourhood`, optional ``nodes: int64 [M]``
          (repeats allowed).
        - output: ``float32 [N, s]``, or the ``M`` rows of ``nodes``.

    Raises:
        ValueError: another kind.
    """

    def __init__(self, kind: Kind, dim: int, bond_vocabulary_sizes: Sequence[int]) -> None:
        super().__init__()
        if kind not in SHARED_AGGREGATION_KINDS:
            raise ValueError(
                f"no shared aggregation for kind {kind!r}; use one of {SHARED_AGGREGATION_KINDS}"
            )
        self.kind = kind
        self.bond_encoder = CategoricalEmbedding(bond_vocabulary_sizes, dim)
        if kind == "linear-gcn":
            self.root = nn.Parameter(torch.empty(dim))
            nn.init.normal_(self.root)
        else:
            self.eps = nn.Parameter(torch.zeros(()))

    def forward(
        self, x: torch.Tensor, neighbourhood: Neighbourhood, nodes: torch.Tensor | None = None
    ) -> torch.Tensor:
        hood = neighbourhood
        if self.kind == "gin":
            _, bond = hood.bond_rows
            if nodes is None:
                source, target, own = hood.source, hood.target, x
            else:
                edges, target = hood.edges_into(nodes)
                source, bond, own = hood.source[edges], bond[edges], x[nodes]
            messages = _pair_sums(x, _bond_table(self.bond_encoder, hood), source, bond).relu_()
            return ((1 + self.eps) * own).index_add(0, target, messages.to(x.dtype))
        embeddings = torch.cat([_bond_table(self.bond_encoder, hood), self.root.unsqueeze(0)])
        rows = hood.rows(nodes)
        with torch.autocast(x.device.type, enabled=False):  # a CSR product in float32
            return _pair_sums(
                x.float(), embeddings.float(), rows.columns, rows.bonds, rows.weights, rows.pointer
            )


class MessagePassingLayer(nn.Module):
    """One linear-GCN or GIN layer: :class:`NeighbourhoodAggregation` then
    :func:`node_transform` (module docstring). GMoE with one expert (``n = k = 1``) computes
    the same function (:class:`chemgraph.models.gmoe.GMoELayer`).

    Args: as :class:`NeighbourhoodAggregation`, and ``norm`` (:func:`node_transform`).

    Shapes: as :class:`NeighbourhoodAggregation` (``float32 [N, s]`` out).
    """

    def __init__(
        self, kind: Kind, dim: int, bond_vocabulary_sizes: Sequence[int], norm: Norm = "batch"
    ) -> None:
        super().__init__()
        self.aggregate = NeighbourhoodAggregation(kind, dim, bond_vocabulary_sizes)
        self.transform = node_transform(kind, dim, norm)

    def forward(self, x: torch.Tensor, neighbourhood: Neighbourhood) -> torch.Tensor:
        return self.transform(self.aggregate(x, neighbourhood))


def message_passing_layer(
    kind: Kind, dim: int, bond_vocabulary_sizes: Sequence[int], norm: Norm = "batch"
) -> GCNConv | MessagePassingLayer:
    """One layer of ``kind`` (module docstring): :class:`GCNConv` for ``"gcn"``, else
    :class:`MessagePassingLayer`; both are called as ``layer(x, neighbourhood)``. ``norm``:
    :func:`normalisation`.

    Raises:
        ValueError: an unknown kind or norm.
    """
    if kind == "gcn":
        return GCNConv(dim, bond_vocabulary_sizes, norm)
    if kind in SHARED_AGGREGATION_KINDS:
        return MessagePassingLayer(kind, dim, bond_vocabulary_sizes, norm)
    raise ValueError(f"unknown message-passing kind {kind!r}; use one of {KINDS}")
