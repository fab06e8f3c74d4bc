"""Lightning callbacks that record and report training progress (as ``logging`` INFO lines)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence

import lightning as L

__all__ = ["LossHistory", "ValidationLog"]

log = logging.getLogger(__name__)


class LossHistory(L.Callback):
    """Records the epoch-mean training and validation losses (for the learning-curve plot).

    Args:
        log_epochs: also log one line per epoch (``epoch   3: train_loss 0.1234  val_loss
            0.2345  (12 s)``, seconds since the callback was made).

    Attributes:
        epochs: one ``{"epoch", "train_loss", "val_loss"}`` dict per finished training epoch
            (0-based epoch; NaN for a loss not computed).
    """

    def __init__(self, log_epochs: bool = False) -> None:
        self.epochs: list[dict[str, float]] = []
        self.log_epochs = log_epochs
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
        if self.log_epochs:
            last = self.epochs[-1]
            log.info(
                "epoch %3d: train_loss %.4f  val_loss %.4f  (%.0f s)",
                last["epoch"], last["train_loss"], last["val_loss"],
                time.perf_counter() - self._start,
            )  # fmt: skip


class ValidationLog(L.Callback):
    """Logs one line per validation: optimiser step, losses and validation metrics.

    Validation may run every ``val_check_interval`` steps, inside an epoch, where Lightning has
    no epoch-mean training loss yet: the line shows the mean training-batch loss since the
    previous line.

    Args:
        metrics: ``(label, logged metric name, decimals)`` of each value shown after
            ``val_loss``, e.g. ``[("val label acc", "val_label_accuracy", 3)]``.
        enabled: log nothing when False.
    """

    def __init__(self, metrics: Sequence[tuple[str, str, int]] = (), enabled: bool = True) -> None:
        self.metrics = list(metrics)
        self.enabled = enabled
        self._start = time.perf_counter()
        self._train_losses: list[float] = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self._train_losses.append(float(loss))

    def on_validation_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if not self.enabled or trainer.sanity_checking:
            return
        values = trainer.callback_metrics
        losses = self._train_losses
        train_loss = sum(losses) / len(losses) if losses else math.nan
        self._train_losses = []
        shown = "".join(
            f"  {label} {float(values[name]):.{decimals}f}"
            for label, name, decimals in self.metrics
        )
        log.info(
            "step %6d: train_loss %.4f  val_loss %.4f%s  (%.0f s)",
            trainer.global_step, train_loss, float(values["val_loss"]), shown,
            time.perf_counter() - self._start,
        )  # fmt: skip
