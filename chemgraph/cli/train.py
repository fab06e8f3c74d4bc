"""``chemgraph train``: train a graph model on a table of SMILES and measured properties."""

from __future__ import annotations

import argparse
from pathlib import Path

from chemgraph.cli.base import Command, ExamplesHelpFormatter, add_overwrite_option
from chemgraph.model_names import MODEL_DESCRIPTIONS

__all__ = ["TrainCommand"]

TRAIN_EPILOG = """\
examples:
  chemgraph train --data delaney-processed.csv --smiles-column smiles \\
      --target-columns "measured log solubility in mols per litre" --task regression \\
      --model esa --split random --seed 0 --max-epochs 50 --out runs/esol
  chemgraph train --data tox21.csv.gz --target-columns NR-AR,NR-AhR --task classification \\
      --split scaffold --out runs/tox21 --config my_settings.yaml
  chemgraph train --data my_200_measured.csv --target-columns gap --init-from runs/xtb/best.ckpt \\
      --freeze-encoder --out runs/finetuned

outputs in --out: best.ckpt, metrics.json (overall and per task), predictions.csv, rejected.csv,
learning_curve.png, test-split plots (parity.png and residuals.png for regression; roc_curve.png,
pr_curve.png and confusion_matrix.png for classification) and config.yaml (every setting used;
reusable with --config). --out must
be a new or empty folder; --overwrite writes over an earlier run (replacing these files). With
--ensemble K, each of the K models writes these files to --out/model-<k>, and --out gets the
ensemble's metrics.json (from the members' mean prediction, and each member's metrics),
predictions.csv (mean as <target>_pred, members' sample standard deviation, ddof=1, as
<target>_std),
test-split plots and config.yaml (--config OUT/config.yaml --ensemble K repeats the run).
"""


