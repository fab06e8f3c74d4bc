"""Graph layer: molecules (and point clouds) -> :class:`dgl.DGLGraph`; graph shards on disk.

May import :mod:`chemgraph.chem`, :mod:`chemgraph.featurize` and the bottom modules (``_dgl``,
``graph_keys``, whose constants name the data the graphs hold).

Every module is imported on first use of one of its names: building and saving a library's
graph arrays (:func:`mols_to_graph_arrays`, :func:`~chemgraph.graphs.shards.save_shard_arrays`,
what ``chemgraph featurize`` does) imports no DGL.
"""

from chemgraph._lazy import lazy_attributes

# name -> the module that defines it
_MODULES = {
    "GraphArrays": "arrays",
    "mol_to_graph": "molecule",
    "mols_to_graph_arrays": "molecule",
    "mols_to_graphs": "molecule",
    "add_distance_features": "radius",
    "atoms_to_radius_graph": "radius",
    "mol_to_radius_graph": "radius",
    "periodic_radius_graph": "radius",
    "radius_graph": "radius",
    "load_shard": "shards",
    "load_shard_batch": "shards",
    "save_shard": "shards",
    "save_shard_arrays": "shards",
    "select_graphs": "shards",
    "add_shortest_paths": "shortest_paths",
    "has_shortest_paths": "shortest_paths",
}

__all__ = sorted(_MODULES)

__getattr__ = lazy_attributes(__name__, _MODULES)
