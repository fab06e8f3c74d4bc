"""Recipe ``reaction_outcome``: GRAT reaction outcome prediction on USPTO-MIT.

Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?" (arXiv:2006.05213),
section 4.2: train a GRAT translator (:func:`chemgraph.train.reaction.train_reaction_model`),
then predict the products of the test reactions by beam search and report top-1/2/3/5
accuracy (:mod:`chemgraph.train.reaction`).

    chemgraph recipe run reaction_outcome                      # full data, GPU (config.yaml)
    chemgraph recipe run reaction_outcome --config recipes/reaction_outcome/cpu.yaml
    chemgraph recipe run reaction_outcome --config partial.yaml  # over the profile it names

A partial ``--config`` needs only the keys it changes; ``profile: cpu`` in it merges it over
``cpu.yaml`` instead of ``config.yaml`` (:func:`chemgraph.recipes.registry.recipe_settings`).

Outputs in ``out``: ``best.ckpt``, ``metrics.json`` (top-1/2/3/5 accuracy, invalid-output
rate), ``predictions.csv``, ``rejected.csv`` (row, input, reason, file) and ``config.yaml``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import yaml

from chemgraph.data.reactions import load_reaction_graphs
from chemgraph.errors import ConfigError
from chemgraph.recipes.registry import RECIPE_DESCRIPTIONS, recipe_settings
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.reaction import (
    ReactionTrainingConfig,
    format_top_k_metrics,
    predict_reactions,
    prediction_frame,
    top_k_metrics,
    train_reaction_model,
)

__all__ = ["DESCRIPTION", "ReactionOutcomeConfig", "default_config", "resolve_data_path", "run"]

log = logging.getLogger(__name__)

NAME = "reaction_outcome"

DESCRIPTION = RECIPE_DESCRIPTIONS[NAME]


@dataclass
class ReactionOutcomeConfig(ReactionTrainingConfig):
    """Every setting of a reaction-outcome run: training (see
    :class:`chemgraph.train.reaction.ReactionTrainingConfig`) and evaluation; round-trips
    through YAML.

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
    """Train, then evaluate on ``test`` by beam search; write the outputs and log the metrics.

    Args:
        config: a :class:`ReactionOutcomeConfig`, or a YAML file / dict of its fields merged
            over a profile of ``recipes/reaction_outcome/`` (``profile: cpu`` = ``cpu.yaml``;
            default ``config.yaml``, see :func:`chemgraph.recipes.registry.recipe_settings`);
            None = ``config.yaml``.
        seeds: must be None or 1 (one training run; set ``seed`` in the config).
        out: output folder (overrides the config's ``out``).

    Returns:
        The metrics written to ``metrics.json`` (empty without a test file): those of
        :func:`chemgraph.train.reaction.top_k_metrics`, ``test_rejected``, ``train_seconds``
        and ``predict_seconds``.

    Raises:
        ValueError: bad settings, ``seeds`` > 1, too little data.
    """
    if seeds not in (None, 1):
        raise ConfigError("the reaction_outcome recipe trains one model; set seed in the config")
    if isinstance(config, ReactionOutcomeConfig):
        config = config if out is None else replace(config, out=str(out))
    else:
        values = recipe_settings(NAME, config)
        if out is not None:
            values["out"] = str(out)
        source = str(config) if isinstance(config, (str, Path)) else None
        config = ReactionOutcomeConfig.from_dict(values, source)
    paths = {name: resolve_data_path(getattr(config, name)) for name in ("train", "valid", "test")}
    config = replace(config, **paths)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    start = time.perf_counter()
    checkpoint = train_reaction_model(config)
    train_seconds = time.perf_counter() - start
    if config.test is None:
        return {}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    module = load_checkpoint(checkpoint, kind="reaction", device=device)
    items, rows, rejected = load_reaction_graphs(config.test, config.max_test)
    if not rejected.empty:  # next to the training and validation rejects
        rejected.to_csv(out / "rejected.csv", mode="a", header=False, index=False)
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
    log.info("%s", format_top_k_metrics(metrics))
    return metrics
