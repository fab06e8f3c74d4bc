"""Recipe ``reaction_outcome``: GRAT reaction outcome prediction on USPTO-MIT.

Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?" (arXiv:2006.05213),
section 4.2: train a GRAT translator
(:func:`chemgraph.reactions.translator_training.train_reaction_model`),
then predict the products of the test reactions by beam search and report top-1/2/3/5
accuracy (:mod:`chemgraph.reactions.translator_prediction`).

    chemgraph recipe run reaction_outcome                      # full data, GPU (config.yaml)
    chemgraph recipe run reaction_outcome --config recipes/reaction_outcome/cpu.yaml
    chemgraph recipe run reaction_outcome --config partial.yaml  # over the profile it names

A partial ``--config`` needs only the keys it changes; ``profile: cpu`` in it merges it over
``cpu.yaml`` instead of ``config.yaml`` (:func:`chemgraph.recipes.registry.recipe_settings`).

Outputs in ``out``: ``best.ckpt``, ``metrics.json`` (top-1/2/3/5 accuracy, invalid-output
rate), ``predictions.csv``, ``rejected.csv`` (row, id, input, reason, file) and ``config.yaml``.

Before anything is written or trained, the run checks its inputs: every data file exists, the
``test`` file holds reactions with products to score, and the planned optimiser steps reach the
first validation (``val_check_interval``), which writes the checkpoint.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch
import yaml

from chemgraph._output import LOCK_NAME
from chemgraph.data.reactions import load_reaction_graphs, reaction_records
from chemgraph.data.table import write_rejected
from chemgraph.errors import ConfigError
from chemgraph.reactions.predictions import format_top_k_metrics, prediction_frame, top_k_metrics
from chemgraph.reactions.translator_prediction import predict_reactions
from chemgraph.reactions.translator_training import ReactionTrainingConfig, train_reaction_model
from chemgraph.recipes.registry import RECIPES, recipe_config, recipe_settings
from chemgraph.train.checkpoint import load_checkpoint

__all__ = [
    "DESCRIPTION",
    "ReactionOutcomeConfig",
    "check_first_validation",
    "default_config",
    "resolve_data_files",
    "resolve_data_path",
    "run",
]

log = logging.getLogger(__name__)

NAME = "reaction_outcome"

DESCRIPTION = RECIPES[NAME].description


@dataclass
class ReactionOutcomeConfig(ReactionTrainingConfig):
    """Every setting of a reaction-outcome run: training (see
    :class:`chemgraph.reactions.translator_training.ReactionTrainingConfig`) and evaluation;
    round-trips through YAML.

    Attributes:
        test: file of reactions to evaluate with beam search (None = no evaluation).
        max_test: use only the first N test reactions (None = all).
        beam_width, top_k, length_penalty, eval_batch_size: beam search and evaluation.

    Raises:
        ConfigError: a bad setting (named), or ``top_k`` above ``beam_width``.
    """

    test: str | None = None
    max_test: int | None = None
    beam_width: int = 8
    top_k: int = 5
    length_penalty: float = 0.0
    eval_batch_size: int = 32

    NUMBERS = {
        **ReactionTrainingConfig.NUMBERS,
        "max_test": (int, 1), "beam_width": (int, 1), "top_k": (int, 1),
        "length_penalty": (float, 0.0), "eval_batch_size": (int, 1),
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.top_k > self.beam_width:
            raise ConfigError(f"top_k {self.top_k} exceeds beam_width {self.beam_width}")


def default_config() -> dict[str, Any]:
    """The recipe's ``recipes/reaction_outcome/config.yaml`` (full data, GPU) as a dict."""
    return recipe_settings(NAME, None)


