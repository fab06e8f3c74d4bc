"""``chemgraph train``: train a graph model on a table of SMILES and measured properties."""

from __future__ import annotations

import argparse
from pathlib import Path

from chemgraph.cli.base import Command, ExamplesHelpFormatter
from chemgraph.cli.common import (
    add_config_option,
    add_input_option,
    add_max_time_option,
    add_model_option,
    add_output_option,
    add_preparation_options,
    add_protocol_option,
    add_resume_options,
    add_root_option,
    add_seed_option,
    add_smiles_column_option,
    add_target_columns_option,
)
from chemgraph.model_names import MODEL_DESCRIPTIONS

__all__ = ["TrainCommand"]

#: The settings a run needs, by the flags that give them.
_REQUIRED = {"data": "-i/--input", "out": "-o/--output"}

TRAIN_EPILOG = """\
examples:
  chemgraph train -i delaney-processed.csv --smiles-column smiles \\
      --target-columns "measured log solubility in mols per litre" --task regression \\
      --model esa --split random --seed 0 --max-epochs 50 -o runs/esol
  chemgraph train -i tox21.csv.gz --target-columns NR-AR,NR-AhR --task classification \\
      --split scaffold -o runs/tox21 --config my_settings.yaml
  chemgraph train -i my_200_measured.csv --target-columns gap --init-from runs/xtb/best.ckpt \\
      --freeze-encoder -o runs/finetuned

outputs in --output: best.ckpt, metrics.json (overall and per task), predictions.csv, rejected.csv,
learning_curve.png, test-split plots (parity.png and residuals.png for regression; roc_curve.png,
pr_curve.png and confusion_matrix.png for classification) and config.yaml (every setting used;
reusable with --config). --output must
be a new or empty folder; --overwrite writes over an earlier run (replacing these files). With
--ensemble K, each of the K models writes these files to OUTPUT/model-<k>, and OUTPUT gets the
ensemble's metrics.json (from the members' mean prediction, and each member's metrics),
predictions.csv (mean as <target>_pred, members' sample standard deviation, ddof=1, as
<target>_std),
test-split plots and config.yaml (--config OUTPUT/config.yaml --ensemble K repeats the run).
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
        add_input_option(
            parser,
            "CSV, TSV or parquet file (optionally .gz), an SDF file (SD properties as "
            "targets), a registered dataset name (chemgraph datasets list), or a chemgraph "
            "featurize output folder made with --target-columns (its graphs, not featurized "
            "again)",
            dest="data",
            aliases=("--data",),
        )
        add_root_option(
            parser,
            dest="data_root",
            help="with -i NAME (a dataset): folder holding a local copy of the dataset's files "
            "(offline)",
        )
        add_smiles_column_option(parser, "column holding SMILES (default: smiles)")
        add_target_columns_option(
            parser,
            "comma-separated property columns to predict; empty cells count as missing "
            "(default with a dataset name: the card's targets)",
        )
        parser.add_argument(
            "--task",
            choices=["regression", "classification"],
            help="regression (continuous values) or classification (0/1 labels); default: "
            "classification when every target column holds only 0 and 1, otherwise regression "
            "(a note is printed when a target is 0/1); with a dataset name: the card's task",
        )
        add_model_option(
            parser,
            "; ".join(f"{name}: {text}" for name, text in MODEL_DESCRIPTIONS.items())
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
        add_seed_option(parser, "seed of the split, the weights and the shuffling (default: 0)")
        add_preparation_options(
            parser,
            "stored in the checkpoint, so predict prepares new molecules the same way",
            defaults=False,
        )
        add_protocol_option(
            parser,
            "optimisation settings: default (AdamW lr 5e-4 with warm-up and cosine decay, "
            "batch 128, 50 epochs, sized for a CPU; ESA and NSA batch 64, GCN, "
            "GIN and GMoE batch 32 and lr 1e-3) or paper (Buterez et al. 2024 "
            "SI 7: lr 1e-4, batch 128, clipping 0.5, halve the lr after 15 epochs without "
            "improvement, stop after 30, up to 1000 epochs); settings given in --config or "
            "here win (default: default)",
        )
        parser.add_argument(
            "--max-epochs", type=int, help="maximum training epochs (default: the protocol's)"
        )
        add_max_time_option(
            parser,
            "wall-clock budget of training in minutes, at least 0.1; the best checkpoint so "
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
        add_output_option(
            parser, "output folder, new or empty (see --overwrite)", dest="out", aliases=("--out",)
        )
        add_resume_options(
            parser,
            "continue the interrupted run in --output (stopped by Ctrl-C, SIGTERM or a "
            "scheduler) from its last.ckpt, with the same settings: it ends as the "
            "uninterrupted run would have",
        )
        parser.add_argument(
            "--ensemble",
            type=int,
            metavar="K",
            help="train K >= 2 models on the split of --seed N with weight seeds N, N+1, ..., "
            "N+K-1, each in OUTPUT/model-<k> with all its outputs; OUTPUT gets the metrics and "
            "predictions of their mean prediction; chemgraph predict --checkpoint OUTPUT gives "
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
        add_config_option(
            parser,
            "YAML file with any training setting (keys as in the config.yaml a run "
            "writes); command-line options override it",
        )

    def run(self, args: argparse.Namespace) -> int:
        """Train (an ensemble with ``--ensemble``) and print the test metrics.

        Raises:
            ConfigError: no ``-i/--input`` or ``-o/--output`` (and no ``--config``).
            ValueError: a non-empty ``-o/--output`` without ``--overwrite`` (named by its
                flag), or see :func:`chemgraph.jobs.train.train`.
        """
        from chemgraph._output import check_output_folder
        from chemgraph.errors import ConfigError
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
            missing = [flag for key, flag in _REQUIRED.items() if overrides[key] is None]
            if missing:
                raise ConfigError(f"chemgraph train needs {' and '.join(missing)}")
            config = TrainingConfig.from_dict({k: v for k, v in overrides.items() if v is not None})
        if args.resume and args.ensemble is not None:
            raise ConfigError("--resume continues one model's run, not an --ensemble's")
        # the job names the folder by its configuration key's flag; the user's is -o/--output
        if not args.resume:
            check_output_folder(config.out, "--output", args.overwrite, "--overwrite")
        if args.ensemble is None:
            print(format_metrics(train(config, overwrite=args.overwrite, resume=args.resume)))
        else:
            ensemble = train_ensemble(config, args.ensemble, overwrite=args.overwrite)
            seeds = [ensemble_member(config, index).seed for index in range(args.ensemble)]
            print(format_ensemble_metrics(ensemble, seeds))
        print(f"outputs written to {Path(config.out).resolve()}")
        return 0
