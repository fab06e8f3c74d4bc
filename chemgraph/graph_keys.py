"""The names of the data chemgraph stores in a :class:`dgl.DGLGraph`, one name per meaning.

A bottom module (no chemgraph imports), so every layer that builds or reads graphs uses these
constants instead of string literals: featurizers and graph builders write the keys, batch
builders and dataset loaders read them. Node data (``graph.ndata[KEY]``) is per atom, edge data
(``graph.edata[KEY]``) per directed edge; ``N`` atoms, ``E`` edges, ``P`` connected atom pairs.

Renamed keys (graphs cached by older versions hold the old names; the dataset cache key
includes :data:`GRAPH_FORMAT`, so such caches are rebuilt rather than read):

- Gaussian-expanded distances of the QM9 and OC20 radius graphs: ``"rbf"`` -> :data:`EDGE_FEATURES`
  (what :func:`chemgraph.graphs.atoms_to_radius_graph` already wrote), so every radius graph
  feeds the batch builders the same way.
- Shortest-path length of a :data:`PAIR` edge: ``"distance"`` -> :data:`SPD` (``"distance"``
  is the Euclidean length of a radius edge, in Å).
"""

__all__ = [
    "ATOM",
    "ATOMIC_NUMBERS",
    "BOND",
    "DISTANCE",
    "EDGE_FEATURES",
    "FIXED",
    "GRAPH_FORMAT",
    "NODE_FEATURES",
    "OFFSET",
    "PAIR",
    "PATH",
    "POSITIONS",
    "SHIFT",
    "SPD",
    "TAGS",
    "VECTOR",
]

GRAPH_FORMAT = 2
"""Version of the key layout below; part of the dataset cache key. Bump it when a key changes."""

# --- node data ---------------------------------------------------------------------------------
NODE_FEATURES = "x"
"""Atom features: ``float32 [N, F]`` (one-hot presets) or ``int64 [N, F]`` (categorical)."""
ATOMIC_NUMBERS = "z"
"""Atomic numbers, ``int64 [N]`` (radius graphs)."""
POSITIONS = "pos"
"""Cartesian coordinates, ``float32 [N, 3]``, Å."""
TAGS = "tags"
"""OC20 atom tags, ``int64 [N]``: 0 subsurface slab atom, 1 surface atom, 2 adsorbate."""
FIXED = "fixed"
"""Atoms held fixed in the relaxation, ``bool [N]`` (OC20)."""

# --- edge data ---------------------------------------------------------------------------------
EDGE_FEATURES = "e"
"""What the models read per edge: bond features (``float32`` or ``int64 [E, F]``, bond graphs)
or the distance expanded in a Gaussian basis (``float32 [E, K]``, radius graphs)."""
DISTANCE = "distance"
"""Euclidean length of a radius edge, ``float32 [E]``, Å."""
VECTOR = "vector"
"""``pos[dst] - pos[src]`` (plus the periodic image offset), ``float32 [E, 3]``, Å."""
SHIFT = "shift"
"""Periodic image of the destination atom in cell vectors, ``int64 [E, 3]``."""
OFFSET = "offset"
"""Cartesian translation of that image, ``shift @ cell``, ``float32 [E, 3]``, Å."""

# --- the shortest-path cache (:func:`chemgraph.graphs.add_shortest_paths`) ------------------
ATOM = "atom"
"""The node type of a graph with cached shortest paths."""
BOND = (ATOM, "bond", ATOM)
"""Canonical edge type of the bonds (with the bond graph's edge data) in that graph."""
PAIR = (ATOM, "pair", ATOM)
"""Canonical edge type of the connected atom pairs, which carry :data:`SPD` and :data:`PATH`."""
SPD = "spd"
"""Shortest-path distance of a :data:`PAIR` edge in bonds, ``int16 [P]``."""
PATH = "path"
"""Local :data:`BOND` ids of the first ``H`` bonds of one shortest path, ``int16 [P, H]``;
``-1`` after the path's end."""
