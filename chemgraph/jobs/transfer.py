"""Transfer learning across levels of theory: pretrain on low-fidelity labels, fine-tune on
high-fidelity labels.

Buterez et al. 2024, "An end-to-end attention-based approach for learning on graphs"
(arXiv:2402.10793), section 4.1 and SI 4; the inductive/transductive terms are those of Buterez,
Janet, Kiddle, Oglic and Liò 2024, "Transfer learning with graph neural networks for improved
molecular property prediction in the multi-fidelity setting" (Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8).

Fidelity-agnostic: any pair of label sets on the same molecules (DFT -> GW, xTB -> DFT,
assay -> assay). Three strategies, the rows of Buterez et al. 2024 Table 5:

* ``high_fidelity_only`` ("GW only"): train on the high-fidelity training set alone.
* ``inductive``: pretrain on the low-fidelity labels of every molecule *except* the
  high-fidelity test molecules, then fine-tune.
* ``transductive``: pretrain on the low-fidelity labels of every molecule, the high-fidelity
  test molecules included (their low-fidelity labels only), then fine-tune.

Pretraining runs a fixed number of epochs (Buterez et al. 2024: 150) and keeps the last weights;
5% of the pretraining pool is held out to draw its learning curve. Fine-tuning builds the same
model with a fresh output head, copies every other weight (full fine-tuning; ``freeze_encoder``
trains only the head), standardises the high-fidelity labels anew and trains with early stopping
on the high-fidelity validation set; the best checkpoint is evaluated on the high-fidelity test
set. Each seed repeats every strategy (weights, shuffling, pretraining hold-out); the high-
fidelity split stays fixed.

By default every target gets its own chain, one pretraining and one fine-tuning of a model with
one output, as in the authors' code for Buterez et al. 2024 Table 5 (one target per run);
``joint_targets`` trains one model with an output per target instead (:func:`target_groups`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pandas as pd
import torch
import yaml

from chemgraph._interrupts import die_with_parent, interrupts_raise
from chemgraph.data import MoleculeDataModule, MoleculeDataset
from chemgraph.data.multi_fidelity import SPLITS, MultiFidelityData, high_fidelity_split
from chemgraph.errors import ConfigError, setting
from chemgraph.featurize import FeaturizerPreset, RadiusGraphFeaturizer
from chemgraph.model_names import MODEL_DESCRIPTIONS
from chemgraph.models import get_model_spec
from chemgraph.train.baselines import (
    BASELINES,
    baseline_names,
    morgan_fingerprints,
    residual_kernel_ridge,
    transfer_baselines,
)
from chemgraph.train.callbacks import EpochProgress, LossHistory
from chemgraph.train.config import RunConfig
from chemgraph.train.delta import DELTA_STRATEGIES, DeltaLearning, stack, stack_weights
from chemgraph.train.finetune import transfer_weights
from chemgraph.train.fit import fit
from chemgraph.train.inference import predict_graphs
from chemgraph.train.metrics import regression_metrics
from chemgraph.train.module import LR_SCHEDULES, PropertyPredictionModule, build_property_module
from chemgraph.train.plots import plot_label_curve, plot_learning_curve

__all__ = [
    "KERNEL_RIDGE_ALONE",
    "STACKED",
    "STRATEGIES",
    "MultiFidelityData",
    "TransferConfig",
    "TransferOptions",
    "read_structures",
    "transfer_job",
    "transfer_table",
    "available_cpus",
    "build_module",
    "collate",
    "model_label",
    "high_fidelity_split",
    "label_curve",
    "pretraining_pool",
    "format_table",
    "results_table",
    "run_transfer",
    "seed_ensembles",
    "target_groups",
    "training_fingerprints",
    "transfer_claim",
    "transfer_margins",
    "baseline_runs",
]

log = logging.getLogger(__name__)

STRATEGIES = ("high_fidelity_only", "inductive", "transductive")


def pretraining_pool(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int] | None = None,
) -> np.ndarray:
    """Positions of the molecules whose low-fidelity labels pretrain the model.

    Every molecule with all low-fidelity labels of ``columns`` (positions in ``data.targets``;
    None = every target), minus the high-fidelity test molecules for ``"inductive"`` (and,
    with ``data.groups``, every other entry of a test molecule, e.g. a second SMILES of it
    with only the low-fidelity label); empty for ``"high_fidelity_only"``. Only ``data.low``
    is ever read for these molecules (:meth:`MultiFidelityData.dataset` with ``"low"``).

    Raises:
        ValueError: unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {STRATEGIES}")
    if strategy == "high_fidelity_only":
        return np.zeros(0, dtype=np.int64)
    low = data.low if columns is None else data.low[:, list(columns)]
    pool = np.flatnonzero(~torch.isnan(low).any(dim=1).numpy())
    if strategy == "inductive":
        pool = np.setdiff1d(pool, split["test"])
        if data.groups is not None:
            pool = pool[~np.isin(data.groups[pool], data.groups[split["test"]])]
    return pool


DELTA_SETTINGS = ("delta_learning", "stack_kernel_ridge")
"""The settings that act on the transfer strategies only (:data:`DELTA_STRATEGIES`)."""

TRANSFER_ONLY_SETTINGS = ("freeze_encoder", *DELTA_SETTINGS)
"""Switches that act on the transfer strategies' fine-tuning only: with no transfer strategy
they would change nothing, so :class:`TransferConfig` refuses them."""


def _turned_off(*names: str) -> str:
    """What turns the switches ``names`` off, as the user gave them: ``"leave out
    --delta-learning"`` on a command line (:func:`chemgraph.errors.setting`), else ``"set
    delta_learning: false"``."""
    flags = [setting(name) for name in names if setting(name) != name]
    keys = [f"{name}: false" for name in names if setting(name) == name]
    parts = [f"leave out {' and '.join(flags)}"] if flags else []
    return " and ".join(parts + ([f"set {' and '.join(keys)}"] if keys else []))


@dataclass
class TransferConfig(RunConfig):
    """Settings of a transfer-learning run (round-trips through YAML; every setting has a
    default).

    Attributes:
        strategies: subset of :data:`STRATEGIES`, in table order.
        seeds: number of seeds (0 .. seeds-1); the table reports mean ± std over them.
        pretrain_epochs: fixed pretraining epochs (Buterez et al. 2024 SI 4: 150).
        pretrain_max_minutes: wall-clock cap of one pretraining (None = none; the run then
            stops early and says so in the log and in ``runs.csv``). A cap makes the results
            depend on the machine's speed and load; None keeps them reproducible.
        finetune_max_epochs: upper bound of fine-tuning epochs (early stopping decides).
        finetune_max_minutes: wall-clock cap of one fine-tuning (None = none).
        early_stopping_patience, lr_patience: in epochs, on the validation loss
            (``lr_patience``: the ``"plateau"`` schedule only).
        freeze_encoder: fine-tune only the fresh head (default False: full fine-tuning); the
            transfer strategies only, so ``strategies`` must hold one (else refused).
        joint_targets: one model predicts every target (one pretraining and one fine-tuning
            per strategy and seed); default False: one chain per target, each model with one
            output (the authors' code for Buterez et al. 2024 Table 5: one target per model).
        delta_learning: the transfer strategies fine-tune on the residual of a linear
            correction of what the low-fidelity level says about each molecule, and add the
            correction back: ``high ≈ low @ W + b + model(molecule)``, with ``low`` the
            molecule's own low-fidelity labels (``transductive``: they are known for every
            molecule, the test molecules included) or the pretrained model's prediction of
            them (``inductive``); ``W``, ``b`` fitted by least squares on the high-fidelity
            training molecules over every low-fidelity target of the model
            (:class:`chemgraph.train.delta.DeltaLearning`). Each fine-tuned checkpoint holds
            the correction (and, ``inductive``, the pretrained model), so that ``chemgraph
            predict`` gives high-fidelity values: a ``transductive`` one reads each molecule's
            low-fidelity values from the input columns named as the run's
            (:attr:`MultiFidelityData.low_fidelity_columns`). ``high_fidelity_only`` has
            no low-fidelity level to correct, so ``strategies`` must hold a transfer strategy
            (else refused: it would change nothing). Default False: the low-fidelity level is
            only the pretraining target (Buterez et al. 2024 Table 5).
        stack_kernel_ridge: with ``delta_learning``, each transfer strategy also gets a
            stacked Δ-learning row ("+ kernel ridge (stacked Δ)"): ``high ≈ low @ W + b +
            w·model(molecule) + (1 − w)·kernel_ridge(molecule)``, the kernel ridge of the
            Δ-learning baseline (:func:`chemgraph.train.baselines.residual_kernel_ridge`,
            Morgan fingerprints, ``alpha`` on validation) fitted to the residuals of the same
            correction, ``w`` per target and seed from
            :data:`chemgraph.train.delta.STACK_WEIGHTS` by the high-fidelity validation RMSE
            (:func:`chemgraph.train.delta.stack_weights`; ``stack_weight`` in ``runs.csv``).
            Needs ``delta_learning``, a transfer strategy in ``strategies`` and SMILES (the
            fingerprints); refused otherwise, before any work. The checkpoints hold the
            unstacked model only (its own row), not the kernel ridge (they say so to
            ``chemgraph predict``: :attr:`chemgraph.train.delta.DeltaLearning.stacked`).
            Default False.
        baselines: compute the baselines of every setting on the same split
            (:func:`baseline_runs`) and put them in the table (default True).
        batch_size, finetune_batch_size (None = batch_size), learning_rate,
        finetune_learning_rate (None = learning_rate),
        weight_decay, gradient_clip: optimisation (AdamW).
        lr_schedule: ``"plateau"`` (halve the learning rate after ``lr_patience`` epochs
            without improvement; Buterez et al. 2024 SI 7) or ``"cosine"`` (linear warm-up,
            then cosine decay to ``final_lr_fraction`` of the peak over the phase's epochs, or
            over its ``*_max_minutes`` when that runs out first), for both phases
            (:class:`chemgraph.train.module.PropertyPredictionModule`).
        warmup_steps: linear warm-up over this many optimiser steps; None = none for
            ``"plateau"``, the first 5% of each phase for ``"cosine"``.
        final_lr_fraction: floor of the ``"cosine"`` schedule, as a fraction of the peak.
        pretrain_val_fraction: share of the pretraining pool held out for its learning curve.
        model: the registered model family (:data:`chemgraph.models.MODELS`); default
            ``esa-3d``, ESA over the edges of radius graphs of 3D structures (Buterez et al.
            2024 Table 5); a bond-graph family (``esa``, ``gin``, ...) on molecules' 2D graphs.
        featurizer: the family's featurizer (:meth:`chemgraph.models.ModelSpec.featurizer`):
            :class:`chemgraph.featurize.RadiusGraphFeaturizer` fields for ``esa-3d``, a preset
            name (e.g. ``canonical``) for a bond-graph family; empty = the family's default.
        model_options: fields of the family's configuration (e.g.
            :class:`chemgraph.models.ESAConfig`), over the family's
            :attr:`~chemgraph.models.ModelSpec.training_options` (none for ``esa-3d``).
        accelerator: Lightning accelerator; ``precision`` ``"auto"`` = bf16-mixed on CUDA,
            32-true on CPU (:func:`chemgraph.train.trainer.make_trainer`).
        num_workers: DataLoader workers.
        workers: processes that train the independent chains (strategy x seed x model) side
            by side, one torch thread each, at most the CPUs available and the chains; 1 = one
            after another in this process. The results are the same either way at the same
            thread count (every chain seeds itself); default 2.
        progress: show progress within each epoch (a bar on a terminal, else a line every
            tenth of an epoch, :class:`chemgraph.train.callbacks.EpochProgress`) and log one
            line per epoch.

    Raises:
        ConfigError: a bad setting (named, with what is allowed; by its flag on ``chemgraph
            transfer``'s command line, :func:`chemgraph.errors.setting`).
    """

    strategies: list[str] = field(default_factory=lambda: list(STRATEGIES))
    seeds: int = 5
    pretrain_epochs: int = 150
    pretrain_max_minutes: float | None = None
    finetune_max_epochs: int = 300
    finetune_max_minutes: float | None = None
    early_stopping_patience: int = 30
    lr_patience: int = 15
    freeze_encoder: bool = False
    joint_targets: bool = False
    delta_learning: bool = False
    stack_kernel_ridge: bool = False
    baselines: bool = True
    batch_size: int = 128
    finetune_batch_size: int | None = None
    learning_rate: float = 1e-4
    finetune_learning_rate: float | None = None
    weight_decay: float = 1e-2
    lr_schedule: str = "plateau"
    warmup_steps: int | None = None
    final_lr_fraction: float = 0.01
    gradient_clip: float = 0.5
    pretrain_val_fraction: float = 0.05
    model: str = "esa-3d"
    featurizer: dict[str, Any] | str = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)
    accelerator: str = "auto"
    precision: str = "auto"
    num_workers: int = 0
    workers: int = 2
    progress: bool = True

    NUMBERS = {
        "seeds": (int, 1), "pretrain_epochs": (int, 1), "finetune_max_epochs": (int, 1),
        "batch_size": (int, 1), "finetune_batch_size": (int, 1),
        "early_stopping_patience": (int, 0), "lr_patience": (int, 0), "warmup_steps": (int, 0),
        "num_workers": (int, 0), "workers": (int, 1), "learning_rate": (float, 0.0),
        "finetune_learning_rate": (float, 0.0), "weight_decay": (float, 0.0),
        "gradient_clip": (float, 0.0), "pretrain_val_fraction": (float, 0.0),
        "pretrain_max_minutes": (float, 0.0), "finetune_max_minutes": (float, 0.0),
        "final_lr_fraction": (float, 0.0),
    }  # fmt: skip
    CHOICES = {"lr_schedule": LR_SCHEDULES}

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise ConfigError(
                f"{setting('strategies')} must be a non-empty subset of {STRATEGIES}: {unknown}"
            )
        for name in ("joint_targets", "baselines", *TRANSFER_ONLY_SETTINGS):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        corrections = [name for name in TRANSFER_ONLY_SETTINGS if getattr(self, name)]
        if corrections and not any(s in DELTA_STRATEGIES for s in self.strategies):
            names = " and ".join(setting(name) for name in corrections)
            raise ConfigError(
                f"{names} appl{'y' if len(corrections) > 1 else 'ies'} to the transfer "
                f"strategies ({', '.join(DELTA_STRATEGIES)}) only, and {setting('strategies')} "
                f"has none ({', '.join(self.strategies)}): add one, or "
                f"{_turned_off(*corrections)}"
            )
        if self.stack_kernel_ridge and not self.delta_learning:
            raise ConfigError(
                f"{setting('stack_kernel_ridge')} blends two Δ-learning models: it needs "
                f"{setting('delta_learning', True)}"
            )
        if not 0 < self.pretrain_val_fraction < 1:
            raise ConfigError(
                f"pretrain_val_fraction must be in (0, 1), got {self.pretrain_val_fraction}"
            )
        try:
            spec = get_model_spec(self.model)
            self.graph_featurizer  # noqa: B018  (validates the featurizer fields)
            self.model_options = {**spec.training_options, **self.model_options}
            spec.config_class.check_options(self.model_options)
        except ValueError as error:
            raise ConfigError(str(error)) from None

    @property
    def graph_featurizer(self) -> FeaturizerPreset | RadiusGraphFeaturizer:
        """The model family's featurizer of :attr:`featurizer`
        (:meth:`chemgraph.models.ModelSpec.featurizer`)."""
        return get_model_spec(self.model).featurizer(self.featurizer or None)


