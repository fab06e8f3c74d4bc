"""Masked multi-head scaled dot-product attention, the one attention kernel of chemgraph.

``softmax(Q Kᵀ / √d_k + M) V`` (Vaswani et al. 2017; Buterez et al. 2024, section 3.1), in three
forms that compute the same function of the same adjacency (see :mod:`chemgraph.batches`):

* :func:`masked_attention`: :func:`torch.nn.functional.scaled_dot_product_attention` with a
  boolean mask, memory ``O(B·L²)``; any device.
* :func:`sparse_attention`: only the adjacent (query, key) pairs of a pair list, with a segment
  softmax, memory ``O(P·H)`` for ``P`` pairs and ``H`` heads; any device. What lets ESA run on
  graphs with 10⁵ edges (Buterez et al. 2024, section 3.3 and SI 5 name the ``L²`` mask as the
  bottleneck).
* :func:`flex_masked_attention`: compiled FlexAttention with a :class:`BlockMask` built from a
  ``mask_mod`` (:func:`flex_block_mask`); CUDA only (torch 2.13 has no FlexAttention backward on
  the CPU).

References:
    A. Vaswani et al. (2017), "Attention Is All You Need", NeurIPS 2017,
    https://arxiv.org/abs/1706.03762.
    D. Buterez, J. P. Janet, D. Oglic, P. Liò (2024), "An end-to-end attention-based approach for
    learning on graphs", Nat. Commun. 16 (2025), https://arxiv.org/abs/2402.10793.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

__all__ = [
    "AttentionMask",
    "DenseMask",
    "MultiHeadAttention",
    "flex_block_mask",
    "flex_masked_attention",
    "masked_attention",
    "segment_softmax",
    "sparse_attention",
]


@dataclass(frozen=True)
class DenseMask:
    """A dense boolean attention mask and what :func:`masked_attention` derives from it, built
    once (:meth:`of`) for all the layers that share it instead of once per layer.

    Attributes:
        pairs: ``bool [B, L_q, L_k]`` or ``bool [B, 1, L_k]``: True where a query may attend to
            a key.
        has_key: ``bool [B, 1, L_q or 1, 1]``: the query may attend to some key.
        attended: ``bool [B, 1, L_k, 1]``: some query may attend to the key.
        allowed: ``bool [B, 1, L_q or 1, L_k]``: ``pairs``, with every key allowed for a query
            that has none (its output is zeroed afterwards).
        masked_finite: the caller guarantees that the queries without a key and the keys and
            values no query attends to (padding) hold finite values, as ESA keeps its padded
            tokens (:class:`chemgraph.models.ESA`): :func:`masked_attention` then uses them as
            they are instead of replacing them by zeros first (three fewer passes over the
            inputs, the same output: an excluded key gets a zero weight, a query without a key
            a zero output). False: they may hold anything, NaN included.
    """

    pairs: torch.Tensor
    has_key: torch.Tensor
    attended: torch.Tensor
    allowed: torch.Tensor
    masked_finite: bool = False
    _additive: dict[torch.dtype, torch.Tensor] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, mask: torch.Tensor | DenseMask, masked_finite: bool = False) -> DenseMask:
        """The :class:`DenseMask` of a ``bool`` mask (a :class:`DenseMask` is returned as is),
        with :attr:`masked_finite`."""
        if isinstance(mask, DenseMask):
            return mask
        has_key = mask.any(dim=-1, keepdim=True)  # [B, L_q or 1, 1]
        return cls(
            pairs=mask,
            has_key=has_key.unsqueeze(1),
            attended=mask.any(dim=-2)[:, None, :, None],
            allowed=(mask | ~has_key).unsqueeze(1),
            masked_finite=masked_finite,
        )

    def additive(self, dtype: torch.dtype) -> torch.Tensor:
        """``[B, 1, L_q or 1, L_k]`` of ``dtype``: 0 where :attr:`allowed`, ``-inf`` elsewhere
        (SDPA turns a boolean mask into this on every call; cached per dtype)."""
        if dtype not in self._additive:
            zero = torch.zeros((), dtype=dtype, device=self.allowed.device)
            self._additive[dtype] = zero.masked_fill(~self.allowed, float("-inf"))
        return self._additive[dtype]


AttentionMask = torch.Tensor | DenseMask | BlockMask | None
"""Which keys each query may attend to: ``None`` (all), a ``bool`` mask or its
:class:`DenseMask` (dense, :func:`masked_attention`), an ``int64 [2, P]`` pair list
(:func:`sparse_attention`) or a :class:`BlockMask` (:func:`flex_masked_attention`)."""

# Gathered [pairs, heads, head width] temporaries are cut into chunks of at most this many
# elements (1 MiB in float32), so their memory does not grow with the number of pairs, and
# they fit in a CPU cache (faster than larger chunks).
_CHUNK_ELEMENTS = 1 << 18


def masked_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
    bias: torch.Tensor | None = None,
    score_scale: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention where ``mask`` says which keys each query may attend to.

    ``softmax(Q Kᵀ / √D + bias) V`` over the allowed keys: ``bias`` is an additive float term
    on the attention scores (Graphormer's spatial and edge encodings, Ying et al. 2021, eq. 6-7).

    Args:
        query: ``[B, H, L_q, D]``.
        key: ``[B, H, L_k, D]``.
        value: ``[B, H, L_k, D_v]``.
        mask: ``bool [B, L_q, L_k]``, or ``bool [B, 1, L_k]`` for a key-padding mask shared by
            all queries (True = may attend), or its :class:`DenseMask` (built once for the
            layers that share it); shared by all heads through broadcasting (a
            size-1 head dimension: no copy per head; on the CPU, torch 2.13's SDPA copies a
            mask ``expand``-ed over heads but not a broadcast one). ``None`` = attend
            everywhere.
        dropout: dropout probability on the attention weights (training only; pass 0 in eval).
        bias: float ``[B, H, L_q, L_k]`` (or broadcastable, e.g. ``[B, 1, L_q, L_k]``) added to
            the scaled scores, cast to the dtype of ``query``; ignored where ``mask`` is False.
            ``None`` = no bias.
        score_scale: float ``[B, H, L_q, L_k]`` (or broadcastable) factors multiplying the
            scores before the bias, ``softmax(Γ ⊙ Q Kᵀ / √D + bias) V``: GRAT's feature-wise
            transformation of the attention (Yoo et al. 2020, eq. 3, with ``bias = B / √D``).
            SDPA cannot scale scores per pair, so this path computes the scores explicitly
            (memory ``B·H·L_q·L_k``); the masking rules are the same. ``None`` = no scale.

    Returns:
        ``[B, H, L_q, D_v]``. A query row whose keys are all masked (a padding token, or an
        isolated token that may not attend to itself) outputs exactly zero and has a finite
        (zero) gradient, on every backend: such rows are given a harmless all-True mask for
        the softmax and their output is multiplied by zero afterwards.

    Masked entries never reach the output or the gradients, even if NaN or Inf: before any
    arithmetic, the keys and values that no query may attend to (padding) and the queries
    that may attend to nothing are replaced by zeros (``torch.where``, so their gradient is
    zero; not when the mask is a :class:`DenseMask` whose ``masked_finite`` says they are
    finite, which gives the same output), as are ``bias`` and ``score_scale`` where ``mask``
    is False. With a mask whose
    excluded tokens are those of padding (every mask built by :mod:`chemgraph.batches`) the
    result therefore equals :func:`sparse_attention` over the mask's pairs. A key or value
    that some query may attend to is used as it is: if it is not finite, the matrix products
    carry it (times a zero weight) into the other queries of its batch element too, which
    :func:`sparse_attention`, gathering only the allowed pairs, does not.
    """
    if bias is not None:
        bias = bias.to(query.dtype)
    if score_scale is not None:
        score_scale = score_scale.to(query.dtype)
    if mask is None:
        if score_scale is not None:
            return _scaled_score_attention(query, key, value, None, dropout, bias, score_scale)
        return F.scaled_dot_product_attention(query, key, value, attn_mask=bias, dropout_p=dropout)
    mask = DenseMask.of(mask)
    if not mask.masked_finite:
        query = torch.where(mask.has_key, query, 0.0)
        key = torch.where(mask.attended, key, 0.0)
        value = torch.where(mask.attended, value, 0.0)
    pairs = mask.pairs.unsqueeze(1)
    if bias is not None:
        bias = torch.where(pairs, bias, 0.0)
    if score_scale is not None:
        score_scale = torch.where(pairs, score_scale, 0.0)
        out = _scaled_score_attention(query, key, value, mask.allowed, dropout, bias, score_scale)
    else:  # with a bias, masked keys get -inf
        attn_mask = mask.additive(query.dtype) if bias is None else bias + mask.additive(bias.dtype)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attn_mask, dropout_p=dropout
        )
    return out * mask.has_key.to(out.dtype)


