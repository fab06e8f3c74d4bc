"""``chemgraph predict``: properties of the molecules in a table, from a trained checkpoint."""

from __future__ import annotations

import argparse

from chemgraph.cli.base import Command

__all__ = ["PredictCommand"]


class PredictCommand(Command):
    """Every input row with its predictions (:func:`chemgraph.train.predict.predict_table`)."""

    name = "predict"
    help = "predict properties of the molecules in a table with a trained checkpoint"
    description = (
        "Read a table, featurize each SMILES exactly as in training, and write "
        "every input row, in order, with one <target>_pred column per trained target and an "
        "error column for rows that could not be featurized."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--checkpoint", required=True, help="best.ckpt written by train")
        parser.add_argument("--input", required=True, help="CSV, TSV or parquet file with SMILES")
        parser.add_argument("--smiles-column", default="smiles", help="column holding SMILES")
        parser.add_argument("--output", required=True, help="CSV file to write")
        parser.add_argument("--batch-size", type=int, default=256, help="molecules per batch")

    def run(self, args: argparse.Namespace) -> int:
        from chemgraph.train.predict import predict_table

        result = predict_table(
            args.checkpoint,
            args.input,
            args.output,
            smiles_column=args.smiles_column,
            batch_size=args.batch_size,
            progress=not args.quiet,
        )
        failed = int((result["error"] != "").sum())
        print(
            f"predicted {len(result) - failed} of {len(result)} rows; {failed} could not be "
            f"featurized (see the error column of {args.output})"
        )
        return 0
