"""Graph layer: molecules (and point clouds) -> :class:`dgl.DGLGraph`; graph shards on disk."""

from chemgraph.graphs.molecule import mol_to_graph, mols_to_graphs
from chemgraph.graphs.radius import mol_to_radius_graph, periodic_radius_graph, radius_graph
from chemgraph.graphs.shards import load_shard, save_shard

__all__ = [
    "load_shard",
    "save_shard",
    "mol_to_graph",
    "mol_to_radius_graph",
    "mols_to_graphs",
    "periodic_radius_graph",
    "radius_graph",
]
