"""The one way chemgraph builds a ``lightning.Trainer``, and the third-party noise it hides.

Every training run (``chemgraph train``, transfer learning, reaction outcome prediction) gets its
Trainer from :func:`make_trainer`: one device, bf16 mixed precision on CUDA and 32-bit floats on
the CPU, no Lightning logger (chemgraph writes its own files), no sanity validation.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import lightning as L
import torch

__all__ = ["hide_lightning_info", "make_trainer", "quiet_third_party_warnings"]

_LIGHTNING_INFO = "lightning.pytorch.utilities.rank_zero"


class _DropAdvertisement(logging.Filter):
    """Drops Lightning's start-up advertisement for its cloud logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


def quiet_third_party_warnings() -> None:
    """Hide third-party messages that say nothing to a chemgraph user (idempotent).

    Lightning's advertisement for its cloud logger, PyTorch's ``LeafSpec`` deprecation
    warning raised inside Lightning, and Lightning's warning that the checkpoint folder is not
    empty (chemgraph writes ``best.ckpt`` into the run's output folder on purpose). Changes
    process-wide state: a logging filter and two ``warnings`` filters. Called by the
    ``chemgraph`` command and by :func:`make_trainer`.
    """
    logger = logging.getLogger(_LIGHTNING_INFO)
    if not any(isinstance(f, _DropAdvertisement) for f in logger.filters):
        logger.addFilter(_DropAdvertisement())
    warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")
    warnings.filterwarnings("ignore", message="Checkpoint directory .* exists and is not empty")


@contextlib.contextmanager
def hide_lightning_info() -> Iterator[None]:
    """Within the block, Lightning logs only warnings and errors: no "GPU available" banner per
    Trainer and no "``Trainer.fit`` stopped" line per fit (runs that fit many models)."""
    logger = logging.getLogger(_LIGHTNING_INFO)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _precision(accelerator: str, precision: str) -> str:
    """``precision`` unless ``"auto"``: then bf16-mixed when the run lands on CUDA, else
    32-true."""
    if precision != "auto":
        return precision
    cuda = torch.cuda.is_available() and accelerator in ("auto", "gpu", "cuda")
    return "bf16-mixed" if cuda else "32-true"


def make_trainer(
    *,
    max_epochs: int,
    max_steps: int | None = None,
    max_minutes: float | None = None,
    val_check_interval: int | None = None,
    gradient_clip: float | None = None,
    checkpoint_dir: str | Path | None = None,
    early_stopping_patience: int | None = None,
    callbacks: Sequence[L.Callback] = (),
    accelerator: str = "auto",
    precision: str = "auto",
    progress_bar: bool = False,
    model_summary: bool = False,
) -> L.Trainer:
    """A Lightning Trainer on one device, validating on ``val_loss``.

    Calls :func:`quiet_third_party_warnings`.

    Args:
        max_epochs: upper bound on epochs.
        max_steps: upper bound on optimiser steps (None = none).
        max_minutes: wall-clock budget of ``fit`` in minutes (None = none).
        val_check_interval: validate every this many optimiser steps (None = once per epoch).
        gradient_clip: clip the gradient norm to this value (None = no clipping).
        checkpoint_dir: keep the weights of the lowest ``val_loss`` as
            ``<checkpoint_dir>/best.ckpt`` (replacing a file of that name); None = write no
            checkpoint (the last weights stay in the module).
        early_stopping_patience: stop after this many validations without a lower
            ``val_loss`` (None = never stop early).
        callbacks: further callbacks (e.g. :mod:`chemgraph.train.callbacks`).
        accelerator: Lightning accelerator (``"auto"``, ``"cpu"``, ``"gpu"``, ...).
        precision: Lightning precision; ``"auto"`` = ``"bf16-mixed"`` when CUDA is available
            and ``accelerator`` allows it, else ``"32-true"``.
        progress_bar: Lightning's tqdm progress bars.
        model_summary: Lightning's parameter table at the start of ``fit``.

    Returns:
        The Trainer; ``trainer.checkpoint_callback`` is the best-checkpoint callback (None
        without ``checkpoint_dir``), see :func:`chemgraph.train.checkpoint.best_checkpoint_path`.
    """
    quiet_third_party_warnings()
    every: list[L.Callback] = list(callbacks)
    if early_stopping_patience is not None:
        every.append(
            L.pytorch.callbacks.EarlyStopping(
                monitor="val_loss", mode="min", patience=early_stopping_patience
            )
        )
    if checkpoint_dir is not None:
        every.append(
            L.pytorch.callbacks.ModelCheckpoint(
                dirpath=checkpoint_dir,
                filename="best",
                monitor="val_loss",
                mode="min",
                save_top_k=1,
                enable_version_counter=False,
            )  # fmt: skip
        )
    return L.Trainer(
        max_epochs=max_epochs,
        max_steps=max_steps or -1,
        max_time=None if max_minutes is None else datetime.timedelta(minutes=max_minutes),
        val_check_interval=val_check_interval,
        check_val_every_n_epoch=None if val_check_interval else 1,
        accelerator=accelerator,
        devices=1,
        precision=_precision(accelerator, precision),
        gradient_clip_val=gradient_clip,
        callbacks=every,
        logger=False,
        enable_checkpointing=checkpoint_dir is not None,
        enable_progress_bar=progress_bar,
        enable_model_summary=model_summary,
        num_sanity_val_steps=0,
    )
