"""The ``chemgraph`` command (also ``python -m chemgraph``)."""

from __future__ import annotations

import argparse
import sys
import textwrap
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
parity.png (regression) and config.yaml (every setting used; reusable with --config). --out must
be a new or empty folder; --overwrite writes over an earlier run (replacing these files).
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
        help="train a graph model (ESA, NSA, Graphormer, GRAT, GMoE, GCN, GIN) on a table of "
        "SMILES and measured properties",
        description="Featurize the molecules of a table with RDKit, split them, train a graph "
        "model (--model) with PyTorch Lightning and report "
        "test metrics (RMSE/MAE/R² for regression, MCC/ROC-AUC/accuracy for classification). "
        "Rows whose SMILES RDKit cannot read are skipped and listed in rejected.csv.",
        epilog=TRAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument(
        "--data",
        help="CSV, TSV or parquet file (optionally .gz), or a registered dataset name "
        "(chemgraph datasets list)",
    )
    train.add_argument(
        "--root",
        dest="data_root",
        help="with --data NAME: folder holding a local copy of the dataset's files (offline)",
    )
    train.add_argument("--smiles-column", help="column holding SMILES (default: smiles)")
    train.add_argument(
        "--target-columns",
        help="comma-separated property columns to predict; empty cells count as missing "
        "(default with a dataset name: the card's targets)",
    )
    train.add_argument(
        "--task",
        choices=["regression", "classification"],
        help="regression (continuous values) or classification (0/1 labels); default: "
        "classification when every target column holds only 0 and 1, otherwise regression "
        "(a note is printed when a target is 0/1); with a dataset name: the card's task",
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
    train.add_argument("--out", help="output folder, new or empty (see --overwrite)")
    train.add_argument(
        "--overwrite",
        action="store_true",
        help="allow a non-empty --out (an earlier run's): files of the same name are replaced, "
        "others are left",
    )
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
        help="none (default): as read. basic: RDKit MolStandardize cleanup (explicit H removed, "
        "metals disconnected, functional groups normalised, reionised), then the "
        "carbon-containing fragment with the most heavy atoms is kept (counter-ions, metals, "
        "inorganic acids and water removed) and uncharged where possible; records without "
        "carbon (inorganic salts such as [NH4+].[Cl-]) are only cleaned up; isotopes are kept. "
        "chembl: ChEMBL Structure Pipeline standardise + parent: also removes isotopes and "
        "the salts and solvents of ChEMBL's lists, and neutralises",
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
    featurize.add_argument(
        "--record-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="most seconds one record may spend in one step (parse, standardize, conformers, "
        "canonical SMILES, fingerprints, descriptors); a record over it is listed in "
        "rejected.csv as 'timeout: <step>' and the run goes on; 0: no limit (default 60; "
        "not enforced with --dask-scheduler)",
    )
    featurize.add_argument("--quiet", action="store_true", help="no progress bar")

    datasets = commands.add_parser(
        "datasets",
        help="list, describe, download and featurize the registered benchmark datasets",
        description="Datasets are described by cards (datasets/*.yaml). Downloads are checked "
        "against the card's checksum; featurized graphs are cached in $CHEMGRAPH_HOME "
        "(default ~/.cache/chemgraph). --root points at a local copy of the source files.",
    )
    action = datasets.add_subparsers(dest="action", required=True)
    action.add_parser("list", help="registered datasets")
    info = action.add_parser("info", help="a dataset's card")
    info.add_argument("name")
    for verb, text in (("download", "download and verify the source files"),
                       ("featurize", "parse and featurize into cached graph shards")):  # fmt: skip
        sub = action.add_parser(verb, help=text)
        sub.add_argument("name")
        sub.add_argument("--root", help="folder with (or for) the source files")
        sub.add_argument(
            "--allow-unverified",
            action="store_true",
            help="accept downloads whose card has no checksum (the hash is logged)",
        )
        if verb == "featurize":
            sub.add_argument("--preset", default="canonical", help="canonical or ogb")

    react = commands.add_parser(
        "react",
        help="predict reaction products with a trained GRAT checkpoint (beam search)",
        description="Predict the products of reactions given as reaction SMILES "
        "'reactants>reagents>' with a checkpoint of the reaction_outcome recipe: GRAT decodes "
        "product graphs by beam search; they are written as canonical SMILES, deduplicated. "
        "With --input, lines that already hold products are scored (top-1/2/3/5 accuracy).",
        epilog='examples:\n  chemgraph react "CC(=O)Cl.OCC>c1ccncc1>" --checkpoint best.ckpt '
        "--top-k 5\n  chemgraph react --input reactions.txt --checkpoint best.ckpt --output "
        "predictions.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    react.add_argument("reaction", nargs="?", help="one reaction SMILES 'reactants>reagents>'")
    react.add_argument("--input", help="file with one reaction SMILES a line (plain or .gz)")
    react.add_argument("--checkpoint", required=True, help="best.ckpt of reaction_outcome")
    react.add_argument(
        "--output",
        help="CSV to write (with --input): one row per non-blank input line, in input order "
        "(row = 0-based line number), predictions, and an error column saying why a reaction "
        "was not decoded",
    )
    react.add_argument("--top-k", type=int, default=5, help="predictions per reaction")
    react.add_argument("--beam-width", type=int, default=8, help="beam width (default 8)")
    react.add_argument("--batch-size", type=int, default=32, help="reactions per beam search")

    recipe = commands.add_parser(
        "recipe",
        help="list and run packaged recipes (e.g. dft_to_gw transfer learning)",
        description="Recipes are complete experiments defined by a YAML file in recipes/NAME/.",
    )
    recipe_action = recipe.add_subparsers(dest="action", required=True)
    recipe_action.add_parser("list", help="registered recipes")
    run = recipe_action.add_parser("run", help="run a recipe and print its results")
    run.add_argument("name")
    run.add_argument("--config", help="YAML overriding the recipe's config.yaml")
    run.add_argument("--seeds", type=int, help="number of seeds (overrides the config)")
    run.add_argument("--out", default=None, help="output folder, new or empty (default runs/NAME)")
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="allow a non-empty --out (an earlier run's): files of the same name are replaced, "
        "others are left",
    )
    return parser


def _react(args: argparse.Namespace) -> int:
    from chemgraph.recipes import reaction_outcome as recipe

    if (args.reaction is None) == (args.input is None):
        raise ValueError("give either one reaction SMILES or --input FILE (with --output)")
    for option in ("top_k", "beam_width", "batch_size"):
        if getattr(args, option) < 1:
            name = "--" + option.replace("_", "-")
            raise ValueError(f"{name} must be at least 1, got {getattr(args, option)}")
    if args.top_k > args.beam_width:
        raise ValueError(f"--top-k {args.top_k} exceeds --beam-width {args.beam_width}")
    if args.input is not None:
        if args.output is None:
            raise ValueError("--input needs --output FILE.csv")
        table, metrics = recipe.predict_file(
            args.checkpoint, args.input, args.output, args.top_k, args.beam_width,
            args.batch_size,
        )  # fmt: skip
        decoded = int((table["error"] == "").sum())
        valid = int((table["prediction_1"] != "").sum())
        print(f"{len(table)} reactions read, {decoded} decoded, {valid} with a valid product "
              f"(written to {args.output}; its error column says why a reaction was not "
              "decoded)")  # fmt: skip
        if metrics is not None:
            print(recipe.format_metrics(metrics))
        return 0
    module = recipe.load_reaction_model(args.checkpoint)
    reaction = recipe.parse_input_reaction(args.reaction)
    items, _, bad = recipe.encode_reactions([reaction], [0], with_product=False)
    if bad:
        raise ValueError(bad[0][2])
    (prediction,) = recipe.predict_reactions(module, items, args.beam_width, args.top_k, 1)
    if not prediction.smiles:
        print("no valid product graph was decoded")
    for rank, (smiles, score) in enumerate(zip(prediction.smiles, prediction.scores), 1):
        print(f"{rank}\t{smiles}\t{score:.4f}")
    return 0


def _recipe(args: argparse.Namespace) -> int:
    from chemgraph._output import check_output_folder
    from chemgraph.recipes.registry import RECIPES, get_recipe

    if args.action == "list":
        for name in RECIPES:
            print(f"{name:<20} {get_recipe(name).DESCRIPTION}")
        return 0
    module = get_recipe(args.name)
    out = args.out or f"runs/{args.name}"
    check_output_folder(out, "--out", args.overwrite, "--overwrite")
    module.run(config=args.config, seeds=args.seeds, out=out)
    return 0


def _datasets(args: argparse.Namespace) -> int:
    from chemgraph.data.datasets import dataset_card, get_dataset, list_datasets

    if args.action == "list":
        print(f"{'name':<14} {'family':<12} {'rows':>8}  description")
        for name in list_datasets():
            card = dataset_card(name)
            rows = f"{card.rows:,}" if card.rows else "-"
            summary = textwrap.shorten(card.description, 60, placeholder=" …")
            print(f"{name:<14} {card.family:<12} {rows:>8}  {summary}")
        return 0
    if args.action == "info":
        print(dataset_card(args.name).path.read_text(encoding="utf-8"), end="")
        return 0
    from chemgraph.data.datasets import chemgraph_home

    dataset = get_dataset(args.name, args.root)
    paths = dataset.download(allow_unverified=args.allow_unverified)
    if args.action == "download":
        for path in paths:
            print(path)
        return 0
    graphs, rejected = dataset.featurize(args.preset)
    print(f"{args.name}: {len(graphs)} graphs, {len(rejected)} rejected records; "
          f"cached under {chemgraph_home() / 'featurized' / args.name}")  # fmt: skip
    for reason, count in rejected["reason"].astype(str).str[:80].value_counts().head(5).items():
        print(f"  {count} x {reason}")
    return 0


def _featurize(args: argparse.Namespace) -> int:
    """Run ``featurize``; SIGINT/SIGTERM print one line saying how to resume and return
    128 + the signal number."""
    from chemgraph.recipes.featurize_library import (
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
        smiles_column=args.smiles_column,
        id_column=args.id_column,
        seed=args.seed,
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


def _train(args: argparse.Namespace) -> int:
    from chemgraph._output import check_output_folder
    from chemgraph.train.runner import TrainingConfig, train

    overrides = {
        "data": args.data,
        "data_root": args.data_root,
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
    check_output_folder(config.out, "--out", args.overwrite, "--overwrite")
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
    handlers = {
        "train": _train,
        "predict": _predict,
        "featurize": _featurize,
        "datasets": _datasets,
        "recipe": _recipe,
        "react": _react,
    }
    try:
        return handlers[args.command](args)
    except (ValueError, OSError, KeyError, ImportError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"chemgraph {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
