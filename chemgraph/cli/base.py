"""What every ``chemgraph`` command is built on: :class:`Command`, the options all commands
share (:func:`shared_options`: ``--quiet``, ``-v/--verbose``, ``--debug``), the help formatters
that show defaults, and the layout of tables printed to the terminal (:func:`output_width`,
:func:`table_lines`). The options that several commands take are defined in
:mod:`chemgraph.cli.common`."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from abc import ABC, abstractmethod
from collections.abc import Sequence

__all__ = [
    "MIN_TEXT_WIDTH",
    "PIPE_WIDTH",
    "SHARED_DEFAULTS",
    "Command",
    "HelpFormatter",
    "ExamplesHelpFormatter",
    "add_action",
    "output_width",
    "shared_options",
    "table_lines",
]

#: Values of the shared options when none is given.
SHARED_DEFAULTS = {"quiet": False, "verbose": False, "debug": False}


#: Line width of output that does not go to a terminal (a pipe, a file).
PIPE_WIDTH = 100

#: Fewest columns :func:`table_lines` leaves to the text column, however narrow the terminal.
MIN_TEXT_WIDTH = 20


def output_width() -> int:
    """Columns a printed line may take: ``$COLUMNS`` if set, else the width of the terminal
    that standard output is, else :data:`PIPE_WIDTH`."""
    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns


def table_lines(
    rows: Sequence[Sequence[str]], width: int, align: str = "", wrap: bool = False
) -> list[str]:
    """The lines of a table whose last column is free text, fitted into ``width`` columns.

    Every column but the last is padded to its widest entry and never cut (names stay whole);
    the text column takes what is left, at least :data:`MIN_TEXT_WIDTH` (so lines are longer
    than ``width`` only when the other columns alone nearly fill it). Text that does not fit is
    shortened at a word boundary and ends with `` …``, or, with ``wrap``, continues on lines
    indented to the text column; words are never split (URLs stay whole).

    Args:
        rows: the cells of each row, all rows with the same number of cells.
        width: the line width to fit (:func:`output_width`).
        align: ``<`` (left, the default) or ``>`` (right) for each column before the text.
        wrap: wrap the text instead of shortening it.
    """
    fixed = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(fixed)]
    aligns = align.ljust(fixed, "<")
    indent = sum(widths) + 2 * fixed
    text_width = max(width - indent, MIN_TEXT_WIDTH)
    lines = []
    for row in rows:
        left = "".join(f"{cell:{a}{w}}  " for cell, a, w in zip(row, aligns, widths))
        if wrap:
            text = textwrap.wrap(
                row[-1], text_width, break_long_words=False, break_on_hyphens=False
            ) or [""]
        else:
            text = [textwrap.shorten(row[-1], text_width, placeholder=" …")]
        lines.append((left + text[0]).rstrip())
        lines.extend(" " * indent + more for more in text[1:])
    return lines


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Ends an option's help with ``(default: X)``, unless X is None, False or empty (nothing
    to show) or the help already says ``(default``; names an option's spellings once before
    its value (``-o, --output, --out OUTPUT``)."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"

    def _get_help_string(self, action: argparse.Action) -> str | None:
        default = action.default
        if (
            default is None
            or default is False
            or default == []
            or "(default" in (action.help or "")
        ):
            return action.help
        return super()._get_help_string(action)


class ExamplesHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` for a command whose description and epilog (examples) are laid out
    by hand: they are printed as written."""


def shared_options() -> argparse.ArgumentParser:
    """A parent parser with ``--quiet``, ``-v/--verbose`` and ``--debug``.

    They may be given before or after any command name; an option not given is absent from the
    parsed namespace (the top level fills in :data:`SHARED_DEFAULTS`). argparse shares a
    parent's actions with its children, so every parser takes a parser of its own.
    """
    parser = argparse.ArgumentParser(add_help=False)
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument(
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print warnings and errors only; no progress bars",
    )
    verbosity.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print debug messages too",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of every error, user errors included",
    )
    return parser


def add_action(
    actions: argparse._SubParsersAction, name: str, help: str
) -> argparse.ArgumentParser:
    """A second-level command (``chemgraph datasets list``), taking the shared options."""
    return actions.add_parser(
        name, help=help, formatter_class=HelpFormatter, parents=[shared_options()]
    )


class Command(ABC):
    """One ``chemgraph`` command: its parser (:meth:`add_arguments`) and what it does
    (:meth:`run`).

    Attributes:
        name: the command name (``chemgraph NAME``).
        help: one line for ``chemgraph --help``.
        description: shown by ``chemgraph NAME --help``.
        epilog: shown after the options (examples).
        formatter_class: :class:`HelpFormatter`, or :class:`ExamplesHelpFormatter` to print
            the description and epilog as written.

    :meth:`run` imports what it needs itself, so that building the parser stays fast.
    """

    name: str
    help: str
    description: str | None = None
    epilog: str | None = None
    formatter_class: type[argparse.HelpFormatter] = HelpFormatter

    def add_to(self, commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add this command's parser, with the shared options, to ``commands``."""
        parser = commands.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=self.epilog,
            formatter_class=self.formatter_class,
            parents=[shared_options()],
        )
        self.add_arguments(parser)
        return parser

    @abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's own options to ``parser``."""

    @abstractmethod
    def run(self, args: argparse.Namespace) -> int:
        """Do the command; returns the exit status.

        Raises:
            chemgraph.errors.ChemgraphError, OSError, ValueError: a user error, printed by
                :func:`chemgraph.cli.main` as one line (exit status 2).
        """
