"""Neural-network building blocks shared by the models."""

from chemgraph.nn.attention import (
    AttentionMask,
    MultiHeadAttention,
    flex_block_mask,
    flex_masked_attention,
    masked_attention,
    segment_softmax,
    sparse_attention,
)
from chemgraph.nn.blocks import MLP, PMA, AttentionBlock

__all__ = [
    "MLP",
    "PMA",
    "AttentionBlock",
    "AttentionMask",
    "MultiHeadAttention",
    "flex_block_mask",
    "flex_masked_attention",
    "masked_attention",
    "segment_softmax",
    "sparse_attention",
]