def collate(config: TransferConfig, module: PropertyPredictionModule):
    """The DataLoader collate of ``module`` on ``config``'s graphs
    (:meth:`chemgraph.models.ModelSpec.collate`: for ``esa-3d`` the Gaussian distance features
    are expanded per batch, so the stored graphs keep one float per edge)."""
    return get_model_spec(config.model).collate(module.model.config, config.graph_featurizer)


def model_label(model: str) -> str:
    """The ``method`` of a model family's rows in :func:`results_table`: ``"ESA"`` for
    ``esa`` and ``esa-3d`` alike (the table's setting says which), ``"GIN"`` for ``gin``."""
    return model.upper().removesuffix("-3D")


def _transformed_graphs(data: MultiFidelityData, config: TransferConfig) -> MultiFidelityData:
    """``data`` with the family's per-molecule graph transform applied once (e.g. Graphormer's
    shortest paths; :meth:`chemgraph.models.ModelSpec.transform_graphs`)."""
    spec = get_model_spec(config.model)
    if spec.graph_transform is None:
        return data
    model_config = spec.config_class(
        **{**config.model_options, **spec.input_options(config.graph_featurizer), "num_outputs": 1}
    )
    return dataclasses.replace(data, graphs=spec.transform_graphs(model_config, data.graphs))


def _fit(
    module: PropertyPredictionModule,
    train_set: MoleculeDataset,
    val_set: MoleculeDataset,
    config: TransferConfig,
    *,
    max_epochs: int,
    max_minutes: float | None,
    seed: int,
    checkpoint_dir: Path | None,
    batch_size: int,
) -> tuple[list[dict[str, float]], int]:
    """Train ``module``. With ``checkpoint_dir``: early stopping on the validation loss, then
    the best weights are loaded (their checkpoint, ``checkpoint_dir/best.ckpt``, is kept for
    ``chemgraph predict``; a Δ-learning module's holds its correction,
    ``module.delta_learning``); without: the last weights stay.

    Returns:
        The per-epoch losses and the number of epochs run.
    """
    spec = get_model_spec(config.model)
    data = MoleculeDataModule(
        train_set, val_set, None, collate(config, module), batch_size, config.num_workers, seed,
        size_buckets=spec.padded_batches,
    )  # fmt: skip
    history = LossHistory(log_epochs=config.progress)
    progress = [EpochProgress()] if config.progress and _PROGRESS_BARS else []
    result = fit(
        module,
        data,
        budget_hint="raise finetune_max_minutes or finetune_max_epochs",
        quiet=True,  # a banner per Trainer would drown the epoch lines
        max_epochs=max_epochs,
        max_minutes=max_minutes,
        gradient_clip=config.gradient_clip,
        checkpoint_dir=checkpoint_dir,
        early_stopping_patience=None if checkpoint_dir is None else config.early_stopping_patience,
        callbacks=[*progress, history],
        accelerator=config.accelerator,
        precision=config.precision,
    )
    return history.epochs, result.trainer.current_epoch


def build_module(
    config: TransferConfig,
    targets: list[str],
    labels: torch.Tensor,
    learning_rate: float,
    max_minutes: float | None = None,
    train_fingerprints: dict | None = None,
) -> PropertyPredictionModule:
    """A fresh regression module of ``config``'s model family (random weights;
    :func:`chemgraph.train.module.build_property_module`).

    Args:
        config: the model and optimisation settings (``lr_schedule``, ``warmup_steps``,
            ``final_lr_fraction``, ``lr_patience`` among them).
        targets: the ``T`` target names.
        labels: ``float32 [N, T]`` training labels (NaN = missing): the target scaler is fitted
            to them.
        learning_rate: peak AdamW learning rate (pretraining or fine-tuning).
        max_minutes: the phase's wall-clock budget (``pretrain_max_minutes`` or
            ``finetune_max_minutes``), so that a cosine schedule decays over it when it runs
            out before the planned epochs; None = none.
        train_fingerprints: the training molecules' packed Morgan fingerprints, kept in the
            checkpoint for ``chemgraph predict``'s applicability domain
            (:func:`training_fingerprints`); None = none.
    """
    return build_property_module(
        config.model, config.graph_featurizer, targets, "regression", labels,
        config.model_options, learning_rate=learning_rate, weight_decay=config.weight_decay,
        lr_schedule=config.lr_schedule, warmup_steps=config.warmup_steps,
        lr_patience=config.lr_patience, max_minutes=max_minutes,
        final_lr_fraction=config.final_lr_fraction, train_fingerprints=train_fingerprints,
    )  # fmt: skip


def training_fingerprints(data: MultiFidelityData, index: np.ndarray) -> dict | None:
    """The packed Morgan fingerprints of molecules ``index`` of ``data`` (the high-fidelity
    training molecules of a fine-tuned model), as ``chemgraph train`` stores them in its
    checkpoints (:class:`chemgraph.data.applicability.TrainingFingerprints`); None when
    ``data`` has no SMILES (structures only)."""
    from chemgraph.chem import mols_from_smiles
    from chemgraph.data.applicability import TrainingFingerprints

    if data.smiles is None:
        return None
    mols = mols_from_smiles([data.smiles[i] for i in index])  # every one parsed when read
    return TrainingFingerprints.from_mols(mols).to_dict()


def target_groups(targets: list[str], joint: bool) -> list[list[int]]:
    """The targets of each model a run trains, as positions in ``targets``: one group of every
    target (``joint``) or one group per target."""
    if joint:
        return [list(range(len(targets)))]
    return [[t] for t in range(len(targets))]