def _scaled_score_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed: torch.Tensor | None,
    dropout: float,
    bias: torch.Tensor | None,
    score_scale: torch.Tensor,
) -> torch.Tensor:
    """``softmax(Γ ⊙ Q Kᵀ / √D + bias) V`` over the ``allowed`` (``bool [B, 1, L_q, L_k]``)
    keys, computed without SDPA; :func:`masked_attention` prepares the masked inputs."""
    scores = (query @ key.transpose(-1, -2)) * score_scale * query.shape[-1] ** -0.5
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if dropout:
        weights = F.dropout(weights, dropout)
    return weights @ value


def segment_softmax(scores: torch.Tensor, segment: torch.Tensor, num_segments: int) -> torch.Tensor:
    """Softmax over the entries of each segment (e.g. over the keys of each query).

    Numerically stable: each segment's maximum (``scatter_reduce`` amax) is subtracted before
    ``exp``, so logits of any magnitude give finite weights; the sums are ``index_add``-ed.

    Args:
        scores: ``float [P, H]`` logits, ``H`` independent columns (heads).
        segment: ``int64 [P]`` segment of each entry, in ``[0, num_segments)``, any order.
        num_segments: number of segments ``S`` (segments without entries are allowed).

    Returns:
        ``float [P, H]``: weights that sum to 1 over each segment's entries, per column.
    """
    index = segment.unsqueeze(1).expand_as(scores)
    peak = scores.new_full((num_segments, scores.shape[1]), float("-inf"))
    peak = peak.scatter_reduce(0, index, scores.detach(), reduce="amax")
    weights = torch.exp(scores - peak[segment])
    total = weights.new_zeros(num_segments, scores.shape[1]).index_add(0, segment, weights)
    return weights / total[segment]


