"""Lightning module: any chemgraph model plus a regression or classification task head.

:class:`PropertyPredictionModule` trains; its network, target scaler and outputs are those of
:class:`chemgraph.train.predictors.PropertyPredictorBase`, which the checkpoint's predictor
(:class:`~chemgraph.train.predictors.PropertyPredictor`, no Lightning) shares.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F

from chemgraph.models import get_model_spec
from chemgraph.models.gmoe import expert_usage_table
from chemgraph.train.predictors import DELTA_LEARNING_KEY, PropertyPredictorBase, Task
from chemgraph.train.scaler import TargetScaler

__all__ = [
    "LR_SCHEDULES",
    "PropertyPredictionModule",
    "build_property_module",
    "cosine_learning_rate",
    "masked_loss",
]

logger = logging.getLogger(__name__)

LR_SCHEDULES = ("cosine", "plateau")
"""Learning-rate schedules of :class:`PropertyPredictionModule`: ``"cosine"`` (linear warm-up,
then cosine decay to a floor over the planned steps or the time budget, whichever runs out
first) and ``"plateau"`` (halve on a validation plateau: Buterez et al. 2024, SI 7)."""

DEFAULT_WARMUP_FRACTION = 0.05
"""Share of a cosine schedule spent in linear warm-up when no ``warmup_steps`` are given."""


def cosine_learning_rate(
    progress: float, peak: float, warmup_fraction: float, final_fraction: float
) -> float:
    """Learning rate of the warm-up + cosine schedule at ``progress`` of the run.

    ``lr = peak · progress / w`` for ``progress < w`` (linear warm-up over the first ``w`` =
    ``warmup_fraction`` of the run), then ``lr = peak · (f + (1 − f) · ½(1 + cos(π·u)))`` with
    ``u = (progress − w) / (1 − w)`` and ``f`` = ``final_fraction`` (the floor, reached at
    ``progress = 1``; Loshchilov & Hutter 2017, "SGDR", arXiv:1608.03983, without restarts).

    Args:
        progress: share of the run done, in [0, 1] (values outside are clamped).
        peak: learning rate at the end of the warm-up.
        warmup_fraction: ``w`` in [0, 1).
        final_fraction: ``f``, the floor as a fraction of ``peak``.

    Returns:
        The learning rate (same units as ``peak``).
    """
    progress = min(max(progress, 0.0), 1.0)
    if progress < warmup_fraction:
        return peak * (progress + 1e-12) / warmup_fraction
    decay = (progress - warmup_fraction) / max(1.0 - warmup_fraction, 1e-12)
    return peak * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * decay)))


def masked_loss(outputs: torch.Tensor, labels: torch.Tensor, task: Task) -> torch.Tensor:
    """Mean loss over present labels (multi-task with missing labels).

    Args:
        outputs: ``float32 [B, T]`` standardised predictions (regression) or logits.
        labels: ``float32 [B, T]`` standardised targets or {0, 1} classes; NaN = missing.
        task: ``"regression"`` (mean squared error) or ``"classification"`` (binary
            cross-entropy with logits, one independent label per task).

    Returns:
        Scalar loss; exactly 0 (with a zero gradient) when no label is present.
    """
    present = ~torch.isnan(labels)
    target = torch.where(present, labels, 0.0)
    if task == "regression":
        per_entry = (outputs.float() - target) ** 2
    else:
        per_entry = F.binary_cross_entropy_with_logits(outputs.float(), target, reduction="none")
    per_entry = torch.where(present, per_entry, 0.0)
    return per_entry.sum() / present.sum().clamp(min=1)


class PropertyPredictionModule(PropertyPredictorBase, L.LightningModule):
    """Graph-level property prediction: a model family, a task loss and an AdamW schedule.

    Args:
        model_config: the model family's configuration as a dict (e.g.
            :class:`chemgraph.models.ESAConfig`).
        task: ``"regression"`` or ``"classification"``.
        target_columns: names of the T predicted targets.
        featurizer: the featurizer preset as a dict (``FeaturizerPreset.to_dict()``); stored so
            that a checkpoint alone can featurize new molecules.
        scaler: :class:`TargetScaler` as a dict (regression) or None.
        fragments: multi-fragment policy used when featurizing (``"keep"``/``"largest"``).
        standardize: standardisation used when featurizing (``"none"``, ``"basic"``,
            ``"chembl"``); with ``fragments`` the
            :class:`chemgraph.chem.MoleculePreparation` that ``chemgraph predict`` repeats
            (:attr:`preparation`). Checkpoints written before it existed: ``"none"``.
        learning_rate: AdamW peak learning rate.
        weight_decay: AdamW weight decay.
        lr_schedule: ``"cosine"`` (:func:`cosine_learning_rate`, per optimiser step; the run's
            progress is the larger of steps done / the Trainer's planned steps and, with
            ``max_minutes``, minutes elapsed / ``max_minutes``) or ``"plateau"``
            (``ReduceLROnPlateau`` on ``val_loss``, Buterez et al. 2024, SI 7).
        warmup_steps: linear learning-rate warm-up over this many optimiser steps; None =
            the first 5% of a cosine schedule (none for ``"plateau"``).
        final_lr_fraction: the cosine schedule's floor, as a fraction of ``learning_rate``.
        max_minutes: the run's wall-clock budget in minutes (None = none), so that a cosine
            schedule decays over the budget when it runs out before the planned steps.
        lr_patience: ``"plateau"``: epochs without validation improvement before the
            learning rate is multiplied by ``lr_factor``.
        lr_factor: ``"plateau"``: multiplicative learning-rate decrease.
        model: registered model family (:data:`chemgraph.models.MODELS`); checkpoints written
            before the registry existed hold ESA/NSA models, hence the default.
        train_fingerprints: the training molecules' Morgan fingerprints, packed
            (:meth:`chemgraph.data.applicability.TrainingFingerprints.to_dict`: 256 bytes per
            molecule), for the applicability domain of ``chemgraph predict``; None in
            checkpoints written before chemgraph stored them. Not used by the model.
        train_label_range: a regression's smallest and largest training label per target, in
            the targets' units (:meth:`chemgraph.data.applicability.TrainingLabelRange.to_dict`),
            for ``chemgraph predict``'s ``<target>_outside_training_range``; None for
            classification and in checkpoints written before chemgraph stored it. Not used by
            the model.
        label_augmentation: None for a model that reads its graphs alone; for a
            label-augmented model of transfer learning (the ``label_augmentation`` strategy of
            :mod:`chemgraph.transfer`) the low-fidelity labels its readout reads besides
            (:class:`chemgraph.models.LabelAugmentation`): ``low_fidelity_columns`` (the
            ``S`` input columns ``chemgraph predict`` reads, in order), ``mean`` and ``std``
            (``S`` values each, in their units: the standardisation of the training
            molecules' values) and ``hidden_dim`` (the head's width; None = the readout's).

    The checkpoint's ``hyper_parameters`` hold only plain Python values, so it loads with
    ``torch.load(..., weights_only=True)``.

    Attributes:
        delta_learning: None for a model whose outputs are the labels; for a Δ-learning model
            of transfer learning (its outputs are the residual of a linear correction of the
            molecule's low-fidelity values) the correction
            (:class:`chemgraph.train.delta.DeltaLearning`), which its checkpoints hold under
            :data:`chemgraph.train.predictors.DELTA_LEARNING_KEY` and
            :func:`chemgraph.train.checkpoint.load_checkpoint` restores. Not a hyper-parameter:
            set after construction, before the fit that writes the checkpoints.
    """

    def __init__(
        self,
        model_config: dict,
        task: Task,
        target_columns: list[str],
        featurizer: dict,
        scaler: dict | None = None,
        fragments: str = "keep",
        standardize: str = "none",
        learning_rate: float = 1e-4,
        weight_decay: float = 1e-2,
        lr_schedule: str = "plateau",
        warmup_steps: int | None = 0,
        final_lr_fraction: float = 0.01,
        max_minutes: float | None = None,
        lr_patience: int = 15,
        lr_factor: float = 0.5,
        model: str = "esa",
        train_fingerprints: dict | None = None,
        train_label_range: dict | None = None,
        label_augmentation: dict | None = None,
    ) -> None:
        super().__init__()
        if lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES}, got {lr_schedule!r}")
        self.save_hyperparameters()
        self._build(model, model_config, task, scaler, label_augmentation)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Lightning's hook: a Δ-learning model's checkpoint also holds its correction."""
        if self.delta_learning is not None:
            checkpoint[DELTA_LEARNING_KEY] = self.delta_learning.to_dict()

    def _scaled(self, labels: torch.Tensor) -> torch.Tensor:
        return self.scaler.transform(labels) if self.scaler is not None else labels

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        inputs, labels = batch
        loss = masked_loss(self(inputs), self._scaled(labels), self.task)
        self.log(
            "train_loss", loss, on_step=False, on_epoch=True, batch_size=len(labels), sync_dist=True
        )
        # mixture-of-experts models expose the weighted load-balancing loss of their forward
        auxiliary = getattr(self.model, "auxiliary_loss", None)
        if auxiliary is not None:
            self.log(
                "train_auxiliary_loss", auxiliary, on_epoch=True, batch_size=len(labels),
                sync_dist=True,
            )  # fmt: skip
            loss = loss + auxiliary
        return loss

    def on_train_epoch_end(self) -> None:
        """Log the epoch's routing of a mixture-of-experts model per layer, so that a
        collapse in one layer shows: an INFO table (expert shares, CV² of importance and load;
        :func:`~chemgraph.models.gmoe.expert_usage_table`) and the Lightning metrics
        ``expert_usage_max`` (largest expert share, mean over layers) and, per layer ``i``,
        ``expert_usage_max/layer{i}``, ``expert_importance_cv2/layer{i}`` and
        ``expert_load_cv2/layer{i}``. The model keeps every epoch's statistics
        (:attr:`~chemgraph.models.gmoe.GMoE.expert_history`)."""
        pop_statistics = getattr(self.model, "pop_expert_statistics", None)
        statistics = pop_statistics() if pop_statistics is not None else None
        if statistics is None:
            return
        largest = statistics.usage.max(dim=1).values
        self.log("expert_usage_max", largest.mean(), sync_dist=True)
        for layer, (share, importance, load) in enumerate(
            zip(largest, statistics.importance_cv2, statistics.load_cv2)
        ):
            self.log(f"expert_usage_max/layer{layer}", share, sync_dist=True)
            self.log(f"expert_importance_cv2/layer{layer}", importance, sync_dist=True)
            self.log(f"expert_load_cv2/layer{layer}", load, sync_dist=True)
        logger.info("epoch %d %s", self.current_epoch, expert_usage_table(statistics))

    def validation_step(self, batch, batch_idx: int) -> None:
        inputs, labels = batch
        loss = masked_loss(self(inputs), self._scaled(labels), self.task)
        self.log(
            "val_loss", loss, on_epoch=True, prog_bar=True, batch_size=len(labels), sync_dist=True
        )

    def on_train_start(self) -> None:
        self._fit_start = time.perf_counter()
        self._planned_steps = max(self.trainer.estimated_stepping_batches, 1)

    def _progress(self) -> float:
        """Share of the run done after the coming step: steps against the planned steps, or
        time against the budget, whichever is further."""
        progress = (self.global_step + 1) / self._planned_steps
        if self.hparams.max_minutes:
            elapsed = time.perf_counter() - self._fit_start
            progress = max(progress, elapsed / (60 * self.hparams.max_minutes))
        return progress

    def scheduled_learning_rate(self) -> float | None:
        """The learning rate for the next optimiser step; None = leave it to the plateau
        scheduler (after its warm-up)."""
        peak, warmup = self.hparams.learning_rate, self.hparams.warmup_steps
        if self.hparams.lr_schedule == "plateau":
            if warmup and self.global_step < warmup:
                return peak * (self.global_step + 1) / warmup
            return None
        fraction = (
            DEFAULT_WARMUP_FRACTION if warmup is None else min(warmup / self._planned_steps, 0.99)
        )
        return cosine_learning_rate(
            self._progress(), peak, fraction, self.hparams.final_lr_fraction
        )

    def on_train_batch_start(self, batch, batch_idx: int) -> None:
        learning_rate = self.scheduled_learning_rate()
        if learning_rate is not None:
            for group in self.trainer.optimizers[0].param_groups:
                group["lr"] = learning_rate

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(
            self.parameters(),
            lr=self.hparams.learning_rate,
            weight_decay=self.hparams.weight_decay,
        )
        if self.hparams.lr_schedule != "plateau":
            return optimizer
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=self.hparams.lr_factor, patience=self.hparams.lr_patience
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss", "interval": "epoch"},
        }


def build_property_module(
    model: str,
    featurizer: Any,
    target_columns: list[str],
    task: Task,
    train_labels: torch.Tensor,
    model_options: Mapping[str, Any],
    *,
    learning_rate: float,
    weight_decay: float,
    lr_schedule: str,
    warmup_steps: int | None,
    lr_patience: int,
    max_minutes: float | None = None,
    final_lr_fraction: float = 0.01,
    fragments: str = "keep",
    standardize: str = "none",
    train_fingerprints: dict | None = None,
    train_label_range: dict | None = None,
    label_augmentation: dict | None = None,
) -> PropertyPredictionModule:
    """A fresh :class:`PropertyPredictionModule` (random weights) of a registered model family:
    the one builder of ``chemgraph train`` (:mod:`chemgraph.jobs.train`) and of transfer
    learning's pretraining and fine-tuning (:mod:`chemgraph.transfer`).

    The model's configuration is ``model_options``, then the fields the featurizer fixes
    (:attr:`chemgraph.models.ModelSpec.input_options`: feature widths, vocabularies, set type),
    then ``num_outputs = len(target_columns)``; a regression's target scaler is fitted to
    ``train_labels``; the featurizer is stored as its ``to_dict()``.

    Args:
        model: registered model family (:data:`chemgraph.models.MODELS`).
        featurizer: the family's featurizer (:meth:`chemgraph.models.ModelSpec.featurizer`):
            a :class:`~chemgraph.featurize.FeaturizerPreset` or a
            :class:`~chemgraph.featurize.RadiusGraphFeaturizer`.
        target_columns: the ``T`` target names.
        task: ``"regression"`` or ``"classification"``.
        train_labels: ``float32 [N, T]`` training labels (NaN = missing), for the scaler.
        model_options: the user's model options (already checked).
        learning_rate: and the other keyword arguments (``weight_decay``, ``lr_schedule``,
            ``warmup_steps``, ``lr_patience``, ``max_minutes``, ``final_lr_fraction``,
            ``fragments``, ``standardize``, ``train_fingerprints``, ``train_label_range``,
            ``label_augmentation``): as :class:`PropertyPredictionModule`.

    Raises:
        ValueError: unknown model family; TypeError: unknown model options.
    """
    spec = get_model_spec(model)
    model_config = {
        **model_options,
        **spec.input_options(featurizer),
        "num_outputs": len(target_columns),
    }
    scaler = TargetScaler.fit(train_labels) if task == "regression" else None
    return PropertyPredictionModule(
        model_config=model_config,
        task=task,
        target_columns=list(target_columns),
        featurizer=featurizer.to_dict(),
        scaler=asdict(scaler) if scaler is not None else None,
        fragments=fragments,
        standardize=standardize,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        lr_schedule=lr_schedule,
        warmup_steps=warmup_steps,
        final_lr_fraction=final_lr_fraction,
        max_minutes=max_minutes,
        lr_patience=lr_patience,
        model=model,
        train_fingerprints=train_fingerprints,
        train_label_range=train_label_range,
        label_augmentation=label_augmentation,
    )
