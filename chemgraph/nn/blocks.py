"""Set-attention blocks of ESA/NSA (Buterez et al. 2024, section 3): MLP, MAB/SAB, PMA.

References:
    D. Buterez, J. P. Janet, D. Oglic, P. Liò (2024), "An end-to-end attention-based approach for
    learning on graphs", Nat. Commun. 16 (2025), https://arxiv.org/abs/2402.10793.
    J. Lee et al. (2019), "Set Transformer: A Framework for Attention-based
    Permutation-Invariant Neural Networks", ICML 2019, https://arxiv.org/abs/1810.00825 (MAB,
    SAB and PMA).
    N. Shazeer (2020), "GLU Variants Improve Transformer", https://arxiv.org/abs/2002.05202
    (SwiGLU).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from chemgraph.nn.attention import AttentionMask, DenseMask, MultiHeadAttention

__all__ = ["MLP", "AttentionBlock", "PMA"]

Norm = Literal["pre", "post"]
MLPKind = Literal["standard", "swiglu"]


class MLP(nn.Module):
    """Position-wise feed-forward network ``[..., d] -> [..., d]``.

    ``standard``: Linear(d, h) -> GELU -> Dropout -> Linear(h, d).
    ``swiglu``: (SiLU(x W₁) ⊙ x W₂) W₃ (Shazeer 2020), with ``h`` scaled by 2/3 so that the
    parameter count matches ``standard``.

    Shapes:
        - input: ``x: float [..., dim]``.
        - output: ``[..., dim]``, same dtype.
    """

    def __init__(self, dim: int, hidden: int, kind: MLPKind = "standard", dropout: float = 0.0):
        super().__init__()
        self.kind = kind
        if kind == "standard":
            self.up = nn.Linear(dim, hidden)
        elif kind == "swiglu":
            hidden = max(1, 2 * hidden // 3)
            self.up = nn.Linear(dim, 2 * hidden)
        else:
            raise ValueError(f"unknown MLP kind {kind!r}; use 'standard' or 'swiglu'")
        self.down = nn.Linear(hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        if self.kind == "swiglu":
            gate, value = h.chunk(2, dim=-1)
            h = F.silu(gate) * value
        else:
            h = F.gelu(h)
        return self.down(self.dropout(h))


class AttentionBlock(nn.Module):
    """MAB (masked self-attention block) or, with ``mask=None``, SAB (Buterez et al. 2024,
    eq. MAB/SAB).

    Pre-LN (the paper's form): ``X̄ = LN(X)``, ``H = X̄ + MHA(X̄, X̄, M)``,
    ``out = H + MLP(LN(H))``.
    Post-LN: ``H = LN(X + MHA(X, X, M))``, ``out = LN(H + MLP(H))``.

    Shapes:
        - input: ``x: float [B, L, d]``; ``mask``
          (:data:`~chemgraph.nn.attention.AttentionMask`): a ``bool [B, L, L]`` adjacency, an
          ``int64 [2, P]`` pair list or a ``BlockMask`` (MAB), a ``bool [B, 1, L]``
          key-padding mask or None (SAB).
        - output: ``[B, L, d]``, same dtype.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_hidden: int,
        norm: Norm = "pre",
        mlp: MLPKind = "standard",
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if norm not in ("pre", "post"):
            raise ValueError(f"unknown norm {norm!r}; use 'pre' or 'post'")
        self.norm = norm
        self.attention = MultiHeadAttention(dim, num_heads, attention_dropout)
        self.mlp = MLP(dim, mlp_hidden, mlp, dropout)
        self.norm_attention = nn.LayerNorm(dim)
        self.norm_mlp = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: AttentionMask = None) -> torch.Tensor:
        if self.norm == "pre":
            x_bar = self.norm_attention(x)
            h = x_bar + self.dropout(self.attention(x_bar, x_bar, mask))
            return h + self.dropout(self.mlp(self.norm_mlp(h)))
        h = self.norm_attention(x + self.dropout(self.attention(x, x, mask)))
        return self.norm_mlp(h + self.dropout(self.mlp(h)))


class PMA(nn.Module):
    """Pooling by multi-head attention with ``k`` learnable seeds (Buterez et al. 2024, eq. PMA).

    ``S̄ = LN(MHA(S_k, Z, Z))``, ``out = S̄ + MLP(S̄)``; the ``p`` SABs that follow are applied
    by the caller. Padded tokens of ``Z`` are excluded through ``key_mask``.

    Shapes:
        - input: ``z: float [B, L, d]``, ``key_mask: bool [B, L]`` (True for real tokens), or
          the :class:`~chemgraph.nn.attention.DenseMask` of ``key_mask[:, None, :]`` (built
          once by a caller that masks other blocks with it too).
        - output: ``[B, k, d]``, same dtype.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_seeds: int,
        mlp_hidden: int,
        mlp: MLPKind = "standard",
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.seeds = nn.Parameter(torch.empty(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.seeds)
        self.attention = MultiHeadAttention(dim, num_heads, attention_dropout)
        self.norm = nn.LayerNorm(dim)
        self.mlp = MLP(dim, mlp_hidden, mlp, dropout)

    def forward(self, z: torch.Tensor, key_mask: torch.Tensor | DenseMask) -> torch.Tensor:
        seeds = self.seeds.expand(z.shape[0], -1, -1)
        mask = key_mask if isinstance(key_mask, DenseMask) else key_mask.unsqueeze(1)
        s_bar = self.norm(self.attention(seeds, z, mask))
        return s_bar + self.mlp(s_bar)
