"""Masked multi-head scaled dot-product attention, the one attention kernel of chemgraph.

``softmax(Q Kᵀ / √d_k + M) V`` (Vaswani et al. 2017; seed 000, section 3.1), computed with
:func:`torch.nn.functional.scaled_dot_product_attention` and a boolean mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MultiHeadAttention", "masked_attention"]


def masked_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
) -> torch.Tensor:
    """Scaled dot-product attention where ``mask`` says which keys each query may attend to.

    Args:
        query: ``[B, H, L_q, D]``.
        key: ``[B, H, L_k, D]``.
        value: ``[B, H, L_k, D_v]``.
        mask: ``bool [B, L_q, L_k]`` (True = may attend), shared by all heads through
            ``expand`` (no copy per head); ``None`` = attend everywhere.
        dropout: dropout probability on the attention weights (training only; pass 0 in eval).

    Returns:
        ``[B, H, L_q, D_v]``. A query row whose keys are all masked (a padding token, or an
        isolated token that may not attend to itself) outputs exactly zero and has a finite
        (zero) gradient, on every backend: such rows are given a harmless all-True mask for
        the softmax and their output is multiplied by zero afterwards.
    """
    if mask is None:
        return F.scaled_dot_product_attention(query, key, value, dropout_p=dropout)
    has_key = mask.any(dim=-1, keepdim=True)  # [B, L_q, 1]
    safe_mask = (mask | ~has_key).unsqueeze(1).expand(-1, query.shape[1], -1, -1)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=safe_mask, dropout_p=dropout)
    return out * has_key.unsqueeze(1).to(out.dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Args:
        dim: model width ``d`` (divisible by ``num_heads``).
        num_heads: number of heads ``H``; each head has width ``d / H``.
        dropout: attention-weight dropout.

    Shapes:
        ``query: [B, L_q, d]``, ``key_value: [B, L_k, d]``, ``mask: bool [B, L_q, L_k]`` or
        None -> ``[B, L_q, d]``.
    """

    def __init__(self, dim: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"hidden dim {dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.dropout = dropout
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        return x.view(b, length, self.num_heads, d // self.num_heads).transpose(1, 2)

    def forward(
        self, query: torch.Tensor, key_value: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        q = self._split(self.query(query))
        k = self._split(self.key(key_value))
        v = self._split(self.value(key_value))
        dropout = self.dropout if self.training else 0.0
        heads = masked_attention(q, k, v, mask, dropout)
        b, _, length, _ = heads.shape
        return self.out(heads.transpose(1, 2).reshape(b, length, -1))
