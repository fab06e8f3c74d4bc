"""The errors chemgraph reports to its users, all derived from :class:`ChemgraphError`.

The ``chemgraph`` command prints a :class:`ChemgraphError` as one line,
``chemgraph <command>: error: <message>``, and exits with status 2; any other exception is a
bug and shows its traceback. This module is the bottom layer: it imports nothing from chemgraph,
and every layer raises its user-facing errors from here or from a subclass of these:

* ``chemgraph.chem``: ``MoleculeParseError``, ``ReactionParseError``, ``GraphEncodingError``,
  ``GraphDecodingError`` (each also a :class:`ValueError`);
* ``chemgraph.data.datasets``: ``QM9GWLayoutError`` (a :class:`DatasetError` and a
  :class:`ValueError`), ``ChecksumError`` (a :class:`DatasetError` and an :class:`OSError`).
"""

from __future__ import annotations

__all__ = ["ChemgraphError", "ConfigError", "DatasetError", "MissingDependencyError"]


class ChemgraphError(Exception):
    """An error in the user's input, settings or data, explained by its message."""


class ConfigError(ChemgraphError, ValueError):
    """A bad setting (a command-line option or a configuration value); the message names the
    setting, the value given and what is allowed."""


class DatasetError(ChemgraphError):
    """A dataset that cannot be obtained or read as its card describes."""


class MissingDependencyError(ChemgraphError, ImportError):
    """An optional package that a requested feature needs is not installed; the message says
    which package and how to install it."""
