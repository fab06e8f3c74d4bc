"""The options that more than one ``chemgraph`` command takes, each defined once here (as
Chemprop v2's ``cli/common.py``): a command module adds the blocks it needs and writes only its
own help where the meaning differs (what its ``-o/--output`` is, what its ``--seed`` seeds).

One spelling per meaning, across commands (earlier spellings in brackets):

* the file or folder read: ``-i/--input`` (``--data`` of train and transfer; the positional
  INPUT of featurize and qc);
* what is written, a file or a folder as each command's help says: ``-o/--output`` (``--out``
  of train, transfer and recipe run; ``--root`` of datasets download);
* writing over an earlier run: ``--overwrite``; continuing an interrupted one: ``--resume``;
* the label (target) columns: ``--target-columns`` (``--label-columns`` of featurize);
* one seed value: ``--seed``; a number of seeds, 0 to N-1: ``--seeds``;
* the SMILES and id columns: ``--smiles-column``, ``--id-column``; worker processes:
  ``--workers``; records per shard: ``--shard-size``;
* the molecule preparation: ``--standardize``, ``--fragments``.

The earlier spellings stay accepted, as aliases listed beside the new one in ``--help``. The
library commands' run helpers (:func:`start_library_workers`, :func:`run_library_job`) read the
options of :func:`add_library_options` and live here beside it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chemgraph.model_names import MODEL_DESCRIPTIONS

__all__ = [
    "FRAGMENT_POLICIES",
    "STANDARDIZE_METHODS",
    "add_batch_size_option",
    "add_checkpoint_option",
    "add_config_option",
    "add_conformers_option",
    "add_dask_option",
    "add_id_column_option",
    "add_input_file",
    "add_input_option",
    "add_library_options",
    "add_max_time_option",
    "add_model_option",
    "add_output_option",
    "add_overwrite_option",
    "add_preparation_options",
    "add_protocol_option",
    "add_record_file_options",
    "add_record_timeout_option",
    "add_resume_options",
    "add_root_option",
    "add_seed_option",
    "add_seeds_option",
    "add_shard_size_option",
    "add_smiles_column_option",
    "add_target_columns_option",
    "add_workers_option",
    "run_library_job",
    "split_columns",
    "start_library_workers",
]

#: The choices of ``--standardize`` (:class:`chemgraph.chem.MoleculePreparation`).
STANDARDIZE_METHODS = ("none", "basic", "chembl")
#: The choices of ``--fragments``.
FRAGMENT_POLICIES = ("keep", "largest")

_LIBRARY_FILE = ".smi, .csv, .tsv, .parquet or .sdf (optionally .gz)"


# -- input and output ------------------------------------------------------------------------


def add_input_option(
    parser: argparse.ArgumentParser | argparse._ActionsContainer,
    help: str,
    *,
    dest: str = "input",
    aliases: tuple[str, ...] = (),
    required: bool = False,
) -> None:
    """``-i/--input INPUT`` (and ``aliases``, earlier spellings kept working), stored as
    ``dest``."""
    parser.add_argument(
        "-i", "--input", *aliases, dest=dest, metavar="INPUT", required=required, help=help
    )


def add_input_file(parser: argparse.ArgumentParser, help: str) -> None:
    """The input of a command that also takes it as its first argument (``chemgraph featurize
    lib.smi`` or ``chemgraph featurize -i lib.smi``), stored as ``input``: exactly one of the
    two is required (argparse refuses both or neither, naming them)."""
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        default=argparse.SUPPRESS,  # absent: leaves -i/--input's value
        help="the same as -i/--input",
    )
    add_input_option(given, help)


def add_output_option(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    dest: str = "output",
    aliases: tuple[str, ...] = (),
    required: bool = False,
) -> None:
    """``-o/--output OUTPUT`` (and ``aliases``), stored as ``dest``; ``help`` says whether it
    is a file or a folder."""
    parser.add_argument(
        "-o", "--output", *aliases, dest=dest, metavar="OUTPUT", required=required, help=help
    )


def add_overwrite_option(
    parser: argparse.ArgumentParser | argparse._ActionsContainer,
    help: str = "allow an existing --output (an earlier run's): what this command writes there "
    "is replaced, any other file is left",
) -> None:
    """``--overwrite`` of a command without ``--resume`` (the folder rule of
    :func:`chemgraph._output.check_output_folder`; ``help`` for an output file)."""
    parser.add_argument("--overwrite", action="store_true", help=help)


def add_resume_options(
    parser: argparse.ArgumentParser, resume: str, overwrite: str | None = None
) -> None:
    """``--resume`` and ``--overwrite``, which exclude each other, for a command whose run can
    be interrupted and continued.

    Args:
        parser: the command's parser.
        resume: the help of ``--resume`` (where the interrupted run is kept).
        overwrite: the help of ``--overwrite`` (what it removes); None = that of
            :func:`add_overwrite_option`.
    """
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true", help=resume)
    if overwrite is None:
        add_overwrite_option(again)
    else:
        add_overwrite_option(again, overwrite)


def add_root_option(parser: argparse.ArgumentParser, help: str, dest: str = "root") -> None:
    """``--root FOLDER``: a local copy of a registered dataset's source files."""
    parser.add_argument("--root", dest=dest, metavar="FOLDER", help=help)


