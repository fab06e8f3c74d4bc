"""Lightning module: any chemgraph model plus a regression or classification task head."""

from __future__ import annotations

import logging
from typing import Literal

import lightning as L
import torch
import torch.nn.functional as F

from chemgraph.models import build_model
from chemgraph.models.gmoe import expert_usage_table
from chemgraph.train.scaler import TargetScaler

__all__ = ["PropertyPredictionModule", "masked_loss"]

logger = logging.getLogger(__name__)

Task = Literal["regression", "classification"]


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


class PropertyPredictionModule(L.LightningModule):
    """Graph-level property prediction (Buterez et al. 2024, SI 7 protocol as defaults).

    Args:
        model_config: the model family's configuration as a dict (e.g.
            :class:`chemgraph.models.ESAConfig`).
        task: ``"regression"`` or ``"classification"``.
        target_columns: names of the T predicted targets.
        featurizer: the featurizer preset as a dict (``FeaturizerPreset.to_dict()``); stored so
            that a checkpoint alone can featurize new molecules.
        scaler: :class:`TargetScaler` as a dict (regression) or None.
        fragments: multi-fragment policy used when featurizing (``"keep"``/``"largest"``).
        learning_rate: AdamW learning rate (paper: 1e-4).
        weight_decay: AdamW weight decay.
        warmup_steps: linear learning-rate warm-up over this many optimiser steps (0 = none).
        lr_patience: epochs without validation improvement before the learning rate is halved.
        lr_factor: multiplicative learning-rate decrease.
        model: registered model family (:data:`chemgraph.models.MODELS`); checkpoints written
            before the registry existed hold ESA/NSA models, hence the default.

    The checkpoint's ``hyper_parameters`` hold only plain Python values, so it loads with
    ``torch.load(..., weights_only=True)``.
    """

    def __init__(
        self,
        model_config: dict,
        task: Task,
        target_columns: list[str],
        featurizer: dict,
        scaler: dict | None = None,
        fragments: str = "keep",
        learning_rate: float = 1e-4,
        weight_decay: float = 1e-2,
        warmup_steps: int = 0,
        lr_patience: int = 15,
        lr_factor: float = 0.5,
        model: str = "esa",
    ) -> None:
        super().__init__()
        if task not in ("regression", "classification"):
            raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
        self.save_hyperparameters()
        self.model = build_model(model, model_config)
        self.scaler = TargetScaler(**scaler) if scaler is not None else None
        self.task = task

    def forward(self, batch) -> torch.Tensor:
        return self.model(batch)

    def _scaled(self, labels: torch.Tensor) -> torch.Tensor:
        return self.scaler.transform(labels) if self.scaler is not None else labels

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        inputs, labels = batch
        loss = masked_loss(self(inputs), self._scaled(labels), self.task)
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(labels))
        # mixture-of-experts models expose the weighted load-balancing loss of their forward
        auxiliary = getattr(self.model, "auxiliary_loss", None)
        if auxiliary is not None:
            self.log("train_auxiliary_loss", auxiliary, on_epoch=True, batch_size=len(labels))
            loss = loss + auxiliary
        return loss

    def on_train_epoch_end(self) -> None:
        """Log (INFO, and as a Lightning metric) the expert usage of a mixture-of-experts
        model, so collapse shows."""
        pop_usage = getattr(self.model, "pop_expert_usage", None)
        usage = pop_usage() if pop_usage is not None else None
        if usage is None:
            return
        self.log("expert_usage_max", usage.max(dim=1).values.mean())
        logger.info("epoch %d %s", self.current_epoch, expert_usage_table(usage))

    def validation_step(self, batch, batch_idx: int) -> None:
        inputs, labels = batch
        loss = masked_loss(self(inputs), self._scaled(labels), self.task)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True, batch_size=len(labels))

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Predictions ``float32 [B, T]`` in target units (regression) or probabilities."""
        inputs, _ = batch
        outputs = self(inputs).float()
        if self.task == "classification":
            return torch.sigmoid(outputs)
        return self.scaler.inverse_transform(outputs) if self.scaler is not None else outputs

    def on_train_batch_start(self, batch, batch_idx: int) -> None:
        warmup = self.hparams.warmup_steps
        if warmup and self.global_step < warmup:
            scale = (self.global_step + 1) / warmup
            for group in self.trainer.optimizers[0].param_groups:
                group["lr"] = self.hparams.learning_rate * scale

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(
            self.parameters(),
            lr=self.hparams.learning_rate,
            weight_decay=self.hparams.weight_decay,
        )
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=self.hparams.lr_factor, patience=self.hparams.lr_patience
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss", "interval": "epoch"},
        }
