"""Graph layer: molecules (and point clouds) -> :class:`dgl.DGLGraph`; graph shards on disk."""

from chemgraph.graphs.molecule import mol_to_graph

__all__ = ["mol_to_graph"]
