"""``chemgraph featurize``: a compound library into graph shards, fingerprints and descriptors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chemgraph.cli.base import Command, add_record_file_options

__all__ = ["FeaturizeCommand"]


class FeaturizeCommand(Command):
    """Featurize a library in shards (:mod:`chemgraph.jobs.featurize`)."""

    name = "featurize"
    help = "featurize a compound library into graph shards, fingerprints and descriptors"
    description = (
        "Read a SMILES/SDF library streaming, in shards, and write compact graph shards "
        "(chemgraph.graphs.load_shard gives DGL graphs) plus a feature table per shard. Every "
        "record that cannot be featurized is listed in OUTPUT/rejected.csv with RDKit's reason. "
        "The output does not depend on --workers, and two runs write the same bytes; --resume "
        "continues an interrupted run. On a terminal a bar counts the records done, with the "
        "total and the time left once the input is counted (--quiet: no bar)."
    )
    epilog = (
        "example: chemgraph featurize library.smi.gz --output lib --fingerprint "
        "morgan:radius=2,size=2048 --fingerprint maccs --descriptors rdkit2d --workers 2"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_record_file_options(parser)
        parser.add_argument(
            "--label-columns",
            help="comma-separated table columns or SD properties kept in the features table as "
            "numbers (empty = missing; a record with text that is not a number is rejected), "
            "for chemgraph train --data OUTPUT",
        )
        parser.add_argument(
            "--graphs",
            default="canonical",
            help="atom/bond feature preset of the graph shards: canonical, ogb, or none",
        )
        parser.add_argument(
            "--fingerprint",
            action="append",
            default=[],
            help="e.g. morgan:radius=2,size=2048[,counts], featmorgan:radius=2, maccs (repeatable)",
        )
        parser.add_argument("--descriptors", help="descriptor set: rdkit2d (RDKit 2D list)")
        parser.add_argument(
            "--conformers",
            type=int,
            default=0,
            help="3D conformers to embed per molecule (RDKit ETKDGv3 + MMFF94, seeded); graphs "
            "then hold explicit hydrogens and the lowest-energy conformer's positions in Å",
        )
        parser.add_argument(
            "--standardize",
            choices=["none", "basic", "chembl"],
            default="none",
            help="none (default): as read. basic: RDKit MolStandardize cleanup (explicit H "
            "removed, metals disconnected, functional groups normalised, reionised), then the "
            "carbon-containing fragment with the most heavy atoms is kept (counter-ions, metals, "
            "inorganic acids and water removed) and uncharged where possible; records without "
            "carbon (inorganic salts such as [NH4+].[Cl-]) are only cleaned up; isotopes are "
            "kept. chembl: ChEMBL Structure Pipeline standardise + parent: also removes "
            "isotopes and the salts and solvents of ChEMBL's lists, and neutralises",
        )
        parser.add_argument(
            "--fragments",
            choices=["keep", "largest"],
            default="keep",
            help="keep (default): every fragment of a salt or mixture, as one graph. largest: "
            "only the fragment with the most heavy atoms (after --standardize), as chemgraph "
            "train --fragments largest does",
        )
        parser.add_argument("--workers", type=int, default=1, help="worker processes")
        parser.add_argument(
            "--shard-size",
            type=int,
            default=5_000,
            help="molecules per shard (memory per worker grows with it)",
        )
        parser.add_argument("--resume", action="store_true", help="continue an interrupted run")
        parser.add_argument(
            "--dask-scheduler",
            help="dask.distributed scheduler address (runs shards on a cluster)",
        )
        parser.add_argument("--seed", type=int, default=0, help="conformer seed")
        parser.add_argument(
            "--record-timeout",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="most seconds one record may spend in one step (parse, standardize, "
            "conformers, canonical SMILES, fingerprints, descriptors); a record over it is "
            "listed in rejected.csv as 'timeout: <step>' and the run goes on; 0: no limit; "
            "not enforced with --dask-scheduler",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Featurize; SIGINT/SIGTERM print one line saying how to resume and return 128 + the
        signal number."""
        from chemgraph.jobs.featurize import (
            FeaturizeInterrupted,
            FeaturizeOptions,
            featurize_library,
            summary_table,
        )

        options = FeaturizeOptions(
            graphs=None if args.graphs == "none" else args.graphs,
            fingerprints=tuple(args.fingerprint),
            descriptors=args.descriptors,
            conformers=args.conformers,
            standardize=args.standardize,
            fragments=args.fragments,
            smiles_column=args.smiles_column,
            id_column=args.id_column,
            seed=args.seed,
            label_columns=tuple(
                name.strip() for name in (args.label_columns or "").split(",") if name.strip()
            ),
        )
        try:
            manifest = featurize_library(
                args.input,
                args.output,
                options,
                workers=args.workers,
                shard_size=args.shard_size,
                resume=args.resume,
                dask_scheduler=args.dask_scheduler,
                progress=not args.quiet,
                record_timeout=args.record_timeout or None,
            )
        except FeaturizeInterrupted as stop:
            print(f"chemgraph featurize: {stop}", file=sys.stderr)
            return 128 + stop.signum
        print(summary_table(manifest))
        print(f"outputs written to {Path(args.output).resolve()}")
        return 0
