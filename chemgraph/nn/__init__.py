"""NN layer: attention, pooling, embedding, gating and message-passing blocks of the models.

Plain PyTorch on plain tensors: imports no other chemgraph package.
"""

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
from chemgraph.nn.encoders import CategoricalEmbedding
from chemgraph.nn.gating import (
    GateOutput,
    NoisyTopKGate,
    cv_squared,
    load_balancing_losses,
    probability_in_top_k,
)
from chemgraph.nn.message_passing import (
    MessagePassingLayer,
    NeighbourhoodAggregation,
    SubsetBatchNorm,
    gcn_aggregate,
    gin_aggregate,
    node_transform,
)

__all__ = [
    "MLP",
    "CategoricalEmbedding",
    "GateOutput",
    "MessagePassingLayer",
    "NeighbourhoodAggregation",
    "NoisyTopKGate",
    "SubsetBatchNorm",
    "PMA",
    "AttentionBlock",
    "AttentionMask",
    "MultiHeadAttention",
    "cv_squared",
    "flex_block_mask",
    "flex_masked_attention",
    "gcn_aggregate",
    "gin_aggregate",
    "load_balancing_losses",
    "probability_in_top_k",
    "masked_attention",
    "node_transform",
    "segment_softmax",
    "sparse_attention",
]