def resolve_data_path(path: str | None) -> str | None:
    """A file path, or ``"uspto_mit:<split>"`` for the dataset card's download of that split
    (``train``, ``valid``, ``test``, ``test_human``; fetched into ``CHEMGRAPH_HOME`` once).

    Raises:
        ValueError: unknown split.
    """
    if path is None or not path.startswith("uspto_mit:"):
        return path
    from chemgraph.data.datasets import get_dataset

    split = path.split(":", 1)[1]
    for downloaded in get_dataset("uspto_mit").download():
        if Path(downloaded).name.startswith(f"{split}.txt"):
            return str(downloaded)
    raise ValueError(f"{path}: uspto_mit has no split {split!r}")


def run(
    config: str | Path | dict[str, Any] | ReactionOutcomeConfig | None = None,
    seeds: int | None = None,
    out: str | Path | None = None,
) -> dict[str, float]:
    """Check the inputs, train, then evaluate on ``test`` by beam search; write the outputs and
    log the metrics with the number of test reactions scored.

    Args:
        config: a :class:`ReactionOutcomeConfig`, or a YAML file / dict of its fields merged
            over a profile of ``recipes/reaction_outcome/`` (``profile: cpu`` = ``cpu.yaml``;
            default ``config.yaml``, see :func:`chemgraph.recipes.registry.recipe_settings`);
            None = ``config.yaml``.
        seeds: must be None or 1 (one training run; set ``seed`` in the config).
        out: output folder (overrides the config's ``out``).

    Returns:
        The metrics written to ``metrics.json`` (empty, and no ``metrics.json``, when ``test``
        is None): those of :func:`chemgraph.reactions.predictions.top_k_metrics`, ``test_rejected``,
        ``train_seconds`` and ``predict_seconds``.

    Raises:
        ConfigError: bad settings, ``seeds`` > 1, a data file that does not exist (the setting,
            the path and the folder a relative path is resolved against are named), a ``test``
            file without a reaction with products to score, or ``max_steps`` / ``max_epochs``
            that end training before its first validation (:func:`check_first_validation`).
            All are raised before ``out`` is written to.
        ValueError: too little data. When it is raised before training starts, ``out`` is
            left as it was (a new folder is removed), so that the corrected run needs no
            ``--overwrite``.
    """
    if seeds not in (None, 1):
        raise ConfigError("the reaction_outcome recipe trains one model; set seed in the config")
    config = recipe_config(NAME, config, ReactionOutcomeConfig, out)
    config = resolve_data_files(config)
    check_first_validation(config)
    if config.test is not None:
        items, rows, rejected = load_reaction_graphs(config.test, config.max_test, config.progress)
        if not items:
            raise ConfigError(_nothing_to_score(config.test, rejected))
    out = Path(config.out)
    existed = out.exists()
    was_empty = not existed or all(path.name == LOCK_NAME for path in out.iterdir())
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    start = time.perf_counter()
    try:
        checkpoint = train_reaction_model(config)
    except (ValueError, OSError):
        written = [path.name for path in out.iterdir() if path.name != LOCK_NAME]
        if was_empty and written == ["config.yaml"]:
            # failed before training wrote anything: leave the folder as it was
            (out / "config.yaml").unlink()
            if not existed:
                out.rmdir()
        raise
    train_seconds = time.perf_counter() - start
    if config.test is None:
        return {}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module = load_checkpoint(checkpoint, kind="reaction", device=device)
    if not rejected.empty:  # next to the training and validation rejects
        write_rejected(rejected, out / "rejected.csv", append=True)
    start = time.perf_counter()
    predictions = predict_reactions(
        module, items, config.beam_width, config.top_k, config.eval_batch_size,
        config.length_penalty, config.progress,
    )  # fmt: skip
    metrics = top_k_metrics(predictions, [item.product_smiles for item in items])
    metrics["test_rejected"] = len(rejected)
    metrics["train_seconds"] = round(train_seconds, 1)
    metrics["predict_seconds"] = round(time.perf_counter() - start, 1)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    prediction_frame(rows, items, predictions).to_csv(out / "predictions.csv", index=False)
    log.info(
        "top-k accuracy on %d test reactions of %s (%d rejected, see %s):\n%s",
        metrics["reactions"], config.test, len(rejected), out / "rejected.csv",
        format_top_k_metrics(metrics),
    )  # fmt: skip
    return metrics