def _chunks(num_pairs: int, row_elements: int) -> Iterator[slice]:
    """Slices of ``range(num_pairs)`` whose gathered rows hold at most ``_CHUNK_ELEMENTS``."""
    step = max(1, _CHUNK_ELEMENTS // max(1, row_elements))
    return (slice(start, start + step) for start in range(0, num_pairs, step))


def _pair_dot(
    left: torch.Tensor, right: torch.Tensor, left_index: torch.Tensor, right_index: torch.Tensor
) -> torch.Tensor:
    """``out[p, h] = ⟨left[left_index[p], h], right[right_index[p], h]⟩`` -> ``[P, H]``."""
    out = left.new_empty(left_index.numel(), left.shape[1])
    for part in _chunks(left_index.numel(), left[0].numel()):
        out[part] = (
            left.index_select(0, left_index[part]) * right.index_select(0, right_index[part])
        ).sum(-1)
    return out


def _pair_sum(
    weights: torch.Tensor,
    source: torch.Tensor,
    target_index: torch.Tensor,
    source_index: torch.Tensor,
    num_targets: int,
) -> torch.Tensor:
    """``out[t, h] = Σ_{p: target_index[p]=t} weights[p, h] · source[source_index[p], h]``."""
    out = source.new_zeros(num_targets, *source.shape[1:])
    for part in _chunks(source_index.numel(), source[0].numel()):
        out.index_add_(
            0,
            target_index[part],
            weights[part, :, None] * source.index_select(0, source_index[part]),
        )
    return out


class _PairAttention(torch.autograd.Function):
    """Attention over a pair list, with a hand-written backward that recomputes the gathered
    ``[P, H, D]`` products chunk by chunk, so that only the ``[P, H]`` weights are saved."""

    @staticmethod
    def forward(ctx, query, key, value, pairs, dropout):
        query_index, key_index = pairs
        scale = query.shape[-1] ** -0.5
        scores = _pair_dot(query, key, query_index, key_index) * scale
        weights = segment_softmax(scores, query_index, query.shape[0])
        keep = torch.rand_like(weights) >= dropout if dropout else None
        applied = weights if keep is None else weights * keep / (1 - dropout)
        ctx.save_for_backward(query, key, value, pairs, weights, keep)
        ctx.scale, ctx.dropout = scale, dropout
        return _pair_sum(applied, value, query_index, key_index, query.shape[0])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        query, key, value, pairs, weights, keep = ctx.saved_tensors
        query_index, key_index = pairs
        grad = grad.contiguous()
        applied = weights if keep is None else weights * keep / (1 - ctx.dropout)
        grad_value = _pair_sum(applied, grad, key_index, query_index, value.shape[0])
        grad_weights = _pair_dot(grad, value, query_index, key_index)
        if keep is not None:
            grad_weights = grad_weights * keep / (1 - ctx.dropout)
        # softmax backward per query: dS = W ⊙ (dW - Σ_keys W ⊙ dW)
        row = grad_weights.new_zeros(query.shape[0], weights.shape[1])
        row = row.index_add(0, query_index, weights * grad_weights)
        grad_scores = weights * (grad_weights - row[query_index]) * ctx.scale
        grad_query = _pair_sum(grad_scores, key, query_index, key_index, query.shape[0])
        grad_key = _pair_sum(grad_scores, query, key_index, query_index, key.shape[0])
        return grad_query, grad_key, grad_value, None, None


def sparse_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    pairs: torch.Tensor,
    dropout: float = 0.0,
) -> torch.Tensor:
    """Scaled dot-product attention over the (query, key) pairs of a pair list only.

    ``out[i] = Σ_{(i, j) ∈ pairs} softmax_j(⟨q_i, k_j⟩ / √D) v_j``: the keys and values of each
    pair are gathered, the softmax over each query's pairs is a :func:`segment_softmax`, and
    the weighted values are scattered back (``index_add``). Equal to :func:`masked_attention`
    with the mask whose True entries are ``pairs``. Computed in at least float32 (bf16 inputs
    under autocast are promoted; float64 stays float64). Memory: the ``[P, H]`` weights (and a
    ``bool [P, H]`` dropout mask) are kept for the backward, which recomputes the gathered
    products; gathered ``[P, H, D]`` temporaries exist only in chunks of at most 2¹⁸ elements;
    nothing is ``O(L²)``.

    Args:
        query: ``[N_q, H, D]`` (the ``B·L_q`` tokens of a batch, flattened).
        key: ``[N_k, H, D]``.
        value: ``[N_k, H, D_v]``.
        pairs: ``int64 [2, P]`` rows (query index, key index), each pair at most once (e.g.
            :func:`chemgraph.batches.edge_pairs`).
        dropout: dropout probability on the attention weights (training only; pass 0 in eval).

    Returns:
        ``[N_q, H, D_v]`` in the dtype of ``query``. A query without pairs (a padding token, an
        isolated token that may not attend to itself) outputs exactly zero and its gradient is
        zero; tokens in no pair (padding) never reach any output, even if NaN.
    """
    dtype = torch.promote_types(query.dtype, torch.float32)
    out = _PairAttention.apply(query.to(dtype), key.to(dtype), value.to(dtype), pairs, dropout)
    return out.to(query.dtype)