def add_config_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--config FILE``: a YAML file of settings; ``help`` says which and what wins."""
    parser.add_argument("--config", metavar="FILE", help=help)


def add_checkpoint_option(
    parser: argparse.ArgumentParser, help: str, *, required: bool = False, repeat: bool = False
) -> None:
    """``--checkpoint PATH``: a trained model (``repeat``: one or more, a list)."""
    parser.add_argument(
        "--checkpoint",
        required=required,
        action="append" if repeat else "store",
        metavar="PATH",
        help=help,
    )


# -- columns ---------------------------------------------------------------------------------


def add_smiles_column_option(
    parser: argparse.ArgumentParser, help: str = "SMILES column of a table (default: smiles)"
) -> None:
    """``--smiles-column``."""
    parser.add_argument("--smiles-column", metavar="COLUMN", help=help)


def add_id_column_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--id-column``."""
    parser.add_argument("--id-column", metavar="COLUMN", help=help)


def add_target_columns_option(
    parser: argparse.ArgumentParser, help: str, aliases: tuple[str, ...] = ()
) -> None:
    """``--target-columns`` (comma-separated; :func:`split_columns` reads it), stored as
    ``target_columns``."""
    parser.add_argument(
        "--target-columns", *aliases, dest="target_columns", metavar="COLUMNS", help=help
    )


def split_columns(text: str | None) -> tuple[str, ...]:
    """The names of a comma-separated column list, blanks around them stripped (``()`` for
    None or an empty text)."""
    return tuple(name.strip() for name in (text or "").split(",") if name.strip())


# -- seeds, workers, molecule preparation ----------------------------------------------------


def add_seed_option(parser: argparse.ArgumentParser, help: str, default: int | None = None) -> None:
    """``--seed N``: one seed value; ``help`` says what it seeds."""
    parser.add_argument("--seed", type=int, default=default, metavar="N", help=help)