def resolve_data_files(config: Any) -> Any:
    """``config`` (a recipe's settings dataclass) with the data files among its fields,
    ``train``, ``valid`` and ``test``, resolved (:func:`resolve_data_path`) and checked: each
    is None or a file.

    Raises:
        ConfigError: the setting, the path and, for a relative path, the folder it is
            resolved against (the current folder).
        ValueError: an unknown ``uspto_mit:`` split.
    """
    names = [item.name for item in fields(config) if item.name in ("train", "valid", "test")]
    config = replace(config, **{name: resolve_data_path(getattr(config, name)) for name in names})
    for name in names:
        path = getattr(config, name)
        if path is None or Path(path).is_file():
            continue
        problem = "is a folder, not a file" if Path(path).is_dir() else "does not exist"
        where = (
            "" if Path(path).is_absolute() else f" (relative to the current folder {Path.cwd()})"
        )
        raise ConfigError(f"{name}: {path} {problem}{where}")
    return config


def check_first_validation(config: ReactionTrainingConfig) -> None:
    """Refuse settings whose training ends before its first validation, which writes the
    checkpoint: ``max_steps``, or ``max_epochs`` × batches per epoch, below
    ``val_check_interval`` (None = a validation at the end of every epoch: nothing to check).

    Batches per epoch are counted from the reaction records of ``train`` (up to ``max_train``,
    less the held-out ``valid_fraction`` when ``valid`` is None) and ``batch_size``: an upper
    bound, since records that cannot be turned into graphs are dropped later, so a run that
    would validate is never refused. ``max_time_minutes`` is not foreseen.

    Raises:
        ConfigError: the limit that ends training, and the settings to change
            (``max_steps`` or ``max_epochs``, ``val_check_interval``).
    """
    interval = config.val_check_interval
    if interval is None:
        return
    if config.max_steps is not None and config.max_steps < interval:
        raise ConfigError(
            f"max_steps {config.max_steps} ends training before its first validation at step "
            f"{interval} (val_check_interval), so no checkpoint would be written; raise "
            f"max_steps to at least {interval} or lower val_check_interval to at most "
            f"{config.max_steps}"
        )
    # enough training reactions for the first validation within max_epochs (stop counting there)
    needed = (math.ceil(interval / config.max_epochs) - 1) * config.batch_size + 1
    records = train = 0
    for _, _, reason in reaction_records(config.train, config.max_train):
        records += reason is None
        train = records - (
            max(1, round(config.valid_fraction * records)) if config.valid is None else 0
        )
        if train >= needed:
            return
    batches = math.ceil(train / config.batch_size)
    if train < 2:  # too little data: train_reaction_model says so
        return
    steps = config.max_epochs * batches
    held_out = " less the valid_fraction held out" if config.valid is None else ""
    raise ConfigError(
        f"max_epochs {config.max_epochs} × {batches} batches per epoch (at most {train} "
        f"training reactions of {config.train}{held_out}, batch_size {config.batch_size}) = "
        f"{steps} steps end training before its first validation at step {interval} "
        f"(val_check_interval), so no checkpoint would be written; raise max_epochs to at "
        f"least {math.ceil(interval / batches)} or lower val_check_interval to at most {steps}"
    )


def _nothing_to_score(path: str, rejected: Any) -> str:
    """Why ``test`` gives no reaction to score: the file, what was rejected, what to do."""
    if rejected.empty:
        found = "no reaction at all"
    else:
        reasons = rejected["reason"].value_counts()
        found = f"{len(rejected)} records rejected, {reasons.iloc[0]} as {reasons.index[0]!r}"
    return (
        f"test: {path} holds no reaction with products to score ({found}); give a file of "
        "reactions with their products, or set test: null to train without scoring"
    )
