"""The ``chemgraph`` command (also ``python -m chemgraph``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main"]

TRAIN_EPILOG = """\
examples:
  chemgraph train --data delaney-processed.csv --smiles-column smiles \\
      --target-columns "measured log solubility in mols per litre" --task regression \\
      --model esa --split random --seed 0 --max-epochs 100 --out runs/esol
  chemgraph train --data tox21.csv.gz --target-columns NR-AR,NR-AhR --task classification \\
      --split scaffold --out runs/tox21 --config my_settings.yaml

outputs in --out: best.ckpt, metrics.json, predictions.csv, rejected.csv, learning_curve.png,
parity.png (regression) and config.yaml (every setting used; reusable with --config).
"""


def _build_parser() -> argparse.ArgumentParser:
    from chemgraph.models import MODELS

    parser = argparse.ArgumentParser(
        prog="chemgraph",
        description="Deep learning on molecules: train graph models on SMILES tables and "
        "predict properties of new molecules.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser(
        "train",
        help="train ESA/NSA on a table of SMILES and measured properties",
        description="Featurize the molecules of a table with RDKit, split them, train an "
        "edge-set (ESA) or node-set (NSA) attention model with PyTorch Lightning and report "
        "test metrics (RMSE/MAE/R² for regression, MCC/ROC-AUC/accuracy for classification). "
        "Rows whose SMILES RDKit cannot read are skipped and listed in rejected.csv.",
        epilog=TRAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--data", help="CSV, TSV or parquet file (optionally .gz)")
    train.add_argument("--smiles-column", help="column holding SMILES (default: smiles)")
    train.add_argument(
        "--target-columns",
        help="comma-separated property columns to predict; empty cells count as missing",
    )
    train.add_argument(
        "--task",
        choices=["regression", "classification"],
        help="regression (continuous values) or classification (0/1 labels); default regression",
    )
    train.add_argument(
        "--model",
        choices=list(MODELS),
        help="; ".join(f"{name}: {spec.description}" for name, spec in MODELS.items())
        + "; default esa",
    )
    train.add_argument(
        "--split",
        choices=["random", "scaffold"],
        help="random 80/10/10 (seeded) or Bemis-Murcko scaffold split; default random",
    )
    train.add_argument("--seed", type=int, help="random seed for split, weights, shuffling")
    train.add_argument("--max-epochs", type=int, help="maximum training epochs (default 100)")
    train.add_argument("--out", help="output folder")
    train.add_argument(
        "--config",
        help="YAML file with any training setting (keys as in the config.yaml a run writes); "
        "command-line options override it",
    )
    train.add_argument("--quiet", action="store_true", help="no progress bars")

    predict = commands.add_parser(
        "predict",
        help="predict properties of the molecules in a table with a trained checkpoint",
        description="Read a table, featurize each SMILES exactly as in training, and write "
        "every input row, in order, with one <target>_pred column per trained target and an "
        "error column for rows that could not be featurized.",
    )
    predict.add_argument("--checkpoint", required=True, help="best.ckpt written by train")
    predict.add_argument("--input", required=True, help="CSV, TSV or parquet file with SMILES")
    predict.add_argument("--smiles-column", default="smiles", help="default: smiles")
    predict.add_argument("--output", required=True, help="CSV file to write")
    predict.add_argument("--batch-size", type=int, default=256)
    predict.add_argument("--quiet", action="store_true", help="no progress bars")
    featurize = commands.add_parser(
        "featurize",
        help="featurize a compound library into graph shards, fingerprints and descriptors",
        description="Read a SMILES/SDF library streaming, in shards, and write model-ready DGL "
        "graph shards plus a feature table per shard. Every record that cannot be featurized "
        "is listed in OUTPUT/rejected.csv with RDKit's reason. The output does not depend on "
        "--workers; --resume continues an interrupted run.",
        epilog="example: chemgraph featurize library.smi.gz --output lib --fingerprint "
        "morgan:radius=2,size=2048 --fingerprint maccs --descriptors rdkit2d --workers 2",
    )
    featurize.add_argument("input", help=".smi, .csv, .tsv, .parquet or .sdf (optionally .gz)")
    featurize.add_argument("--output", required=True, help="output folder (new, or --resume)")
    featurize.add_argument("--smiles-column", help="SMILES column of a table (default: smiles)")
    featurize.add_argument(
        "--id-column", help="identifier column of a table, or SD property of an SDF"
    )
    featurize.add_argument(
        "--graphs",
        default="canonical",
        help="atom/bond feature preset of the graph shards: canonical, ogb, or none",
    )
    featurize.add_argument(
        "--fingerprint",
        action="append",
        default=[],
        help="e.g. morgan:radius=2,size=2048[,counts], featmorgan:radius=2, maccs (repeatable)",
    )
    featurize.add_argument("--descriptors", help="descriptor set: rdkit2d (RDKit 2D list)")
    featurize.add_argument(
        "--conformers",
        type=int,
        default=0,
        help="3D conformers to embed per molecule (RDKit ETKDGv3 + MMFF94, seeded); graphs "
        "then hold explicit hydrogens and the lowest-energy conformer's positions in Å",
    )
    featurize.add_argument(
        "--standardize",
        choices=["none", "basic", "chembl"],
        default="none",
        help="basic: RDKit cleanup, largest fragment, uncharge; chembl: ChEMBL pipeline",
    )
    featurize.add_argument("--workers", type=int, default=1, help="worker processes")
    featurize.add_argument(
        "--shard-size",
        type=int,
        default=5_000,
        help="molecules per shard (memory per worker grows with it)",
    )
    featurize.add_argument("--resume", action="store_true", help="continue an interrupted run")
    featurize.add_argument(
        "--dask-scheduler", help="dask.distributed scheduler address (runs shards on a cluster)"
    )
    featurize.add_argument("--seed", type=int, default=0, help="conformer seed")
    featurize.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _featurize(args: argparse.Namespace) -> int:
    from chemgraph.recipes.featurize_library import (
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
        smiles_column=args.smiles_column,
        id_column=args.id_column,
        seed=args.seed,
    )
    manifest = featurize_library(
        args.input,
        args.output,
        options,
        workers=args.workers,
        shard_size=args.shard_size,
        resume=args.resume,
        dask_scheduler=args.dask_scheduler,
        progress=not args.quiet,
    )
    print(summary_table(manifest))
    print(f"outputs written to {Path(args.output).resolve()}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from chemgraph.train.runner import TrainingConfig, train

    overrides = {
        "data": args.data,
        "smiles_column": args.smiles_column,
        "target_columns": args.target_columns,
        "task": args.task,
        "model": args.model,
        "split": args.split,
        "seed": args.seed,
        "max_epochs": args.max_epochs,
        "out": args.out,
    }
    if args.quiet:
        overrides["progress"] = False
    if args.config:
        config = TrainingConfig.from_yaml(args.config, **overrides)
    else:
        config = TrainingConfig.from_dict({k: v for k, v in overrides.items() if v is not None})
    metrics = train(config)
    print(format_metrics(metrics))
    print(f"outputs written to {Path(config.out).resolve()}")
    return 0


def format_metrics(metrics: dict) -> str:
    """A plain-text table of ``{"val": {...}, "test": {...}}`` metrics."""
    splits = [name for name in ("val", "test") if name in metrics]
    names = list(metrics[splits[0]])
    lines = [f"{'split':<6}" + "".join(f"{n.upper():>10}" for n in names)]
    for split in splits:
        lines.append(f"{split:<6}" + "".join(f"{metrics[split][n]:>10.4f}" for n in names))
    return "\n".join(lines)


def _predict(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns the exit status; user errors print one line and return 2."""
    args = _build_parser().parse_args(argv)
    handlers = {"train": _train, "predict": _predict, "featurize": _featurize}
    try:
        return handlers[args.command](args)
    except (ValueError, OSError, KeyError, ImportError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"chemgraph {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
