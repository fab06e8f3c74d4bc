"""End-to-end training from a table of SMILES and targets (what ``chemgraph train`` runs)."""

from __future__ import annotations

import datetime
import json
import logging
import math
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import lightning as L
import numpy as np
import pandas as pd
import torch
import yaml

from chemgraph.data import (
    MoleculeDataModule,
    featurize_table,
    random_split,
    scaffold_split,
    warn_single_class,
    write_rejected,
)
from chemgraph.data.datasets import dataset_card, list_datasets, read_data
from chemgraph.featurize import get_preset
from chemgraph.models import MODELS, get_model_spec
from chemgraph.train.metrics import classification_metrics, regression_metrics
from chemgraph.train.module import PropertyPredictionModule
from chemgraph.train.plots import plot_learning_curve, plot_parity
from chemgraph.train.scaler import TargetScaler

__all__ = ["TrainingConfig", "train"]

log = logging.getLogger(__name__)


class _DropAdvertisement(logging.Filter):
    """Drops Lightning's start-up advertisement for its cloud logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


logging.getLogger("lightning.pytorch.utilities.rank_zero").addFilter(_DropAdvertisement())
warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")
warnings.filterwarnings("ignore", message="Checkpoint directory .* exists and is not empty")


OUTPUT_FILES = (
    "best.ckpt", "metrics.json", "predictions.csv", "rejected.csv", "learning_curve.png",
    "parity.png", "config.yaml",
)  # fmt: skip


def _number(name: str, value: Any, kind: type, low: float) -> int | float:
    """``value`` as ``kind`` (YAML reads ``1e-4`` as text), at least ``low``."""
    try:
        number = kind(value)
        if kind is int and number != float(value):
            raise ValueError
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a{'n integer' if kind is int else ' number'}, got {value!r}"
        ) from None
    if not number >= low:
        raise ValueError(f"{name} must be at least {low}, got {value!r}")
    return number


@dataclass
class TrainingConfig:
    """Everything ``chemgraph train`` needs; round-trips through YAML (``--config``).

    Defaults follow the ESA paper's protocol (Buterez et al. 2024, SI 7): AdamW lr 1e-4, batch 128,
    gradient clipping 0.5, early stopping after 30 epochs without validation improvement,
    learning rate halved after 15; random 80/10/10 split.

    Attributes:
        data: CSV/TSV/parquet file (optionally gzipped) with a SMILES column and targets, or a
            registered dataset name (``chemgraph datasets list``).
        data_root: folder with a local copy of a registered dataset's source files (offline
            use); None = ``$CHEMGRAPH_HOME/raw/<name>``, downloaded when missing.
        target_columns: columns to predict (several = multi-task; empty cells = missing).
        out: output folder.
        smiles_column: column holding SMILES.
        task: ``"regression"`` (targets standardised, predictions in the targets' units),
            ``"classification"`` (binary labels 0/1 per target column), or None: decided by
            :func:`train` from the labels: classification when every target column holds only
            0 and 1, regression otherwise; a note is printed whenever a column holds only 0
            and 1, and the decided task is written to ``config.yaml``.
        model: a registered model family (:data:`chemgraph.models.MODELS`), e.g. ``"esa"``
            (edge-set attention) or ``"nsa"`` (node-set attention).
        split: ``"random"`` (seeded) or ``"scaffold"`` (Bemis–Murcko, deterministic).
        split_fractions: train/validation/test fractions.
        seed: seeds the split, the weight initialisation and the shuffling.
        max_epochs: upper bound on training epochs.
        max_time_minutes: wall-clock budget of the training loop (None = no limit); when it
            runs out, training stops and the best checkpoint so far is evaluated.
        max_rows: use only the first N rows of the table (None = all).
        batch_size, learning_rate, weight_decay, warmup_steps, gradient_clip,
        early_stopping_patience, lr_patience: optimisation settings.
        featurizer: atom/bond featurizer preset; None = the model's default (ESA/NSA take
            float one-hot features, ``"canonical"``).
        fragments: multi-fragment (salt) policy, ``"keep"`` all fragments or ``"largest"``.
        model_options: fields of the model's configuration, e.g.
            :class:`chemgraph.models.ESAConfig` (hidden_dim, num_heads, layer_pattern, norm,
            mlp, num_seeds, dropout, attend_to_self, ...).
        num_workers: DataLoader worker processes.
        accelerator: Lightning accelerator (``"auto"`` picks CUDA when available).
        progress: report progress: tqdm bars on a terminal, one line per epoch otherwise
            (logs, CI).
    """

    data: str
    target_columns: list[str]
    out: str
    smiles_column: str = "smiles"
    data_root: str | None = None
    task: Literal["regression", "classification"] | None = None
    model: str = "esa"
    split: Literal["random", "scaffold"] = "random"
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    seed: int = 0
    max_epochs: int = 100
    max_time_minutes: float | None = None
    max_rows: int | None = None
    batch_size: int = 128
    learning_rate: float = 1e-4
    weight_decay: float = 1e-2
    warmup_steps: int = 0
    gradient_clip: float = 0.5
    early_stopping_patience: int = 30
    lr_patience: int = 15
    featurizer: str | None = None
    fragments: Literal["keep", "largest"] = "keep"
    model_options: dict[str, Any] = field(default_factory=dict)
    num_workers: int = 0
    accelerator: str = "auto"
    progress: bool = True

    def __post_init__(self) -> None:
        """Check every setting before any work is done.

        Raises:
            ValueError: naming the setting, the bad value and what is allowed.
        """
        choices = {
            "task": ("regression", "classification", None),
            "model": tuple(MODELS),
            "split": ("random", "scaffold"),
            "fragments": ("keep", "largest"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        minimum = {
            "max_epochs": 1, "batch_size": 1, "seed": 0, "warmup_steps": 0,
            "early_stopping_patience": 0, "lr_patience": 0, "num_workers": 0,
        }  # fmt: skip
        if self.max_rows is not None:
            minimum["max_rows"] = 1
        for name, low in minimum.items():
            setattr(self, name, _number(name, getattr(self, name), int, low))
        if self.max_time_minutes is not None:
            self.max_time_minutes = _number("max_time_minutes", self.max_time_minutes, float, 0.1)
        for name in ("learning_rate", "weight_decay", "gradient_clip"):
            setattr(self, name, _number(name, getattr(self, name), float, 0.0))
        fractions = tuple(_number("split_fractions", f, float, 0.0) for f in self.split_fractions)
        if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-6:
            raise ValueError(f"split_fractions must be 3 numbers summing to 1, got {fractions}")
        self.split_fractions = fractions
        if isinstance(self.target_columns, str):
            self.target_columns = [c.strip() for c in self.target_columns.split(",")]
        self.target_columns = [str(c) for c in self.target_columns]
        if not self.target_columns or "" in self.target_columns:
            raise ValueError(f"target_columns must name columns, got {self.target_columns!r}")
        spec = get_model_spec(self.model)
        if self.featurizer is None:
            self.featurizer = spec.default_featurizer
        preset = get_preset(self.featurizer)
        if preset.atom.dtype != spec.feature_dtype:
            kind = "one-hot (float)" if spec.feature_dtype == torch.float32 else "categorical"
            raise ValueError(
                f"{self.model.upper()} takes {kind} features; featurizer {self.featurizer!r} "
                f"gives {preset.atom.dtype}: use {spec.default_featurizer!r}"
            )
        spec.config_class.check_options(self.model_options)

    @classmethod
    def field_names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> TrainingConfig:
        """Read a YAML mapping of these fields; ``overrides`` (not None) take precedence.

        Raises:
            ValueError: unknown keys in the file (names them) or missing required fields.
        """
        values = yaml.safe_load(Path(path).read_text()) or {}
        unknown = set(values) - cls.field_names()
        if unknown:
            raise ValueError(
                f"{path}: unknown keys {sorted(unknown)}; valid keys: {sorted(cls.field_names())}"
            )
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(values)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainingConfig:
        """Build from a mapping; with ``data`` a registered dataset name, ``target_columns``
        and ``task`` default to its card's."""
        values = {**dataset_defaults(values.get("data")), **values}
        missing = [
            f.name
            for f in fields(cls)
            if f.name in ("data", "target_columns", "out") and f.name not in values
        ]
        if missing:
            raise ValueError(f"missing required settings: {', '.join(missing)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["split_fractions"] = list(self.split_fractions)
        return values


def dataset_defaults(data: Any) -> dict[str, Any]:
    """``target_columns`` and ``task`` from the card when ``data`` names a registered dataset
    (and is not a file), so ``chemgraph train --data esol`` needs no more; else ``{}``."""
    if data is None or Path(str(data)).is_file() or str(data) not in list_datasets():
        return {}
    card = dataset_card(str(data))
    defaults: dict[str, Any] = {}
    if card.targets:
        defaults["target_columns"] = list(card.targets)
    if card.raw.get("task") in ("regression", "classification"):
        defaults["task"] = card.raw["task"]
    return defaults


def _split(config: TrainingConfig, smiles: list[str]) -> dict[str, np.ndarray]:
    if config.split == "random":
        parts = random_split(len(smiles), config.split_fractions, seed=config.seed)
    elif config.split == "scaffold":
        parts = scaffold_split(smiles, config.split_fractions)
    else:
        raise ValueError(f"unknown split {config.split!r}; use 'random' or 'scaffold'")
    return dict(zip(("train", "val", "test"), parts))


def train(config: TrainingConfig) -> dict[str, dict[str, float]]:
    """Featurize the table, split, train with Lightning, evaluate the best checkpoint.

    Writes to ``config.out``: ``rejected.csv`` (row, input, reason), ``best.ckpt``,
    ``metrics.json`` (``{"val": {...}, "test": {...}}``: RMSE/MAE/R² or MCC/ROC-AUC/accuracy),
    ``predictions.csv`` (split, row, smiles, each target and its ``_pred`` column),
    ``learning_curve.png``, ``parity.png`` (regression) and ``config.yaml`` (the settings, with
    ``task`` decided when it was None). These files of an earlier run in ``config.out`` are
    replaced, other files are left; ``chemgraph train`` refuses a non-empty folder unless
    given ``--overwrite`` (:func:`chemgraph._output.check_output_folder`).

    Returns:
        The metrics written to ``metrics.json``.

    Raises:
        ValueError: bad settings, missing columns, or too few valid molecules to split.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUT_FILES:  # a rerun into the same folder must not leave stale results
        (out / name).unlink(missing_ok=True)
    L.seed_everything(config.seed, workers=True, verbose=False)

    table = read_data(config.data, config.data_root)  # a file or a registered dataset name
    if config.max_rows is not None:
        table = table.iloc[: config.max_rows]
    preset = get_preset(config.featurizer)
    dataset, rejected = featurize_table(
        table,
        config.smiles_column,
        config.target_columns,
        preset,
        fragments=config.fragments,
        progress=config.progress,
    )
    write_rejected(rejected, out / "rejected.csv")
    print(
        f"featurized {len(dataset)} of {len(table)} rows; rejected {len(rejected)} "
        f"(see {out / 'rejected.csv'})"
    )
    if len(dataset) < 10:
        raise ValueError(f"only {len(dataset)} valid molecules in {config.data}; need at least 10")
    if config.task is None:
        config = replace(config, task=_infer_task(dataset.labels, config.target_columns))
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))

    splits = _split(config, dataset.smiles)
    sizes = ", ".join(f"{name} {len(index)}" for name, index in splits.items())
    print(f"{config.split} split: {sizes}")
    empty = [name for name, index in splits.items() if len(index) == 0]
    if empty:
        raise ValueError(
            f"the {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} empty "
            f"({sizes} of {len(dataset)} molecules); "
            "use more molecules, other split_fractions, or a random split (a scaffold split "
            "keeps each scaffold, e.g. all acyclic molecules, in one split)"
        )
    if config.task == "classification":
        _check_binary(dataset.labels, config.target_columns)
        warn_single_class(dataset.labels, splits, config.target_columns)
    parts = {name: dataset.subset(index) for name, index in splits.items()}
    scaler = TargetScaler.fit(parts["train"].labels) if config.task == "regression" else None

    spec = get_model_spec(config.model)
    model_config = {
        **config.model_options,
        **spec.input_options(preset),
        "num_outputs": len(config.target_columns),
    }
    module = PropertyPredictionModule(
        model_config=model_config,
        task=config.task,
        target_columns=list(config.target_columns),
        featurizer=preset.to_dict(),
        scaler=asdict(scaler) if scaler is not None else None,
        fragments=config.fragments,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_steps,
        lr_patience=config.lr_patience,
        model=config.model,
    )
    for part in parts.values():  # e.g. Graphormer's shortest paths, once per molecule
        part.graphs = spec.transform_graphs(module.model.config, part.graphs)
    data = MoleculeDataModule(
        parts["train"],
        parts["val"],
        parts["test"],
        spec.batch_builder(module.model.config),
        batch_size=config.batch_size,
        num_workers=config.num_workers,
        seed=config.seed,
    )
    progress_bars = config.progress and sys.stderr.isatty()
    history = LossHistory(print_epochs=config.progress and not progress_bars)
    checkpoint = L.pytorch.callbacks.ModelCheckpoint(
        dirpath=out,
        filename="best",
        monitor="val_loss",
        mode="min",
        save_top_k=1,
        enable_version_counter=False,
    )
    early_stopping = L.pytorch.callbacks.EarlyStopping(
        monitor="val_loss", mode="min", patience=config.early_stopping_patience
    )
    cuda = torch.cuda.is_available() and config.accelerator in ("auto", "gpu", "cuda")
    trainer = L.Trainer(
        max_epochs=config.max_epochs,
        max_time=None
        if config.max_time_minutes is None
        else datetime.timedelta(minutes=config.max_time_minutes),
        accelerator=config.accelerator,
        devices=1,
        precision="bf16-mixed" if cuda else "32-true",
        gradient_clip_val=config.gradient_clip,
        callbacks=[checkpoint, early_stopping, history],
        logger=False,
        enable_progress_bar=progress_bars,
        enable_model_summary=config.progress,
        num_sanity_val_steps=0,
        deterministic=False,
    )
    trainer.fit(module, datamodule=data)

    if not checkpoint.best_model_path:
        raise ValueError(
            "training stopped before its first validation (no checkpoint); raise "
            "max_time_minutes or max_epochs"
        )
    state = torch.load(checkpoint.best_model_path, map_location="cpu", weights_only=True)
    module.load_state_dict(state["state_dict"])
    metrics: dict[str, dict[str, float]] = {}
    frames = []
    for name in ("val", "test"):
        outputs = trainer.predict(module, data.loader(parts[name]))
        predicted = torch.cat(outputs).float().numpy()
        truth = parts[name].labels.numpy()
        if config.task == "regression":
            metrics[name] = regression_metrics(truth, predicted)
        else:
            metrics[name] = classification_metrics(truth, predicted)
        frames.append(_prediction_frame(name, parts[name], predicted, config.target_columns))
    metrics["epochs_trained"] = trainer.current_epoch
    (out / "metrics.json").write_text(json.dumps(_json_safe(metrics), indent=2))
    predictions = pd.concat(frames, ignore_index=True)
    predictions.to_csv(out / "predictions.csv", index=False)
    loss_name = {
        "regression": "mean squared error of standardised targets",
        "classification": "binary cross-entropy",
    }[config.task]
    plot_learning_curve(history.epochs, out / "learning_curve.png", loss_name)
    if config.task == "regression":
        test = predictions[predictions["split"] == "test"]
        plot_parity(test, config.target_columns, out / "parity.png")
    return metrics


def _values_other_than_0_and_1(column: torch.Tensor) -> torch.Tensor:
    """The distinct labels of one target column that are neither 0 nor 1 (NaN = missing)."""
    values = column[~torch.isnan(column)]
    return torch.unique(values[(values != 0) & (values != 1)])


def _infer_task(labels: torch.Tensor, targets: list[str]) -> str:
    """The task when none was given: ``"classification"`` if every target column holds only 0
    and 1 (and at least one label), else ``"regression"``; prints a note whenever a column is
    0/1, saying what was chosen and how to choose otherwise."""
    binary = [
        target
        for index, target in enumerate(targets)
        if not torch.isnan(labels[:, index]).all()
        and _values_other_than_0_and_1(labels[:, index]).numel() == 0
    ]
    if not binary:
        return "regression"
    names = ", ".join(map(repr, binary))
    if len(binary) == len(targets):
        print(
            f"note: target {names} holds only 0 and 1, so this is a classification task "
            "(pass --task regression to fit the values as numbers)"
        )
        return "classification"
    others = ", ".join(repr(t) for t in targets if t not in binary)
    print(
        f"note: target {names} holds only 0 and 1 but {others} does not: training regression "
        "on all targets (train the 0/1 targets in their own run to classify them)"
    )
    return "regression"


def _check_binary(labels: torch.Tensor, targets: list[str]) -> None:
    """Classification labels must be 0 or 1 (missing = NaN)."""
    for index, target in enumerate(targets):
        bad = _values_other_than_0_and_1(labels[:, index])
        if bad.numel():
            shown = ", ".join(f"{v:g}" for v in bad[:5].tolist())
            raise ValueError(
                f"classification target {target!r} holds values other than 0 and 1 ({shown}"
                f"{', ...' if bad.numel() > 5 else ''}); recode it to 0/1 or use --task regression"
            )


def _json_safe(value):
    """NaN (e.g. ROC-AUC of a single-class split) becomes null: JSON has no NaN."""
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value


def _prediction_frame(split: str, part, predicted: np.ndarray, targets: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame({"split": split, "row": part.rows, "smiles": part.smiles})
    labels = part.labels.numpy()
    for index, target in enumerate(targets):
        frame[target] = labels[:, index]
        frame[f"{target}_pred"] = predicted[:, index]
    return frame


class LossHistory(L.Callback):
    """Records the epoch-mean training and validation losses for the learning-curve plot."""

    def __init__(self, print_epochs: bool = False) -> None:
        self.epochs: list[dict[str, float]] = []
        self.print_epochs = print_epochs
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        metrics = trainer.callback_metrics
        self.epochs.append(
            {
                "epoch": trainer.current_epoch,
                "train_loss": float(metrics.get("train_loss", math.nan)),
                "val_loss": float(metrics.get("val_loss", math.nan)),
            }
        )
        if self.print_epochs:
            last = self.epochs[-1]
            print(
                f"epoch {last['epoch']:>3}: train_loss {last['train_loss']:.4f}  "
                f"val_loss {last['val_loss']:.4f}  ({time.perf_counter() - self._start:.0f} s)",
                flush=True,
            )
