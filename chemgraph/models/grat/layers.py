"""GRAT's edge-conditioned attention layer and layer stack, shared by the encoder and decoder.

Reference: S. Yoo, Y.-S. Kim, K. H. Lee, K. Jeong, J. Choi, H. Lee, Y. S. Choi (2020),
"Graph-Aware Transformer: Is Attention All Graphs Need?", https://arxiv.org/abs/2006.05213.

Attention (section 3.1, eq. 2-3): ``softmax((Γ ⊙ QKᵀ + B) / √d_k) V`` with
``(γ_ij, β_ij) = f_a(e_ij)``. ``f_a`` (:class:`EdgeConditioning`) is one MLP (hidden width 32,
tanh; Appendix A/B) of the one-hot edge type, concatenated with the one-hot distance bucket when
distances are given, that outputs ``γ`` and ``β`` for every layer: one pair per atom pair, shared
by the heads, as in eq. 2 (``per_head=True``, a labelled choice, gives each head its own). Its
last layer starts
at zero and ``γ = 1 + output``, so training starts from plain attention. The edge types and
distances are discrete, so ``f_a`` is evaluated once per (type, distance) combination and
gathered. The same :class:`GRATStack` of :class:`GRATLayer` blocks is the property encoder
(section 4.1), the translation encoder and, with cross-attention, the translation decoder
(section 3.2: the decoder's paths attend "through the attention mechanism as described in
Section 3.1").
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.models.config import ModelConfig
from chemgraph.nn import MLP, MultiHeadAttention, masked_attention

__all__ = [
    "EDGE_CONDITIONING",
    "EdgeConditioning",
    "GRATLayer",
    "GRATStack",
    "check_grat_config",
]


class EdgeConditioning(nn.Module):
    """``f_a``: the per-pair ``(γ, β)`` of every layer and head (Yoo et al. 2020, eq. 2).

    Args:
        num_edge_types: edge-type vocabulary ``T`` (one-hot input).
        num_distances: distance buckets ``D`` (one-hot input), 0 = no distance input.
        hidden: hidden width (paper: 32, tanh).
        num_layers: outputs ``γ, β`` for each layer.
        num_heads: with ``per_head``, outputs ``γ, β`` for each head too.
        per_head: one ``(γ, β)`` per head instead of one per atom pair shared by the heads
            (eq. 2's form, the default).

    Shapes:
        - input: ``edge_type: int64 [B, L_q, L_k]`` in ``[0, T)``, ``distance: int64
          [B, L_q, L_k]`` in ``[0, D)`` (None when ``D = 0``).
        - output: the pair index ``int64 [B, L_q, L_k]`` into :meth:`table`
          (``float32 [T·max(D, 1), layers, H', 2]``, ``H'`` = heads with ``per_head``, else 1).
    """

    def __init__(
        self,
        num_edge_types: int,
        num_distances: int,
        hidden: int,
        num_layers: int,
        num_heads: int,
        per_head: bool = False,
    ) -> None:
        super().__init__()
        self.num_distances = num_distances
        self.num_layers, self.num_heads = num_layers, num_heads if per_head else 1
        types = torch.eye(num_edge_types).repeat_interleave(max(1, num_distances), dim=0)
        inputs = [types]
        if num_distances:
            inputs.append(torch.eye(num_distances).repeat(num_edge_types, 1))
        self.register_buffer("inputs", torch.cat(inputs, dim=1), persistent=False)
        self.mlp = nn.Sequential(
            nn.Linear(self.inputs.shape[1], hidden),
            nn.Tanh(),
            nn.Linear(hidden, num_layers * self.num_heads * 2),
        )
        nn.init.zeros_(self.mlp[2].weight)
        nn.init.zeros_(self.mlp[2].bias)

    def table(self) -> torch.Tensor:
        """``float32 [T·D, layers, H', 2]``: ``(γ, β)`` of every (type, distance) pair."""
        out = self.mlp(self.inputs).view(-1, self.num_layers, self.num_heads, 2)
        return out + torch.tensor([1.0, 0.0], device=out.device)

    def forward(self, edge_type: torch.Tensor, distance: torch.Tensor | None) -> torch.Tensor:
        if self.num_distances:
            return edge_type * self.num_distances + distance
        return edge_type

    @staticmethod
    def layer_terms(
        table: torch.Tensor, index: torch.Tensor, head_dim: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``Γ`` and ``B / √d_k`` of each layer in turn, ``float [B, H', L_q, L_k]`` each
        (``H' = 1`` broadcasts over the heads), from :meth:`table` and the pair ``index``.

        All layers are gathered in one embedding lookup and split with ``unbind``: the
        gradient of gathering from a table of ~100 rows into B·L² pairs is a scatter-add
        whose cost is per pair, not per value (on CUDA, advanced indexing's gradient even runs
        serially per table row when each layer gathers on its own; measured in
        ``benchmarks/README.md``, ``gpu_check.py``).
        """
        film = F.embedding(index, table.flatten(1)).unflatten(-1, table.shape[1:])
        for layer in film.unbind(3):  # [B, L_q, L_k, H', 2]
            yield (
                layer[..., 0].permute(0, 3, 1, 2),
                layer[..., 1].permute(0, 3, 1, 2) * head_dim**-0.5,
            )


class GRATLayer(nn.Module):
    """One pre-LN GRAT block: edge-conditioned self-attention (Yoo et al. 2020, eq. 3), optional
    cross-attention to the encoder (decoder blocks), MLP.

    ``h = x + SelfAttn(LN(x); Γ, B, mask)``; ``h = h + CrossAttn(LN(h), memory)`` (decoder);
    ``out = h + MLP(LN(h))``.

    Shapes:
        - input: ``x: float32 [R, k, d]`` new tokens; ``mask: bool [R, k, T + k]`` over the
          ``T`` cached tokens (``past``: keys and values ``float32 [R, H, T, d/H]``) and the
          ``k`` new ones; ``gamma`` (``Γ``) and ``beta`` (``B / √d_k``, as from
          :meth:`EdgeConditioning.layer_terms`): ``float32 [R, H, k, T + k]``; ``memory_kv``
          (:meth:`memory`): keys and values ``float32 [R, H, L_e, d/H]`` with ``memory_mask:
          bool [R, 1, L_e]``.
        - output: the new tokens' states ``float32 [R, k, d]`` and their keys and values
          ``float32 [R, H, k, d/H]`` (to cache).
    """

    def __init__(
        self, dim: int, num_heads: int, mlp_hidden: int, dropout: float, cross_attention: bool
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.norm_self = nn.LayerNorm(dim)
        self.self_attention = MultiHeadAttention(dim, num_heads, dropout)
        self.cross_attention = self.norm_cross = None
        if cross_attention:
            self.cross_attention = MultiHeadAttention(dim, num_heads, dropout)
            self.norm_cross = nn.LayerNorm(dim)
        self.norm_mlp = nn.LayerNorm(dim)
        self.mlp = MLP(dim, mlp_hidden, "standard", dropout)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        r, length, d = x.shape
        return x.view(r, length, self.num_heads, d // self.num_heads).transpose(1, 2)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        r, h, length, dh = x.shape
        return x.transpose(1, 2).reshape(r, length, h * dh)

    def memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention keys and values of the encoder output ``[R, L_e, d]``."""
        attention = self.cross_attention
        return self._split(attention.key(memory)), self._split(attention.value(memory))

    def forward(
        self,
        x: torch.Tensor,
        *,
        mask: torch.Tensor,
        gamma: torch.Tensor,
        beta: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
        memory_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        attention = self.self_attention
        dropout = attention.dropout if self.training else 0.0
        h = self.norm_self(x)
        query = self._split(attention.query(h))
        key, value = self._split(attention.key(h)), self._split(attention.value(h))
        keys, values = key, value
        if past is not None:
            keys, values = torch.cat([past[0], key], dim=2), torch.cat([past[1], value], dim=2)
        heads = masked_attention(
            query, keys, values, mask=mask, dropout=dropout, bias=beta, score_scale=gamma
        )
        x = x + self.dropout(attention.out(self._merge(heads)))
        if self.cross_attention is not None:
            cross = self.cross_attention
            query = self._split(cross.query(self.norm_cross(x)))
            memory_keys, memory_values = memory_kv
            heads = masked_attention(
                query, memory_keys, memory_values, mask=memory_mask, dropout=dropout
            )
            x = x + self.dropout(cross.out(self._merge(heads)))
        x = x + self.dropout(self.mlp(self.norm_mlp(x)))
        return x, (key, value)


class GRATStack(nn.Module):
    """Layers sharing one ``f_a`` and a final LayerNorm: the encoder or the decoder body
    (Yoo et al. 2020, sections 3.1-3.2).

    Args:
        dim, num_heads, num_layers: width, heads, blocks.
        mlp_hidden: hidden width of each block's MLP.
        num_edge_types, num_distances, edge_hidden: of the shared :class:`EdgeConditioning`.
        dropout: in attention weights, after attention and in MLPs.
        cross_attention: decoder blocks (cross-attention to the encoder output).
        per_head: ``f_a`` gives each head its own ``(γ, β)`` (:class:`EdgeConditioning`).

    Shapes (all tokens at once):
        - input: ``x: float32 [B, L, d]``, ``mask: bool [B, L, L]``, ``edge_type`` and
          ``distance: int64 [B, L, L]`` (``distance`` None without distance buckets),
          ``keep: bool [B, L]`` (real tokens; padding is zeroed after every layer), with
          cross-attention ``memory: float32 [B, L_e, d]`` and ``memory_mask: bool [B, 1, L_e]``.
        - output: ``float32 [B, L, d]``.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_layers: int,
        mlp_hidden: int,
        num_edge_types: int,
        num_distances: int,
        edge_hidden: int,
        dropout: float,
        cross_attention: bool,
        per_head: bool = False,
    ) -> None:
        super().__init__()
        self.head_dim = dim // num_heads
        self.edge_conditioning = EdgeConditioning(
            num_edge_types, num_distances, edge_hidden, num_layers, num_heads, per_head
        )
        self.layers = nn.ModuleList(
            GRATLayer(dim, num_heads, mlp_hidden, dropout, cross_attention)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(dim)

    def conditioned_layers(
        self, edge_type: torch.Tensor, distance: torch.Tensor | None = None
    ) -> Iterator[tuple[int, GRATLayer, torch.Tensor, torch.Tensor]]:
        """Each layer's number, the layer, and its ``Γ`` and ``B / √d_k`` (``float32
        [B, H', L_q, L_k]``) for the pairs of ``edge_type`` and ``distance``
        (``int64 [B, L_q, L_k]``)."""
        index = self.edge_conditioning(edge_type, distance)
        terms = EdgeConditioning.layer_terms(self.edge_conditioning.table(), index, self.head_dim)
        for number, (layer, (gamma, beta)) in enumerate(zip(self.layers, terms)):
            yield number, layer, gamma, beta

    def forward(
        self,
        x: torch.Tensor,
        *,
        mask: torch.Tensor,
        edge_type: torch.Tensor,
        keep: torch.Tensor,
        distance: torch.Tensor | None = None,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        for _, layer, gamma, beta in self.conditioned_layers(edge_type, distance):
            memory_kv = layer.memory(memory) if memory is not None else None
            x, _ = layer(
                x, mask=mask, gamma=gamma, beta=beta, memory_kv=memory_kv, memory_mask=memory_mask
            )
            x = torch.where(keep.unsqueeze(-1), x, 0.0)
        return self.norm(x)


EDGE_CONDITIONING = ("per_pair", "per_head")
"""Forms of ``f_a``: one ``(γ, β)`` per atom pair and layer (Yoo et al. 2020, eq. 2), or one
per head as well."""


def check_grat_config(config: ModelConfig, names: tuple[str, ...]) -> None:
    """The checks of both GRAT configurations: ``names`` are positive integers, ``hidden_dim``
    is even (sinusoidal positions) and divisible by ``num_heads``, ``dropout`` is a fraction,
    ``edge_conditioning`` is one of :data:`EDGE_CONDITIONING`."""
    config.check_positive_integers(names)
    if config.edge_conditioning not in EDGE_CONDITIONING:
        raise ValueError(
            f"edge_conditioning {config.edge_conditioning!r} is not one of {EDGE_CONDITIONING}"
        )
    if config.hidden_dim % config.num_heads or config.hidden_dim % 2:
        raise ValueError(
            f"hidden_dim {config.hidden_dim} must be even and divisible by num_heads "
            f"{config.num_heads}"
        )
    config.check_fractions(("dropout",))
