"""Lightning callbacks that record and report training progress (as ``logging`` INFO lines)."""

from __future__ import annotations

import logging
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import lightning as L
import numpy as np
import torch
from tqdm.auto import tqdm

__all__ = ["CPUTimeLimit", "EpochProgress", "LossHistory", "RandomStates", "ValidationLog"]

log = logging.getLogger(__name__)


class LossHistory(L.Callback):
    """Records the epoch-mean training and validation losses (for the learning-curve plot).

    Its :meth:`state_dict` is the record, so that a multi-process fit
    (:func:`chemgraph.train.trainer.make_trainer` with ``devices > 1``) hands it back to the
    calling process.

    Args:
        log_epochs: also log one line per epoch (``epoch   3: train_loss 0.1234  val_loss
            0.2345  (12 s)``, seconds since the callback was made), from the global-zero
            process only.

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
        if self.log_epochs and trainer.is_global_zero:
            last = self.epochs[-1]
            log.info(
                "epoch %3d: train_loss %.4f  val_loss %.4f  (%.0f s)",
                last["epoch"], last["train_loss"], last["val_loss"],
                time.perf_counter() - self._start,
            )  # fmt: skip

    def state_dict(self) -> dict[str, list[dict[str, float]]]:
        return {"epochs": self.epochs}

    def load_state_dict(self, state_dict: dict[str, list[dict[str, float]]]) -> None:
        self.epochs = list(state_dict["epochs"])


class EpochProgress(L.Callback):
    """Progress within each training epoch, shown by the global-zero process only.

    With ``bar``, a tqdm bar per epoch on stderr: optimiser steps done of the epoch's, time
    left and the running training loss (refreshed at most once a second), cleared at the
    epoch's end. Without, a ``logging`` INFO line every ``ceil(steps / lines_per_epoch)``
    optimiser steps, the epoch's last step left out (:class:`LossHistory` logs the epoch's
    line)::

        epoch   3 step 120/500: train_loss 0.1234  (12 s)

    Steps count this process's training batches (chemgraph does not accumulate gradients, so
    a batch is an optimiser step); the running training loss is the mean of the losses its
    training steps returned so far this epoch (a mixture of experts' load-balancing loss
    included); seconds count from when the callback was made. An epoch of unknown length
    gets a bar without a total and no lines.

    Args:
        bar: tqdm bar (True) or log lines (False); None = a bar when stderr is a terminal.
        lines_per_epoch: log lines per epoch, at most (without ``bar``).
    """

    def __init__(self, bar: bool | None = None, lines_per_epoch: int = 10) -> None:
        self.bar = sys.stderr.isatty() if bar is None else bar
        self.lines_per_epoch = lines_per_epoch
        self._start = time.perf_counter()
        self._bar: tqdm | None = None

    def on_train_epoch_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        steps = trainer.num_training_batches
        self._steps = int(steps) if math.isfinite(steps) else None
        self._loss_sum = torch.zeros(())
        self._losses = 0
        self._shown = -math.inf
        if self.bar and trainer.is_global_zero:
            self._bar = tqdm(
                total=self._steps, desc=f"epoch {trainer.current_epoch}", unit="step",
                leave=False, dynamic_ncols=True,
            )  # fmt: skip

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx: int) -> None:
        if not trainer.is_global_zero:
            return
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        if loss is not None:  # a training step may skip its batch
            # summed on the loss's device: a float() per step would wait for the GPU
            self._loss_sum = self._loss_sum.to(loss.device) + loss.detach().float()
            self._losses += 1
        step = batch_idx + 1
        if self._bar is not None:
            self._bar.update(step - self._bar.n)
            if time.perf_counter() - self._shown >= 1.0 or step == self._steps:
                self._bar.set_postfix(train_loss=f"{self._running_loss():.4f}")
                self._shown = time.perf_counter()
        elif self._steps is not None and step < self._steps:
            if step % math.ceil(self._steps / self.lines_per_epoch) == 0:
                log.info(
                    "epoch %3d step %d/%d: train_loss %.4f  (%.0f s)",
                    trainer.current_epoch, step, self._steps, self._running_loss(),
                    time.perf_counter() - self._start,
                )  # fmt: skip

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self._close()

    def on_train_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self._close()  # a fit stopped within an epoch (max_time, max_steps)

    def _running_loss(self) -> float:
        return float(self._loss_sum) / self._losses if self._losses else math.nan

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


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


class CPUTimeLimit(L.Callback):
    """Stops a fit once the training process has used ``minutes`` of CPU time.

    CPU time (:func:`time.process_time`: user + system time of all the process's threads), not
    wall time, so that a busy machine does not change how much training the budget buys. The
    check runs after every training batch; the fit stops after the batch that reaches the
    budget (Lightning's ``trainer.should_stop``, so a running epoch ends there and no further
    one starts). Data loading in worker processes is not counted (chemgraph's fits load in the
    training process).

    Args:
        minutes: the budget in CPU minutes (``>= 0``).
        start: the process time (seconds, from ``clock``) the budget counts from; None = when
            training starts (``on_train_start``). Passing the same ``start`` to the callbacks
            of several fits makes them share one budget.
        clock: the CPU clock in seconds (default :func:`time.process_time`).

    Attributes:
        stopped_step: the optimiser step (``trainer.global_step``) at which the budget stopped
            the fit; None while it has not.

    Raises:
        ValueError: a negative ``minutes``.
    """

    def __init__(
        self,
        minutes: float,
        start: float | None = None,
        clock: Callable[[], float] = time.process_time,
    ) -> None:
        if minutes < 0:
            raise ValueError(f"CPU-time budget must be >= 0 minutes, got {minutes}")
        self.minutes, self.start, self.clock = minutes, start, clock
        self.stopped_step: int | None = None

    def used_minutes(self) -> float:
        """CPU minutes used since ``start`` (0 before training starts)."""
        return 0.0 if self.start is None else (self.clock() - self.start) / 60.0

    def on_train_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if self.start is None:
            self.start = self.clock()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx: int) -> None:
        if self.stopped_step is None and self.used_minutes() >= self.minutes:
            trainer.should_stop = True
            self.stopped_step = trainer.global_step
            log.info(
                "CPU-time budget of %g min reached at step %d: training stops",
                self.minutes, trainer.global_step,
            )  # fmt: skip


class RandomStates(L.Callback):
    """Keeps the random number generators' states (Python's, NumPy's and torch's CPU and CUDA
    generators) in every checkpoint and sets them again when a fit resumes from one, so that
    dropout, noise and every other draw after the checkpoint are those of the uninterrupted
    fit (Lightning restores the weights, optimiser, schedulers and loops, not these states).
    The batches' order does not depend on them
    (:class:`chemgraph.data.datamodule.SeededShuffleSampler`,
    :class:`~chemgraph.data.datamodule.SizeBucketBatchSampler`).

    The states are those of the moment the checkpoint is written (the end of a validation),
    the last moment that draws nothing before the next epoch starts.
    """

    def state_dict(self) -> dict[str, Any]:
        """Plain values and tensors (a checkpoint loads with ``weights_only=True``)."""
        name, keys, position, has_gauss, cached = np.random.get_state()
        return {
            "python": random.getstate(),
            "numpy": [name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached],
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        python = state_dict["python"]
        random.setstate((python[0], tuple(python[1]), python[2]))
        name, keys, position, has_gauss, cached = state_dict["numpy"]
        np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
        torch.set_rng_state(state_dict["torch"])
        if state_dict["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state_dict["cuda"])