class TrainCommand(Command):
    """Featurize, split, train and evaluate (:func:`chemgraph.jobs.train.train`)."""

    name = "train"
    help = (
        "train a graph model (ESA, NSA, Graphormer, GRAT, GMoE, GCN, GIN) on a table of "
        "SMILES and measured properties"
    )
    description = (
        "Featurize the molecules of a table with RDKit, split them, train a graph "
        "model (--model) with PyTorch Lightning and report "
        "test metrics (RMSE/MAE/R² for regression; ROC-AUC, PR-AUC, MCC and balanced "
        "accuracy for classification), overall and per task. "
        "Rows whose SMILES RDKit cannot read are skipped and listed in rejected.csv."
    )
    epilog = TRAIN_EPILOG
    formatter_class = ExamplesHelpFormatter

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        # Defaults left None here are TrainingConfig's (or a --config file's); the help says them.
        parser.add_argument(
            "--data",
            help="CSV, TSV or parquet file (optionally .gz), an SDF file (SD properties as "
            "targets), a registered dataset name (chemgraph datasets list), or a chemgraph "
            "featurize output folder made with --label-columns (its graphs, not featurized "
            "again)",
        )
        parser.add_argument(
            "--root",
            dest="data_root",
            help="with --data NAME: folder holding a local copy of the dataset's files (offline)",
        )
        parser.add_argument("--smiles-column", help="column holding SMILES (default: smiles)")
        parser.add_argument(
            "--target-columns",
            help="comma-separated property columns to predict; empty cells count as missing "
            "(default with a dataset name: the card's targets)",
        )
        parser.add_argument(
            "--task",
            choices=["regression", "classification"],
            help="regression (continuous values) or classification (0/1 labels); default: "
            "classification when every target column holds only 0 and 1, otherwise regression "
            "(a note is printed when a target is 0/1); with a dataset name: the card's task",
        )
        parser.add_argument(
            "--model",
            choices=list(MODEL_DESCRIPTIONS),
            help="; ".join(f"{name}: {text}" for name, text in MODEL_DESCRIPTIONS.items())
            + " (default: esa, or the --init-from checkpoint's)",
        )
        parser.add_argument(
            "--split",
            choices=["random", "scaffold", "predefined"],
            help="random 80/10/10 (seeded), Bemis-Murcko scaffold split, or predefined "
            "(--split-column or --split-file); random and scaffold splits keep the rows of one "
            "molecule in one split (default: random)",
        )
        parser.add_argument(
            "--split-column",
            help="column naming each row's split: train, val (or valid) or test; an empty "
            "cell leaves the row out (as Chemprop's --splits-column)",
        )
        parser.add_argument(
            "--split-file",
            help='JSON file {"train": [rows], "val": [rows], "test": [rows]} of 0-based data '
            "rows (Chemprop's --splits-file with one split is read too); a row in two splits "
            "is an error, a molecule in two splits is reported as leakage",
        )
        parser.add_argument(
            "--seed", type=int, help="random seed for split, weights, shuffling (default: 0)"
        )
        parser.add_argument(
            "--standardize",
            choices=["none", "basic", "chembl"],
            help="standardise every molecule before featurizing it, as chemgraph featurize "
            "--standardize does (default: none); stored in the checkpoint, so predict "
            "prepares new molecules the same way",
        )
        parser.add_argument(
            "--fragments",
            choices=["keep", "largest"],
            help="keep every fragment of a salt or mixture, or only the largest (after "
            "--standardize; default: keep); stored in the checkpoint like --standardize",
        )
        parser.add_argument(
            "--protocol",
            choices=["default", "paper"],
            help="optimisation settings: default (AdamW lr 5e-4 with warm-up and cosine decay, "
            "batch 128, 50 epochs: learns within minutes on a CPU; ESA and NSA batch 64, GCN, "
            "GIN and GMoE batch 32 and lr 1e-3) or paper (Buterez et al. 2024 "
            "SI 7: lr 1e-4, batch 128, clipping 0.5, halve the lr after 15 epochs without "
            "improvement, stop after 30, up to 1000 epochs); settings given in --config or "
            "here win (default: default)",
        )
        parser.add_argument(
            "--max-epochs", type=int, help="maximum training epochs (default: the protocol's)"
        )
        parser.add_argument(
            "--max-time-minutes",
            type=float,
            help="wall-clock budget of training in minutes, at least 0.1; the best checkpoint so "
            "far is kept (default: none). Results then depend on machine speed and load: prefer "
            "--max-epochs",
        )
        parser.add_argument(
            "--devices",
            type=int,
            metavar="N",
            help="train on N devices at once (distributed data-parallel): N GPUs, or N CPU "
            "processes without a GPU; each process takes batch_size molecules per step "
            "(default: 1)",
        )
        parser.add_argument("--out", help="output folder, new or empty (see --overwrite)")
        add_overwrite_option(parser)
        parser.add_argument(
            "--ensemble",
            type=int,
            metavar="K",
            help="train K >= 2 models on the split of SEED with weight seeds SEED, SEED+1, ..., "
            "SEED+K-1, each in OUT/model-<k> with all its outputs; OUT gets the metrics and "
            "predictions of their mean prediction; chemgraph predict --checkpoint OUT gives "
            "their mean prediction and its standard deviation",
        )
        parser.add_argument(
            "--init-from",
            metavar="CKPT",
            help="start from the weights of a property checkpoint (best.ckpt of chemgraph "
            "train): every weight but the output head, which is new for --target-columns "
            "(Chemprop's --checkpoint); the model family, its options and the featurizer are "
            "the checkpoint's (giving others is refused); its path and sha256 are recorded in "
            "config.yaml and metrics.json",
        )
        parser.add_argument(
            "--freeze-encoder",
            action="store_true",
            default=None,
            help="with --init-from: train the new output head only, the copied weights stay as "
            "they are (Chemprop's --freeze-encoder)",
        )
        parser.add_argument(
            "--config",
            help="YAML file with any training setting (keys as in the config.yaml a run "
            "writes); command-line options override it",
        )

    def run(self, args: argparse.Namespace) -> int:
        from chemgraph.jobs.train import ensemble_member, train, train_ensemble
        from chemgraph.train.config import TrainingConfig
        from chemgraph.train.metrics import format_ensemble_metrics, format_metrics
        from chemgraph.train.trainer import quiet_third_party_warnings

        quiet_third_party_warnings()
        overrides = {
            "data": args.data,
            "data_root": args.data_root,
            "smiles_column": args.smiles_column,
            "target_columns": args.target_columns,
            "task": args.task,
            "model": args.model,
            "split": args.split,
            "split_column": args.split_column,
            "split_file": args.split_file,
            "seed": args.seed,
            "standardize": args.standardize,
            "fragments": args.fragments,
            "protocol": args.protocol,
            "max_epochs": args.max_epochs,
            "max_time_minutes": args.max_time_minutes,
            "devices": args.devices,
            "out": args.out,
            "init_from": args.init_from,
            "freeze_encoder": args.freeze_encoder,
        }
        if args.quiet:
            overrides["progress"] = False
        if args.config:
            config = TrainingConfig.from_yaml(args.config, **overrides)
        else:
            config = TrainingConfig.from_dict({k: v for k, v in overrides.items() if v is not None})
        if args.ensemble is None:
            print(format_metrics(train(config, overwrite=args.overwrite)))
        else:
            ensemble = train_ensemble(config, args.ensemble, overwrite=args.overwrite)
            seeds = [ensemble_member(config, index).seed for index in range(args.ensemble)]
            print(format_ensemble_metrics(ensemble, seeds))
        print(f"outputs written to {Path(config.out).resolve()}")
        return 0
