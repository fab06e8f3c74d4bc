"""What every ``chemgraph`` command is built on: :class:`Command`, the options all commands
share (:func:`shared_options`), the help formatters that show defaults, and the layout of
tables printed to the terminal (:func:`output_width`, :func:`table_lines`)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import textwrap
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "MIN_TEXT_WIDTH",
    "PIPE_WIDTH",
    "SHARED_DEFAULTS",
    "Command",
    "HelpFormatter",
    "ExamplesHelpFormatter",
    "add_action",
    "add_library_options",
    "add_record_file_options",
    "add_overwrite_option",
    "output_width",
    "run_library_job",
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
    to show) or the help already says ``(default``."""

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


def add_overwrite_option(parser: argparse.ArgumentParser) -> None:
    """``--overwrite`` of a command that writes an ``--out`` folder (the rule of
    :func:`chemgraph._output.check_output_folder`)."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="allow a non-empty --out (an earlier run's): files of the same name are "
        "replaced, others are left",
    )


def add_record_file_options(parser: argparse.ArgumentParser) -> None:
    """The input file, its columns and the resumable output folder of a command that processes
    a library's records in shards into a folder (``featurize``, ``qc``)."""
    parser.add_argument("input", help=".smi, .csv, .tsv, .parquet or .sdf (optionally .gz)")
    parser.add_argument("--output", required=True, help="output folder (new, or --resume)")
    parser.add_argument("--smiles-column", help="SMILES column of a table (default: smiles)")
    parser.add_argument(
        "--id-column",
        help="identifier column of a table (default: a column named id, else the row "
        "number), or SD property of an SDF (default: its title line)",
    )


def add_library_options(parser: argparse.ArgumentParser, work: str, output_help: str) -> None:
    """The options of a command that streams a library through a trained model shard by
    shard (``predict``, ``fingerprint``: :class:`chemgraph.library.scoring.LibraryRun`): the
    input and its columns, the output, batches, workers, shards, Dask, resume and overwrite.

    Args:
        parser: the command's parser.
        work: what the command does to a shard (``"scoring"``, ``"embedding"``), for the help.
        output_help: the help of ``--output`` (its formats).
    """
    parser.add_argument(
        "--input",
        required=True,
        help="library file (.smi, .sdf, .csv, .tsv, .parquet, optionally .gz) or a "
        "chemgraph featurize output folder; for a 3D model (esa-3d), a file of 3D structures "
        "(.sdf with 3D coordinates, .xyz, .extxyz, optionally .gz)",
    )
    parser.add_argument("--output", required=True, help=output_help)
    parser.add_argument(
        "--smiles-column", help="SMILES column of a table (default: smiles, SMILES, ...)"
    )
    parser.add_argument(
        "--id-column",
        help="identifier column of a table (default: a column named id, else the row "
        "number), SD property of an SDF (default: its title line), or key of an extended-XYZ "
        "comment line",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=256,
        help="the most molecules per forward pass (fewer when they are large)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help=f"worker processes: featurizing a file input, and {work} shards on the CPU (each "
        "worker runs torch on one thread)",
    )
    parser.add_argument(
        "--shard-size", type=int, default=5_000, help="records per shard (a file input)"
    )
    parser.add_argument(
        "--dask-scheduler",
        help=f"dask.distributed scheduler address: featurize a file and run the {work} of its "
        "shards as tasks on a cluster (the output byte-identical to a local run's; a file "
        "system the workers share; see the screening guide); --workers is then not used",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume", action="store_true", help="continue an interrupted run (OUTPUT.partial/)"
    )
    again.add_argument(
        "--overwrite",
        action="store_true",
        help="write over an existing output and discard an interrupted run",
    )


def start_library_workers(args: argparse.Namespace) -> None:
    """Before a library job's imports: start the server of its local featurization workers
    (:func:`chemgraph.library.workers.start_worker_server`) when it will featurize a file
    (not a featurize folder, not on Dask), so that the two processes' imports overlap."""
    if args.dask_scheduler is None and not Path(args.input).is_dir():
        from chemgraph.library.workers import start_worker_server

        start_worker_server()


def run_library_job(
    command: str, job: Callable[..., Any], args: argparse.Namespace, options: Any
) -> Any:
    """Run ``job`` (:func:`~chemgraph.jobs.predict.predict_table`,
    :func:`~chemgraph.jobs.fingerprint.fingerprint_table`) on the options of
    :func:`add_library_options`: the job's summary, or, when an interrupt (Ctrl-C or SIGTERM)
    stopped it, the exit status ``128 +`` the signal number, after printing how to resume.

    Args:
        command: the command's name, in the message.
        job: called as ``job(args.checkpoint, args.input, args.output, options, ...)``.
        args: the parsed arguments.
        options: the job's options object.
    """
    try:
        return job(
            args.checkpoint,
            args.input,
            args.output,
            options,
            workers=args.workers,
            shard_size=args.shard_size,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not args.quiet,
            dask_scheduler=args.dask_scheduler,
        )
    except KeyboardInterrupt as stop:  # chemgraph._interrupts.Interrupted: SIGTERM too
        signum = getattr(stop, "signum", signal.SIGINT)
        print(
            f"chemgraph {command}: stopped by {signal.Signals(signum).name}; the finished "
            f"shards are kept in {args.output}.partial: run the same command with --resume "
            "to continue",
            file=sys.stderr,
        )
        return 128 + signum


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
