"""The one fit of every job: a Lightning Trainer from :func:`~chemgraph.train.trainer.make_trainer`,
``trainer.fit``, then the best checkpoint found (and its weights loaded back).

``chemgraph train`` (:mod:`chemgraph.jobs.train`), transfer learning's pretraining and
fine-tuning (:mod:`chemgraph.transfer`), reaction-model training
(:mod:`chemgraph.reactions.translator_training`) and the reaction-centre model's two stages
(:mod:`chemgraph.reactions.reaction_centre_training`) all train through :func:`fit`.
"""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch.utils.data import DataLoader

from chemgraph._interrupts import Interrupted, ctrl_c_enabled
from chemgraph.train.checkpoint import best_checkpoint_path, load_weights
from chemgraph.train.trainer import hide_lightning_info, make_trainer

__all__ = ["FitResult", "fit"]


@dataclass
class FitResult:
    """What :func:`fit` leaves.

    Attributes:
        trainer: the Trainer that ran (``current_epoch``, callback states).
        best: the lowest-``val_loss`` checkpoint, or None when the fit kept no checkpoint
            (``checkpoint_dir=None``: the module holds its last weights).
    """

    trainer: L.Trainer
    best: Path | None


class _StopRecorder(L.Callback):
    """Keeps the ``KeyboardInterrupt`` that Lightning turns into ``sys.exit(1)``."""

    def __init__(self) -> None:
        self.stop: KeyboardInterrupt | None = None

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        if isinstance(exception, KeyboardInterrupt):
            self.stop = exception


def fit(
    module: L.LightningModule,
    data: L.LightningDataModule | DataLoader | tuple[DataLoader, DataLoader],
    *,
    budget_hint: str,
    restore_best: bool = True,
    quiet: bool = False,
    resume_from: str | Path | None = None,
    **trainer_options: Any,
) -> FitResult:
    """Train ``module`` on ``data``; with a ``checkpoint_dir``, find the best checkpoint and
    (``restore_best``) load its weights into ``module``.

    Args:
        module: the Lightning module to train (its weights change in place).
        data: a DataModule, the training and validation loaders, or a training loader
            alone (a fixed number of epochs without validation; then no ``checkpoint_dir``).
        budget_hint: which limits to raise, ending the error when training stops before its
            first validation (e.g. ``"raise max_time_minutes or max_epochs"``).
        restore_best: load the best checkpoint's weights into ``module`` after the fit (else
            the last weights stay and only :attr:`FitResult.best` names the file).
        quiet: hide Lightning's start-up banner (jobs that fit many models in one run).
        resume_from: the ``last.ckpt`` of an interrupted fit of the same module and data
            (``keep_last``): the fit continues from it, and on one process trains as the
            uninterrupted fit would have; None = start from ``module``'s weights.
        **trainer_options: keyword arguments of :func:`chemgraph.train.trainer.make_trainer`
            (``max_epochs``, ``checkpoint_dir``, ``callbacks``, ...).

    Returns:
        The Trainer and the best checkpoint's path.

    Raises:
        ValueError: with a ``checkpoint_dir``, training stopped before its first validation.
        chemgraph._interrupts.Interrupted: SIGINT (Ctrl-C) or SIGTERM stopped the training.
            Lightning ends the epoch and exits with status 0 on SIGTERM, and exits with status
            1 on Ctrl-C; both are raised as the signal instead, so that a job stops the same
            way everywhere (``chemgraph`` prints "interrupted" and exits with 128 + signal).
            Ctrl-C stops a fit also in a process that inherited SIGINT ignored (started in
            the background, :func:`chemgraph._interrupts.ctrl_c_enabled`).
    """
    recorder = _StopRecorder()
    options = {**trainer_options, "callbacks": [*trainer_options.get("callbacks", []), recorder]}
    with ctrl_c_enabled(), hide_lightning_info() if quiet else contextlib.nullcontext():
        sigint = signal.getsignal(signal.SIGINT)
        trainer = make_trainer(**options)
        try:
            path = None if resume_from is None else str(resume_from)
            if isinstance(data, L.LightningDataModule):
                trainer.fit(module, datamodule=data, ckpt_path=path, weights_only=True)
            elif isinstance(data, DataLoader):
                trainer.fit(module, data, ckpt_path=path, weights_only=True)
            else:
                trainer.fit(module, *data, ckpt_path=path, weights_only=True)
        except SystemExit as stop:
            if isinstance(stop, SIGTERMException):
                raise Interrupted(signal.SIGTERM) from None
            if recorder.stop is None:
                raise
            if sigint is not None:  # Lightning leaves Ctrl-C ignored after its shutdown
                signal.signal(signal.SIGINT, sigint)
            raise Interrupted(getattr(recorder.stop, "signum", signal.SIGINT)) from None
    best = None
    if trainer_options.get("checkpoint_dir") is not None:
        best = best_checkpoint_path(trainer, budget_hint)
        if restore_best:
            load_weights(module, best)
    return FitResult(trainer, best)
