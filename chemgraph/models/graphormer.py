"""Graphormer: a Transformer over atoms with structural attention biases.

Reference: C. Ying, T. Cai, S. Luo, S. Zheng, G. Ke, D. He, Y. Shen, T.-Y. Liu (2021), "Do
Transformers Really Perform Badly for Graph Representation?", NeurIPS 2021,
https://arxiv.org/abs/2106.05234 (official code: microsoft/Graphormer).

The input of atom ``i`` is its feature embedding plus the centrality encoding (eq. 5)::

    h_i = x_i + z⁻[deg⁻(i)] + z⁺[deg⁺(i)]

and every attention score gets per-head additive biases (eq. 6)::

    A_ij = (h_i W_Q)(h_j W_K)ᵀ / √d + b_φ(i,j) + c_ij

* spatial encoding ``b_φ(i,j)``: one learnable scalar per head and shortest-path distance
  bucket (0 … D clipped, plus a dedicated unreachable bucket D + 1 for atoms of different
  fragments), from :class:`chemgraph.batches.DenseGraphBatch` ``spd``;
* edge encoding ``c_ij`` (eq. 7): the bonds ``e_1 … e_M`` along one shortest path ``i -> j``
  (``M = min(SPD, H)``, multi-hop clipped at ``H``), each embedded per head and mixed by a
  learnable ``[heads, heads]`` matrix per position, averaged: ``c_ij = (1/M) Σ_n x_{e_n} W_n``;
* a virtual graph token ``[VNode]`` joined to every atom, with its own learnable per-head
  bias in both directions (section 3.1.3); its final state, layer-normalised, is the graph
  representation.

Layers are pre-LN Transformer blocks (``h = h + MHA(LN(h))``, ``h = h + FFN(LN(h))``, GELU).
Padded atoms neither attend nor are attended to, and carry no bias (the bias is zero there);
graphs of one batch never see each other (dense per-graph layout).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from chemgraph.batches import DenseGraphBatch
from chemgraph.models.config import ModelConfig
from chemgraph.nn import MLP, CategoricalEmbedding, MultiHeadAttention

__all__ = ["Graphormer", "GraphormerConfig", "degree_bucket"]


def degree_bucket(degree: torch.Tensor, max_degree: int) -> torch.Tensor:
    """Centrality bucket of a degree: itself up to ``max_degree``, ``max_degree`` above.

    Shapes: ``int64 [...]`` -> ``int64 [...]`` in ``[0, max_degree]``.
    """
    return degree.clamp(min=0, max=max_degree)


@dataclass
class GraphormerConfig(ModelConfig):
    """Configuration of a Graphormer (YAML and checkpoint round trip).

    Attributes:
        atom_vocabulary_sizes: categories per atom-feature column (``ogb`` preset, fixed).
        bond_vocabulary_sizes: categories per bond-feature column (``ogb`` preset, fixed).
        num_outputs: predicted values per graph.
        hidden_dim: model width ``d``.
        num_layers: Transformer layers.
        num_heads: attention heads (``hidden_dim`` divisible by it).
        mlp_hidden_multiplier: feed-forward width = multiplier × ``hidden_dim``.
        max_degree: centrality buckets ``0 … max_degree`` (larger degrees share the last).
        max_distance: ``D``, spatial-encoding distances are clipped at ``D``; ``D + 2``
            buckets with the unreachable one.
        multi_hop_max_distance: ``H``, bonds per path in the edge encoding (Graphormer's
            ``multi_hop_max_dist``, 5 for OGB molecules); also how many are cached per pair.
        dropout: dropout on attention outputs, feed-forward and input.
        attention_dropout: dropout on attention weights.
    """

    atom_vocabulary_sizes: list[int]
    bond_vocabulary_sizes: list[int]
    num_outputs: int = 1
    hidden_dim: int = 128
    num_layers: int = 6
    num_heads: int = 8
    mlp_hidden_multiplier: int = 2
    max_degree: int = 8
    max_distance: int = 20
    multi_hop_max_distance: int = 5
    dropout: float = 0.1
    attention_dropout: float = 0.1

    FIXED = {"atom_vocabulary_sizes": [1], "bond_vocabulary_sizes": [1], "num_outputs": 1}

    def __post_init__(self) -> None:
        self.check_positive_integers(
            ("num_outputs", "hidden_dim", "num_layers", "num_heads", "mlp_hidden_multiplier",
             "max_degree", "max_distance", "multi_hop_max_distance")
        )  # fmt: skip
        self.check_heads()
        self.check_fractions(("dropout", "attention_dropout"))
        self.atom_vocabulary_sizes = [int(v) for v in self.atom_vocabulary_sizes]
        self.bond_vocabulary_sizes = [int(v) for v in self.bond_vocabulary_sizes]


class GraphormerLayer(nn.Module):
    """Pre-LN Transformer block with an additive attention bias.

    Shapes: ``x: [B, L, d]``, ``mask: bool [B, L, L]``, ``bias: float [B, H, L, L]`` ->
    ``[B, L, d]``.
    """

    def __init__(self, config: GraphormerConfig) -> None:
        super().__init__()
        d = config.hidden_dim
        self.norm_attention = nn.LayerNorm(d)
        self.attention = MultiHeadAttention(d, config.num_heads, config.attention_dropout)
        self.norm_mlp = nn.LayerNorm(d)
        self.mlp = MLP(d, config.mlp_hidden_multiplier * d, "standard", config.dropout)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        h = self.norm_attention(x)
        x = x + self.dropout(self.attention(h, h, mask, bias))
        return x + self.dropout(self.mlp(self.norm_mlp(x)))


class Graphormer(nn.Module):
    """Graphormer graph-level predictor (module docstring).

    Composition: atom embedding + centrality encoding -> [VNode] prepended -> ``num_layers``
    :class:`GraphormerLayer` with spatial + edge + virtual-token biases -> LayerNorm of the
    [VNode] state -> Linear head.

    Args:
        config: the :class:`GraphormerConfig`.

    Shapes:
        - input: :class:`DenseGraphBatch` built with ``max_distance`` and
          ``max_path_edges = multi_hop_max_distance`` of the config: ``x: int64 [B, N, F_n]``
          (categorical atom features), ``pad_mask: bool [B, N]``, ``in_degree``/``out_degree:
          int64 [B, N]``, ``spd: int64 [B, N, N]``, ``edge_features: int64 [B, N, N, F_e]``,
          ``path_edges: int64 [B, N, N, H]``.
        - output: ``float32 [B, num_outputs]`` raw outputs, finite for graphs without bonds;
          :meth:`embed` gives ``float32 [B, hidden_dim]``.
    """

    def __init__(self, config: GraphormerConfig) -> None:
        super().__init__()
        self.config = config
        d, heads = config.hidden_dim, config.num_heads
        self.atom_encoder = CategoricalEmbedding(config.atom_vocabulary_sizes, d)
        self.in_degree_encoder = nn.Embedding(config.max_degree + 1, d)
        self.out_degree_encoder = nn.Embedding(config.max_degree + 1, d)
        self.graph_token = nn.Parameter(torch.zeros(1, 1, d))
        self.spatial_encoder = nn.Embedding(config.max_distance + 2, heads)
        self.virtual_distance = nn.Parameter(torch.zeros(heads))
        self.edge_encoder = CategoricalEmbedding(config.bond_vocabulary_sizes, heads)
        self.hop_weights = nn.Parameter(torch.empty(config.multi_hop_max_distance, heads, heads))
        for parameter in (self.graph_token, self.hop_weights):
            nn.init.normal_(parameter, std=0.02)
        self.input_dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(GraphormerLayer(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, config.num_outputs)

    def _check(self, batch: DenseGraphBatch) -> None:
        if not isinstance(batch, DenseGraphBatch):
            raise TypeError(f"Graphormer takes a DenseGraphBatch, got {type(batch)}")
        hops = batch.path_edges.shape[-1]
        if hops != self.config.multi_hop_max_distance:
            raise ValueError(
                f"the batch holds {hops} bonds per path, the model was built for "
                f"multi_hop_max_distance={self.config.multi_hop_max_distance}"
            )
        if int(batch.spd.max()) > self.config.max_distance + 1:
            raise ValueError(
                f"the batch's distances exceed the model's max_distance "
                f"{self.config.max_distance}; build it with the model's max_distance"
            )

    def edge_encoding(self, batch: DenseGraphBatch) -> torch.Tensor:
        """``c_ij`` of eq. 7, ``float32 [B, heads, N, N]`` (0 where no path)."""
        b, n = batch.pad_mask.shape
        features = batch.edge_features.reshape(b * n * n, -1)
        table = self.edge_encoder(features)  # [B·N·N, heads]; only bond rows are gathered
        path = batch.path_edges  # [B, N, N, H]
        walked = path >= 0
        gathered = table[path.clamp(min=0)] * walked.unsqueeze(-1)  # [B, N, N, H, heads]
        mixed = torch.einsum("bijph,phg->bijg", gathered, self.hop_weights.to(gathered.dtype))
        length = walked.sum(-1, keepdim=True).clamp(min=1)
        return (mixed / length).permute(0, 3, 1, 2)

    def attention_bias(self, batch: DenseGraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mask bool [B, 1+N, 1+N], bias float32 [B, heads, 1+N, 1+N])``; token 0 is the
        [VNode]. The bias is zero wherever the mask is False (padding)."""
        b, n = batch.pad_mask.shape
        heads = self.config.num_heads
        valid = torch.cat([batch.pad_mask.new_ones(b, 1), batch.pad_mask], dim=1)
        mask = valid.unsqueeze(2) & valid.unsqueeze(1)
        atoms = self.spatial_encoder(batch.spd).permute(0, 3, 1, 2) + self.edge_encoding(batch)
        bias = atoms.new_empty(b, heads, n + 1, n + 1)
        bias[:, :, 1:, 1:] = atoms
        bias[:, :, 0, :] = self.virtual_distance.view(1, heads, 1)
        bias[:, :, 1:, 0] = self.virtual_distance.view(1, heads, 1)
        return mask, torch.where(mask.unsqueeze(1), bias, 0.0)

    def embed(self, batch: DenseGraphBatch) -> torch.Tensor:
        """Graph embeddings ``float32 [B, hidden_dim]`` (the normalised [VNode] state)."""
        self._check(batch)
        max_degree = self.config.max_degree
        keep = batch.pad_mask.unsqueeze(-1)
        h = (
            self.atom_encoder(batch.x)
            + self.in_degree_encoder(degree_bucket(batch.in_degree, max_degree))
            + self.out_degree_encoder(degree_bucket(batch.out_degree, max_degree))
        )
        h = torch.where(keep, h, 0.0)
        h = torch.cat([self.graph_token.expand(h.shape[0], -1, -1), h], dim=1)
        h = self.input_dropout(h)
        mask, bias = self.attention_bias(batch)
        keep = torch.cat([keep.new_ones(keep.shape[0], 1, 1), keep], dim=1)
        for layer in self.layers:
            h = torch.where(keep, layer(h, mask, bias), 0.0)
        return self.final_norm(h[:, 0])

    def forward(self, batch: DenseGraphBatch) -> torch.Tensor:
        return self.head(self.embed(batch))
