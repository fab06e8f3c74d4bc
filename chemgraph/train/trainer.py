"""The one way chemgraph builds a ``lightning.Trainer``, and the third-party noise it hides.

Every training run (``chemgraph train``, transfer learning, reaction outcome prediction) gets its
Trainer from :func:`make_trainer`: one device (or distributed data-parallel training over
several), bf16 mixed precision on CUDA and 32-bit floats on the CPU, no Lightning logger
(chemgraph writes its own files and progress lines), no sanity validation.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher

from chemgraph._files import replacing
from chemgraph.train.callbacks import RandomStates

__all__ = ["hide_lightning_info", "make_trainer", "quiet_third_party_warnings", "resolve_precision"]

_LIGHTNING_INFO = "lightning.pytorch.utilities.rank_zero"


_DROPPED_LINES = {
    _LIGHTNING_INFO: "litlogger",  # the start-up advertisement for Lightning's cloud logger
    "lightning.fabric.utilities.distributed": "Initializing distributed",  # one per process
}
"""Logger -> text of the lines :func:`quiet_third_party_warnings` drops."""


class _DropLines(logging.Filter):
    """Drops the records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def quiet_third_party_warnings() -> None:
    """Hide third-party messages that say nothing to a chemgraph user (idempotent).

    Lightning's advertisement for its cloud logger, its line per process joining a DDP fit
    (its rank-zero lines say how many processes started), PyTorch's ``LeafSpec`` deprecation
    warning raised inside Lightning, and Lightning's warning that the checkpoint folder is not
    empty (chemgraph writes ``best.ckpt`` into the run's output folder on purpose). Changes
    process-wide state: logging filters (:data:`_DROPPED_LINES`) and two ``warnings``
    filters. Called by the ``chemgraph`` command and by :func:`make_trainer`.
    """
    for name, text in _DROPPED_LINES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropLines) for f in logger.filters):
            logger.addFilter(_DropLines(text))
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


class _AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer, writing beside the checkpoint and renaming it into place
    (:func:`chemgraph._files.replacing`). Lightning's own goes through a temporary file in the
    system's temporary folder (an fsspec transaction) and moves it, which fails when that
    folder is full and is a copy over the earlier ``best.ckpt`` when it is on another file
    system: a kill or a full disk then destroys the last good model."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None:
            raise TypeError("chemgraph's checkpoint writer takes no storage_options")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with replacing(path) as temporary:
            torch.save(checkpoint, temporary)


def resolve_precision(accelerator: str, precision: str) -> str:
    """``precision`` unless ``"auto"``: then bf16-mixed when the run lands on CUDA, else
    32-true."""
    if precision != "auto":
        return precision
    cuda = torch.cuda.is_available() and accelerator in ("auto", "gpu", "cuda")
    return "bf16-mixed" if cuda else "32-true"


