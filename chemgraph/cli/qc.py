"""``chemgraph qc``: cheap quantum-chemistry labels (GFN2-xTB HOMO, LUMO, gap) for a library."""

from __future__ import annotations

import argparse
from pathlib import Path

from chemgraph.cli.base import Command
from chemgraph.cli.common import (
    add_conformers_option,
    add_record_file_options,
    add_record_timeout_option,
    add_seed_option,
    add_shard_size_option,
    add_workers_option,
)

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
        "interrupted run (Ctrl-C stops the workers and keeps the finished shards), --overwrite "
        "replaces an earlier one. Needs the qc extra: pip install 'chemgraph[qc]'."
    )
    epilog = (
        "example: chemgraph qc -i library.smi -o xtb_labels --workers 2\n"
        "then:    chemgraph train -i xtb_labels/labels.csv --target-columns homo_ev,lumo_ev "
        "-o runs/xtb"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_record_file_options(
            parser, "its manifest.json, parts/, labels.csv, labels.parquet and rejected.csv"
        )
        parser.add_argument(
            "--method",
            choices=["GFN2-xTB", "GFN1-xTB"],
            default="GFN2-xTB",
            help="tight-binding method (default: GFN2-xTB)",
        )
        add_conformers_option(
            parser,
            default=10,
            help="ETKDGv3 conformers embedded per molecule; the lowest-MMFF94-energy one is "
            "labelled (default: 10)",
        )
        add_seed_option(parser, "seed of the conformer embedding (default: 0)", default=0)
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
        add_workers_option(parser, "worker processes, each labelling whole shards")
        add_shard_size_option(
            parser, "molecules per shard, the unit of --resume (default: 100)", 100
        )
        add_record_timeout_option(parser, 600.0, "parse, conformers, xtb", " (default: 600)")

    def run(self, args: argparse.Namespace) -> int:
        """Label and print the summary.

        Raises:
            chemgraph.jobs.qc.QCInterrupted: SIGINT or SIGTERM; its message says how to
                resume (printed by :func:`chemgraph.cli.main.main`).
        """
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
            overwrite=args.overwrite,
            table_format=args.format,
            progress=not args.quiet,
            record_timeout=args.record_timeout or None,
        )
        print(summary_table(manifest))
        print(f"outputs written to {Path(args.output).resolve()}")
        return 0
