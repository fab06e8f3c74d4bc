"""Recipe ``reaction_centre``: reaction outcomes by reaction-centre prediction on USPTO-MIT.

Trains the reaction-centre model on the GRAT encoder
(:func:`chemgraph.reactions.reaction_centre_training.train_reaction_centre_model`: Jin et al.
2017, WLN/WLDN, NeurIPS, arXiv:1709.04555; Coley et al. 2019, Chem. Sci. 10, 370; Yoo et al. 2020,
arXiv:2006.05213), then evaluates it on the first ``max_test`` test reactions
(:func:`chemgraph.reactions.reaction_centre.evaluate_reaction_centre`).

    chemgraph recipe run reaction_centre                      # the shipped model's settings
    chemgraph recipe run reaction_centre --set profile=full   # 409k reactions, GPU

Outputs in ``out``: ``model.pt`` (and ``scorer.pt``, the model after its first stage),
``metrics.json`` (top-1/2/3/5 accuracy in %, ``invalid_top1``, ``invalid_outputs``,
``reactions_per_second``, ``top1_auroc``, ``top1_ece``, ``calibration``, ``train_seconds``),
``predictions.csv``, ``rejected.csv`` (row, id, input, reason, file) and ``config.yaml``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chemgraph.data.reaction_centre import load_reaction_centre_examples
from chemgraph.data.table import write_rejected
from chemgraph.errors import ConfigError
from chemgraph.reactions.predictions import format_top_k_metrics, prediction_frame
from chemgraph.reactions.reaction_centre import (
    evaluate_reaction_centre,
    load_reaction_centre_model,
)
from chemgraph.reactions.reaction_centre_training import (
    ReactionCentreTrainingConfig,
    train_reaction_centre_model,
)
from chemgraph.recipes.reaction_outcome import resolve_data_files
from chemgraph.recipes.registry import RECIPES, recipe_config, recipe_settings

__all__ = ["DESCRIPTION", "ReactionCentreRecipeConfig", "default_config", "run"]

log = logging.getLogger(__name__)

NAME = "reaction_centre"

DESCRIPTION = RECIPES[NAME].description


@dataclass
class ReactionCentreRecipeConfig(ReactionCentreTrainingConfig):
    """Training (:class:`chemgraph.reactions.reaction_centre_training.
    ReactionCentreTrainingConfig`) and evaluation settings; round-trips through YAML.

    Attributes:
        test: file of reactions with products to evaluate on (None = no evaluation).
        max_test: the first N test reactions (None = all).
        top_k: predictions kept per reaction.
    """

    test: str | None = None
    max_test: int | None = None
    top_k: int = 5

    NUMBERS = {**ReactionCentreTrainingConfig.NUMBERS, "max_test": (int, 1), "top_k": (int, 1)}


def default_config() -> dict[str, Any]:
    """``recipes/reaction_centre/config.yaml`` as a dict."""
    return recipe_settings(NAME, None)


def run(
    config: str | Path | dict[str, Any] | ReactionCentreRecipeConfig | None = None,
    seeds: int | None = None,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Train, then evaluate on ``test``; write the outputs and log the metrics.

    Args:
        config: a :class:`ReactionCentreRecipeConfig`, or a YAML file / dict of its fields
            merged over a profile of ``recipes/reaction_centre/`` (default ``config.yaml``).
        seeds: must be None or 1 (set ``seed`` in the config).
        out: output folder (overrides the config's ``out``).

    Returns:
        The metrics written to ``metrics.json`` (empty when ``test`` is None).

    Raises:
        ConfigError: bad settings, ``seeds`` > 1, a data file that does not exist, or a
            ``test`` file without a reaction with products; all before ``out`` is written.
        ValueError: too little training data.
    """
    if seeds not in (None, 1):
        raise ConfigError("the reaction_centre recipe trains one model; set seed in the config")
    config = recipe_config(NAME, config, ReactionCentreRecipeConfig, out)
    config = resolve_data_files(config)
    max_distance = config.model_options.get("max_distance", 8)
    if config.test is not None:
        examples, rows, rejected = load_reaction_centre_examples(
            config.test, max_distance, config.max_test, progress=config.progress
        )
        if not examples:
            raise ConfigError(f"test: {config.test} holds no atom-mapped reaction to score")
    out_path = Path(config.out)
    start = time.perf_counter()
    checkpoint = train_reaction_centre_model(config)
    train_seconds = time.perf_counter() - start
    if config.test is None:
        return {}
    model = load_reaction_centre_model(checkpoint)
    metrics, predictions = evaluate_reaction_centre(
        model, examples, config.top_k, config.progress, config.workers
    )
    metrics["workers"] = config.workers
    metrics["test_rejected"] = len(rejected)
    metrics["train_seconds"] = round(train_seconds, 1)
    (out_path / "metrics.json").write_text(json.dumps(metrics, indent=2))
    prediction_frame(rows, examples, predictions).to_csv(out_path / "predictions.csv", index=False)
    if not rejected.empty:
        write_rejected(rejected, out_path / "rejected.csv", append=True)
    log.info(
        "top-k accuracy on %d test reactions of %s (%d rejected); top-1 AUROC %.3f, %.1f "
        "reactions/s (%d candidate workers):\n%s",
        metrics["reactions"], config.test, len(rejected), metrics["top1_auroc"],
        metrics["reactions_per_second"], config.workers, format_top_k_metrics(metrics),
    )  # fmt: skip
    return metrics