def _on_one_thread(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with PyTorch (and OpenMP) on one CPU thread."""
    torch.set_num_threads(1)
    return function(*args, **kwargs)


class _ForkLauncher(_MultiProcessingLauncher):
    """Lightning's launcher of forked processes, each on one CPU thread, that also hands rank
    0's fit-loop progress and callback states (``Callback.state_dict``) back to the calling
    process; Lightning's own hands back the last weights, the best checkpoint's path and
    ``callback_metrics`` only."""

    def __init__(self, strategy: DDPStrategy) -> None:
        super().__init__(strategy, start_method="fork")

    def launch(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return super().launch(functools.partial(_on_one_thread, function), *args, **kwargs)

    def get_extra_results(self, trainer: L.Trainer) -> dict[str, Any]:
        extra = super().get_extra_results(trainer)
        state = {
            "fit_loop": trainer.fit_loop.state_dict(),
            "callbacks": [callback.state_dict() for callback in trainer.callbacks],
        }
        buffer = io.BytesIO()  # bytes, not tensors, through the queue (as Lightning's metrics)
        torch.save(state, buffer)
        return {**extra, "rank_zero_state": buffer.getvalue()}

    def update_main_process_results(self, trainer: L.Trainer, extra: dict[str, Any]) -> None:
        super().update_main_process_results(trainer, extra)
        state = torch.load(io.BytesIO(extra["rank_zero_state"]), weights_only=True)
        trainer.fit_loop.load_state_dict(state["fit_loop"])
        for callback, callback_state in zip(trainer.callbacks, state["callbacks"]):
            callback.load_state_dict(callback_state)


class _ForkedDDP(DDPStrategy):
    """DDP over forked processes (:class:`_ForkLauncher`): no pickling and no re-run of the
    calling script, from a command or within pytest alike; parameters without a gradient
    allowed."""

    def __init__(self) -> None:
        super().__init__(start_method="fork", find_unused_parameters=True)

    def _configure_launcher(self) -> None:
        self._launcher = _ForkLauncher(self)


def make_trainer(
    *,
    max_epochs: int,
    max_steps: int | None = None,
    max_minutes: float | None = None,
    val_check_interval: int | None = None,
    gradient_clip: float | None = None,
    checkpoint_dir: str | Path | None = None,
    keep_last: bool = False,
    early_stopping_patience: int | None = None,
    callbacks: Sequence[L.Callback] = (),
    accelerator: str = "auto",
    devices: int = 1,
    precision: str = "auto",
    model_summary: bool = False,
) -> L.Trainer:
    """A Lightning Trainer on one device, or DDP over ``devices`` processes, validating on
    ``val_loss``.

    With ``devices > 1``, ``fit`` forks one process per device (GPUs, or CPU processes that
    communicate through gloo); each process computes on one CPU thread (a forked process's
    OpenMP hangs on more threads once the parent has used them), takes its share of every
    epoch's batches (Lightning's ``DistributedSampler``; validation batches are padded to equal
    shares) and averages gradients with the others; modules log epoch metrics with
    ``sync_dist=True``. Rank 0 alone writes the checkpoint, and its fit-loop progress
    (``trainer.current_epoch``) and callback states (e.g. a
    :class:`chemgraph.train.callbacks.LossHistory` record) come back to the calling process
    with the last weights. ``fit`` can run once; predict with another Trainer (one device).
    Parameters without a gradient in a step are allowed (a mixture of experts' expert may get
    no atoms). Calls :func:`quiet_third_party_warnings`.

    Args:
        max_epochs: upper bound on epochs.
        max_steps: upper bound on optimiser steps (None = none).
        max_minutes: wall-clock budget of ``fit`` in minutes (None = none).
        val_check_interval: validate every this many optimiser steps (None = once per epoch).
        gradient_clip: clip the gradient norm to this value (None = no clipping).
        checkpoint_dir: keep the weights of the lowest ``val_loss`` as
            ``<checkpoint_dir>/best.ckpt`` (replacing a file of that name, atomically: written
            beside it and renamed, so a failed write leaves the earlier one whole); None =
            write no checkpoint (the last weights stay in the module).
        keep_last: also keep ``<checkpoint_dir>/last.ckpt`` (written the same way) after every
            validation: the whole state of the fit (weights, optimiser, schedulers, loops,
            callbacks and the random generators, :class:`chemgraph.train.callbacks.
            RandomStates`), from which :func:`chemgraph.train.fit.fit` resumes an interrupted
            fit.
        early_stopping_patience: stop after this many validations without a lower
            ``val_loss`` (None = never stop early).
        callbacks: further callbacks (e.g. :mod:`chemgraph.train.callbacks`).
        accelerator: Lightning accelerator (``"auto"``, ``"cpu"``, ``"gpu"``, ...).
        devices: processes (one per device); above 1, distributed data-parallel training.
        precision: Lightning precision; ``"auto"`` = ``"bf16-mixed"`` when CUDA is available
            and ``accelerator`` allows it, else ``"32-true"``.
        model_summary: Lightning's parameter table at the start of ``fit``.

    Returns:
        The Trainer; ``trainer.checkpoint_callback`` is the best-checkpoint callback (None
        without ``checkpoint_dir``), see :func:`chemgraph.train.checkpoint.best_checkpoint_path`.

    Raises:
        ValueError: an ``accelerator``/``devices`` pair Lightning refuses (e.g. no GPU, or
            more devices than GPUs), with Lightning's reason.
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
                save_last=keep_last,
                enable_version_counter=False,
            )  # fmt: skip
        )
        if keep_last:
            every.append(RandomStates())
    try:
        return L.Trainer(
            max_epochs=max_epochs,
            max_steps=max_steps or -1,
            max_time=None if max_minutes is None else datetime.timedelta(minutes=max_minutes),
            val_check_interval=val_check_interval,
            check_val_every_n_epoch=None if val_check_interval else 1,
            accelerator=accelerator,
            devices=devices,
            strategy=_ForkedDDP() if devices > 1 else "auto",
            precision=resolve_precision(accelerator, precision),
            gradient_clip_val=gradient_clip,
            callbacks=every,
            plugins=[_AtomicCheckpointIO()],
            logger=False,
            enable_checkpointing=checkpoint_dir is not None,
            enable_progress_bar=False,
            enable_model_summary=model_summary,
            num_sanity_val_steps=0,
        )
    except MisconfigurationException as error:  # e.g. more devices than GPUs
        raise ValueError(f"accelerator {accelerator!r}, devices {devices}: {error}") from None
