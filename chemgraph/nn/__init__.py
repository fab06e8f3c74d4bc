"""NN layer: attention, pooling, embedding, gating and message-passing blocks of the models.

Plain PyTorch on plain tensors: imports no other chemgraph package.
"""

from chemgraph.nn.attention import (
    AttentionMask,
    DenseMask,
    MultiHeadAttention,
    flex_block_mask,
    flex_masked_attention,
    masked_attention,
    segment_softmax,
    sparse_attention,
)
from chemgraph.nn.blocks import MLP, PMA, AttentionBlock
from chemgraph.nn.encoders import CategoricalEmbedding, flat_categorical_indices
from chemgraph.nn.gating import (
    GateOutput,
    NoisyTopKGate,
    cv_squared,
    probability_in_top_k,
)
from chemgraph.nn.message_passing import (
    GCNConv,
    MessagePassingLayer,
    Neighbourhood,
    NeighbourhoodAggregation,
    SubsetBatchNorm,
    message_passing_layer,
    node_transform,
)

__all__ = [
    "MLP",
    "CategoricalEmbedding",
    "GCNConv",
    "GateOutput",
    "MessagePassingLayer",
    "Neighbourhood",
    "NeighbourhoodAggregation",
    "NoisyTopKGate",
    "SubsetBatchNorm",
    "PMA",
    "AttentionBlock",
    "AttentionMask",
    "DenseMask",
    "MultiHeadAttention",
    "cv_squared",
    "flex_block_mask",
    "flex_masked_attention",
    "flat_categorical_indices",
    "probability_in_top_k",
    "masked_attention",
    "message_passing_layer",
    "node_transform",
    "segment_softmax",
    "sparse_attention",
]
