"""``chemgraph predict``: score a compound library with trained checkpoints."""

from __future__ import annotations

import argparse

from chemgraph.cli.base import Command, ExamplesHelpFormatter
from chemgraph.cli.common import (
    add_checkpoint_option,
    add_library_options,
    run_library_job,
    start_library_workers,
)

__all__ = ["PredictCommand"]

PREDICT_EPILOG = """\
examples:
  chemgraph predict --checkpoint runs/esol/best.ckpt --input new.csv --output predicted.csv
  chemgraph featurize -i library.smi.gz -o lib/ --workers 4
  chemgraph predict --checkpoint best.ckpt --input lib/ --output hits.parquet --top 100
  chemgraph train ... --ensemble 5 -o runs/ens
  chemgraph predict --checkpoint runs/ens --input library.sdf --output scores.csv
  chemgraph predict --checkpoint /shared/ens --input /shared/lib.smi.gz \\
      --output /shared/scores.parquet --dask-scheduler tcp://scheduler:8786
  chemgraph predict --checkpoint runs/gap_3d/checkpoints/inductive_seed0_gw_gap \\
      --checkpoint runs/gap_3d/checkpoints/inductive_seed1_gw_gap \\
      --input structures.sdf --output gap.csv

output columns: row, id, input (the record as given: its SMILES as written, an SDF record's title
line), smiles (canonical), <target>_pred (and <target>_std for an ensemble: the members' sample
standard deviation, ddof=1), max_similarity_to_train, in_domain (at the threshold calibrated on
the training set, or --similarity-threshold), <target>_outside_training_range (regression: the
prediction is below the smallest or above the largest training label), error: one row per input
record, in input order; records that could not be featurized (invalid SMILES, a dummy atom '*',
...; smiles is then empty) or lack a low-fidelity value that a transductive delta-learning
checkpoint of chemgraph transfer reads from the input keep their row and their input, with the
reason in error.
Until it is complete the run keeps its state in OUTPUT.partial/ (--resume continues it).

3D checkpoints (esa-3d, from chemgraph transfer --geometry) read 3D structures, one per record:
.sdf with 3D coordinates and every hydrogen, .xyz or .extxyz (--id-column: a key of the
extended-XYZ comment line); their radius graphs are made with the checkpoint's featurizer,
every atom as given. A file of SMILES is refused (no conformers are embedded for them); a 2D
SDF record, an element the featurizer has no column for, or an unreadable record gets an error
row. smiles is the structure's molecule (an XYZ frame's bonds as RDKit determines them; "" where
it cannot).
"""


class PredictCommand(Command):
    """Predictions for every record of a library: one
    :class:`~chemgraph.jobs.predict.PredictOptions`, one
    :func:`~chemgraph.jobs.predict.predict_table`."""

    name = "predict"
    help = "predict properties of the molecules of a library with trained checkpoints"
    description = (
        "Featurize each record of a library (.smi, .sdf, .csv, .tsv, .parquet, optionally .gz; "
        "3D structures, .sdf, .xyz or .extxyz, for a 3D model) "
        "exactly as in training, or take the graph shards of a chemgraph featurize output "
        "folder as they are, and write one row per record with the predictions, the record's "
        "greatest Tanimoto similarity to the training molecules (Morgan radius 2, 2048 bits) "
        "and whether it reaches the similarity threshold calibrated on the training set (the "
        "applicability domain), and whether each prediction lies outside the training labels' "
        "range."
    )
    epilog = PREDICT_EPILOG
    formatter_class = ExamplesHelpFormatter

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_checkpoint_option(
            parser,
            "best.ckpt written by train, a train --output folder, or an ensemble folder "
            "(train --ensemble); repeat it to average several checkpoints",
            required=True,
            repeat=True,
        )
        add_library_options(
            parser, "scoring", "file to write: .csv, .csv.gz or .parquet (with --top, also "
            "OUTPUT_STEM.topN.EXT, which --overwrite replaces too)",
        )  # fmt: skip
        parser.add_argument(
            "--top",
            type=int,
            metavar="N",
            help="also write the N best-scoring molecules to OUTPUT_STEM.topN.EXT, best first",
        )
        parser.add_argument(
            "--top-target",
            help="target ranked by --top: its _pred column, a probability for classification "
            "(default: the first target)",
        )
        parser.add_argument(
            "--ascending", action="store_true", help="--top ranks the lowest values first"
        )
        parser.add_argument(
            "--similarity-threshold",
            type=float,
            help="in_domain is max_similarity_to_train >= this: a Tanimoto similarity of "
            "Morgan radius-2, 2048-bit fingerprints (default: the threshold calibrated on the "
            "training set and stored in the checkpoint, the 5th percentile of the training "
            "molecules' similarities to their nearest other training molecule; "
            "0.3 for a checkpoint written before chemgraph calibrated it)",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Predict and print a summary (none with ``--quiet``: warnings and errors only).

        Raises:
            chemgraph._interrupts.Interrupted: Ctrl-C or SIGTERM; its message says how to
                resume (printed by :func:`chemgraph.cli.main.main`).
        """
        start_library_workers(args)  # before the imports below: they overlap with its own
        from chemgraph.jobs.predict import PredictOptions, predict_table

        threshold = {}
        if args.similarity_threshold is not None:
            threshold["similarity_threshold"] = args.similarity_threshold
        options = PredictOptions(
            smiles_column=args.smiles_column,
            id_column=args.id_column,
            batch_size=args.batch_size,
            top=args.top,
            top_target=args.top_target,
            ascending=args.ascending,
            **threshold,
        )
        summary = run_library_job(predict_table, args, options)
        if args.quiet:  # the rows' errors are in the output; warnings were logged
            return 0
        if summary.out_of_domain is not None:
            domain = (
                f"{summary.out_of_domain:,} predicted outside the applicability domain "
                f"(max_similarity_to_train < {summary.similarity_threshold:.3f})"
            )
        elif summary.predicted:
            domain = "applicability domain unknown (the checkpoint holds no training fingerprints)"
        else:
            domain = "no applicability domain (no record was predicted)"
        unpredicted = summary.failed - summary.blank
        failed = f"{unpredicted:,} could not be predicted"
        if unpredicted:
            failed += " (see the error column)"
        if summary.blank:  # e.g. a CSV with a blank line after each row
            failed += (
                f"; {summary.blank:,} blank records, no molecule: each has its row (error "
                "'blank record'), so that the row column follows the file's records"
            )
            if ".csv" in str(args.input).lower():
                failed += " (as pandas.read_csv(..., skip_blank_lines=False) numbers them)"
        print(f"predicted {summary.predicted:,} of {summary.records:,} records; {failed}; {domain}")
        if summary.outside_training_range is not None:
            counts = ", ".join(f"{t} {n:,}" for t, n in summary.outside_training_range.items())
            print(f"predictions outside the training labels' range: {counts}")
        if summary.without_smiles:
            print(
                f"{summary.without_smiles:,} predicted structures have no SMILES (RDKit could "
                "not determine their bonds from the geometry): smiles is empty and their "
                "applicability domain unknown"
            )
        print(f"predictions written to {summary.output}")
        if summary.top is not None:
            fewer = (
                f" (only {summary.predicted:,} molecules were predicted, so it holds them all)"
                if summary.predicted < args.top
                else ""
            )
            print(f"top {args.top} written to {summary.top}{fewer}")
        return 0
