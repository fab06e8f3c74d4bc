"""The ``chemgraph`` command (also ``python -m chemgraph``), one module per command.

:mod:`~chemgraph.cli.base` holds the :class:`~chemgraph.cli.base.Command` base, the shared
options (``--quiet``, ``-v/--verbose``, ``--debug``) and the help formatters;
:mod:`~chemgraph.cli.main` the parser, logging set-up and :func:`main`; ``train``, ``predict``,
``featurize``, ``fingerprint``, ``qc``, ``datasets``, ``recipe`` and ``react`` one command
each. Building the parser imports no heavy library: each command imports what it needs when
it runs.
"""

from chemgraph.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
