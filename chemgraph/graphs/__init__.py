"""Graph layer: molecules (and point clouds) -> :class:`dgl.DGLGraph`; graph shards on disk.

May import :mod:`chemgraph.chem`, :mod:`chemgraph.featurize` and the bottom modules (``_dgl``,
``graph_keys``, whose constants name the data the graphs hold).
"""

from chemgraph.graphs.molecule import mol_to_graph, mols_to_graphs
from chemgraph.graphs.radius import (
    add_distance_features,
    atoms_to_radius_graph,
    mol_to_radius_graph,
    periodic_radius_graph,
    radius_graph,
)
from chemgraph.graphs.shards import load_shard, load_shard_batch, save_shard, select_graphs
from chemgraph.graphs.shortest_paths import add_shortest_paths, has_shortest_paths

__all__ = [
    "add_distance_features",
    "add_shortest_paths",
    "atoms_to_radius_graph",
    "has_shortest_paths",
    "load_shard",
    "load_shard_batch",
    "save_shard",
    "select_graphs",
    "mol_to_graph",
    "mol_to_radius_graph",
    "mols_to_graphs",
    "periodic_radius_graph",
    "radius_graph",
]
