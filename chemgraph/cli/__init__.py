"""The ``chemgraph`` command (also ``python -m chemgraph``), one module per command.

:mod:`~chemgraph.cli.base` holds the :class:`~chemgraph.cli.base.Command` base, the options
of every command (``--quiet``, ``-v/--verbose``, ``--debug``) and the help formatters;
:mod:`~chemgraph.cli.common` the options several commands share, each defined once
(``-i/--input``, ``-o/--output``, ``--overwrite``, ``--seed``, ``--target-columns``, ...);
:mod:`~chemgraph.cli.main` the parser, logging set-up and :func:`main`, the one place that
catches errors and interrupts; ``train``, ``predict``, ``featurize``, ``fingerprint``, ``qc``,
``datasets``, ``react``, ``transfer`` and ``recipe`` one command each. Building the parser
imports no heavy library: each command imports what it needs when it runs.
"""

from chemgraph.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
