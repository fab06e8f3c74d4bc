"""The errors chemgraph reports to its users, all derived from :class:`ChemgraphError`.

The ``chemgraph`` command prints a :class:`ChemgraphError` as one line,
``chemgraph <command>: error: <message>``, and exits with status 2; any other exception is a
bug and shows its traceback. This module is the bottom layer: it imports nothing from chemgraph,
and every layer raises its user-facing errors from here or from a subclass of these:

* ``chemgraph.chem``: ``MoleculeParseError``, ``ReactionParseError``, ``GraphEncodingError``,
  ``GraphDecodingError`` (each also a :class:`ValueError`);
* ``chemgraph.data.datasets``: ``QM9GWLayoutError`` (a :class:`DatasetError` and a
  :class:`ValueError`), ``ChecksumError`` (a :class:`DatasetError` and an :class:`OSError`).

A refusal names a setting as the user gave it: :func:`setting` gives the configuration key
(``delta_learning: true``), or, within :func:`settings_as_flags`, the command-line flag a command
maps it to (``--delta-learning``), so that one check serves a YAML configuration and a command
line alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "ChemgraphError",
    "ConfigError",
    "DatasetError",
    "MissingDependencyError",
    "setting",
    "settings_as_flags",
]


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


_FLAGS: ContextVar[Mapping[str, str] | None] = ContextVar("chemgraph_setting_flags", default=None)
_NO_VALUE = object()


@contextmanager
def settings_as_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """Within the block, :func:`setting` names each setting of ``flags`` (configuration key ->
    command-line flag, e.g. ``{"delta_learning": "--delta-learning"}``) by its flag. A command
    wraps its run in it, mapping the settings its user gave as flags (or could have: those its
    ``--config`` file did not set)."""
    token = _FLAGS.set(dict(flags))
    try:
        yield
    finally:
        _FLAGS.reset(token)


def setting(key: str, value: Any = _NO_VALUE) -> str:
    """How a message names the setting ``key``: its flag within :func:`settings_as_flags`
    (``"--delta-learning"``), else the configuration key, with ``value`` as YAML writes it when
    given (``"delta_learning: true"``; give it only for a setting whose flag stands for that
    value, as a switch's flag stands for true)."""
    flag = (_FLAGS.get() or {}).get(key)
    if flag is not None or value is _NO_VALUE:
        return flag or key
    return f"{key}: {str(value).lower() if isinstance(value, bool) else value}"
