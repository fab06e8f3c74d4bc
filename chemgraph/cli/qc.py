"""``chemgraph qc``: cheap quantum-chemistry labels (GFN2-xTB HOMO, LUMO, gap) for a library."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from chemgraph.cli.base import Command, add_record_file_options

__all__ = ["QCCommand"]


class QCCommand(Command):
    """Label a library with GFN2-xTB frontier orbitals (:mod:`chemgraph.jobs.qc`)."""

    name = "qc"
    help = "GFN2-xTB HOMO, LUMO and gap (eV) for a compound library, on embedded conformers"
    description = (
        "Read a SMILES/SDF library streaming, in shards, embed a 3D conformer of each molecule "
        "(RDKit ETKDGv3 + MMFF94, seeded; the lowest-energy of --conformers; an SDF record "
        "with 3D coordinates is used as given) and compute its GFN2-xTB HOMO and LUMO orbital "
        "energies and gap in eV with tblite (Bannwarth, Ehlert, Grimme 2019, "
        "doi:10.1021/acs.jctc.8b01176). Cheap labels to pretrain on before fine-tuning on a "
        "few expensive ones (chemgraph train --init-from). Writes OUTPUT/labels.csv (or "
        ".parquet: row, id, smiles, homo_ev, lumo_ev, gap_ev, method, geometry: "
        "ETKDGv3+MMFF94, 'ETKDGv3 (no MMFF94 parameters)', 'single atom' or input) and "
        "OUTPUT/rejected.csv (row, id, input, reason). The labels are the HOMO and LUMO of one "
        "closed-shell singlet; the reasons a record gets none: invalid SMILES or unreadable "
        "SDF record (RDKit's message); several fragments (a salt or solvate); transition "
        "metal or lanthanide; 3D SDF record without all its hydrogens; ETKDGv3 could not "
        "embed a conformer; unsupported element (GFN2-xTB: H-Rn); open shell; SCF not "
        "converged (--max-cycle); xtb failed (another tblite error); degenerate HOMO and "
        "LUMO; timeout: <step> (--record-timeout); crash: <step> (the worker died). "
        "--resume continues an "
        "interrupted run; Ctrl-C stops the workers and keeps the finished shards. Needs the "
        "qc extra: pip install 'chemgraph[qc]'."
    )
    epilog = (
        "example: chemgraph qc library.smi --output xtb_labels --workers 2\n"
        "then:    chemgraph train --data xtb_labels/labels.csv --target-columns homo_ev,lumo_ev "
        "--out runs/xtb"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_record_file_options(parser)
        parser.add_argument(
            "--method",
            choices=["GFN2-xTB", "GFN1-xTB"],
            default="GFN2-xTB",
            help="tight-binding method (default: GFN2-xTB)",
        )
        parser.add_argument(
            "--conformers",
            type=int,
            default=10,
            help="ETKDGv3 conformers embedded per molecule; the lowest-MMFF94-energy one is "
            "labelled (default: 10)",
        )
        parser.add_argument("--seed", type=int, default=0, help="conformer seed (default: 0)")
        parser.add_argument(
            "--max-cycle",
            type=int,
            default=250,
            help="self-consistent-charge iteration limit; a molecule that needs more is "
            "rejected as 'SCF not converged' (default: 250)",
        )
        parser.add_argument(
            "--format",
            choices=["csv", "parquet"],
            default="csv",
            help="the labels table: OUTPUT/labels.csv or OUTPUT/labels.parquet (default: csv)",
        )
        parser.add_argument("--workers", type=int, default=1, help="worker processes")
        parser.add_argument(
            "--shard-size",
            type=int,
            default=100,
            help="molecules per shard, the unit of --resume (default: 100)",
        )
        parser.add_argument("--resume", action="store_true", help="continue an interrupted run")
        parser.add_argument(
            "--record-timeout",
            type=float,
            default=600.0,
            metavar="SECONDS",
            help="most seconds one record may spend in one step (parse, conformers, xtb); a "
            "record over it is listed in rejected.csv as 'timeout: <step>' and the run goes "
            "on; 0: no limit (default: 600)",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Label; SIGINT/SIGTERM print one line saying how to resume and return 128 + the
        signal number (the same line from the first moment: a Ctrl-C while the job's
        libraries are still imported says that nothing was written)."""
        from chemgraph._interrupts import ShardsInterrupted

        try:
            return self._label(args)
        except KeyboardInterrupt as stop:  # QCInterrupted, or a Ctrl-C during the imports
            if not isinstance(stop, ShardsInterrupted):
                stop = ShardsInterrupted(signal.SIGINT)  # "... before any output was written"
            # a second SIGINT (`timeout -s INT` sends one to the process and one to its group)
            # must not cut the line short
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                print(f"chemgraph qc: {stop}", file=sys.stderr)
            finally:
                signal.signal(signal.SIGINT, previous)
            return 128 + stop.signum

    def _label(self, args: argparse.Namespace) -> int:
        from chemgraph.jobs.qc import QCOptions, label_library, summary_table

        options = QCOptions(
            method=args.method,
            conformers=args.conformers,
            seed=args.seed,
            max_cycle=args.max_cycle,
            smiles_column=args.smiles_column,
            id_column=args.id_column,
        )
        manifest = label_library(
            args.input,
            args.output,
            options,
            workers=args.workers,
            shard_size=args.shard_size,
            resume=args.resume,
            table_format=args.format,
            progress=not args.quiet,
            record_timeout=args.record_timeout or None,
        )
        print(summary_table(manifest))
        print(f"outputs written to {Path(args.output).resolve()}")
        return 0
