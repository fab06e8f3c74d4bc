"""The ``chemgraph`` command: its parser (:func:`build_parser`), logging set-up and
:func:`main`, which runs a command and turns user errors into one line and exit status 2."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

from chemgraph import __version__
from chemgraph._interrupts import Interrupted
from chemgraph.cli.base import SHARED_DEFAULTS, HelpFormatter, shared_options
from chemgraph.cli.datasets import DatasetsCommand
from chemgraph.cli.featurize import FeaturizeCommand
from chemgraph.cli.fingerprint import FingerprintCommand
from chemgraph.cli.predict import PredictCommand
from chemgraph.cli.qc import QCCommand
from chemgraph.cli.react import ReactCommand
from chemgraph.cli.recipe import RecipeCommand
from chemgraph.cli.train import TrainCommand
from chemgraph.cli.transfer import TransferCommand
from chemgraph.errors import ChemgraphError

__all__ = [
    "BROKEN_PIPE_STATUS",
    "COMMANDS",
    "INTERRUPTED_STATUS",
    "USER_ERRORS",
    "build_parser",
    "console_logging",
    "interrupted_line",
    "main",
]

#: Command name -> command, in the order ``chemgraph --help`` lists them.
COMMANDS = {
    command.name: command
    for command in (
        TrainCommand(),
        PredictCommand(),
        FeaturizeCommand(),
        FingerprintCommand(),
        QCCommand(),
        DatasetsCommand(),
        ReactCommand(),
        TransferCommand(),
        RecipeCommand(),
    )
}

#: Errors printed as one line (exit status 2) unless --debug. ValueError is still here because
#: much of the library reports bad settings and inputs as a plain ValueError.
USER_ERRORS = (ChemgraphError, OSError, ValueError)

#: Exit status when the reader of standard output went away (``chemgraph datasets list | head
#: -1``): 128 + SIGPIPE (13), the status a shell reports for a tool that SIGPIPE stopped (``cat``,
#: ``yes``), so that ``set -o pipefail`` scripts see the same as with those; nothing is printed.
BROKEN_PIPE_STATUS = 141

#: Exit status after Ctrl-C (SIGINT): 128 + SIGINT (2), as shells report; after SIGTERM, 143.
INTERRUPTED_STATUS = 130


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``chemgraph`` command; builds without importing torch, RDKit or DGL."""
    parser = argparse.ArgumentParser(
        prog="chemgraph",
        description="Deep learning on molecules: train graph models on SMILES tables and "
        "predict properties of new molecules.",
        formatter_class=HelpFormatter,
        parents=[shared_options()],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(**SHARED_DEFAULTS)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_to(commands)
    return parser


class _LevelPrefix(logging.Formatter):
    """``warning: <message>`` (the level in lower case, as in ``error:``)."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {super().format(record)}"


@contextlib.contextmanager
def console_logging(quiet: bool = False, verbose: bool = False) -> Iterator[None]:
    """Within the block, print the messages of the ``chemgraph`` loggers: info (and debug)
    messages as they are on stdout, warnings and errors as ``warning: ...`` on stderr.

    Args:
        quiet: warnings and errors only (Lightning's information lines too).
        verbose: debug messages too (wins over ``quiet``).

    The handlers and the logger's level are removed and restored on leaving, so that ``main``
    leaves no logging set-up behind (it may run many times in one process).
    """
    logger = logging.getLogger("chemgraph")
    plain = logging.StreamHandler(sys.stdout)
    plain.addFilter(lambda record: record.levelno < logging.WARNING)
    plain.setFormatter(logging.Formatter("%(message)s"))
    problems = logging.StreamHandler(sys.stderr)
    problems.setLevel(logging.WARNING)
    problems.setFormatter(_LevelPrefix("%(message)s"))
    lightning = logging.getLogger("lightning.pytorch.utilities.rank_zero")  # "GPU available"
    level, lightning_level = logger.level, lightning.level
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    if quiet and not verbose:
        lightning.setLevel(logging.WARNING)
    logger.addHandler(plain)
    logger.addHandler(problems)
    try:
        yield
    finally:
        logger.removeHandler(plain)
        logger.removeHandler(problems)
        logger.setLevel(level)
        lightning.setLevel(lightning_level)


def main(argv: list[str] | None = None) -> int:
    """Run ``chemgraph`` with ``argv`` (default: the process's arguments).

    Returns:
        The command's exit status; 2 after a user error (:data:`USER_ERRORS`), printed as one
        line ``chemgraph <command>: error: <message>`` on stderr; :data:`BROKEN_PIPE_STATUS`
        (141), silently, when standard output is a pipe whose reader closed it early (the rest
        of the output goes to the null device, so that Python's flush at exit stays quiet);
        128 + the signal number after an interrupt, with one line on stderr
        (:func:`interrupted_line`): :data:`INTERRUPTED_STATUS` (130) after Ctrl-C (SIGINT),
        143 after a SIGTERM that a job turned into :class:`chemgraph._interrupts.Interrupted`.
        main is the only place that catches an interrupt: a job that keeps its work says where
        and how to resume in the exception's message
        (:class:`chemgraph._interrupts.ShardsInterrupted`).
        Any other exception is raised with its traceback, and so is a user error with
        ``--debug``.
    """
    args = build_parser().parse_args(argv)
    with console_logging(args.quiet, args.verbose):
        try:
            status = COMMANDS[args.command].run(args)
            sys.stdout.flush()  # a closed pipe shows here, not in the flush at exit
            return status
        except BrokenPipeError:
            _discard_stdout()
            return BROKEN_PIPE_STATUS
        except USER_ERRORS as error:
            if args.debug:
                raise
            print(f"chemgraph {args.command}: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (Interrupted)
            if args.debug:
                raise
            _print_uninterrupted(f"chemgraph {args.command}: {interrupted_line(stop)}")
            return 128 + getattr(stop, "signum", signal.SIGINT)


def interrupted_line(stop: KeyboardInterrupt) -> str:
    """What an interrupt that stopped a command is said as: the job's own message when it gives
    one (where its complete work is kept and how to resume: ``stopped by SIGTERM; 3 complete
    shard(s) kept in out; run the same command with --resume to continue``), else
    ``interrupted (Ctrl-C)`` or ``interrupted (SIGTERM)``."""
    signum = getattr(stop, "signum", signal.SIGINT)
    if isinstance(stop, Interrupted) and str(stop) != str(Interrupted(signum)):
        return str(stop)
    return f"interrupted ({'Ctrl-C' if signum == signal.SIGINT else signal.Signals(signum).name})"


def _print_uninterrupted(line: str) -> None:
    """Print ``line`` on stderr with SIGINT ignored meanwhile: ``timeout -s INT`` and a terminal
    send one to the process and one to its group, and the second must not cut the line short."""
    if threading.current_thread() is not threading.main_thread():
        print(line, file=sys.stderr)
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        print(line, file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, previous)


def _discard_stdout() -> None:
    """Point standard output at the null device (its reader is gone), as the Python
    documentation advises for SIGPIPE: what is still buffered is then dropped quietly."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a descriptor
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)
