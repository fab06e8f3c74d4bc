"""A batch of graphs as plain tensors: what a batched :class:`dgl.DGLGraph` holds, without DGL.

:func:`chemgraph.graphs.mols_to_graph_arrays` builds one and
:func:`chemgraph.graphs.shards.save_shard_arrays` writes it, so ``chemgraph featurize`` and its
workers never import DGL (about a second of CPU per process); :meth:`GraphArrays.to_graph` is
the one place a batched graph is built from such arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    import dgl

__all__ = ["GraphArrays"]


@dataclass(frozen=True)
class GraphArrays:
    """The arrays of a batched homogeneous graph of ``n`` graphs, ``N`` nodes and ``E`` edges.

    Attributes:
        num_nodes, num_edges: ``[n]`` nodes and edges of each graph.
        src, dst: ``[E]`` the edge ends in edge-id order, as node numbers of the batch; their
            dtype (``int32`` or ``int64``) is the graph's id type.
        ndata, edata: node data (first dimension ``N``) and edge data (first dimension ``E``).
    """

    num_nodes: torch.Tensor
    num_edges: torch.Tensor
    src: torch.Tensor
    dst: torch.Tensor
    ndata: dict[str, torch.Tensor]
    edata: dict[str, torch.Tensor]

    @classmethod
    def of_graph(cls, graph: dgl.DGLGraph) -> GraphArrays:
        """The arrays of a batched homogeneous graph (one graph: a batch of one)."""
        src, dst = graph.edges(order="eid")
        return cls(
            graph.batch_num_nodes(),
            graph.batch_num_edges(),
            src,
            dst,
            dict(graph.ndata),
            dict(graph.edata),
        )

    def to_graph(self) -> dgl.DGLGraph:
        """The batched DGLGraph (``dgl.unbatch`` gives the ``n`` graphs); imports DGL."""
        from chemgraph._dgl import dgl

        idtype = self.src.dtype
        graph = dgl.graph((self.src, self.dst), num_nodes=int(self.num_nodes.sum()), idtype=idtype)
        graph.ndata.update(self.ndata)
        graph.edata.update(self.edata)
        graph.set_batch_num_nodes(self.num_nodes.to(idtype))
        graph.set_batch_num_edges(self.num_edges.to(idtype))
        return graph
