"""``chemgraph featurize``: a compound library into graph shards, fingerprints and descriptors."""

from __future__ import annotations

import argparse
from pathlib import Path

from chemgraph.cli.base import Command
from chemgraph.cli.common import (
    add_conformers_option,
    add_dask_option,
    add_preparation_options,
    add_record_file_options,
    add_record_timeout_option,
    add_seed_option,
    add_shard_size_option,
    add_target_columns_option,
    add_workers_option,
    split_columns,
)

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
        "continues an interrupted run, --overwrite replaces an earlier one. On a terminal a "
        "bar counts the records done, with the total and the time left once the input is "
        "counted (--quiet: no bar)."
    )
    epilog = (
        "example: chemgraph featurize -i library.smi.gz -o lib --fingerprint "
        "morgan:radius=2,size=2048 --fingerprint maccs --descriptors rdkit2d --workers 2"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_record_file_options(
            parser, "its manifest.json, graphs/, features/, parts/ and rejected.csv"
        )
        add_target_columns_option(
            parser,
            "comma-separated table columns or SD properties kept in the features table as "
            "numbers (empty = missing; a record with text that is not a number is rejected), "
            "the targets of chemgraph train -i OUTPUT",
            aliases=("--label-columns",),
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
        add_conformers_option(
            parser,
            default=0,
            help="3D conformers to embed per molecule (RDKit ETKDGv3 + MMFF94, seeded by "
            "--seed); graphs then hold explicit hydrogens and the lowest-energy conformer's "
            "positions in Å",
        )
        add_seed_option(parser, "seed of the conformer embedding (--conformers)", default=0)
        add_preparation_options(parser, "as chemgraph train --standardize/--fragments do")
        add_workers_option(parser, "worker processes, each featurizing whole shards")
        add_shard_size_option(
            parser, "molecules per shard (memory per worker grows with it)", 5_000
        )
        add_dask_option(parser, "dask.distributed scheduler address (runs shards on a cluster)")
        add_record_timeout_option(
            parser, 60.0,
            "parse, standardize, conformers, canonical SMILES, fingerprints, descriptors",
            "; not enforced with --dask-scheduler",
        )  # fmt: skip

    def run(self, args: argparse.Namespace) -> int:
        """Featurize and print the summary.

        Raises:
            chemgraph.jobs.featurize.FeaturizeInterrupted: SIGINT or SIGTERM; its message says
                how to resume (printed by :func:`chemgraph.cli.main.main`).
        """
        from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library, summary_table

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
            label_columns=split_columns(args.target_columns),
        )
        manifest = featurize_library(
            args.input,
            args.output,
            options,
            workers=args.workers,
            shard_size=args.shard_size,
            resume=args.resume,
            overwrite=args.overwrite,
            dask_scheduler=args.dask_scheduler,
            progress=not args.quiet,
            record_timeout=args.record_timeout or None,
        )
        print(summary_table(manifest))
        print(f"outputs written to {Path(args.output).resolve()}")
        return 0
