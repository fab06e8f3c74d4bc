"""Training a GRAT translator on reactions (the reaction_outcome recipe): the configuration and
the fit.

Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?" (arXiv:2006.05213),
section 4.2: a :class:`chemgraph.models.GRATTranslator` learns the product graph of a reaction
by teacher forcing (:class:`chemgraph.train.reaction_module.ReactionModule`, through
:func:`chemgraph.train.fit.fit`); ``chemgraph react --decoder generate`` and the recipe's
evaluation predict with its checkpoint by beam search
(:func:`chemgraph.reactions.translator_prediction.predict_reactions`). Training imports
Lightning; prediction does not, which is why the two live apart.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import lightning as L
import pandas as pd

from chemgraph.batches.reaction import TokenVocabulary, observed_valences
from chemgraph.data.reactions import load_reaction_graphs, reaction_loader
from chemgraph.data.table import write_rejected
from chemgraph.errors import ConfigError
from chemgraph.models.grat import GRATTranslatorConfig
from chemgraph.train.callbacks import CPUTimeLimit, ValidationLog
from chemgraph.train.config import RunConfig
from chemgraph.train.fit import fit
from chemgraph.train.reaction_module import ReactionModule

__all__ = ["ReactionTrainingConfig", "train_reaction_model"]

log = logging.getLogger(__name__)


@dataclass
class ReactionTrainingConfig(RunConfig):
    """Settings of training a GRAT translator on reactions; round-trips through YAML.

    Attributes:
        train: USPTO-MIT ``.txt`` (plain or gzip) to train on.
        out: output folder.
        valid: file of validation reactions (teacher-forced loss picks the best checkpoint);
            None = the last ``valid_fraction`` of ``train``.
        max_train, max_valid: use only the first N reactions (None = all).
        valid_fraction: held-out part of ``train`` when ``valid`` is None.
        model_options: fields of :class:`chemgraph.models.GRATTranslatorConfig` but
            ``vocab_size`` (taken from the training reactions).
        batch_size, learning_rate, weight_decay, warmup_steps, label_smoothing,
        gradient_clip: optimisation (AdamW, warm-up then inverse square-root decay).
        max_epochs, max_steps, max_time_minutes: stop at the first reached (None = no limit).
        max_cpu_minutes: also stop once training has used this much CPU time of the process
            (:class:`chemgraph.train.callbacks.CPUTimeLimit`; data preparation not counted;
            None = no limit): a budget that machine load does not change.
        val_check_interval: optimiser steps between validations (None = once per epoch).
        seed: data order and weight initialisation.
        num_workers: DataLoader workers; accelerator: Lightning accelerator (``"auto"``).
        progress: Lightning's model summary and one log line per validation.

    Raises:
        ConfigError: a bad setting (named, with what is allowed); ValueError: bad
            ``model_options`` values (:class:`chemgraph.models.GRATTranslatorConfig`).
    """

    train: str
    out: str
    valid: str | None = None
    max_train: int | None = None
    max_valid: int | None = None
    valid_fraction: float = 0.02
    model_options: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 64
    learning_rate: float = 5e-4
    weight_decay: float = 0.0
    warmup_steps: int = 1000
    label_smoothing: float = 0.0
    gradient_clip: float = 1.0
    max_epochs: int = 100
    max_steps: int | None = None
    max_time_minutes: float | None = None
    max_cpu_minutes: float | None = None
    val_check_interval: int | None = None
    seed: int = 0
    num_workers: int = 0
    accelerator: str = "auto"
    progress: bool = True

    NUMBERS = {
        "max_train": (int, 1), "max_valid": (int, 1), "valid_fraction": (float, 0.0),
        "batch_size": (int, 1), "learning_rate": (float, 0.0), "weight_decay": (float, 0.0),
        "warmup_steps": (int, 0), "label_smoothing": (float, 0.0), "gradient_clip": (float, 0.0),
        "max_epochs": (int, 1), "max_steps": (int, 1), "max_time_minutes": (float, 0.0),
        "max_cpu_minutes": (float, 0.0), "val_check_interval": (int, 1), "seed": (int, 0),
        "num_workers": (int, 0),
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        valid = {f.name for f in fields(GRATTranslatorConfig)} - {"vocab_size"}
        unknown = set(self.model_options) - valid
        if unknown:
            raise ConfigError(f"unknown model_options {sorted(unknown)}; valid: {sorted(valid)}")
        GRATTranslatorConfig(vocab_size=1, **self.model_options)


def train_reaction_model(config: ReactionTrainingConfig) -> Path:
    """Read and encode the data, train a :class:`chemgraph.train.reaction_module.ReactionModule`.

    Writes ``rejected.csv`` (row, id, input, reason, file: unparsable reactions and molecules a
    graph cannot hold) and ``best.ckpt`` (lowest validation loss) to ``config.out``; logs the
    data sizes and one line per validation.

    Returns:
        The checkpoint path.

    Raises:
        OSError: a data file cannot be read.
        ValueError: fewer than 2 usable training reactions or no validation reaction, or
            training stopped before its first validation.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(config.seed, workers=True, verbose=False)
    items, _, rejected = load_reaction_graphs(config.train, config.max_train, config.progress)
    rejected_frames = [rejected]
    if config.valid is None:
        cut = len(items) - max(1, round(config.valid_fraction * len(items)))
        train_items, valid_items = items[:cut], items[cut:]
    else:
        valid_items, _, valid_rejected = load_reaction_graphs(
            config.valid, config.max_valid, config.progress
        )
        rejected_frames.append(valid_rejected)
        train_items = items
    if len(train_items) < 2 or not valid_items:
        raise ValueError(f"too few usable reactions in {config.train} ({len(items)})")
    rejected = pd.concat(rejected_frames, ignore_index=True)
    write_rejected(rejected, out / "rejected.csv")
    vocabulary = TokenVocabulary.from_graphs(
        g for item in train_items for g in (*item.reactants, *item.reagents, item.product)
    )
    log.info(
        "reactions: train %d, validation %d; %d tokens; rejected %d (see %s)",
        len(train_items), len(valid_items), len(vocabulary), len(rejected), out / "rejected.csv",
    )  # fmt: skip
    module = ReactionModule(
        model_config={**config.model_options, "vocab_size": len(vocabulary)},
        vocabulary=vocabulary.tokens,
        allowed_valences=observed_valences(
            (g for item in train_items for g in (*item.reactants, *item.reagents, item.product)),
            vocabulary,
        ),
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_steps,
        label_smoothing=config.label_smoothing,
    )
    max_distance = module.model.config.max_distance
    train_loader = reaction_loader(
        train_items, vocabulary, max_distance, config.batch_size, shuffle=True,
        num_workers=config.num_workers, seed=config.seed,
    )  # fmt: skip
    valid_loader = reaction_loader(
        valid_items, vocabulary, max_distance, config.batch_size, num_workers=config.num_workers
    )
    (out / "best.ckpt").unlink(missing_ok=True)
    validation_log = ValidationLog(
        [("val label acc", "val_label_accuracy", 3), ("bond precision", "val_bond_precision", 3),
         ("bond recall", "val_bond_recall", 3), ("graph acc", "val_graph_accuracy", 3)],
        enabled=config.progress,
    )  # fmt: skip
    result = fit(
        module,
        (train_loader, valid_loader),
        budget_hint="raise max_time_minutes, max_cpu_minutes, max_epochs or max_steps, or lower "
        "val_check_interval",
        restore_best=False,
        max_epochs=config.max_epochs,
        max_steps=config.max_steps,
        max_minutes=config.max_time_minutes,
        val_check_interval=config.val_check_interval,
        gradient_clip=config.gradient_clip,
        checkpoint_dir=out,
        callbacks=[validation_log]
        + ([] if config.max_cpu_minutes is None else [CPUTimeLimit(config.max_cpu_minutes)]),
        accelerator=config.accelerator,
        model_summary=config.progress,
    )
    return result.best
