"""``chemgraph fingerprint``: each molecule's learned embedding (the model's readout) to parquet."""

from __future__ import annotations

import argparse

from chemgraph.cli.base import Command, ExamplesHelpFormatter
from chemgraph.cli.common import (
    add_checkpoint_option,
    add_library_options,
    run_library_job,
    start_library_workers,
)

__all__ = ["FingerprintCommand"]

FINGERPRINT_EPILOG = """\
examples:
  chemgraph fingerprint --checkpoint runs/esol/best.ckpt --input library.smi --output emb.parquet
  chemgraph featurize -i library.smi.gz -o lib/ --workers 4
  chemgraph fingerprint --checkpoint runs/esol --input lib/ --output emb.parquet --workers 2

output columns: row, id, input (the record as given), smiles (canonical), embedding (a
fixed-size list of D float32: the model's readout; null when the record could not be
featurized), error: one row per input record, in input order. In Python: frame =
pandas.read_parquet(OUTPUT); numpy.stack(frame.embedding[frame.error.isna()]) is the float32
[N, D] matrix. Until it is complete the run keeps its state in OUTPUT.partial/ (--resume
continues it).
"""


class FingerprintCommand(Command):
    """Learned embeddings of every record of a library: one
    :class:`~chemgraph.jobs.fingerprint.FingerprintOptions`, one
    :func:`~chemgraph.jobs.fingerprint.fingerprint_table`."""

    name = "fingerprint"
    help = "write each molecule's learned embedding (the model's readout) to parquet"
    description = (
        "Featurize each record of a library (.smi, .sdf, .csv, .tsv, .parquet, optionally .gz) "
        "exactly as in training, or take the graph shards of a chemgraph featurize output "
        "folder as they are, and write one row per record with the trained model's readout, "
        "the vector its output head reads (a learned fingerprint). One model: the members of "
        "an ensemble have unrelated embedding spaces, so an ensemble is refused."
    )
    epilog = FINGERPRINT_EPILOG
    formatter_class = ExamplesHelpFormatter

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_checkpoint_option(
            parser,
            "best.ckpt written by train, or a train --output folder (one model)",
            required=True,
        )
        add_library_options(parser, "embedding", "parquet file to write")

    def run(self, args: argparse.Namespace) -> int:
        """Embed and print a summary (none with ``--quiet``: warnings and errors only).

        Raises:
            chemgraph._interrupts.Interrupted: Ctrl-C or SIGTERM; its message says how to
                resume (printed by :func:`chemgraph.cli.main.main`).
        """
        start_library_workers(args)  # before the imports below: they overlap with its own
        from chemgraph.jobs.fingerprint import FingerprintOptions, fingerprint_table

        options = FingerprintOptions(
            smiles_column=args.smiles_column, id_column=args.id_column, batch_size=args.batch_size
        )
        summary = run_library_job(fingerprint_table, args, options)
        if args.quiet:  # the rows' errors are in the output; warnings were logged
            return 0
        failed = f"; {summary.failed:,} could not be featurized (see the error column)"
        print(
            f"embedded {summary.embedded:,} of {summary.records:,} records "
            f"({summary.width} float32 each){failed if summary.failed else ''}"
        )
        print(f"embeddings written to {summary.output}")
        return 0