def run_transfer(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: str | Path,
    pretrained_cache: dict | None = None,
    unlabelled_ids: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Run every strategy for every seed and every model (:func:`target_groups`); write
    results, table, learning curves.

    Each model is one chain: pretraining on the low-fidelity labels of its targets (not for
    ``high_fidelity_only``), then fine-tuning on their high-fidelity labels. With
    ``config.joint_targets`` one model per strategy and seed predicts every target; otherwise
    each target has its own chain and a model with one output. The chains are independent
    (each seeds itself): ``config.workers`` processes train them side by side, with the same
    results as one after another at the same thread count (:func:`_run_chains`).

    Writes to ``out``: ``runs.csv`` (strategy, seed, target, model (the model family, e.g.
    ``esa``), targets (the model's targets joined by ``+``), test RMSE/MAE and validation RMSE
    (``val_rmse``) in the labels' units, epochs and wall-clock seconds of each phase of that
    model), ``table.md`` / ``table.csv`` (:func:`results_table`), ``learning_curves.csv``
    (strategy, seed, targets, phase, epoch,
    losses), ``curves/*.png``, ``predictions.csv``
    (test-set predictions of every run), ``ensembles.csv`` (:func:`seed_ensembles`: the test
    RMSE of each strategy's mean prediction over its seeds, what ``predictions_unlabelled.csv``
    gives, and ``chemgraph predict`` with every seed's checkpoint for the unstacked strategies;
    also under the table in ``table.md``) and ``config.yaml``.

    ``pretrained_cache``: a dict that keeps every pretrained model, keyed by strategy, seed and
    targets, and gives it to a later run with the same key instead of pretraining again (for
    runs whose pretraining pools are equal: :func:`label_curve`; the pool depends on the
    test molecules only); None = always pretrain.

    With ``config.baselines`` it also writes ``baselines.csv`` (:func:`baseline_runs`), adds the
    baselines' test predictions to ``predictions.csv`` and their rows to the table. With
    ``config.stack_kernel_ridge`` every Δ-learning chain also gives a stacked Δ-learning model
    (:func:`_stacked_chain`), strategy :data:`STACKED` in ``runs.csv`` (with its
    ``stack_weight``), ``predictions.csv``, ``predictions_unlabelled.csv`` and the table.

    ``unlabelled_ids``: one identifier per molecule of ``data``; with it every fine-tuned model
    also predicts the molecules without every high-fidelity label, written to
    ``predictions_unlabelled.csv`` (per strategy: the mean over seeds and the sample standard
    deviation, ``ddof=1``; NaN with one seed, where no spread is defined); None = not.

    Returns:
        ``(runs, baselines)``: the rows of ``runs.csv`` and of ``baselines.csv`` (None without
        ``config.baselines``).

    With ``delta_learning`` (or ``stack_kernel_ridge``) and ``high_fidelity_only`` among
    the strategies, the log says which strategies it applies to.

    Raises:
        ConfigError: ``stack_kernel_ridge`` without SMILES (before anything is written).
        ValueError: a fine-tuning stopped before its first validation (time or epoch limit).
            Any error of a chain carries a note naming the chain (strategy, seed, target).
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM while worker processes train
            (main thread only); the workers are stopped first.
    """
    out = Path(out)
    _check_stacking(data, config)
    corrections = [name for name in TRANSFER_ONLY_SETTINGS if getattr(config, name)]
    plain = [s for s in config.strategies if s not in DELTA_STRATEGIES]
    if corrections and plain:
        log.info(
            "%s: for %s; not for %s (no low-fidelity model to correct)",
            " and ".join(setting(name) for name in corrections),
            ", ".join(s for s in config.strategies if s in DELTA_STRATEGIES), ", ".join(plain),
        )  # fmt: skip
    (out / "curves").mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    data = _transformed_graphs(data, config)
    targets = list(data.targets)
    chains = [
        _Chain(strategy, seed, tuple(columns), tuple(targets[c] for c in columns),
               config.joint_targets)
        for seed in range(config.seeds)
        for strategy in config.strategies
        for columns in target_groups(targets, config.joint_targets)
    ]  # fmt: skip
    unlabelled = (
        None
        if unlabelled_ids is None
        else np.flatnonzero(torch.isnan(data.high).any(dim=1).numpy())
    )
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]] = {}

    def finished(index: int, result: tuple[np.ndarray, np.ndarray, dict[str, Any]]) -> None:
        results[index] = result
        chain, (truth, predicted, _) = chains[index], result
        for t, target in enumerate(chain.names):
            rmse = regression_metrics(truth[:, t], predicted[:, t])["rmse"]
            log.info("%s seed %d %s: test RMSE %.4f", chain.strategy, chain.seed, target, rmse)
        # partial results survive, in chain order whatever order the chains finish in
        partial = [
            row for i in sorted(results) for row in _chain_rows(chains[i], results[i], config.model)
        ]
        pd.DataFrame(partial).to_csv(out / "runs.csv", index=False)

    _run_chains(chains, data, split, config, out, pretrained_cache, unlabelled, finished)
    fingerprints = (
        morgan_fingerprints(list(data.smiles))
        if data.smiles is not None and (config.baselines or config.stack_kernel_ridge)
        else None
    )
    for index in [i for i in range(len(chains)) if "correction" in results[i][2]]:
        chains.append(_stacked(chains[index]))
        results[len(chains) - 1] = _stacked_chain(
            data, split, chains[index], results[index], fingerprints, unlabelled
        )
    rows, curves, frames = [], [], {}
    for index, chain in enumerate(chains):
        truth, predicted, record = results[index]
        rows += _chain_rows(chain, results[index], config.model)
        curves += [
            dict(strategy=chain.strategy, seed=chain.seed, targets=chain.model, **e)
            for e in record["curves"]
        ]
        frame = frames.setdefault(
            (chain.seed, chain.strategy),
            _test_frame(data, split, chain.strategy, chain.seed),
        )
        for t, target in enumerate(chain.names):
            frame[target] = truth[:, t]
            frame[f"{target}_pred"] = predicted[:, t]
    predictions = list(frames.values())
    if unlabelled is not None:
        _write_unlabelled(data, chains, results, unlabelled, unlabelled_ids, out)
    runs = pd.DataFrame(rows)
    runs.to_csv(out / "runs.csv", index=False)  # with the stacked rows, when any
    pd.DataFrame(curves).to_csv(out / "learning_curves.csv", index=False)
    baselines = None
    if config.baselines:
        baselines, baseline_frames = baseline_runs(data, split, config.strategies, fingerprints)
        baselines.to_csv(out / "baselines.csv", index=False)
    ensembles = seed_ensembles(
        pd.concat(predictions, ignore_index=True), data.high_name, model_label(config.model)
    )
    ensembles.to_csv(out / "ensembles.csv", index=False)
    if config.baselines:
        predictions += baseline_frames
    pd.concat(predictions, ignore_index=True).to_csv(out / "predictions.csv", index=False)
    table = results_table(runs, data.high_name, model_label(config.model), baselines)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(format_table(table, ensembles) + "\n")
    return runs, baselines


def _stacking_needs_smiles(why: str) -> str:
    """The refusal of ``stack_kernel_ridge`` for molecules without SMILES, ``why`` saying
    which."""
    return (
        f"{setting('stack_kernel_ridge')} needs every molecule's SMILES (its kernel ridge reads "
        f"their Morgan fingerprints), and {why}: give them, or "
        f"{_turned_off('stack_kernel_ridge')}"
    )


def _check_stacking(data: MultiFidelityData, config: TransferConfig) -> None:
    """Refuse ``stack_kernel_ridge`` on molecules without SMILES (``data.smiles`` None).

    Raises:
        ConfigError: naming the setting and what to do.
    """
    if config.stack_kernel_ridge and data.smiles is None:
        raise ConfigError(_stacking_needs_smiles("the molecules have none"))


def label_curve(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    counts: list[int],
    out: str | Path,
    unit: str | None = None,
    pretrained_cache: dict | None = None,
) -> pd.DataFrame:
    """Test RMSE against the number of high-fidelity training labels: how many expensive
    labels transfer learning saves.

    For every ``n`` of ``counts``, :func:`run_transfer` on the first ``n`` molecules of a
    seeded (seed 0) permutation of ``split["train"]`` (so every smaller training set is part of
    every larger one), the same validation and test molecules, into ``out/labels_<n>``. Each
    method of a curve: the no-transfer strategy, the best baseline of each setting at that
    ``n`` (by test RMSE, so the curve is a lower envelope of the baselines), and each transfer
    strategy. The pretraining runs once per strategy, seed and model and serves every ``n``
    (``pretrained_cache`` of :func:`run_transfer`; pass the dict of an earlier run on the same
    split to reuse its pretrained models too).

    Writes ``out/label_curve.csv`` and ``out/label_curve.png``
    (:func:`chemgraph.train.plots.plot_label_curve`).

    Returns:
        Rows ``target``, ``method``, ``labels``, ``rmse_mean``, ``rmse_std``, ``seeds``.

    Raises:
        ValueError: a count below 2 or above the training molecules.
    """
    out = Path(out)
    train = split["train"]
    bad = [n for n in counts if not 2 <= n <= len(train)]
    if bad:
        raise ValueError(f"label counts must be in 2..{len(train)}, got {bad}")
    order = np.random.default_rng(0).permutation(train)
    high_name = data.high_name
    records = []
    pretrained = {} if pretrained_cache is None else pretrained_cache  # pools: test-only
    for n in counts:
        subset = {**split, "train": np.sort(order[:n])}
        runs, baselines = run_transfer(data, subset, config, out / f"labels_{n}", pretrained)
        table = results_table(runs, high_name, baselines=baselines)
        for target, rows in table.groupby("target", sort=False):
            chosen = [rows[rows["method"] != "baseline"]]
            for kind in ("transductive", "inductive"):
                if STRATEGY_LABELS[kind] not in set(rows["strategy"]):
                    continue
                pool = rows[(rows["method"] == "baseline") & rows["setting"].isin(["both", kind])]
                if len(pool):
                    best = pool.loc[[pool["rmse_mean"].idxmin()]].copy()
                    best["strategy"] = f"best {kind} baseline"
                    chosen.append(best)
            for row in pd.concat(chosen).itertuples(index=False):
                records.append(
                    dict(
                        target=target, method=row.strategy, labels=n, rmse_mean=row.rmse_mean,
                        rmse_std=row.rmse_std, seeds=row.seeds,
                    )
                )  # fmt: skip
    curve = pd.DataFrame(records)
    curve.to_csv(out / "label_curve.csv", index=False)
    plot_label_curve(curve, out / "label_curve.png", unit)
    return curve


def baseline_runs(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategies: list[str],
    fingerprints: np.ndarray | None = None,
) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The baselines of the settings of ``strategies`` on ``split``
    (:func:`chemgraph.train.baselines.transfer_baselines`: the fingerprint ones need
    ``data.smiles``), their test RMSE and MAE per target, and their test predictions.
    ``fingerprints``: the Morgan bits ``[len(data), 2048]`` of every molecule when already
    computed (:func:`chemgraph.train.baselines.morgan_fingerprints` of ``data.smiles``);
    None = computed here.

    Returns:
        ``(rows, predictions)``: rows with ``baseline`` (label), ``key``, ``setting``
        (``both``, ``inductive``, ``transductive``), ``target``, ``rmse``, ``mae``, ``seconds``;
        one predictions frame per baseline in the layout of ``predictions.csv`` (``strategy``
        = the baseline's key, ``seed`` empty).
    """
    started = time.perf_counter()
    if fingerprints is None and data.smiles is not None:
        fingerprints = morgan_fingerprints(list(data.smiles))
    pool = pretraining_pool(data, split, "inductive") if "inductive" in strategies else None
    predicted = transfer_baselines(data.low.numpy(), data.high.numpy(), fingerprints, split, pool)
    seconds = time.perf_counter() - started
    names = baseline_names(data.low_name, data.high_name)
    settings = {key: setting for setting, keys in BASELINES.items() for key in keys}
    truth = data.high[split["test"]].numpy()
    rows, frames = [], []
    for key, values in predicted.items():
        frame = _test_frame(data, split, key, pd.NA)
        for t, target in enumerate(data.targets):
            metrics = regression_metrics(truth[:, t], values[:, t])
            rows.append(
                dict(
                    baseline=names[key], key=key, setting=settings[key], target=target,
                    rmse=metrics["rmse"], mae=metrics["mae"], seconds=seconds,
                )
            )  # fmt: skip
            frame[target] = truth[:, t]
            frame[f"{target}_pred"] = values[:, t]
        frames.append(frame)
    log.info("baselines: %d in %.1f s", len(predicted), seconds)
    return pd.DataFrame(rows), frames


def _test_frame(
    data: MultiFidelityData, split: dict[str, np.ndarray], strategy: str, seed: Any
) -> pd.DataFrame:
    """The first columns of ``predictions.csv`` for the test molecules: ``strategy``,
    ``seed``, ``id`` (``data.ids``) and ``smiles`` when ``data`` has them."""
    test = split["test"]
    frame = pd.DataFrame({"strategy": strategy, "seed": seed, "id": data.ids[test]})
    if data.smiles is not None:
        frame["smiles"] = [data.smiles[i] for i in test]
    return frame


@dataclass(frozen=True)
class _Chain:
    """One model of :func:`run_transfer`: a strategy, a seed and the targets (positions in
    ``data.targets`` and names) of one model."""

    strategy: str
    seed: int
    columns: tuple[int, ...]
    names: tuple[str, ...]
    joint: bool

    @property
    def model(self) -> str:
        return "+".join(self.names)

    @property
    def stem(self) -> str:
        """The name of its files; the joint model keeps the names of the files before
        per-target chains existed."""
        return f"{self.strategy}_seed{self.seed}" + ("" if self.joint else f"_{self.model}")

    @property
    def label(self) -> str:
        return f"{self.strategy} seed {self.seed}" + ("" if self.joint else f" {self.names[0]}")


def _chain_rows(
    chain: _Chain, result: tuple[np.ndarray, np.ndarray, dict[str, Any]], family: str
) -> list[dict[str, Any]]:
    """The rows of ``runs.csv`` of one chain, one per target: ``model`` the model family
    (``family``, e.g. ``esa``), ``targets`` the chain's model (``homo+lumo`` for a joint one)."""
    truth, predicted, record = result
    phases = {k: record[k] for k in PHASE_COLUMNS}
    rows = []
    for t, target in enumerate(chain.names):
        metrics = regression_metrics(truth[:, t], predicted[:, t])
        rows.append(
            dict(
                strategy=chain.strategy, seed=chain.seed, target=target, model=family,
                targets=chain.model,
                rmse=metrics["rmse"], mae=metrics["mae"], val_rmse=record["val_rmse"][t],
                **phases,
            )
        )  # fmt: skip
        if "stack_weight" in record:
            rows[-1]["stack_weight"] = record["stack_weight"][t]
    return rows


STACKED = {"inductive": "inductive_stacked", "transductive": "transductive_stacked"}
"""The stacked Δ-learning rows of each transfer strategy (``stack_kernel_ridge``), by the name
``runs.csv`` and ``predictions.csv`` give them."""


def _stacked(chain: _Chain) -> _Chain:
    return dataclasses.replace(chain, strategy=STACKED[chain.strategy])


def _stacked_chain(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    chain: _Chain,
    result: tuple[np.ndarray, np.ndarray, dict[str, Any]],
    fingerprints: np.ndarray,
    unlabelled: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The stacked Δ-learning model of a Δ-learning chain (``stack_kernel_ridge``;
    :mod:`chemgraph.train.delta`): the kernel ridge of the Δ-learning baseline
    (:func:`chemgraph.train.baselines.residual_kernel_ridge`) fitted to the residuals of the
    chain's own correction (applied in float64, as the baselines do: on the transductive
    joint model's training molecules it is the ``delta_all`` baseline), blended with the
    chain's predictions with the weights :func:`chemgraph.train.delta.stack_weights` chooses
    on the validation molecules.

    Returns:
        ``(truth, predicted, record)`` as :func:`_train_chain`'s: the test labels, the
        stacked test predictions, and the chain's record with the stacked ``val_rmse`` (on the
        molecules the weights were chosen on, so optimistic) and ``unlabelled`` predictions,
        ``stack_weight`` (``w`` per target), no ``curves``.
    """
    _, predicted, record = result
    columns = list(chain.columns)
    molecules = [split[name] for name in SPLITS] + ([] if unlabelled is None else [unlabelled])
    base = np.full((len(data), len(columns)), np.nan)
    for index, low in zip(molecules, record["low"]):
        base[index] = record["correction"].predict(low)
    high = data.high[:, columns].numpy()
    kernel_ridge = residual_kernel_ridge(base, high, fingerprints, split)
    val, test = split["val"], split["test"]
    weights = stack_weights(
        high[val], record["validation"], base[val] + kernel_ridge.predict(fingerprints[val])
    )
    network = [record["validation"], predicted, record["unlabelled"]]
    stacked = [
        None if values is None else stack(values, base[index] + kernel_ridge.predict(
            fingerprints[index]), weights)
        for index, values in zip([val, test, unlabelled], network)
    ]  # fmt: skip
    val_rmse = [
        regression_metrics(high[val, t], stacked[0][:, t])["rmse"] for t in range(len(columns))
    ]
    for t, target in enumerate(chain.names):
        log.info(
            "%s seed %d %s: stacked Δ-learning, weight %.1f on the network, %.1f on the kernel "
            "ridge (alpha %g); validation RMSE %.4f (network alone %.4f)",
            chain.strategy, chain.seed, target, weights[t], 1 - weights[t],
            kernel_ridge.alphas[t], val_rmse[t], record["val_rmse"][t],
        )  # fmt: skip
    stacked_record = {
        key: value
        for key, value in record.items()
        if key not in ("validation", "low", "correction")
    }
    stacked_record.update(
        val_rmse=val_rmse, unlabelled=stacked[2], stack_weight=list(weights), curves=[]
    )
    return high[test], stacked[1], stacked_record


PHASE_COLUMNS = ("pretrain_epochs", "finetune_epochs", "pretrain_seconds", "finetune_seconds")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _run_chains(
    chains: list[_Chain],
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: Path,
    pretrained_cache: dict | None,
    unlabelled: np.ndarray | None,
    finished: Callable[[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]], None],
) -> None:
    """Train every chain (:func:`_train_chain`) and call ``finished(index, result)`` as each
    completes: in this process, one after another, with ``config.workers`` 1 (or 1 CPU or 1
    chain), else in ``min(workers, CPUs, chains)`` worker processes (``spawn``, one torch
    thread each) that take the next chain as they finish one.

    Every chain seeds itself, so its result does not depend on where or after which chain it
    runs. A worker's exception is raised here, with a note naming the chain and the worker's
    traceback as its cause; SIGINT and SIGTERM raise
    :class:`~chemgraph._interrupts.Interrupted`. On any error the workers are killed at once
    (they die with this process too: :func:`~chemgraph._interrupts.die_with_parent`).
    """
    workers = min(config.workers, available_cpus(), len(chains))
    if workers <= 1:
        for index, chain in enumerate(chains):
            try:
                result = _train_chain(data, split, config, chain, out, pretrained_cache, unlabelled)
            except Exception as error:
                error.add_note(f"while training {chain.label}")
                raise
            finished(index, result)
        return
    log.info("%d chains in %d worker processes, one torch thread each", len(chains), workers)
    context = multiprocessing.get_context("spawn")
    level = logging.getLogger("chemgraph").getEffectiveLevel()
    payload = (data, split, config, out, unlabelled)
    pending = deque(enumerate(chains))
    pool: list[_ChainWorker] = []
    try:
        with interrupts_raise():
            pool += [_ChainWorker(context, level) for _ in range(workers)]
            for worker in pool:  # after every start: the workers import in parallel
                _send(worker.connection, payload)
            while True:
                for worker in pool:
                    if worker.index is None and pending:
                        index, chain = pending.popleft()
                        key = (chain.strategy, chain.seed, chain.columns)
                        cached = None if pretrained_cache is None else pretrained_cache.get(key)
                        worker.assign(index, chain, cached, pretrained_cache is not None)
                busy = [w for w in pool if w.index is not None]
                if not busy:
                    break
                wait([w.connection for w in busy] + [w.process.sentinel for w in busy])
                for worker in busy:
                    message = worker.receive()
                    chain = chains[worker.index]
                    if message is None:
                        if worker.process.is_alive():
                            continue
                        raise RuntimeError(
                            f"the worker training {chain.label} died "
                            f"(exit code {worker.process.exitcode})"
                        )
                    kind, payload_back = message
                    if kind == "error":
                        error, detail = payload_back
                        error.add_note(f"in the worker process training {chain.label}")
                        raise error from _RemoteTraceback(detail)
                    result, pretrained = payload_back
                    if pretrained is not None:
                        pretrained_cache[(chain.strategy, chain.seed, chain.columns)] = pretrained
                    index, worker.index = worker.index, None
                    finished(index, result)
    except BaseException:  # an error or an interrupt: stop every worker at once
        for worker in pool:
            worker.kill()
        raise
    for worker in pool:
        worker.close()


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (shown as its cause)."""

    def __str__(self) -> str:
        return self.args[0]


class _ChainWorker:
    """One worker process of :func:`_run_chains`, its pipe and the chain it trains."""

    def __init__(self, context: Any, level: int) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_chain_worker, args=(child, level), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None

    def assign(self, index: int, chain: _Chain, cached: Any, keep_pretrained: bool) -> None:
        self.index = index
        _send(self.connection, (chain, cached, keep_pretrained))

    def receive(self) -> tuple[str, Any] | None:
        """The worker's message, if any; None also when its pipe is closed (it died)."""
        try:
            return _receive(self.connection) if self.connection.poll() else None
        except (EOFError, OSError):
            return None

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()

    def close(self) -> None:
        _send(self.connection, None)
        self.process.join()
        self.connection.close()


def _send(connection: Any, message: Any) -> None:
    """Send with plain pickle: ``Connection.send`` would move every tensor into shared memory
    behind a file descriptor of its own (torch's reductions), thousands for a data set."""
    connection.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _receive(connection: Any) -> Any:
    return pickle.loads(connection.recv_bytes())


_PROGRESS_BARS = True
"""False in the worker processes of :func:`_run_chains`: their in-epoch progress would
overwrite one another's on one terminal (the per-epoch log lines stay, prefixed by the
chain)."""


def _chain_worker(connection: Any, level: int) -> None:
    """A worker process of :func:`_run_chains`: receive ``(data, split, config, out,
    unlabelled)`` once, then train the chains it is sent until ``None`` or EOF, sending back
    ``("done", (result, pretrained cache entry or None))`` or ``("error", (exception,
    traceback text))``."""
    global _PROGRESS_BARS
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    die_with_parent()
    torch.set_num_threads(1)
    _PROGRESS_BARS = False
    from chemgraph.train.trainer import quiet_third_party_warnings

    quiet_third_party_warnings()
    logger = logging.getLogger("chemgraph")
    logger.setLevel(level)
    handler = logging.StreamHandler(sys.stdout)
    logger.addHandler(handler)
    try:
        data, split, config, out, unlabelled = _receive(connection)
    except EOFError:
        return
    while True:
        try:
            task = _receive(connection)
        except EOFError:
            return
        if task is None:
            return
        chain, cached, keep_pretrained = task
        handler.setFormatter(logging.Formatter(f"[{chain.label}] %(message)s"))
        key = (chain.strategy, chain.seed, chain.columns)
        cache = ({} if cached is None else {key: cached}) if keep_pretrained else None
        try:
            result = _train_chain(data, split, config, chain, out, cache, unlabelled)
        except Exception as error:  # noqa: BLE001 - sent to the parent, which raises it
            detail = f"in the worker training {chain.label}:\n{traceback.format_exc()}"
            try:
                pickle.dumps(error)
            except Exception:  # noqa: BLE001 - an exception that cannot cross processes
                error = RuntimeError(f"{type(error).__name__}: {error}")
            _send(connection, ("error", (error, detail)))
        else:
            pretrained = cache.get(key) if cache is not None else None
            _send(connection, ("done", (result, pretrained)))


def _train_chain(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    chain: _Chain,
    out: Path,
    pretrained_cache: dict | None = None,
    unlabelled: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One model of :func:`run_transfer`: pretraining (unless ``high_fidelity_only``) and
    fine-tuning on the targets ``chain.columns``; it seeds itself (``chain.seed``) before each
    phase, so its result does not depend on what ran before it in the process.

    Returns:
        ``(truth, predicted, record)``: high-fidelity test labels and predictions
        ``[n_test, len(columns)]``, and ``pretrain_epochs``, ``finetune_epochs``,
        ``pretrain_seconds``, ``finetune_seconds``, ``val_rmse`` (per target, the
        high-fidelity validation RMSE: what settings are chosen on), ``curves`` (the
        per-epoch losses, each with its ``phase``) and ``unlabelled`` (predictions
        ``[len(unlabelled), len(columns)]`` of the molecules ``unlabelled``; None without).
        A Δ-learning chain of a run with ``stack_kernel_ridge`` adds what
        :func:`_stacked_chain` needs: ``validation`` (the validation predictions), ``low``
        and ``correction`` (:func:`_delta_learning`'s values and its linear correction).
    """
    strategy, seed, columns, stem = chain.strategy, chain.seed, list(chain.columns), chain.stem
    targets, label = list(chain.names), chain.label
    finetune_lr = config.finetune_learning_rate or config.learning_rate
    high_train = data.dataset(split["train"], "high", columns)
    high_val = data.dataset(split["val"], "high", columns)
    high_test = data.dataset(split["test"], "high", columns)
    L.seed_everything(seed, workers=True, verbose=False)
    pretrained = None
    pretrain_epochs, pretrain_seconds, curves = 0, 0.0, []
    key = (strategy, seed, tuple(columns))
    if (
        strategy != "high_fidelity_only"
        and pretrained_cache is not None
        and key in pretrained_cache
    ):
        pretrained, pretrain_epochs, curves = pretrained_cache[key]
        log.info("%s: the pretrained model of an earlier run (same pool, seed, targets)", label)
    elif strategy != "high_fidelity_only":
        pool = pretraining_pool(data, split, strategy, columns)
        held_out = np.random.default_rng(seed).random(len(pool)) < config.pretrain_val_fraction
        held_out[0] |= not held_out.any()  # the learning curve needs one molecule
        pre_train = data.dataset(pool[~held_out], "low", columns)
        pre_val = data.dataset(pool[held_out], "low", columns)
        log.info("%s: pretraining on %d molecules", label, len(pre_train))
        pretrained = build_module(
            config, targets, pre_train.labels, config.learning_rate, config.pretrain_max_minutes
        )
        started = time.perf_counter()
        epochs, pretrain_epochs = _fit(
            pretrained, pre_train, pre_val, config, max_epochs=config.pretrain_epochs,
            max_minutes=config.pretrain_max_minutes, seed=seed, checkpoint_dir=None,
            batch_size=config.batch_size,
        )  # fmt: skip
        pretrain_seconds = time.perf_counter() - started
        curves += [dict(phase="pretrain", **e) for e in epochs]
        plot_learning_curve(
            epochs, out / "curves" / f"{stem}_pretrain.png",
            f"MSE of standardised {data.low_name} labels",
        )  # fmt: skip
        if pretrained_cache is not None:
            pretrained_cache[key] = (pretrained, pretrain_epochs, list(curves))
    # fine-tuning starts from the same random state whether the pretraining ran or was reused
    L.seed_everything(seed, workers=True, verbose=False)
    delta, low, bases = None, None, None
    if pretrained is not None and config.delta_learning:
        delta, low = _delta_learning(data, split, strategy, columns, pretrained, config, unlabelled)
        bases = tuple(torch.from_numpy(delta.base(x)) for x in low)
        high_train, high_val, high_test = (
            _with_labels(high, high.labels - base)
            for high, base in zip((high_train, high_val, high_test), bases)
        )
    module = build_module(
        config, targets, high_train.labels, finetune_lr, config.finetune_max_minutes,
        training_fingerprints(data, split["train"]),
    )  # fmt: skip
    module.delta_learning = delta  # its checkpoints hold the correction (chemgraph predict)
    if pretrained is not None:
        transfer_weights(pretrained, module, config.freeze_encoder)
    started = time.perf_counter()
    epochs, finetune_epochs = _fit(
        module, high_train, high_val, config, max_epochs=config.finetune_max_epochs,
        max_minutes=config.finetune_max_minutes, seed=seed,
        checkpoint_dir=out / "checkpoints" / stem,
        batch_size=config.finetune_batch_size or config.batch_size,
    )  # fmt: skip
    finetune_seconds = time.perf_counter() - started
    curves += [dict(phase="finetune", **e) for e in epochs]
    plot_learning_curve(
        epochs, out / "curves" / f"{stem}_finetune.png",
        f"MSE of standardised {data.high_name} labels",
    )  # fmt: skip
    builder = collate(config, module)
    graphs = [high_val.graphs, high_test.graphs]
    graphs += [] if unlabelled is None else [[data.graphs[i] for i in unlabelled]]
    outputs = []
    for position, molecules in enumerate(graphs, start=1):
        predicted = (
            predict_graphs(module, molecules, builder, config.batch_size)
            if len(molecules)
            else np.zeros((0, len(targets)), np.float32)
        )
        if bases is not None:  # back from the residual to the high-fidelity values
            predicted = predicted + bases[position].numpy()
        outputs.append(predicted)
    truths = [high_val.labels.numpy(), high_test.labels.numpy()]
    if bases is not None:
        truths = [truth + bases[position].numpy() for position, truth in enumerate(truths, 1)]
    (val_truth, truth), (val_predicted, predicted) = truths, outputs[:2]
    record = dict(
        pretrain_epochs=pretrain_epochs, finetune_epochs=finetune_epochs,
        pretrain_seconds=pretrain_seconds, finetune_seconds=finetune_seconds, curves=curves,
        val_rmse=[
            regression_metrics(val_truth[:, t], val_predicted[:, t])["rmse"]
            for t in range(len(targets))
        ],
        unlabelled=outputs[2] if unlabelled is not None else None,
    )  # fmt: skip
    if delta is not None and config.stack_kernel_ridge:  # what _stacked_chain needs
        record.update(validation=val_predicted, low=low, correction=delta.correction)
    return truth, predicted, record


def _with_labels(dataset: MoleculeDataset, labels: torch.Tensor) -> MoleculeDataset:
    return MoleculeDataset(
        dataset.graphs, labels, dataset.rows, dataset.smiles, dataset.target_columns
    )


def _delta_learning(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int],
    pretrained: PropertyPredictionModule,
    config: TransferConfig,
    unlabelled: np.ndarray | None = None,
) -> tuple[DeltaLearning, tuple[np.ndarray, ...]]:
    """The linear correction of ``delta_learning`` (:class:`chemgraph.train.delta.
    DeltaLearning`: fitted on the training molecules' high-fidelity labels, applied to the
    molecules' low-fidelity labels, ``transductive``, or to the pretrained model's predictions
    of them, ``inductive``, which it then holds) and what it is applied to, ``low``, for the
    train, val and test molecules (and the ``unlabelled`` ones, when given), ``float32 [n,
    len(columns)]`` each, in the low-fidelity units."""
    molecules = [split[name] for name in SPLITS] + ([] if unlabelled is None else [unlabelled])
    if strategy == "transductive":
        low = [data.low[index][:, columns].numpy() for index in molecules]
    else:
        builder = collate(config, pretrained)
        low = [
            predict_graphs(pretrained, [data.graphs[i] for i in index], builder, config.batch_size)
            if len(index)
            else np.zeros((0, len(columns)), np.float32)
            for index in molecules
        ]
        truth = data.low[split["test"]][:, columns].numpy()
        errors = [
            regression_metrics(truth[:, i], low[2][:, i])["rmse"] for i in range(len(columns))
        ]
        log.info(
            "inductive: the pretrained model's %s test RMSE %s", data.low_name,
            ", ".join(f"{data.low_fidelity_columns[c]} {e:.4f}" for c, e in zip(columns, errors)),
        )  # fmt: skip
    delta = DeltaLearning.fit(
        strategy,
        [data.low_fidelity_columns[c] for c in columns],
        low[0],
        data.high[split["train"]][:, columns].numpy(),
        pretrained if strategy == "inductive" else None,
        stacked=config.stack_kernel_ridge,
    )
    return delta, tuple(low)


STRATEGY_LABELS = {
    "inductive": "Ind.",
    "inductive_stacked": "Ind. + kernel ridge (stacked Δ)",
    "transductive": "Trans.",
    "transductive_stacked": "Trans. + kernel ridge (stacked Δ)",
}
SETTINGS = {
    "high_fidelity_only": "none",
    "inductive": "inductive",
    "inductive_stacked": "inductive",
    "transductive": "transductive",
    "transductive_stacked": "transductive",
}


def _spread_text(std: float, seeds: int) -> str:
    """``"± 0.012"``, or ``"± undefined"`` for one seed (no sample spread), nothing for a
    deterministic baseline (``seeds == 0``)."""
    if seeds == 0:
        return ""
    return " ± undefined" if seeds < 2 or np.isnan(std) else f" ± {std:.3f}"


def results_table(
    runs: pd.DataFrame,
    high_name: str = "GW",
    model: str = "ESA",
    baselines: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Buterez et al. 2024 Table 5 layout, with the baselines: one row per (target, method),
    test RMSE mean ± std.

    Args:
        runs: rows with ``strategy``, ``seed``, ``target``, ``rmse`` (:func:`run_transfer`;
            a stacked Δ-learning row, :data:`STACKED`, has its own row after its strategy's).
        high_name: label of the no-transfer strategy (``"GW"`` -> "GW" row, as in Table 5).
        model: the model's name, written into the ``method`` of its rows.
        baselines: rows with ``baseline`` (its label), ``setting`` (``both``, ``inductive``,
            ``transductive``), ``target``, ``rmse`` (:func:`baseline_runs`); None = none.

    Returns:
        Columns ``target``, ``strategy`` (``GW``, ``Ind.``, ``Trans.``, ``Trans. + kernel ridge
        (stacked Δ)`` … or the baseline's label), ``setting`` (``none`` for the no-transfer
        row), ``method`` (the model, ``ESA + kernel ridge`` for a stacked row, or
        ``baseline``), ``test RMSE`` (``"0.152 ± 0.003"``; ``"0.152 ± undefined"`` for one
        seed; ``"0.152"`` for a baseline, which no seed changes), ``rmse_mean``, ``rmse_std``
        (sample standard deviation, ddof 1; NaN for one seed and for a baseline), ``seeds``
        (``Int64``; missing for a baseline, which is deterministic), and, when ``runs`` has
        stacked rows, ``stack weight``: a stacked row's ``w`` of each seed in seed order
        (``"0.8, 0.7"``; :data:`KERNEL_RIDGE_ALONE` when every ``w`` is 0, ``"1 (network
        alone)"`` when every one is 1), empty for the other rows. ``target`` as the user
        named it.
    """
    labels = {"high_fidelity_only": high_name, **STRATEGY_LABELS}
    records = []
    targets = list(dict.fromkeys(runs["target"])) if len(runs) else []
    if baselines is not None and len(baselines):
        targets += [t for t in dict.fromkeys(baselines["target"]) if t not in targets]
    for target in targets:
        for strategy in [s for s in SETTINGS if s in set(runs.get("strategy", []))]:
            values = runs[(runs.target == target) & (runs.strategy == strategy)]["rmse"]
            if values.empty:
                continue
            std = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
            stacked = strategy in STACKED.values()
            records.append(
                {
                    "target": target, "strategy": labels[strategy],
                    "setting": SETTINGS[strategy],
                    "method": f"{model} + kernel ridge" if stacked else model,
                    "test RMSE": f"{values.mean():.3f}{_spread_text(std, len(values))}",
                    "rmse_mean": float(values.mean()), "rmse_std": std, "seeds": len(values),
                }
            )  # fmt: skip
            if stacked:
                rows = runs[(runs.target == target) & (runs.strategy == strategy)]
                records[-1]["stack weight"] = _weights_text(rows.sort_values("seed"))
        if baselines is None or not len(baselines):
            continue
        for row in baselines[baselines.target == target].itertuples(index=False):
            records.append(
                {
                    "target": target, "strategy": row.baseline, "setting": row.setting,
                    "method": "baseline", "test RMSE": f"{row.rmse:.3f}",
                    "rmse_mean": float(row.rmse), "rmse_std": float("nan"), "seeds": pd.NA,
                }
            )  # fmt: skip
    columns = ["target", "strategy", "setting", "method", "test RMSE", "rmse_mean", "rmse_std"]
    columns.append("seeds")
    if any("stack weight" in record for record in records):
        columns.append("stack weight")
    table = pd.DataFrame(records, columns=columns)
    return table.astype({"seeds": "Int64"})


def seed_ensembles(
    predictions: pd.DataFrame, high_name: str = "GW", model: str = "ESA"
) -> pd.DataFrame:
    """The test RMSE of every trained strategy's seed ensemble: per molecule the mean of its
    seeds' predictions, which is what ``predictions_unlabelled.csv`` gives for the molecules
    without high-fidelity labels and ``chemgraph predict`` gives with every seed's checkpoint
    (not for a stacked row, whose kernel ridge is not stored): an ensemble of independently
    trained networks (Lakshminarayanan, Pritzel and Blundell 2017, "Simple and scalable
    predictive uncertainty estimation using deep ensembles", NeurIPS, arXiv:1612.01474).
    :func:`results_table` reports the seeds one by one, as
    Buterez et al. 2024 Table 5 does; this table says how accurate the averaged prediction a
    user receives is. It is one model, so it has no seed-to-seed spread, and
    :func:`transfer_claim` does not use it.

    Args:
        predictions: the test predictions of the trained runs in the layout of
            ``predictions.csv`` (``strategy``, ``seed``, ``id``, per target ``<target>`` and
            ``<target>_pred``), one block per strategy and seed in the same molecule order.
        high_name, model: as :func:`results_table`'s.

    Raises:
        ValueError: a strategy whose seeds list different test molecules (``id``, in order).

    Returns:
        One row per target and strategy with at least 2 seeds, in :func:`results_table`'s
        order: ``target``, ``strategy`` (its label and "ensemble of N seeds"), ``setting``,
        ``method``, ``seeds``, ``test RMSE`` (the ensemble's, text), ``mean over seeds``
        (the per-seed mean RMSE of :func:`results_table`, text), the numbers ``rmse``,
        ``mae`` and ``seed_mean_rmse``, and ``key``, the strategy as ``runs.csv`` and
        ``predictions.csv`` name it (e.g. ``transductive_stacked``). Empty (those columns)
        without such a strategy (one seed).
    """
    labels = {"high_fidelity_only": high_name, **STRATEGY_LABELS}
    targets = [c[: -len("_pred")] for c in predictions.columns if c.endswith("_pred")]
    records = []
    for target in targets:
        for strategy in [s for s in SETTINGS if s in set(predictions["strategy"])]:
            runs = [
                rows for _, rows in
                predictions[predictions["strategy"] == strategy].groupby("seed", sort=True)
            ]  # fmt: skip
            if len(runs) < 2:
                continue
            if any(list(rows["id"]) != list(runs[0]["id"]) for rows in runs):
                raise ValueError(f"{strategy}: the seeds predicted different test molecules")
            truth = runs[0][target].to_numpy(np.float64)
            members = np.stack([rows[f"{target}_pred"].to_numpy(np.float64) for rows in runs])
            metrics = regression_metrics(truth, members.mean(axis=0))
            seed_mean = float(
                np.mean([regression_metrics(truth, member)["rmse"] for member in members])
            )
            stacked = strategy in STACKED.values()
            records.append(
                {
                    "target": target,
                    "strategy": f"{labels[strategy]}, ensemble of {len(runs)} seeds",
                    "setting": SETTINGS[strategy],
                    "method": f"{model} + kernel ridge" if stacked else model,
                    "seeds": len(runs), "test RMSE": f"{metrics['rmse']:.3f}",
                    "mean over seeds": f"{seed_mean:.3f}", "rmse": metrics["rmse"],
                    "mae": metrics["mae"], "seed_mean_rmse": seed_mean, "key": strategy,
                }
            )  # fmt: skip
    columns = ["target", "strategy", "setting", "method", "seeds", "test RMSE"]
    columns += ["mean over seeds", "rmse", "mae", "seed_mean_rmse", "key"]
    return pd.DataFrame(records, columns=columns)


KERNEL_RIDGE_ALONE = "0 (kernel ridge alone)"
"""The ``stack weight`` of a stacked row in :func:`results_table` whose ``w`` is 0 for every
seed: the row is the kernel ridge alone, without the network (:func:`format_table` says so
under the table)."""


def _weights_text(rows: pd.DataFrame) -> str:
    """The ``stack weight`` cell of the stacked ``rows`` of ``runs.csv`` (one per seed)."""
    weights = rows["stack_weight"].astype(float).tolist()
    if all(w == 0 for w in weights):
        return KERNEL_RIDGE_ALONE
    if all(w == 1 for w in weights):
        return "1 (network alone)"
    return ", ".join(f"{w:g}" for w in weights)


def transfer_margins(table: pd.DataFrame, high_name: str = "GW") -> pd.DataFrame:
    """How far each transfer strategy beats the best baseline of its setting, against the seed
    spread.

    For every target and transfer strategy, the candidates are the no-transfer row
    (``high_name``) and every baseline of the strategy's setting or of ``both``; the best is the
    one with the lowest mean RMSE. ``margin = mean RMSE(best) − mean RMSE(strategy)``
    (positive = the strategy is ahead) and ``spread = max(std(best), std(strategy))`` (the
    larger sample std over seeds; a baseline has none).

    Args:
        table: :func:`results_table`.
        high_name: the label of the no-transfer row.

    Returns:
        Columns ``target``, ``strategy``, ``best`` (the best candidate's label), ``margin``,
        ``spread`` (NaN with one seed), ``seeds`` (the strategy's), ``shown`` (``margin >
        spread`` with at least 2 seeds) and ``negative`` (``margin < 0``: negative transfer);
        one row per target and transfer strategy, in table order. Empty when no target has a
        transfer strategy and a candidate.
    """
    records = []
    for target, rows in table.groupby("target", sort=False):
        strategies = rows[(rows["method"] != "baseline") & (rows["strategy"] != high_name)]
        for row in strategies.itertuples(index=False):
            candidates = rows[
                (rows["strategy"] == high_name)
                | ((rows["method"] == "baseline") & rows["setting"].isin(["both", row.setting]))
            ]
            if candidates.empty:
                continue
            best = candidates.loc[candidates["rmse_mean"].idxmin()]
            margin = float(best["rmse_mean"] - row.rmse_mean)
            deterministic = pd.isna(best["seeds"])  # a baseline: no spread of its own
            seeds = int(row.seeds if deterministic else min(best["seeds"], row.seeds))
            spread = float(row.rmse_std if deterministic else max(best["rmse_std"], row.rmse_std))
            spread = spread if seeds >= 2 else float("nan")
            records.append(
                dict(
                    target=target, strategy=row.strategy, best=best["strategy"], margin=margin,
                    spread=spread, seeds=seeds, shown=bool(seeds >= 2 and margin > spread),
                    negative=bool(margin < 0),
                )
            )  # fmt: skip
    columns = ["target", "strategy", "best", "margin", "spread", "seeds", "shown", "negative"]
    return pd.DataFrame(records, columns=columns)


def transfer_claim(table: pd.DataFrame, high_name: str = "GW", unit: str = "") -> tuple[bool, str]:
    """Whether the run shows every transfer strategy ahead of the best baseline of its setting
    (:func:`transfer_margins`), for every target, by more than the seed-to-seed spread, and
    lines that say so plainly: the verdict, then one line per strategy and target with its
    margin against its spread, "negative transfer" where a strategy is behind and "level with"
    where the two mean RMSEs differ by less than 0.0005 (e.g. a stacked row whose weight on the
    network was 0, which is the baseline itself).

    Returns:
        ``(shown, text)``; ``shown`` is False with one seed (no spread to compare with), without
        a baseline or without a transfer strategy.
    """
    margins = transfer_margins(table, high_name)
    if margins.empty:
        return False, f"No {high_name}-only or baseline rows and transfer rows to compare."
    units = f" {unit}" if unit else ""
    lines = []
    for m in margins.itertuples(index=False):
        spread = "undefined (one seed)" if np.isnan(m.spread) else f"{m.spread:.3f}"
        if abs(m.margin) < 5e-4:  # "ahead by 0.000" would say more than the digits do
            verdict = f"level with {m.best} (the mean RMSEs differ by less than 0.0005{units})"
        elif m.negative:
            verdict = f"negative transfer: behind {m.best} by {-m.margin:.3f}{units}"
        elif m.shown:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units} > spread {spread}"
        else:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units}, not above the spread {spread}"
        lines.append(f"{m.target} {m.strategy}: {verdict}")
    details = (
        f"margin = mean RMSE of the best baseline of the setting ({high_name} only included) − "
        "mean RMSE of the strategy, against the larger std of the two:\n" + "\n".join(lines)
    )
    strategies = ", ".join(dict.fromkeys(margins["strategy"]))
    claim = (
        f"every transfer strategy ({strategies}) beats every baseline of its setting for "
        f"{' and '.join(dict.fromkeys(margins['target']))} by more than the seed-to-seed spread"
    )
    if margins["seeds"].min() < 2:
        verdict = f"One seed gives no seed-to-seed spread: this run cannot show that {claim}."
        return False, f"{verdict}\n{details}"
    if margins["shown"].all():
        return True, f"Shown: {claim}.\n{details}"
    missing = ", ".join(
        f"{m.target} {m.strategy}" for m in margins.itertuples(index=False) if not m.shown
    )
    verdict = f"Not shown by this run that {claim}; not for {missing}"
    return False, f"{verdict}\n{details}"


def format_table(table: pd.DataFrame, ensembles: pd.DataFrame | None = None) -> str:
    """The markdown form of :func:`results_table` (what ``table.md`` holds), with a line under
    it for every stacked row whose weight was 0 for every seed (:data:`KERNEL_RIDGE_ALONE`),
    saying so in words; with ``ensembles`` (:func:`seed_ensembles`, not empty) a second table
    of the seed ensembles' test RMSE under it."""
    shown = table.drop(columns=["rmse_mean", "rmse_std"]).copy()
    shown["seeds"] = ["deterministic" if pd.isna(s) else str(s) for s in shown["seeds"]]
    notes = []
    if "stack weight" in shown:
        shown["stack weight"] = shown["stack weight"].fillna("")
        notes = [
            f"{row.target}, {row.strategy}: stacking chose the kernel ridge alone (w = 0) for "
            "every seed, so this row is the Δ-learning kernel ridge without the fine-tuned "
            "network"
            + (
                " (on the linear correction of the pretrained model's low-fidelity predictions, "
                "which differ by seed)"
                if row.setting == "inductive"
                else ""
            )
            for row in table[shown["stack weight"] == KERNEL_RIDGE_ALONE].itertuples()
        ]
    lines = _markdown(shown) + (["", *notes] if notes else [])
    if ensembles is not None and len(ensembles):
        lines += [
            "",
            "Seed ensembles: test RMSE of the mean prediction over the seeds (what "
            "predictions_unlabelled.csv gives, and chemgraph predict with every seed's "
            "checkpoint for the rows without a kernel ridge), beside the mean of the seeds' "
            "own RMSE above:",
            "",
            *_markdown(ensembles.drop(columns=["rmse", "mae", "seed_mean_rmse", "key"])),
        ]
    return "\n".join(lines)


def _markdown(frame: pd.DataFrame) -> list[str]:
    """The lines of a markdown table of ``frame``."""
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return [header, rule, *body]


@dataclass
class TransferOptions:
    """What ``chemgraph transfer`` runs: the user's table of molecules with low- and
    high-fidelity labels, and the transfer settings (validated on construction).

    Attributes:
        data: table of molecules (``.csv``, ``.tsv``, ``.parquet``, optionally gzipped;
            :func:`chemgraph.data.read_table`), one row per molecule.
        low_fidelity_columns: the low-fidelity label columns (e.g. ``xtb_homo,xtb_lumo``).
        high_fidelity_columns: the high-fidelity label columns, one per low-fidelity column
            and in the same order (target ``t`` is pretrained on ``low[t]``, fine-tuned on
            ``high[t]``; the targets take the high-fidelity names). An empty cell is a missing
            label: most molecules usually have only the low-fidelity ones.
        out: output folder; must be new or empty unless ``overwrite``.
        smiles_column: the SMILES column (the molecules' bond graphs, and the fingerprints of
            the kernel baselines); None = ``"smiles"``, which a run with ``geometry`` uses
            when the table has it (else it runs without the fingerprint baselines). A column
            named here must exist, with ``geometry`` too.
        id_column: molecule identifiers written into the outputs (None = the row number).
        geometry: SDF, XYZ or extended XYZ file with one 3D structure per table row, in row
            order (for a radius-graph model such as ``esa-3d``; coordinates in Å); None = bond
            graphs of the SMILES.
        split_seed: seed of the random split of the molecules with every high-fidelity label.
        split_fractions: train/validation/test fractions of that split.
        overwrite: write into a non-empty ``out`` (its files are replaced).
        low_name, high_name: short names of the two levels for the table.
        training: the transfer settings (:class:`TransferConfig`: ``model``, ``featurizer``,
            ``strategies``, ``seeds``, epochs, optimisation).

    Raises:
        ConfigError: bad settings (columns missing, of different counts or named twice, bad
            fractions, a bond-graph model with ``geometry`` or a radius-graph model without it;
            see :class:`TransferConfig`), each named as :func:`chemgraph.errors.setting` names
            it (``chemgraph transfer``: by its flag).
    """

    data: str | Path
    low_fidelity_columns: list[str] | str
    high_fidelity_columns: list[str] | str
    out: str | Path
    smiles_column: str | None = None
    id_column: str | None = None
    geometry: str | Path | None = None
    split_seed: int = 0
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    overwrite: bool = False
    low_name: str = "low fidelity"
    high_name: str = "high fidelity"
    training: TransferConfig = field(default_factory=TransferConfig)

    @classmethod
    def check_keys(cls, values: dict[str, Any], source: str | None = None) -> None:
        """Refuse keys of a settings mapping (a ``--config`` file's top level) that are no
        option; ``overwrite`` is the command's flag only.

        Raises:
            ConfigError: ``"<source>: unknown keys [...]; valid keys: [...]"``, naming where a
                key of the ``training:`` block belongs (``"...; pretrain_epochs belongs under
                training:"``).
        """
        names = sorted(f.name for f in dataclasses.fields(cls) if f.name != "overwrite")
        unknown = sorted(set(values) - set(names))
        if not unknown:
            return
        misplaced = [key for key in unknown if key in TransferConfig.field_names()]
        where = (
            f"; {', '.join(misplaced)} belong{'s' if len(misplaced) == 1 else ''} under training:"
            if misplaced
            else ""
        )
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}unknown keys {unknown}; valid keys: {names}{where}")

    def __post_init__(self) -> None:
        for name in ("low_fidelity_columns", "high_fidelity_columns"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = [c.strip() for c in value.split(",")]
            value = [str(c) for c in value]
            if not value or "" in value or len(set(value)) != len(value):
                raise ConfigError(f"{setting(name)} must name distinct columns, got {value!r}")
            setattr(self, name, value)
        if len(self.low_fidelity_columns) != len(self.high_fidelity_columns):
            raise ConfigError(
                f"{len(self.low_fidelity_columns)} low-fidelity columns but "
                f"{len(self.high_fidelity_columns)} high-fidelity columns: give one of each per "
                "target, in the same order"
            )
        both = set(self.low_fidelity_columns) & set(self.high_fidelity_columns)
        if both:
            raise ConfigError(f"columns {sorted(both)} are named as both fidelities")
        fractions = tuple(float(f) for f in self.split_fractions)
        if len(fractions) != 3 or min(fractions) <= 0 or abs(sum(fractions) - 1) > 1e-6:
            raise ConfigError(
                f"{setting('split_fractions')} must be 3 numbers > 0 summing to 1, got "
                f"{self.split_fractions}"
            )
        self.split_fractions = fractions
        if isinstance(self.training, dict):
            self.training = TransferConfig.from_dict(self.training, source="training")
        kind = get_model_spec(self.training.model).graph_kind
        if kind == "radius" and self.geometry is None:
            bond_models = [n for n in MODEL_DESCRIPTIONS if get_model_spec(n).graph_kind == "bond"]
            raise ConfigError(
                f"model {self.training.model!r} reads 3D structures: give "
                f"{setting('geometry')} (SDF, XYZ or extended XYZ, one structure per row), or "
                f"choose a 2D model for a SMILES table ({setting('model')} "
                f"{', '.join(bond_models)})"
            )
        if kind == "bond" and self.geometry is not None:
            raise ConfigError(
                f"model {self.training.model!r} reads bond graphs of the SMILES; with "
                f"{setting('geometry')} choose a radius-graph {setting('model')} (esa-3d)"
            )


def transfer_table(options: TransferOptions) -> pd.DataFrame:
    """``chemgraph transfer``: transfer learning on the user's own table.

    Reads the table (and the geometries), rejects rows that cannot be used (written to
    ``rejected.csv``, columns ``row,id,input,reason``), splits the molecules with every
    high-fidelity label (seeded random split), then runs :func:`transfer_job`: every strategy
    for every seed (with the baselines of each setting), and every molecule without a
    high-fidelity label scored with each strategy's fine-tuned models.

    Writes to ``options.out``: what :func:`run_transfer` writes (``table.md``/``table.csv``
    test RMSE with the baselines, ``runs.csv``, ``predictions.csv`` of the test molecules,
    learning curves), ``checkpoints/<strategy>_seed<k>[_<target>]/best.ckpt`` (every fine-tuned
    model, with its training molecules' fingerprints; ``chemgraph predict`` loads it),
    ``predictions_unlabelled.csv`` (per strategy, the mean prediction over seeds and its sample
    standard deviation, an empty cell with one seed: the spread is undefined),
    ``duplicates.json`` (the molecules given in more than one row, by canonical isomeric
    SMILES: each kept in one split; :class:`chemgraph.data.Duplicates`) and ``transfer.yaml``
    (these options, so that ``chemgraph transfer --config transfer.yaml`` repeats the run).
    ``predictions.csv`` carries the ``id_column`` ids (else the row numbers) and the SMILES.
    Nothing is written (and with ``overwrite`` nothing of an earlier run removed) before the
    options, the table's columns, the geometries, the rows and the split are checked; then
    what an earlier run wrote (:data:`TABLE_OUTPUTS`) is removed first. Fewer than
    :data:`SMALL_TEST_SET` test molecules are warned about, and so are molecules with some but
    not every high-fidelity label (they are not in the split, which takes the molecules with
    every one, and are predicted in ``predictions_unlabelled.csv``).

    Returns:
        The results table (:func:`results_table`).

    Raises:
        ConfigError: a label column without a number (``"--low-fidelity-columns smiles: no
            numeric value in column 'smiles'"``); ``stack_kernel_ridge`` without a SMILES
            column, or with rows (of a geometry file) without a SMILES; decided before
            featurizing, where the column is missing; too few usable molecules with every
            high-fidelity label to split (the message counts them and gives the first
            rejected rows' reasons). Nothing is written to ``out`` then.
        ValueError: a non-empty output folder without ``overwrite``; missing columns (each
            named with the setting that asked for it, ``"no column ['gw_lumo']
            (--high-fidelity-columns)"``); a geometry file whose structure count differs
            from the rows.
    """
    from chemgraph._output import check_output_folder
    from chemgraph.data import (
        Duplicates,
        duplicate_groups,
        find_duplicates,
        parse_labels,
        read_table,
        write_rejected,
    )

    out = Path(options.out)
    check_output_folder(out, "--out", options.overwrite, "--overwrite")
    table = read_table(options.data)
    columns = [*options.low_fidelity_columns, *options.high_fidelity_columns]
    smiles_column = options.smiles_column or "smiles"
    # a geometry file gives the graphs: then only a SMILES column the user named is required
    smiles_required = options.geometry is None or options.smiles_column is not None
    need = columns + ([smiles_column] if smiles_required else [])
    need += [options.id_column] if options.id_column else []
    missing = [c for c in need if c not in table.columns]
    if missing:
        named = {
            "low_fidelity_columns": options.low_fidelity_columns,
            "high_fidelity_columns": options.high_fidelity_columns,
            "smiles_column": [smiles_column] if smiles_required else [],
            "id_column": [options.id_column] if options.id_column else [],
        }
        absent = [
            f"{[c for c in columns if c in missing]} ({setting(key)})"
            for key, columns in named.items()
            if any(c in missing for c in columns)
        ]
        raise ValueError(
            f"{options.data}: no column {', '.join(absent)}; it has {list(table.columns)}"
        )
    # the labels as `train` reads them: "", "NA", "n/a", "nan", ... are missing; a column
    # without a number (e.g. the SMILES named as labels) is refused before --out is touched
    values, errors = parse_labels(table, columns)
    numeric = np.isfinite(values).any(axis=0)
    for j, column in enumerate(columns):
        if not numeric[j]:
            low_column = j < len(options.low_fidelity_columns)
            key = "low_fidelity_columns" if low_column else "high_fidelity_columns"
            given = ",".join(getattr(options, key))
            raise ConfigError(f"{setting(key)} {given}: no numeric value in column {column!r}")
    stacking = options.training.stack_kernel_ridge
    if stacking and smiles_column not in table.columns:  # (with --geometry)
        raise ConfigError(
            _stacking_needs_smiles(
                f"{options.data} has no SMILES column {smiles_column!r} "
                f"({setting('smiles_column')})"
            )
        )
    ids = (
        table[options.id_column].astype(str).tolist()
        if options.id_column
        else [str(i) for i in range(len(table))]
    )
    smiles = (
        [
            None if pd.isna(cell) or not str(cell).strip() else str(cell)
            for cell in table[smiles_column]
        ]
        if smiles_column in table.columns
        else None
    )
    graphs, reasons = _table_graphs(options, table, smiles)
    for row, error in enumerate(errors):
        if error is not None:
            reasons.setdefault(row, error)
    with np.errstate(over="ignore"):
        values = values.astype(np.float32)  # float32 as trained (a rejected 1e39 becomes inf)
    values[~np.isfinite(values)] = np.nan
    low, high = (
        values[:, : len(options.low_fidelity_columns)],
        values[:, len(options.low_fidelity_columns) :],
    )
    for row in np.flatnonzero(np.isnan(low).all(axis=1) & np.isnan(high).all(axis=1)):
        reasons.setdefault(int(row), "no low- or high-fidelity label")
    # a high-fidelity molecule without its low-fidelity labels has no transductive prediction
    # nor baseline, and the table must compare every method on the same molecules
    for row in np.flatnonzero(~np.isnan(high).all(axis=1) & np.isnan(low).any(axis=1)):
        absent = [c for c, v in zip(options.low_fidelity_columns, low[row]) if np.isnan(v)]
        reasons.setdefault(
            int(row),
            f"{options.high_name} label without its {options.low_name} label ({', '.join(absent)}):"
            " every strategy and baseline is scored on molecules with both levels; give the "
            f"{options.low_name} value or leave the {options.high_name} cell empty",
        )
    keep = [row for row in range(len(table)) if row not in reasons]
    if stacking and smiles is not None:
        empty = [row for row in keep if smiles[row] is None]
        if empty:
            rows = ", ".join(ids[row] for row in empty[:5]) + (", ..." if len(empty) > 5 else "")
            raise ConfigError(
                _stacking_needs_smiles(
                    f"{len(empty)} rows of {options.data} have none (ids {rows})"
                )
            )
    kept_smiles = [smiles[row] for row in keep] if smiles else [None]
    # with --geometry and no SMILES every row is its own molecule
    groups = None if None in kept_smiles else duplicate_groups(kept_smiles)
    data = MultiFidelityData(
        graphs=[graphs[row] for row in keep],
        ids=np.asarray([ids[row] for row in keep], dtype=object),
        low=low[keep],
        high=high[keep],
        targets=list(options.high_fidelity_columns),
        low_name=options.low_name,
        high_name=options.high_name,
        smiles=kept_smiles if None not in kept_smiles else None,
        groups=groups,
        low_columns=list(options.low_fidelity_columns),
    )
    try:
        split = high_fidelity_split(
            data, options.split_seed, fractions=options.split_fractions, groups=groups
        )
    except ValueError as error:  # before --out is touched: a refused run writes nothing
        raise ConfigError(_split_refusal(options, data, len(table), reasons, ids, error)) from None
    if options.overwrite:  # only once nothing refuses the run
        _remove_earlier_outputs(out)
    out.mkdir(parents=True, exist_ok=True)
    write_rejected(
        pd.DataFrame(
            [
                dict(row=row, id=ids[row], input=smiles[row] or "" if smiles else "", reason=reason)
                for row, reason in sorted(reasons.items())
            ]
        ),
        out / "rejected.csv",
    )
    if reasons:
        log.warning("%d of %d rows rejected (%s)", len(reasons), len(table), out / "rejected.csv")
    if smiles and None in kept_smiles:
        log.warning("rows without SMILES: no fingerprint baselines (they read every SMILES)")
    partial = np.flatnonzero(np.isnan(high[keep]).any(axis=1) & ~np.isnan(high[keep]).all(axis=1))
    if len(partial):
        names = ", ".join(str(data.ids[i]) for i in partial[:5]) + (", ..." * (len(partial) > 5))
        log.warning(
            "%s with some but not every %s label (%s): not in the train/validation/test split, "
            "which takes the molecules with every %s label; their given %s labels are not used "
            "and they are predicted in predictions_unlabelled.csv",
            _count(len(partial), "molecule"), data.high_name, names, data.high_name,
            data.high_name,
        )  # fmt: skip
    duplicates = Duplicates()
    if groups is not None:
        duplicates = find_duplicates(groups, np.asarray(keep), data.high.numpy())
        if duplicates.molecules:
            log.warning("duplicates: %s", duplicates)
    (out / "duplicates.json").write_text(json.dumps(duplicates.to_dict(), indent=2) + "\n")
    if len(split["test"]) < SMALL_TEST_SET:
        log.warning(
            "only %s: their test RMSE is a rough estimate (a few molecules can change it a "
            "lot); give more molecules with %s labels",
            _count(len(split["test"]), "test molecule"), data.high_name,
        )  # fmt: skip
    results, _, _ = transfer_job(data, split, options.training, out, _options_dict(options))
    _, claim = transfer_claim(results, data.high_name)
    log.info("%s", claim)
    return results


def _count(number: int, noun: str) -> str:
    """``"1 test molecule"``, ``"3 test molecules"``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _split_refusal(
    options: TransferOptions,
    data: MultiFidelityData,
    rows: int,
    reasons: dict[int, str],
    ids: list[str],
    error: ValueError,
) -> str:
    """Why the molecules of ``options.data`` cannot be split (``error`` of
    :func:`high_fidelity_split`): how many rows are usable and labelled, the rejected rows'
    first reasons, and the settings that decide it."""
    labelled = int((~torch.isnan(data.high).any(dim=1)).sum())
    columns = ",".join(options.high_fidelity_columns)
    text = (
        f"{options.data}: {labelled} of {rows} rows are usable molecules with every "
        f"{options.high_name} label ({setting('high_fidelity_columns')} {columns}), too few "
        f"to split into train, validation and test with {setting('split_fractions')} "
        f"{','.join(f'{f:g}' for f in options.split_fractions)} ({error})"
    )
    if reasons:
        shown = sorted(reasons.items())[:3]
        examples = "; ".join(f"row {row} ({ids[row]}): {reason}" for row, reason in shown)
        more = ", ..." if len(reasons) > 3 else ""
        text += f"; {_count(len(reasons), 'row')} rejected, e.g. {examples}{more}"
    return text


def transfer_job(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: str | Path,
    settings: dict[str, Any],
    ids: list[str] | None = None,
    pretrained_cache: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """The job of ``chemgraph transfer`` and of the ``dft_to_gw`` recipe once their molecules
    are read and split: every strategy for every seed with the baselines of each setting
    (:func:`run_transfer`), every fine-tuned model kept, the molecules without high-fidelity
    labels scored.

    Writes to ``out``: what :func:`run_transfer` writes (``table.md``/``table.csv``, test RMSE
    with the baselines; ``runs.csv``; ``predictions.csv`` of the test molecules; learning
    curves; ``config.yaml``), ``checkpoints/<strategy>_seed<k>[_<target>]/best.ckpt`` (every
    fine-tuned model, which ``chemgraph predict`` loads; with ``delta_learning`` it holds the
    linear correction its residual is added to, :class:`chemgraph.train.delta.DeltaLearning`,
    so that predict gives what ``predictions_unlabelled.csv`` holds), ``predictions_unlabelled.csv``
    (the molecules without every high-fidelity label: per strategy the mean prediction over
    seeds and its sample standard deviation, NaN with one seed) and ``transfer.yaml`` (``settings``:
    what repeats the run, e.g. ``chemgraph transfer --config transfer.yaml``).

    Args:
        data: the molecules and their labels at both levels.
        split: ``{"train", "val", "test"}`` positions of molecules with every high-fidelity
            label (:func:`high_fidelity_split`).
        config: the transfer settings.
        out: output folder (made if missing; files in it are replaced).
        settings: written to ``transfer.yaml``.
        ids: one identifier per molecule for ``predictions_unlabelled.csv``; None =
            ``data.ids``.
        pretrained_cache: see :func:`run_transfer`.

    Returns:
        ``(table, runs, baselines)``: :func:`results_table` and what :func:`run_transfer`
        returns.

    Raises:
        ConfigError: ``stack_kernel_ridge`` without SMILES, before anything is written.
    """
    out = Path(out)
    _check_stacking(data, config)
    out.mkdir(parents=True, exist_ok=True)
    (out / "transfer.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    ids = [str(i) for i in data.ids] if ids is None else ids
    runs, baselines = run_transfer(data, split, config, out, pretrained_cache, ids)
    table = results_table(runs, data.high_name, model_label(config.model), baselines)
    return table, runs, baselines


SMALL_TEST_SET = 20
"""Below this many test molecules :func:`transfer_table` warns that the test RMSE is rough."""

TABLE_OUTPUTS = (
    "checkpoints", "curves", "table.md", "table.csv", "runs.csv", "baselines.csv",
    "ensembles.csv", "predictions.csv", "predictions_unlabelled.csv", "learning_curves.csv",
    "rejected.csv", "duplicates.json", "config.yaml", "transfer.yaml",
)  # fmt: skip
"""What :func:`transfer_table` writes in its output folder (files and folders)."""


def _remove_earlier_outputs(out: Path) -> None:
    """Remove what an earlier :func:`transfer_table` wrote in ``out`` (:data:`TABLE_OUTPUTS`),
    so that no stale model or table of it stays beside the new ones (e.g. the checkpoints of a
    seed or strategy the new run does not train); every other file is left as it is."""
    import shutil

    removed = []
    for name in TABLE_OUTPUTS:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    if removed:
        log.warning("--overwrite: removed the earlier run's %s from %s", ", ".join(removed), out)


def _options_dict(options: TransferOptions) -> dict[str, Any]:
    values = {
        f.name: getattr(options, f.name)
        for f in dataclasses.fields(options)
        if f.name not in ("training", "overwrite")
    }
    values = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
    for name in ("data", "geometry", "out"):  # absolute: the run repeats from any folder
        if values.get(name) is not None:
            values[name] = str(Path(values[name]).resolve())
    values["split_fractions"] = list(options.split_fractions)
    return {**values, "training": options.training.to_dict()}


def _table_graphs(
    options: TransferOptions, table: pd.DataFrame, smiles: list[str] | None
) -> tuple[list, dict[int, str]]:
    """One graph per row (None where rejected) and the rejected rows' reasons: bond graphs of
    the SMILES, or radius graphs of the ``geometry`` file's structures (row ``i`` = structure
    ``i``). A row whose SMILES RDKit rejects or holds a dummy atom ``*`` (not a complete
    molecule) is rejected, with a geometry file too (the fingerprint baselines read it), and so
    is a row whose structure's elements (hydrogens included) differ from its SMILES's: a file
    out of row order is caught here; a row without SMILES (``None``) skips both checks. Without
    ``featurizer.atomic_numbers`` in ``options.training``, it sets them to the structures'
    elements (so the checkpoints and ``transfer.yaml`` record them)."""
    from rdkit import Chem

    from chemgraph.graphs import atoms_to_radius_graph, mol_to_graph

    featurizer = options.training.graph_featurizer
    reasons: dict[int, str] = {}
    if options.geometry is None:
        mols = _table_mols(smiles, range(len(smiles)), reasons)
        graphs = [None if mol is None else mol_to_graph(mol, featurizer) for mol in mols.values()]
        return graphs, reasons
    given = [row for row, text in enumerate(smiles or []) if text is not None]
    mols = {row: mol for row, mol in _table_mols(smiles, given, reasons).items() if mol is not None}
    structures = read_structures(options.geometry)
    if len(structures) != len(table):
        raise ValueError(
            f"{options.geometry} holds {len(structures)} structures for the {len(table)} rows "
            f"of {options.data}: give one structure per row, in row order"
        )
    given_elements = {int(z) for s in structures if not isinstance(s, str) for z in s[0]}
    training = options.training
    if given_elements and "atomic_numbers" not in training.featurizer:
        # the element one-hot of the user's own structures, so that predict scores them all
        training.featurizer = {**training.featurizer, "atomic_numbers": sorted(given_elements)}
        featurizer = training.graph_featurizer
        log.info("radius-graph element columns: %s (the structures' elements)",
                 list(featurizer.atomic_numbers))  # fmt: skip
    outside = sorted(given_elements - set(featurizer.atomic_numbers))
    if outside:
        table_of_elements = Chem.GetPeriodicTable()
        log.warning(
            "the structures hold %s, which no column of the featurizer's element one-hot "
            "names (atomic_numbers %s): they share its column of every other element, and "
            "chemgraph predict refuses them; add them to the featurizer's atomic_numbers to "
            "tell them apart and to score them",
            ", ".join(table_of_elements.GetElementSymbol(z) for z in outside),
            list(featurizer.atomic_numbers),
        )
    graphs = []
    for row, structure in enumerate(structures):
        if isinstance(structure, str):
            reasons.setdefault(row, structure)
        elif row not in reasons and row in mols:
            expected = _formula(a.GetAtomicNum() for a in Chem.AddHs(mols[row]).GetAtoms())
            found = _formula(structure[0])
            if found != expected:
                reasons[row] = (
                    f"structure {row + 1} of {Path(options.geometry).name} is {found}, its "
                    f"SMILES {expected} (hydrogens included): is the file in row order?"
                )
        graphs.append(
            None if row in reasons else atoms_to_radius_graph(*structure, featurizer, False)
        )
    return graphs, reasons


def _table_mols(smiles: list[str], rows: Sequence[int], reasons: dict[int, str]) -> dict:
    """``{row: molecule}`` of the SMILES of ``rows``, None for a row rejected (RDKit's reason,
    or a dummy atom ``*``, as ``chemgraph train`` and ``featurize`` reject it), whose reason is
    added to ``reasons``."""
    from chemgraph.chem import MoleculeParseError, mols_from_smiles
    from chemgraph.chem.parse import check_complete_molecule

    texts = [smiles[row] or "" for row in rows]
    mols = {}
    for row, text, mol in zip(rows, texts, mols_from_smiles(texts), strict=True):
        if not isinstance(mol, MoleculeParseError):
            try:
                mol = check_complete_molecule(mol, text)
            except MoleculeParseError as error:
                mol = error
        if isinstance(mol, MoleculeParseError):
            reasons[row] = str(mol)
            mol = None
        mols[row] = mol
    return mols


def _formula(numbers) -> str:
    """Hill formula of atomic numbers (C, H first, then alphabetical; e.g. ``C2H6O``)."""
    from collections import Counter

    from rdkit import Chem

    table = Chem.GetPeriodicTable()
    counts = Counter(table.GetElementSymbol(int(z)) for z in numbers)
    order = [e for e in ("C", "H") if e in counts and "C" in counts]
    order += sorted(e for e in counts if e not in order)
    return "".join(f"{e}{counts[e] if counts[e] > 1 else ''}" for e in order)


def read_structures(path: str | Path) -> list[tuple[np.ndarray, np.ndarray] | str]:
    """The 3D structures of an SDF (with 3D coordinates and every hydrogen), XYZ or extended
    XYZ file, in file order, read record by record as ``chemgraph predict`` reads them
    (:func:`chemgraph.library.records.record_structure`): ``(atomic_numbers int64 [N],
    positions float64 [N, 3] in Å)`` each, every atom as given, or the reason a record could
    not be used, prefixed with its number (an SDF record RDKit rejects, one without 3D
    coordinates or without all its hydrogens, an unreadable XYZ frame).

    Raises:
        ValueError: a file of another format.
    """
    from chemgraph.chem import MoleculeParseError
    from chemgraph.data.readers import iter_record_chunks, library_format
    from chemgraph.library.records import STRUCTURE_FORMATS, record_structure

    if library_format(path) not in STRUCTURE_FORMATS:
        raise ValueError(f"{path}: geometries are read from .sdf, .xyz or .extxyz files")
    structures: list[tuple[np.ndarray, np.ndarray] | str] = []
    for records in iter_record_chunks(path, 1_000):
        for record in records:
            try:
                structure = record_structure(record)
            except MoleculeParseError as error:
                structures.append(f"structure {record.row + 1}: {error.reason}")
            else:
                structures.append((structure.numbers, structure.positions))
    return structures


def _write_unlabelled(
    data: MultiFidelityData,
    chains: list[_Chain],
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]],
    unlabelled: np.ndarray,
    ids: list[str],
    out: Path,
) -> None:
    """``predictions_unlabelled.csv``: the molecules ``unlabelled`` (without every
    high-fidelity label), per strategy the mean of the fine-tuned models' predictions over
    seeds and their sample standard deviation (``ddof=1``; NaN with one seed, where no spread
    is defined)."""
    frames = {}
    for strategy in dict.fromkeys(c.strategy for c in chains):
        frame = pd.DataFrame({"strategy": strategy, "id": [ids[i] for i in unlabelled]})
        if data.smiles is not None:
            frame["smiles"] = [data.smiles[i] for i in unlabelled]
        frames[strategy] = frame
    models = dict.fromkeys((c.strategy, c.names) for c in chains)
    for strategy, names in models:
        stacked = np.stack(
            [
                results[i][2]["unlabelled"]
                for i, c in enumerate(chains)
                if (c.strategy, c.names) == (strategy, names)
            ]
        )  # [seeds, n, targets]
        seeds = len(stacked)
        spread = (
            stacked.std(axis=0, ddof=1)
            if seeds > 1
            else np.full(stacked.shape[1:], np.nan, np.float32)
        )
        frame = frames[strategy]
        frame["seeds"] = seeds
        for t, name in enumerate(names):
            frame[f"{name}_pred"] = stacked.mean(axis=0)[:, t]
            frame[f"{name}_std"] = spread[:, t]
    pd.concat(frames.values(), ignore_index=True).to_csv(
        out / "predictions_unlabelled.csv", index=False
    )
