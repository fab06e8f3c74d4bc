"""The one place chemgraph imports DGL.

PyPI's newest Linux DGL (2.1.0, CPU build) does not import on current PyTorch:

* ``dgl.distributed`` imports ``dgl.graphbolt``, whose C++ library
  (``libgraphbolt_pytorch_<torch version>.so``) ships only for torch 2.0-2.2.1 and which needs
  the removed ``torchdata.datapipes``. When that library is missing for the running torch, a stub
  module is placed at ``sys.modules["dgl.graphbolt"]``; touching any of its attributes raises
  :class:`ImportError` with an explanation. GraphBolt serves only DGL's distributed data
  loading, never graph construction, batching or ``dgl.nn``.
* ``DGLBACKEND`` is set to ``pytorch`` unless the user set it (otherwise DGL writes
  ``~/.dgl/config.json`` and warns).
* ``dgl.utils`` needs the ``packaging`` distribution (declared as a dependency).

Every other chemgraph module does ``from chemgraph._dgl import dgl``. Importing this module
does the above without importing torch or DGL (``import chemgraph`` stays fast, e.g. for
``chemgraph --help``); DGL itself is imported when ``dgl`` is first taken from it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dgl

__all__ = ["dgl", "graphbolt_library_present"]


def graphbolt_library_present() -> bool:
    """Whether DGL ships a GraphBolt library built for the running torch version.

    Found with :func:`importlib.util.find_spec` and the installed torch's metadata, without
    importing DGL or torch.

    Returns:
        True when ``dgl/graphbolt/libgraphbolt_pytorch_<torch version>.so`` exists.

    Raises:
        ImportError: when DGL is not installed.
    """
    spec = importlib.util.find_spec("dgl")
    if spec is None or spec.origin is None:
        raise ImportError("DGL is not installed: pip install dgl==2.1.0")
    version = _torch_version().split("+")[0]
    library = Path(spec.origin).parent / "graphbolt" / f"libgraphbolt_pytorch_{version}.so"
    return library.exists()


class _GraphBoltUnavailable(types.ModuleType):
    """Stand-in for ``dgl.graphbolt`` when its C++ library does not exist for this torch."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise ImportError(
            f"dgl.graphbolt.{name} is unavailable: DGL {_dgl_version()} ships no GraphBolt library "
            f"for torch {_torch_version()}. chemgraph does not use GraphBolt (DGL's distributed "
            "data loading); graph construction, batching and dgl.nn work without it."
        )


def _dgl_version() -> str:
    return importlib.metadata.version("dgl")


def _torch_version() -> str:
    """The installed torch's version (``torch.__version__``), read without importing torch."""
    return importlib.metadata.version("torch")


def _prepare_dgl_import() -> None:
    """Set ``DGLBACKEND`` and place the GraphBolt stub if needed, before DGL is imported."""
    os.environ.setdefault("DGLBACKEND", "pytorch")
    if "dgl" not in sys.modules and not graphbolt_library_present():
        sys.modules.setdefault("dgl.graphbolt", _GraphBoltUnavailable("dgl.graphbolt"))


def __getattr__(name: str) -> types.ModuleType:
    """``dgl``: the DGL module, imported on first use."""
    if name != "dgl":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import dgl

    return dgl


_prepare_dgl_import()
