"""Batched DGL graphs -> padded plain-tensor batches (the model interface).

DGL 2.1 cannot hold CUDA tensors, so the models never see a DGLGraph: the DataLoader collate
turns a batched DGLGraph into a dataclass of plain tensors (built once, on the CPU, in the
loader workers) and the training loop moves it with ``.to(device)``. One module per batch kind:

* :mod:`chemgraph.batches.sets`: :class:`EdgeSetBatch` (ESA) and :class:`NodeSetBatch` (NSA).
"""

from chemgraph.batches.base import TensorBatch
from chemgraph.batches.sets import (
    EdgeSetBatch,
    NodeSetBatch,
    batch_builder,
    edge_adjacency,
    edge_mask_mod,
    edge_pairs,
    edge_set_batch,
    node_adjacency,
    node_pairs,
    node_set_batch,
)

__all__ = [
    "EdgeSetBatch",
    "NodeSetBatch",
    "TensorBatch",
    "batch_builder",
    "edge_adjacency",
    "edge_mask_mod",
    "edge_pairs",
    "edge_set_batch",
    "node_adjacency",
    "node_pairs",
    "node_set_batch",
]