def add_seeds_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--seeds N``: a number of seeds, 0 to N-1 (one run per seed)."""
    parser.add_argument("--seeds", type=int, metavar="N", help=help)


def add_workers_option(parser: argparse.ArgumentParser, help: str, default: int | None = 1) -> None:
    """``--workers N``: worker processes; ``help`` says what they do."""
    parser.add_argument("--workers", type=int, default=default, metavar="N", help=help)


def add_preparation_options(
    parser: argparse.ArgumentParser, note: str = "", defaults: bool = True
) -> None:
    """``--standardize`` and ``--fragments``: what is done to each parsed molecule before it
    becomes a graph (:class:`chemgraph.chem.MoleculePreparation`).

    Args:
        parser: the command's parser.
        note: what the command does with the choice (e.g. stores it in the checkpoint),
            appended to both helps.
        defaults: store ``none`` and ``keep`` when not given; False leaves them None (a
            ``--config`` file's or the configuration's defaults apply).
    """
    then = f"; {note}" if note else ""
    parser.add_argument(
        "--standardize",
        choices=STANDARDIZE_METHODS,
        default="none" if defaults else None,
        help="none: as read. basic: RDKit MolStandardize cleanup (explicit H "
        "removed, metals disconnected, functional groups normalised, reionised), then the "
        "carbon-containing fragment with the most heavy atoms is kept (counter-ions, metals, "
        "inorganic acids and water removed) and uncharged where possible; records without "
        "carbon (inorganic salts such as [NH4+].[Cl-]) are only cleaned up; isotopes are "
        "kept. chembl: ChEMBL Structure Pipeline standardise + parent: also removes "
        f"isotopes and the salts and solvents of ChEMBL's lists, and neutralises{then} "
        "(default: none)",
    )
    parser.add_argument(
        "--fragments",
        choices=FRAGMENT_POLICIES,
        default="keep" if defaults else None,
        help="keep: every fragment of a salt or mixture, as one graph. largest: only the "
        f"fragment with the most heavy atoms (after --standardize){then} (default: keep)",
    )


def add_model_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--model NAME``: a registered model family (:data:`chemgraph.model_names.
    MODEL_DESCRIPTIONS`); ``help`` gives the default."""
    parser.add_argument("--model", choices=list(MODEL_DESCRIPTIONS), help=help)


