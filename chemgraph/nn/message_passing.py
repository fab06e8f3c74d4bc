"""GCN and GIN message passing on plain tensors (``index_add``; no DGL in models).

Both layers follow the OGB molecule baselines (Hu et al. 2020, ``ogb/examples/graphproppred/
mol/conv.py``) that GMoE builds on (Wang et al. 2023, section 4.1): bond features enter each
message as a learnt embedding, and every layer is ``aggregate -> transform -> BatchNorm``.

* GCN (Kipf & Welling 2017; Wang et al. 2023, eq. 1, with bond embeddings ``e_ij``)::

      a_i = (x_i + r) / (d_i + 1) + Σ_{j -> i} (x_j + e_ij) / √((d_i + 1)(d_j + 1))
      out_i = BN(a_i W + b)

  ``r`` is a learnt self-loop ("root") embedding. The aggregation is linear, so it is done
  before the transform (``Â (X W) = (Â X) W``); OGB applies a ReLU to each message, which would
  forbid this order. Aggregating first is what lets a mixture of GCN experts run each expert
  on its own nodes only (:class:`chemgraph.models.gmoe.GMoELayer`).
* GIN (Xu et al. 2019), OGB's ``GINConv``::

      a_i = (1 + ε) x_i + Σ_{j -> i} ReLU(x_j + e_ij)
      out_i = BN(MLP(a_i)),  MLP = Linear(s, 2s) -> BN -> ReLU -> Linear(2s, s)

Shapes: ``x: float32 [N, s]``, ``edge_index: int64 [2, E]`` (source, target),
``edge_embedding: float32 [E, s]``.

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

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.nn.encoders import CategoricalEmbedding

__all__ = [
    "MessagePassingLayer",
    "NeighbourhoodAggregation",
    "SubsetBatchNorm",
    "gcn_aggregate",
    "gin_aggregate",
    "node_transform",
]

Kind = Literal["gcn", "gin"]


def gcn_aggregate(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    edge_embedding: torch.Tensor,
    edge_weight: torch.Tensor,
    self_weight: torch.Tensor,
    root: torch.Tensor,
) -> torch.Tensor:
    """GCN neighbourhood sum ``a_i`` (module docstring) -> ``[N, s]``.

    Args:
        edge_weight: ``float32 [E]`` ``1 / √((d_i + 1)(d_j + 1))``.
        self_weight: ``float32 [N]`` ``1 / (d_i + 1)``.
        root: ``float32 [s]`` self-loop embedding ``r``.
    """
    source, target = edge_index
    messages = edge_weight.unsqueeze(1).to(x.dtype) * (x[source] + edge_embedding)
    out = self_weight.unsqueeze(1).to(x.dtype) * (x + root)
    return out.index_add(0, target, messages.to(out.dtype))


def gin_aggregate(
    x: torch.Tensor, edge_index: torch.Tensor, edge_embedding: torch.Tensor, eps: torch.Tensor
) -> torch.Tensor:
    """GIN neighbourhood sum ``(1 + ε) x_i + Σ ReLU(x_j + e_ij)`` -> ``[N, s]``."""
    source, target = edge_index
    messages = F.relu(x[source] + edge_embedding)
    return ((1 + eps) * x).index_add(0, target, messages.to(x.dtype))


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


def node_transform(kind: Kind, dim: int) -> nn.Module:
    """The per-node transform after aggregation, followed by BatchNorm: ``[M, s] -> [M, s]``.

    ``"gcn"``: Linear(s, s) -> BN. ``"gin"``: Linear(s, 2s) -> BN -> ReLU -> Linear(2s, s) -> BN.
    Costs ``s²`` (GCN) or ``4 s²`` (GIN) multiply-adds per node.
    """
    if kind == "gcn":
        return nn.Sequential(nn.Linear(dim, dim), SubsetBatchNorm(dim))
    if kind == "gin":
        return nn.Sequential(
            nn.Linear(dim, 2 * dim),
            SubsetBatchNorm(2 * dim),
            nn.ReLU(),
            nn.Linear(2 * dim, dim),
            SubsetBatchNorm(dim),
        )
    raise ValueError(f"unknown message-passing kind {kind!r}; use 'gcn' or 'gin'")


class NeighbourhoodAggregation(nn.Module):
    """The neighbourhood sum ``a`` of a GCN or GIN layer, with its bond embedding (module
    docstring); no transform.

    Args:
        kind: ``"gcn"`` or ``"gin"``.
        dim: width ``s``.
        bond_vocabulary_sizes: categories per edge-feature column (``ogb`` bonds; twice the
            bond columns for GMoE's hop-2 walks, whose features are two bonds').

    Shapes:
        - input: ``x: float32 [N, s]``, ``edge_index: int64 [2, E]``, ``edge_features: int64
          [E, F_e]``, ``edge_weight: float32 [E]``, ``self_weight: float32 [N]`` (the last two
          are used by GCN only; :func:`chemgraph.batches.gcn_normalisation`).
        - output: ``float32 [N, s]``.
    """

    def __init__(self, kind: Kind, dim: int, bond_vocabulary_sizes: Sequence[int]) -> None:
        super().__init__()
        if kind not in ("gcn", "gin"):
            raise ValueError(f"unknown message-passing kind {kind!r}; use 'gcn' or 'gin'")
        self.kind = kind
        self.bond_encoder = CategoricalEmbedding(bond_vocabulary_sizes, dim)
        if kind == "gcn":
            self.root = nn.Parameter(torch.empty(dim))
            nn.init.normal_(self.root)
        else:
            self.eps = nn.Parameter(torch.zeros(()))

    def forward(self, x, edge_index, edge_features, edge_weight, self_weight) -> torch.Tensor:
        edge_embedding = self.bond_encoder(edge_features)
        if self.kind == "gcn":
            return gcn_aggregate(x, edge_index, edge_embedding, edge_weight, self_weight, self.root)
        return gin_aggregate(x, edge_index, edge_embedding, self.eps)


class MessagePassingLayer(nn.Module):
    """One GCN or GIN layer over the bonds: :class:`NeighbourhoodAggregation` then
    :func:`node_transform` (module docstring). GMoE with one expert (``n = k = 1``) computes
    the same function (:class:`chemgraph.models.gmoe.GMoELayer`).

    Args: as :class:`NeighbourhoodAggregation`.

    Shapes: as :class:`NeighbourhoodAggregation` (``float32 [N, s]`` out).
    """

    def __init__(self, kind: Kind, dim: int, bond_vocabulary_sizes: Sequence[int]) -> None:
        super().__init__()
        self.aggregate = NeighbourhoodAggregation(kind, dim, bond_vocabulary_sizes)
        self.transform = node_transform(kind, dim)

    def forward(self, x, edge_index, edge_features, edge_weight, self_weight) -> torch.Tensor:
        return self.transform(
            self.aggregate(x, edge_index, edge_features, edge_weight, self_weight)
        )
