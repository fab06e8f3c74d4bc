"""Training the reaction-centre model: its settings, the two Lightning stages and calibration.

The model, its prediction, evaluation and checkpoints are :mod:`chemgraph.reactions.
reaction_centre` (which imports no Lightning, so ``chemgraph react`` starts without it); this
module trains one, as that module's docstring describes: the scorer (:class:`ScorerModule`,
:func:`scorer_loss`), the ranker on the scorer's candidates (:class:`RankerModule`), then the
calibration of its probabilities and the "no confident product" threshold
(:func:`chemgraph.reactions.reaction_centre_calibration.calibrate`), each stage for a fixed
number of epochs through :func:`chemgraph.train.fit.fit` (Jin et al. 2017, WLN/WLDN, NeurIPS,
arXiv:1709.04555; Coley et al. 2019, Chem. Sci. 10, 370).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import yaml
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from chemgraph._resources import model_path
from chemgraph.batches.reaction_centre import reaction_centre_batch
from chemgraph.data.reaction_centre import ReactionCentreExample, load_reaction_centre_examples
from chemgraph.data.reactions import LengthBucketSampler
from chemgraph.data.table import write_rejected
from chemgraph.errors import ConfigError
from chemgraph.models.reaction_centre import (
    CandidateRanker,
    ReactionCentreConfig,
    ReactionCentreScorer,
)
from chemgraph.reactions.reaction_centre import (
    ReactionCentreModel,
    grouped_log_softmax,
    load_reaction_centre_model,
    ranker_batch,
    ranker_scores,
    save_reaction_centre_model,
)
from chemgraph.reactions.reaction_centre_calibration import calibrate
from chemgraph.train.callbacks import CPUTimeLimit, EpochProgress, LossHistory
from chemgraph.train.config import RunConfig
from chemgraph.train.fit import fit

__all__ = [
    "CPU_SHARES",
    "RankerModule",
    "ReactionCentreTrainingConfig",
    "ScorerModule",
    "scorer_loss",
    "train_reaction_centre_model",
]

log = logging.getLogger(__name__)

CPU_SHARES = (0.6, 0.75)
"""Shares of ``max_cpu_minutes`` at which the scorer stops and candidate enumeration ends (the
shipped model's run: scorer 14.4 min, candidates 3.5 min, ranker 5.8 min)."""

_CANDIDATE_CHUNK = 1000  # ranker reactions enumerated at a time (the CPU budget's steps)


@dataclass
class ReactionCentreTrainingConfig(RunConfig):
    """Settings of training the reaction-centre model; round-trips through YAML.

    Attributes:
        train: file of atom-mapped reactions (USPTO-MIT ``.txt``, plain or gzip, or any file
            :func:`chemgraph.data.reactions.reaction_records` reads).
        out: output folder (``model.pt``, ``rejected.csv``).
        max_train: use only the first N reactions (None = all).
        model_options: fields of :class:`chemgraph.models.reaction_centre.ReactionCentreConfig`.
        batch_size: reactions per scorer batch; ranker_batch_size: reactions per ranker batch.
        learning_rate, weight_decay: AdamW (cosine decay after ``warmup_steps`` linear warm-up).
        scorer_epochs, ranker_epochs: fixed work of each stage.
        ranker_reactions: the first N training reactions, at most those before the
            calibration reactions, whose candidates train the ranker (None = all of those).
        init_from: fine-tune a trained model instead of starting from random weights:
            ``"shipped"`` (the model ``chemgraph react`` uses) or a ``model.pt``; both stages
            start from its scorer and ranker, and ``model_options`` must be empty or equal to
            its own (they are taken from it).
        min_mapping_confidence: reactions without atom maps are mapped with rxnmapper
            (:func:`chemgraph.data.reaction_centre.load_reaction_centre_examples`); those
            mapped with a lower confidence are rejected. 0 keeps every one it maps.
        scorer_checkpoint: the ``scorer.pt`` of an earlier run with the same ``train``,
            ``max_train``, ``model_options`` and stage-1 settings: its scorer is used and stage 1
            is skipped (the result equals a run from the start; the ranker's initial weights do
            not depend on stage 1). None = train the scorer.
        top_changes: best-scored changes combined into candidates.
        max_edits, max_candidates, max_tries: of
            :func:`chemgraph.data.reaction_centre.enumerate_candidates`.
        seed: data order and weight initialisation.
        accelerator: Lightning accelerator (``"auto"``: CUDA when present).
        progress: progress bars.
        workers: processes that enumerate candidates (ranker stage, calibration, the recipe's
            test); the result does not depend on it.
        calibration_reactions: the last N training reactions, held out of both stages (the
            scorer and the ranker train on the others), on which the ranker's probabilities
            are calibrated, so the calibration sees the scorer's and the ranker's scores on new
            reactions; 0 = not calibrated (the scorer trains on all).
        max_cpu_minutes: a CPU-time budget (minutes of the process's CPU time, data reading not
            counted; :class:`chemgraph.train.callbacks.CPUTimeLimit`) the stages share, on top
            of their fixed epochs; None = none. Split as the shipped model's run spent its
            time: the scorer stops at :data:`CPU_SHARES` ``[0]`` of it, candidate enumeration
            stops taking further ranker reactions at ``[1]``, the ranker stops at the whole.
    """

    train: str
    out: str
    max_train: int | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 16
    ranker_batch_size: int = 8
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 200
    scorer_epochs: int = 4
    ranker_epochs: int = 2
    ranker_reactions: int | None = None
    init_from: str | None = None
    min_mapping_confidence: float = 0.0
    scorer_checkpoint: str | None = None
    top_changes: int = 10
    max_edits: int = 4
    max_candidates: int = 20
    max_tries: int = 60
    seed: int = 0
    accelerator: str = "auto"
    progress: bool = True
    workers: int = 1
    max_cpu_minutes: float | None = None
    calibration_reactions: int = 0

    NUMBERS = {
        "max_train": (int, 2), "batch_size": (int, 1), "ranker_batch_size": (int, 1),
        "learning_rate": (float, 0.0), "weight_decay": (float, 0.0), "warmup_steps": (int, 0),
        "scorer_epochs": (int, 1), "ranker_epochs": (int, 1), "ranker_reactions": (int, 1),
        "top_changes": (int, 1), "max_edits": (int, 1), "max_candidates": (int, 1),
        "max_tries": (int, 1), "seed": (int, 0), "min_mapping_confidence": (float, 0.0),
        "max_cpu_minutes": (float, 0.0), "calibration_reactions": (int, 0), "workers": (int, 1),
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            ReactionCentreConfig.check_options(self.model_options)
        except ValueError as error:
            raise ConfigError(str(error)) from error


def _optimiser(module: L.LightningModule, learning_rate: float, weight_decay: float,
               warmup_steps: int) -> dict:  # fmt: skip
    optimiser = torch.optim.AdamW(module.parameters(), lr=learning_rate, weight_decay=weight_decay)
    total = max(1, module.trainer.estimated_stepping_batches)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total - warmup_steps)
        return 0.5 * (1 + np.cos(np.pi * min(1.0, progress)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, factor)
    return {"optimizer": optimiser, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def scorer_loss(
    scorer: ReactionCentreScorer, batch
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sigmoid cross-entropy of the pair logits (summed over the upper triangle's allowed
    entries, averaged over reactions) and of the product-atom logits; returns (total, pair,
    atom) losses, ``float32`` scalars."""
    pair_logits, atom_logits = scorer(batch)
    b = batch.pad_mask.shape[0]
    upper = torch.triu(torch.ones_like(batch.bonds, dtype=torch.bool), diagonal=1)
    allowed = torch.isfinite(pair_logits) & upper.unsqueeze(-1)
    pair = F.binary_cross_entropy_with_logits(
        pair_logits[allowed], batch.edit_target[allowed], reduction="sum"
    )
    atom = F.binary_cross_entropy_with_logits(
        atom_logits[batch.pad_mask], batch.product_target[batch.pad_mask], reduction="sum"
    )
    return (pair + atom) / b, pair / b, atom / b


class ScorerModule(L.LightningModule):
    """Trains :class:`ReactionCentreScorer` (:func:`scorer_loss`)."""

    def __init__(self, scorer: ReactionCentreScorer, settings: ReactionCentreTrainingConfig):
        super().__init__()
        self.scorer, self.settings = scorer, settings

    def training_step(self, batch, batch_index):
        loss, pair, atom = scorer_loss(self.scorer, batch)
        size = batch.pad_mask.shape[0]
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=size)
        self.log_dict(
            {"pair_loss": pair, "atom_loss": atom}, on_step=False, on_epoch=True, batch_size=size
        )
        return loss

    def configure_optimizers(self):
        s = self.settings
        return _optimiser(self, s.learning_rate, s.weight_decay, s.warmup_steps)


class RankerModule(L.LightningModule):
    """Trains :class:`CandidateRanker`: softmax cross-entropy over each reaction's candidates."""

    def __init__(self, ranker: CandidateRanker, settings: ReactionCentreTrainingConfig):
        super().__init__()
        self.ranker, self.settings = ranker, settings

    def training_step(self, batch, batch_index):
        scores = ranker_scores(self.ranker, batch)
        groups = int(batch["labels"].numel())
        log_p = grouped_log_softmax(scores, batch["owner"], groups)
        labels = batch["labels"]
        loss = -log_p[labels[labels >= 0]].sum() / groups
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=groups)
        return loss

    def configure_optimizers(self):
        s = self.settings
        return _optimiser(self, s.learning_rate, s.weight_decay, s.warmup_steps)


def _initial_model(config: ReactionCentreTrainingConfig) -> ReactionCentreModel | None:
    """The model ``init_from`` names (None without one).

    Raises:
        ConfigError: no such file, not a reaction-centre model, or ``model_options`` that
            differ from the model's own.
    """
    if config.init_from is None:
        return None
    path = model_path() if config.init_from == "shipped" else Path(config.init_from)
    try:
        model = load_reaction_centre_model(path)
    except (FileNotFoundError, ValueError) as error:
        raise ConfigError(f"init_from: {error} (give 'shipped' or a model.pt)") from error
    if config.model_options and ReactionCentreConfig(**config.model_options) != model.config:
        own = {k: v for k, v in asdict(model.config).items() if config.model_options.get(k, v) != v}
        raise ConfigError(
            f"init_from {path} is a model with {own}; model_options ask for other values: "
            "leave model_options out to fine-tune it"
        )
    log.info("fine-tuning %s (trained on %s)", path, model.settings.get("trained_on"))
    return model


def _write_atom_maps(examples: list[ReactionCentreExample], rows: list[int], path: Path) -> None:
    """``row,mapped,confidence`` of the reactions rxnmapper mapped (none: no file)."""
    mapped = [(r, e.text, e.mapping_confidence) for r, e in zip(rows, examples)
              if e.mapping_confidence is not None]  # fmt: skip
    if mapped:
        pd.DataFrame(mapped, columns=["row", "mapped", "confidence"]).to_csv(path, index=False)
        confidence = np.array([m[2] for m in mapped])
        log.info(
            "atom maps by rxnmapper for %d reactions (confidence median %.3f, %d below 0.5): "
            "%s", len(mapped), np.median(confidence), int((confidence < 0.5).sum()), path,
        )  # fmt: skip


def _fit(
    module: L.LightningModule,
    loader: DataLoader,
    epochs: int,
    accelerator: str,
    progress: bool,
    budget: CPUTimeLimit | None = None,
) -> int:
    """Fit for ``epochs`` (or until ``budget`` stops it); returns the optimiser steps done."""
    callbacks = [EpochProgress(), LossHistory(log_epochs=True)] if progress else []
    callbacks += [] if budget is None else [budget]
    result = fit(
        module, loader, budget_hint="", max_epochs=epochs, accelerator=accelerator,
        gradient_clip=1.0, callbacks=callbacks,
    )  # fmt: skip
    return result.trainer.global_step


def train_reaction_centre_model(config: ReactionCentreTrainingConfig) -> Path:
    """Train the scorer, enumerate candidates with it, train the ranker; write ``model.pt``.

    Writes to ``config.out``: ``rejected.csv`` (row, id, input, reason, file), ``scorer.pt`` (the
    model after stage 1, the ranker untrained) and ``model.pt``; logs the data sizes, the
    share of ranker reactions whose product is among their candidates, and the times. The
    checkpoint's settings record ``scorer_reactions`` (all but the calibration reactions),
    ``scorer_steps`` (absent when ``scorer_checkpoint`` is used), ``ranker_steps``,
    ``ranker_reactions`` (enumerated; fewer than asked when ``max_cpu_minutes`` ended
    enumeration) and ``train_cpu_minutes`` (both stages).

    Returns:
        The path of ``model.pt``.

    Raises:
        OSError: the data file cannot be read; ValueError: fewer than 2 usable reactions;
        ConfigError: ``calibration_reactions`` leaves no reaction to train on.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(config.seed, workers=True, verbose=False)
    initial = _initial_model(config)
    model_config = initial.config if initial else ReactionCentreConfig(**config.model_options)
    examples, rows, rejected = load_reaction_centre_examples(
        config.train, model_config.max_distance, config.max_train, progress=config.progress,
        min_mapping_confidence=config.min_mapping_confidence, training=True,
    )  # fmt: skip
    write_rejected(rejected, out / "rejected.csv")
    _write_atom_maps(examples, rows, out / "atom_maps.csv")
    if len(examples) < 2:
        raise ValueError(f"too few usable reactions in {config.train} ({len(examples)})")
    log.info("reactions: %d usable, %d rejected", len(examples), len(rejected))
    # the ranker's reactions: the first ranker_reactions of those before the calibration ones
    ranked = min(len(examples) - config.calibration_reactions,
                 config.ranker_reactions or len(examples))  # fmt: skip
    if ranked < 1:
        raise ConfigError(
            f"calibration_reactions ({config.calibration_reactions}) leaves none of the "
            f"{len(examples)} usable reactions of {config.train} to train on; lower it (about "
            "a tenth of the reactions is usual)"
        )
    if initial is not None:
        scorer, ranker = initial.scorer.train(), initial.ranker.train()
    else:
        scorer, ranker = ReactionCentreScorer(model_config), CandidateRanker(model_config)
    settings = {
        "top_changes": config.top_changes, "max_edits": config.max_edits,
        "max_candidates": config.max_candidates, "max_tries": config.max_tries,
        "trained_on": str(config.train), "training_reactions": len(examples),
        "seed": config.seed,
    }  # fmt: skip
    if initial is not None:
        settings["fine_tuned_from"] = initial.settings.get("trained_on")
    start = time.perf_counter()
    cpu_start = time.process_time()

    def budget(share: float) -> CPUTimeLimit | None:
        if config.max_cpu_minutes is None:
            return None
        return CPUTimeLimit(share * config.max_cpu_minutes, start=cpu_start)

    scored = examples[: len(examples) - config.calibration_reactions]
    settings["scorer_reactions"] = len(scored)
    if config.scorer_checkpoint is not None:  # stage 1 done before: its scorer.pt
        scorer = load_reaction_centre_model(config.scorer_checkpoint).scorer
        if scorer.config != model_config:
            raise ValueError(
                f"scorer_checkpoint {config.scorer_checkpoint} holds another model "
                f"({scorer.config}) than model_options ({model_config})"
            )
    else:
        sampler = LengthBucketSampler(
            [e.arrays.num_atoms for e in scored], config.batch_size, config.seed
        )
        loader = DataLoader(
            scored,
            batch_sampler=sampler,
            collate_fn=lambda items: reaction_centre_batch(
                [e.arrays for e in items],
                [e.edits for e in items],
                [e.product_atoms for e in items],
            ),
        )
        settings["scorer_steps"] = _fit(
            ScorerModule(scorer, config),
            loader,
            config.scorer_epochs,
            config.accelerator,
            config.progress,
            budget(CPU_SHARES[0]),
        )
    model = ReactionCentreModel(model_config, scorer.eval(), ranker, settings)
    save_reaction_centre_model(out / "scorer.pt", model)
    log.info("scorer trained in %.1f min", (time.perf_counter() - start) / 60)
    start = time.perf_counter()
    subset = examples[:ranked]
    enumeration = budget(CPU_SHARES[1])
    # chunk by chunk: with a budget, no chunk starts once its share is spent (one at least)
    sets, enumerated = [], 0
    bar = tqdm(total=len(subset), desc="candidates", unit="reaction", disable=not config.progress)
    while enumerated < len(subset) and (
        enumeration is None or not enumerated or enumeration.used_minutes() < enumeration.minutes
    ):
        chunk = subset[enumerated : enumerated + _CANDIDATE_CHUNK]
        for _, ranker_set in model.candidates(chunk, workers=config.workers):
            if ranker_set is not None and ranker_set.label >= 0:
                sets.append(replace(ranker_set, example=ranker_set.example + enumerated))
        enumerated += len(chunk)
        bar.update(len(chunk))
    bar.close()
    subset = subset[:enumerated]
    covered = len(sets) / max(1, len(subset))
    log.info(
        "candidates for %d reactions in %.1f min; recorded product among them: %.1f%%",
        len(subset), (time.perf_counter() - start) / 60, 100 * covered,
    )  # fmt: skip
    settings["ranker_reactions"] = len(subset)
    settings["ranker_coverage"] = covered
    if not sets:
        raise ValueError(
            f"the scorer found the recorded product among the candidates of none of the "
            f"{len(subset)} ranker reactions; train it longer (scorer_epochs)"
        )
    start = time.perf_counter()
    sampler = LengthBucketSampler(
        [examples[s.example].arrays.num_atoms for s in sets], config.ranker_batch_size,
        config.seed,
    )  # fmt: skip
    loader = DataLoader(
        sets,
        batch_sampler=sampler,
        collate_fn=lambda items: ranker_batch(subset, items),
    )
    ranker.train()
    settings["ranker_steps"] = _fit(
        RankerModule(ranker, config),
        loader,
        config.ranker_epochs,
        config.accelerator,
        config.progress,
        budget(1.0),
    )
    log.info("ranker trained in %.1f min", (time.perf_counter() - start) / 60)
    settings["train_cpu_minutes"] = (time.process_time() - cpu_start) / 60
    model = ReactionCentreModel(model_config, scorer.eval(), ranker.eval(), settings)
    if config.calibration_reactions:
        try:
            calibrate(
                model, examples[-config.calibration_reactions :], config.progress, config.workers
            )
        except ValueError as error:  # e.g. no held-out reaction predicted right: keep the model
            log.warning(
                "model.pt is not calibrated (%s on the last %d training reactions): its "
                "probabilities are the ranker's softmax; hold out more reactions "
                "(calibration_reactions) or train longer", error, config.calibration_reactions,
            )  # fmt: skip
    save_reaction_centre_model(out / "model.pt", model)
    (out / "config.yaml").write_text(yaml.safe_dump(asdict(config), sort_keys=False))
    return out / "model.pt"