@functools.cache
def _compiled(function: Callable) -> Callable:
    return torch.compile(function)


def flex_block_mask(
    mask_mod: Callable, batch_size: int, length: int, device: torch.device | str
) -> BlockMask:
    """The FlexAttention :class:`BlockMask` of ``mask_mod`` over ``[B, L, L]`` (all heads).

    Built by a compiled :func:`create_block_mask`, which evaluates ``mask_mod`` block by block
    instead of materialising the ``[B, L, L]`` mask (the eager version does).

    Args:
        mask_mod: ``(b, h, q, k) -> bool``, e.g. :func:`chemgraph.batches.edge_mask_mod`.
        batch_size: ``B``.
        length: ``L`` (queries and keys).
        device: where the attention runs (CUDA).
    """
    return _compiled(create_block_mask)(mask_mod, batch_size, None, length, length, device=device)


def flex_masked_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, block_mask: BlockMask
) -> torch.Tensor:
    """FlexAttention (compiled) restricted to ``block_mask``; CUDA only, no attention dropout.

    Args:
        query: ``[B, H, L, D]``.
        key: ``[B, H, L, D]``.
        value: ``[B, H, L, D_v]``.
        block_mask: from :func:`flex_block_mask`.

    Returns:
        ``[B, H, L, D_v]``; a query row with no allowed key outputs zero (FlexAttention's rule
        for fully masked rows).

    Unlike :func:`masked_attention`, masked entries are not zeroed first (the block mask
    gives no per-token view without evaluating ``mask_mod`` everywhere): masked scores are
    set to -inf, so a NaN key there is harmless, but inside a partly masked 128×128 block
    the zero weights still multiply the masked values, so a NaN or Inf *value* at a masked
    position reaches the block's queries. Zero the padding tokens first (the models do).
    """
    return _compiled(flex_attention)(query, key, value, block_mask=block_mask)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Args:
        dim: model width ``d`` (divisible by ``num_heads``).
        num_heads: number of heads ``H``; each head has width ``d / H``.
        dropout: attention-weight dropout (not supported with a :class:`BlockMask`).

    Shapes:
        - input: ``query: float [B, L_q, d]``, ``key_value: float [B, L_k, d]``; ``mask``
          (:data:`AttentionMask`) one of: ``None``; ``bool [B, L_q, L_k]`` or
          ``bool [B, 1, L_k]``, or its :class:`DenseMask` (:func:`masked_attention`);
          ``int64 [2, P]`` pairs in flattened ``B·L`` token indexing (:func:`sparse_attention`);
          a :class:`BlockMask` (:func:`flex_masked_attention`); ``bias: float [B, H, L_q, L_k]``
          or None (dense masks only).
        - output: ``[B, L_q, d]`` in the dtype of ``query``.
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

    def _project(
        self, query: torch.Tensor, key_value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(query(query), key(key_value), value(key_value))``, in one matrix product when
        ``query is key_value`` (self-attention) and the key and value ones in one otherwise:
        the same dot products in fewer, larger matrix products (faster at molecule scale)."""
        self_attention = query is key_value
        layers = (self.query, self.key, self.value) if self_attention else (self.key, self.value)
        weight = torch.cat([layer.weight for layer in layers])
        bias = torch.cat([layer.bias for layer in layers])
        projected = F.linear(key_value, weight, bias).chunk(len(layers), dim=-1)
        if self_attention:
            return projected
        return (self.query(query), *projected)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        return x.view(b, length, self.num_heads, d // self.num_heads).transpose(1, 2)

    def forward(
        self,
        query: torch.Tensor,
        key_value: torch.Tensor,
        mask: AttentionMask = None,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``bias``: optional float ``[B, H, L_q, L_k]`` score bias (dense masks only)."""
        b, length, d = query.shape
        if bias is not None and not (
            mask is None
            or isinstance(mask, DenseMask)
            or (torch.is_tensor(mask) and mask.dtype == torch.bool)
        ):
            raise ValueError("an attention bias needs a dense boolean mask (or none)")
        q, k, v = self._project(query, key_value)
        dropout = self.dropout if self.training else 0.0
        if torch.is_tensor(mask) and mask.dtype == torch.int64:
            q, k, v = (t.reshape(-1, self.num_heads, d // self.num_heads) for t in (q, k, v))
            return self.out(sparse_attention(q, k, v, mask, dropout).view(b, length, d))
        q, k, v = self._split(q), self._split(k), self._split(v)
        if isinstance(mask, BlockMask):
            if dropout:
                raise ValueError("FlexAttention has no attention dropout; set it to 0")
            heads = flex_masked_attention(q, k, v, mask)
        else:
            heads = masked_attention(q, k, v, mask=mask, dropout=dropout, bias=bias)
        return self.out(heads.transpose(1, 2).reshape(b, length, d))
