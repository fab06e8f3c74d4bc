"""Batches layer: batched DGL graphs -> padded plain-tensor batches (the model interface).
May import :mod:`chemgraph.chem`, :mod:`chemgraph.featurize`, :mod:`chemgraph.graphs` and the
bottom modules.

DGL 2.1 cannot hold CUDA tensors, so the models never see a DGLGraph: the DataLoader collate
turns a batched DGLGraph into a dataclass of plain tensors (built once, on the CPU, in the
loader workers) and the training loop moves it with ``.to(device)``. One module per batch kind:

* :mod:`chemgraph.batches.sets`: :class:`EdgeSetBatch` (ESA) and :class:`NodeSetBatch` (NSA).
* :mod:`chemgraph.batches.dense`: :class:`DenseGraphBatch` (Graphormer, GRAT).
* :mod:`chemgraph.batches.sparse`: :class:`SparseGraphBatch` (GCN, GIN, GMoE).
* :mod:`chemgraph.batches.reaction`: :class:`ReactionBatch` (GRAT reaction outcome prediction).
"""

from chemgraph.batches.base import TensorBatch
from chemgraph.batches.dense import (
    DenseGraphBatch,
    bond_type_index,
    dense_batch_builder,
    dense_graph_batch,
    num_edge_types,
)
from chemgraph.batches.reaction import (
    ReactionBatch,
    ReactionGraphs,
    TokenVocabulary,
    generation_mask,
    reaction_batch,
    reaction_graphs,
)
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
from chemgraph.batches.sparse import (
    SparseGraphBatch,
    gcn_normalisation,
    sparse_batch_builder,
    sparse_graph_batch,
    two_hop_walks,
)

__all__ = [
    "ReactionBatch",
    "ReactionGraphs",
    "TokenVocabulary",
    "generation_mask",
    "reaction_batch",
    "reaction_graphs",
    "DenseGraphBatch",
    "EdgeSetBatch",
    "NodeSetBatch",
    "SparseGraphBatch",
    "TensorBatch",
    "batch_builder",
    "bond_type_index",
    "dense_batch_builder",
    "dense_graph_batch",
    "edge_adjacency",
    "edge_mask_mod",
    "edge_pairs",
    "edge_set_batch",
    "gcn_normalisation",
    "node_adjacency",
    "node_pairs",
    "node_set_batch",
    "num_edge_types",
    "sparse_batch_builder",
    "sparse_graph_batch",
    "two_hop_walks",
]
