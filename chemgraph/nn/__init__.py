"""Neural-network building blocks shared by the models."""

from chemgraph.nn.attention import MultiHeadAttention, masked_attention
from chemgraph.nn.blocks import MLP, PMA, AttentionBlock

__all__ = ["MLP", "PMA", "AttentionBlock", "MultiHeadAttention", "masked_attention"]
