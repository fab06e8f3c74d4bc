"""chemgraph: deep learning on molecules.

RDKit featurizers build DGL graphs; plain-tensor batches feed ESA/NSA, Graphormer, GRAT,
GCN/GIN and GMoE, trained with PyTorch Lightning. See docs/architecture.md ("Layers").

Importing chemgraph makes ``import dgl`` work on current torch (see :mod:`chemgraph._dgl`).
"""

import importlib.metadata
import os

# OpenMP threads that spin-wait while another process holds a core made 2-thread CPU steps
# many times slower (docs/architecture.md, "Training"); this must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from chemgraph import _dgl  # noqa: E402, F401  (installs the DGL import workaround)

# pyproject.toml's version, as the installed distribution's metadata holds it (one source)
try:
    __version__ = importlib.metadata.version("chemgraph")
except importlib.metadata.PackageNotFoundError:  # a source tree imported without installing it
    __version__ = "0+unknown"