def add_protocol_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--protocol {default,paper}``: where the settings not given come from (the command's
    own protocols; ``paper`` = Buterez et al. 2024's); ``help`` says what each holds."""
    parser.add_argument("--protocol", choices=["default", "paper"], help=help)


def add_batch_size_option(
    parser: argparse.ArgumentParser, help: str, default: int | None = None
) -> None:
    """``--batch-size N``."""
    parser.add_argument("--batch-size", type=int, default=default, metavar="N", help=help)


def add_max_time_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--max-time-minutes N``: a wall-clock budget of training."""
    parser.add_argument("--max-time-minutes", type=float, metavar="N", help=help)


def add_conformers_option(parser: argparse.ArgumentParser, help: str, default: int) -> None:
    """``--conformers N``: 3D conformers embedded per molecule (RDKit ETKDGv3 + MMFF94)."""
    parser.add_argument("--conformers", type=int, default=default, metavar="N", help=help)


# -- shards ----------------------------------------------------------------------------------


def add_shard_size_option(parser: argparse.ArgumentParser, help: str, default: int) -> None:
    """``--shard-size N``: records per shard."""
    parser.add_argument("--shard-size", type=int, default=default, metavar="N", help=help)


def add_dask_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--dask-scheduler ADDRESS``."""
    parser.add_argument("--dask-scheduler", metavar="ADDRESS", help=help)


def add_record_timeout_option(
    parser: argparse.ArgumentParser, default: float, steps: str, more: str = ""
) -> None:
    """``--record-timeout SECONDS`` of a command that watches every record's steps in its
    workers (:mod:`chemgraph.library.workers`).

    Args:
        parser: the command's parser.
        default: the limit when not given.
        steps: the steps it applies to, for the help.
        more: a last sentence of the help.
    """
    parser.add_argument(
        "--record-timeout",
        type=float,
        default=default,
        metavar="SECONDS",
        help=f"most seconds one record may spend in one step ({steps}); a record over it is "
        "listed in rejected.csv as 'timeout: <step>' and the run goes on; 0: no limit" + more,
    )


def add_record_file_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The input file, its columns, the output folder and its ``--resume``/``--overwrite`` of a
    command that processes a library's records in shards into a folder (``featurize``, ``qc``).

    Args:
        parser: the command's parser.
        command: what the command writes in the folder, for the help of ``--overwrite``.
    """
    add_input_file(parser, f"library to read: {_LIBRARY_FILE}")
    add_output_option(
        parser,
        "output folder: new or empty, an earlier run of the same input and options (--resume) "
        "or one to write over (--overwrite)",
        required=True,
    )
    add_smiles_column_option(parser)
    add_id_column_option(
        parser,
        "identifier column of a table (default: a column named id, else the row number), or "
        "SD property of an SDF (default: its title line)",
    )
    add_resume_options(
        parser,
        resume="continue the interrupted run in --output (same input and options): its "
        "complete shards are kept",
        overwrite=f"write into an --output that holds an earlier run or other files: {command} "
        "are removed first (once the input has been checked), any other file is left",
    )


def add_library_options(parser: argparse.ArgumentParser, work: str, output_help: str) -> None:
    """The options of a command that streams a library through a trained model shard by
    shard (``predict``, ``fingerprint``: :class:`chemgraph.library.scoring.LibraryRun`): the
    input and its columns, the output, batches, workers, shards, Dask, resume and overwrite.

    Args:
        parser: the command's parser.
        work: what the command does to a shard (``"scoring"``, ``"embedding"``), for the help.
        output_help: the help of ``-o/--output`` (the file and its formats).
    """
    add_input_option(
        parser,
        f"library file ({_LIBRARY_FILE}) or a chemgraph featurize output folder; for a 3D "
        "model (esa-3d), a file of 3D structures (.sdf with 3D coordinates, .xyz, .extxyz, "
        "optionally .gz)",
        required=True,
    )
    add_output_option(parser, output_help, required=True)
    add_smiles_column_option(parser, "SMILES column of a table (default: smiles, SMILES, ...)")
    add_id_column_option(
        parser,
        "identifier column of a table (default: a column named id, else the row number), SD "
        "property of an SDF (default: its title line), or key of an extended-XYZ comment line",
    )
    add_batch_size_option(
        parser, "the most molecules per forward pass (fewer when they are large)", 256
    )
    add_workers_option(
        parser,
        f"worker processes: featurizing a file input, and {work} shards on the CPU (each "
        "worker runs torch on one thread)",
    )
    add_shard_size_option(parser, "records per shard (a file input)", 5_000)
    add_dask_option(
        parser,
        f"dask.distributed scheduler address: featurize a file and run the {work} of its "
        "shards as tasks on a cluster (the output byte-identical to a local run's; a file "
        "system the workers share; see the screening guide); --workers is then not used",
    )
    add_resume_options(
        parser,
        resume="continue an interrupted run (OUTPUT.partial/)",
        overwrite="write over an existing output and discard an interrupted run",
    )


def start_library_workers(args: argparse.Namespace) -> None:
    """Before a library job's imports: start the server of its local featurization workers
    (:func:`chemgraph.library.workers.start_worker_server`) when it will featurize a file
    (not a featurize folder, not on Dask), so that the two processes' imports overlap."""
    if args.dask_scheduler is None and not Path(args.input).is_dir():
        from chemgraph.library.workers import start_worker_server

        start_worker_server()


def run_library_job(job: Callable[..., Any], args: argparse.Namespace, options: Any) -> Any:
    """Run ``job`` (:func:`~chemgraph.jobs.predict.predict_table`,
    :func:`~chemgraph.jobs.fingerprint.fingerprint_table`) on the options of
    :func:`add_library_options`; returns the job's summary.

    Raises:
        chemgraph._interrupts.Interrupted: an interrupt (Ctrl-C or SIGTERM) stopped the job;
            its message says where the finished shards are kept and how to resume, and
            :func:`chemgraph.cli.main.main` prints it.
    """
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
