"""Reaction outcome prediction with GRAT (Yoo et al. 2020, section 4.2): train, predict, evaluate.

Reactions (USPTO-MIT ``.txt`` lines, or any reaction SMILES ``reactants>reagents>products``)
become labelled graphs (:func:`chemgraph.batches.reaction.reaction_graphs`); a
:class:`chemgraph.models.GRATTranslator` learns the product graph by teacher forcing and
predicts it by beam search; predicted graphs become RDKit molecules and canonical SMILES,
deduplicated, and are compared with the true products independently of fragment order.

    chemgraph recipe run reaction_outcome                      # full data, GPU (config.yaml)
    chemgraph recipe run reaction_outcome --config recipes/reaction_outcome/cpu.yaml
    python -m chemgraph.recipes.reaction_outcome --config recipes/reaction_outcome/cpu.yaml

Outputs in ``out``: ``best.ckpt``, ``metrics.json`` (top-1/2/3/5 accuracy, invalid-output
rate), ``predictions.csv``, ``rejected.csv`` (row, input, reason, file) and ``config.yaml``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import lightning as L
import pandas as pd
import torch
import yaml

from chemgraph._resources import recipe_path
from chemgraph.batches.reaction import (
    ReactionGraphs,
    TokenVocabulary,
    reaction_batch,
    reaction_graphs,
)
from chemgraph.chem.graph_codec import (
    AtomLabel,
    GraphDecodingError,
    GraphEncodingError,
    LabelledGraph,
    graph_to_smiles,
    same_molecules,
)
from chemgraph.chem.reactions import Reaction, ReactionParseError, parse_reaction_smiles
from chemgraph.data.datasets.download import open_text
from chemgraph.data.datasets.uspto import read_uspto_mit
from chemgraph.models.grat import GRATTranslatorConfig
from chemgraph.train.reaction_module import ReactionModule

__all__ = [
    "DESCRIPTION",
    "TOP_K",
    "ReactionOutcomeConfig",
    "ReactionPrediction",
    "encode_reactions",
    "format_metrics",
    "load_reaction_model",
    "parse_input_reaction",
    "predict_file",
    "predict_reactions",
    "prediction_frame",
    "read_reaction_file",
    "resolve_data_path",
    "run",
    "default_config",
    "top_k_metrics",
    "train_reaction_model",
]

log = logging.getLogger(__name__)

TOP_K = (1, 2, 3, 5)
"""The top-k accuracies reported (as the Molecular Transformer and Yoo et al. 2020 do)."""


@dataclass
class ReactionOutcomeConfig:
    """Every setting of a reaction-outcome run; round-trips through YAML.

    Attributes:
        train: USPTO-MIT ``.txt`` (plain or gzip) to train on.
        out: output folder.
        valid: file of validation reactions (teacher-forced loss picks the best checkpoint);
            None = the last ``valid_fraction`` of ``train``.
        test: file of reactions to evaluate with beam search (None = no evaluation).
        max_train, max_valid, max_test: use only the first N reactions (None = all).
        valid_fraction: held-out part of ``train`` when ``valid`` is None.
        model_options: fields of :class:`chemgraph.models.GRATTranslatorConfig`.
        batch_size, learning_rate, weight_decay, warmup_steps, label_smoothing,
        gradient_clip: optimisation (AdamW, warm-up then inverse square-root decay).
        max_epochs, max_steps, max_time_minutes: stop at the first reached (None = no limit).
        val_check_interval: optimiser steps between validations (None = once per epoch).
        beam_width, top_k, length_penalty, eval_batch_size: beam search and evaluation.
        seed: data order and weight initialisation.
        num_workers: DataLoader workers; accelerator: Lightning accelerator (``"auto"``).
        progress: progress bars / per-validation lines.
    """

    train: str
    out: str
    valid: str | None = None
    test: str | None = None
    max_train: int | None = None
    max_valid: int | None = None
    max_test: int | None = None
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
    val_check_interval: int | None = None
    beam_width: int = 8
    top_k: int = 5
    length_penalty: float = 1.0
    eval_batch_size: int = 32
    seed: int = 0
    num_workers: int = 0
    accelerator: str = "auto"
    progress: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.model_options) - {f.name for f in fields(GRATTranslatorConfig)}
        if unknown or "vocab_size" in self.model_options:
            valid = sorted({f.name for f in fields(GRATTranslatorConfig)} - {"vocab_size"})
            raise ValueError(f"unknown model_options {sorted(unknown)}; valid: {valid}")
        GRATTranslatorConfig(vocab_size=1, **self.model_options)
        for name in ("batch_size", "beam_width", "top_k", "eval_batch_size", "max_epochs"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        self.learning_rate = float(self.learning_rate)
        if self.top_k > self.beam_width:
            raise ValueError(f"top_k {self.top_k} exceeds beam_width {self.beam_width}")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> ReactionOutcomeConfig:
        """Read a YAML mapping of these fields; ``overrides`` (not None) take precedence.

        Raises:
            ValueError: unknown keys (named) or missing ``train``/``out``.
        """
        values = yaml.safe_load(Path(path).read_text()) or {}
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ValueError(f"{path}: unknown keys {sorted(unknown)}; valid keys: {sorted(names)}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        missing = [name for name in ("train", "out") if name not in values]
        if missing:
            raise ValueError(f"{path}: missing required settings {missing}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_reaction_file(
    path: str | Path, limit: int | None = None
) -> tuple[list[Reaction], list[int], pd.DataFrame]:
    """Reactions of a USPTO-MIT ``.txt`` (or one reaction SMILES a line; plain or gzip), of
    the first ``limit`` lines (None = all).

    Returns:
        ``(reactions, rows, rejected)``: parsed reactions, their 0-based line numbers, and the
        ``row, input, reason, file`` table of lines that could not be parsed.
    """
    table, rejected = read_uspto_mit(path, max_lines=limit)
    reactions = [
        Reaction(
            reactants=tuple(r.split(".")),
            reagents=tuple(g.split(".")) if g else (),
            products=tuple(p.split(".")),
            mapped=m,
        )
        for r, g, p, m in zip(table.reactants, table.reagents, table.products, table.reaction)
    ]
    return reactions, table["row"].tolist(), rejected


def encode_reactions(
    reactions: Sequence[Reaction], rows: Sequence[int], with_product: bool = True
) -> tuple[list[ReactionGraphs], list[int], list[tuple[int, str, str]]]:
    """Labelled graphs of each reaction; molecules the graphs cannot hold are reported.

    Returns:
        ``(graphs, kept_rows, rejected)`` with rejected ``(row, reaction, reason)``.
    """
    graphs, kept, rejected = [], [], []
    for row, reaction in zip(rows, reactions):
        try:
            graphs.append(reaction_graphs(reaction, with_product=with_product))
            kept.append(row)
        except (GraphEncodingError, ValueError) as error:
            rejected.append((row, reaction.to_smiles(), f"graph: {error}"))
    return graphs, kept, rejected


class _LengthBuckets(torch.utils.data.Sampler):
    """Batches of reactions of similar size (less padding): each epoch, a fresh permutation is
    cut into pools of 50 batches, each pool sorted by size and cut into batches, and the
    batches are shuffled."""

    def __init__(self, sizes: Sequence[int], batch_size: int, seed: int) -> None:
        self.sizes, self.batch_size, self.seed, self.epoch = list(sizes), batch_size, seed, 0

    def __len__(self) -> int:
        return -(-len(self.sizes) // self.batch_size)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.sizes), generator=generator).tolist()
        pool = 50 * self.batch_size
        batches = []
        for start in range(0, len(order), pool):
            part = sorted(order[start : start + pool], key=self.sizes.__getitem__)
            batches += [part[i : i + self.batch_size] for i in range(0, len(part), self.batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]


def _loader(items, vocabulary, max_distance, batch_size, shuffle, num_workers, seed=0):
    collate = functools.partial(reaction_batch, vocabulary=vocabulary, max_distance=max_distance)
    if shuffle:
        sizes = [item.num_input_atoms + 2 * item.product.num_atoms for item in items]
        batching = {"batch_sampler": _LengthBuckets(sizes, batch_size, seed)}
    else:
        batching = {"batch_size": batch_size}
    return torch.utils.data.DataLoader(
        items, collate_fn=collate, num_workers=num_workers,
        pin_memory=torch.cuda.is_available(), persistent_workers=num_workers > 0, **batching,
    )  # fmt: skip


def train_reaction_model(config: ReactionOutcomeConfig) -> Path:
    """Read and encode the data, train :class:`chemgraph.train.reaction_module.ReactionModule`.

    Writes ``rejected.csv`` and ``best.ckpt`` (best validation loss) to ``config.out``.

    Returns:
        The checkpoint path.

    Raises:
        ValueError: fewer than 2 usable training reactions, or training stopped before its
            first validation.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    L.seed_everything(config.seed, workers=True, verbose=False)
    reactions, rows, rejected = read_reaction_file(config.train, config.max_train)
    items, rows, bad = encode_reactions(reactions, rows)
    rejected_frames = [rejected.assign(file=Path(config.train).name)]
    rejected_frames.append(_rejected_frame(bad, config.train))
    if config.valid is None:
        cut = len(items) - max(1, round(config.valid_fraction * len(items)))
        train_items, valid_items = items[:cut], items[cut:]
    else:
        valid_reactions, valid_rows, valid_rejected = read_reaction_file(
            config.valid, config.max_valid
        )
        valid_items, _, valid_bad = encode_reactions(valid_reactions, valid_rows)
        rejected_frames += [valid_rejected, _rejected_frame(valid_bad, config.valid)]
        train_items = items
    if len(train_items) < 2 or not valid_items:
        raise ValueError(f"too few usable reactions in {config.train} ({len(items)})")
    pd.concat(rejected_frames, ignore_index=True).to_csv(out / "rejected.csv", index=False)
    vocabulary = TokenVocabulary.from_graphs(
        g for item in train_items for g in (*item.reactants, *item.reagents, item.product)
    )
    print(
        f"reactions: train {len(train_items)}, validation {len(valid_items)}; "
        f"{len(vocabulary)} tokens; rejected {sum(len(f) for f in rejected_frames)} "
        f"(see {out / 'rejected.csv'})",
        flush=True,
    )
    options = {**config.model_options, "vocab_size": len(vocabulary)}
    module = ReactionModule(
        model_config=options,
        vocabulary=vocabulary.tokens,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_steps,
        label_smoothing=config.label_smoothing,
    )
    max_distance = module.model.config.max_distance
    train_loader = _loader(train_items, vocabulary, max_distance, config.batch_size, True,
                           config.num_workers, config.seed)  # fmt: skip
    valid_loader = _loader(valid_items, vocabulary, max_distance, config.batch_size, False,
                           config.num_workers)  # fmt: skip
    checkpoint = L.pytorch.callbacks.ModelCheckpoint(
        dirpath=out, filename="best", monitor="val_loss", mode="min", save_top_k=1,
        enable_version_counter=False,
    )  # fmt: skip
    (out / "best.ckpt").unlink(missing_ok=True)
    cuda = torch.cuda.is_available() and config.accelerator in ("auto", "gpu", "cuda")
    trainer = L.Trainer(
        max_epochs=config.max_epochs,
        max_steps=config.max_steps or -1,
        max_time=None
        if config.max_time_minutes is None
        else datetime.timedelta(minutes=config.max_time_minutes),
        val_check_interval=config.val_check_interval,
        check_val_every_n_epoch=None if config.val_check_interval else 1,
        accelerator=config.accelerator,
        devices=1,
        precision="bf16-mixed" if cuda else "32-true",
        gradient_clip_val=config.gradient_clip,
        callbacks=[checkpoint, _ValidationPrinter(config.progress)],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=config.progress,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, train_loader, valid_loader)
    if not checkpoint.best_model_path:
        raise ValueError(
            "training stopped before its first validation (no checkpoint); raise "
            "max_time_minutes/max_steps or lower val_check_interval"
        )
    return Path(checkpoint.best_model_path)


class _ValidationPrinter(L.Callback):
    """Prints one line per validation (step, losses, teacher-forced accuracies).

    Validation runs every ``val_check_interval`` steps, inside an epoch, where Lightning has no
    epoch-mean training loss yet: the line shows the mean training loss since the last one.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.start = time.perf_counter()
        self.train_losses: list[float] = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.train_losses.append(float(loss))

    def on_validation_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if not self.enabled or trainer.sanity_checking:
            return
        m = trainer.callback_metrics
        losses = self.train_losses
        train_loss = sum(losses) / len(losses) if losses else float("nan")
        self.train_losses.clear()
        print(
            f"step {trainer.global_step:>6}: train_loss "
            f"{train_loss:.4f}  val_loss {float(m['val_loss']):.4f}"
            f"  val label acc {float(m['val_label_accuracy']):.3f}  bond acc "
            f"{float(m['val_bond_accuracy']):.4f}  graph acc "
            f"{float(m['val_graph_accuracy']):.3f}  ({time.perf_counter() - self.start:.0f} s)",
            flush=True,
        )


def _rejected_frame(bad: list[tuple[int, str, str]], path: str) -> pd.DataFrame:
    frame = pd.DataFrame(bad, columns=["row", "input", "reason"])
    frame["file"] = Path(path).name
    return frame


def load_reaction_model(checkpoint: str | Path, device: str | torch.device = "cpu"):
    """The :class:`ReactionModule` of a checkpoint (``torch.load(..., weights_only=True)``).

    Raises:
        ValueError: the file is not a reaction-outcome checkpoint.
    """
    if not Path(checkpoint).is_file():
        raise FileNotFoundError(f"checkpoint {checkpoint} does not exist")
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a file that is not a checkpoint
        raise ValueError(f"{checkpoint} is not a readable PyTorch checkpoint: {error}") from error
    parameters = state.get("hyper_parameters", {}) if isinstance(state, dict) else {}
    if "vocabulary" not in parameters or "model_config" not in parameters:
        raise ValueError(f"{checkpoint} is not a reaction-outcome (GRAT) checkpoint")
    module = ReactionModule(**parameters)
    module.load_state_dict(state["state_dict"])
    return module.to(device).eval()


@dataclass
class ReactionPrediction:
    """Beam-search result of one reaction.

    Attributes:
        smiles: up to ``top_k`` distinct valid canonical product SMILES, best first.
        scores: their length-normalised log-probabilities.
        top1_invalid: the best-scoring decoded graph is not a valid molecule.
        num_invalid: finished beam graphs that are not valid molecules.
    """

    smiles: list[str]
    scores: list[float]
    top1_invalid: bool
    num_invalid: int


def predict_reactions(
    module,
    items: Sequence[ReactionGraphs],
    beam_width: int = 8,
    top_k: int = 5,
    batch_size: int = 32,
    length_penalty: float = 1.0,
    progress: bool = False,
) -> list[ReactionPrediction]:
    """Beam search every reaction and turn the graphs into deduplicated canonical SMILES.

    Invalid graphs (RDKit cannot sanitise them, or an atom token is ``<UNK>``-like) are counted
    and skipped, never raised.
    """
    vocabulary = module.vocabulary
    device = next(module.parameters()).device
    max_distance = module.model.config.max_distance
    order = sorted(range(len(items)), key=lambda i: items[i].num_input_atoms)  # fewer pads
    results: dict[int, ReactionPrediction] = {}
    start = time.perf_counter()
    for first in range(0, len(order), batch_size):
        chunk = order[first : first + batch_size]
        batch = reaction_batch([items[i] for i in chunk], vocabulary, max_distance).to(device)
        for index, hypotheses in zip(chunk, module.model.beam_search(batch, beam_width,
                                                                     length_penalty)):  # fmt: skip
            results[index] = _to_prediction(hypotheses, vocabulary, top_k)
        if progress:
            done = min(first + batch_size, len(order))
            seconds = time.perf_counter() - start
            print(f"predicted {done}/{len(order)} ({seconds:.0f} s)", flush=True)
    return [results[i] for i in range(len(items))]


def _to_prediction(hypotheses, vocabulary: TokenVocabulary, top_k: int) -> ReactionPrediction:
    smiles, scores, invalid, first_invalid = [], [], 0, False
    for rank, hypothesis in enumerate(hypotheses):
        try:
            atoms = tuple(AtomLabel.from_token(vocabulary.tokens[i]) for i in hypothesis.labels)
            text = graph_to_smiles(LabelledGraph(atoms, tuple(hypothesis.bonds)))
            if not text:
                raise GraphDecodingError("empty graph")
        except (GraphDecodingError, ValueError):
            invalid += 1
            first_invalid = first_invalid or rank == 0
            continue
        if text not in smiles and len(smiles) < top_k:
            smiles.append(text)
            scores.append(hypothesis.score)
    return ReactionPrediction(smiles, scores, first_invalid or not hypotheses, invalid)


def top_k_metrics(
    predictions: Sequence[ReactionPrediction], targets: Sequence[str], ks: Sequence[int] = TOP_K
) -> dict[str, float]:
    """Top-k accuracy (%) and invalid-output rates (%).

    A reaction is correct at ``k`` when one of its first ``k`` distinct predictions holds the
    same molecules as the target (:func:`same_molecules`: fragment order ignored).
    ``invalid_top1``: the best-scoring graph is not a valid molecule; ``invalid_beam``: share of
    all finished beam graphs that are invalid.
    """
    n = max(1, len(targets))
    metrics = {}
    ranks = [
        next((r for r, s in enumerate(p.smiles) if same_molecules(s, t)), None)
        for p, t in zip(predictions, targets)
    ]
    for k in ks:
        metrics[f"top_{k}"] = 100 * sum(r is not None and r < k for r in ranks) / n
    metrics["invalid_top1"] = 100 * sum(p.top1_invalid for p in predictions) / n
    total = sum(len(p.smiles) + p.num_invalid for p in predictions)
    metrics["invalid_beam"] = 100 * sum(p.num_invalid for p in predictions) / max(1, total)
    metrics["reactions"] = len(targets)
    return metrics


def format_metrics(metrics: dict[str, float]) -> str:
    """One table line of header and one of values."""
    names = [f"top_{k}" for k in TOP_K if f"top_{k}" in metrics] + ["invalid_top1"]
    header = "".join(f"{name.replace('_', '-'):>14}" for name in names)
    values = "".join(f"{metrics[name]:>13.2f}%" for name in names)
    return f"{header}\n{values}"


DESCRIPTION = (
    "reaction outcome prediction: GRAT graph-to-graph translation on USPTO-MIT, beam search, "
    "top-1/2/3/5 accuracy (Yoo et al. 2020, section 4.2)"
)


def default_config() -> dict[str, Any]:
    """The recipe's ``recipes/reaction_outcome/config.yaml`` (full data, GPU) as a dict."""
    return yaml.safe_load(recipe_path("reaction_outcome", "config.yaml").read_text())


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
    """Train, then evaluate on ``test`` by beam search; write the outputs and print metrics.

    Args:
        config: a :class:`ReactionOutcomeConfig`, or a YAML file / dict of its fields whose
            missing keys come from ``recipes/reaction_outcome/config.yaml``; None = that file.
        seeds: must be None or 1 (one training run; set ``seed`` in the config).
        out: output folder (overrides the config's ``out``).

    Returns:
        The metrics written to ``metrics.json`` (empty without a test file).

    Raises:
        ValueError: bad settings, ``seeds`` > 1, too little data.
    """
    if seeds not in (None, 1):
        raise ValueError("the reaction_outcome recipe trains one model; set seed in the config")
    if not isinstance(config, ReactionOutcomeConfig):
        values = default_config()
        if isinstance(config, dict):
            values.update(config)
        elif config is not None:
            values.update(yaml.safe_load(Path(config).read_text()) or {})
        if out is not None:
            values["out"] = str(out)
        config = ReactionOutcomeConfig(**values)
    elif out is not None:
        config = ReactionOutcomeConfig(**{**config.to_dict(), "out": str(out)})
    config.train, config.valid, config.test = (
        resolve_data_path(p) for p in (config.train, config.valid, config.test)
    )
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    start = time.perf_counter()
    checkpoint = train_reaction_model(config)
    train_seconds = time.perf_counter() - start
    if config.test is None:
        return {}
    module = load_reaction_model(checkpoint, "cuda" if torch.cuda.is_available() else "cpu")
    reactions, rows, rejected = read_reaction_file(config.test, config.max_test)
    items, rows, bad = encode_reactions(reactions, rows)
    start = time.perf_counter()
    predictions = predict_reactions(
        module, items, config.beam_width, config.top_k, config.eval_batch_size,
        config.length_penalty, config.progress,
    )  # fmt: skip
    targets = [item.product_smiles for item in items]
    metrics = top_k_metrics(predictions, targets)
    metrics["test_rejected"] = len(rejected) + len(bad)
    metrics["train_seconds"] = round(train_seconds, 1)
    metrics["predict_seconds"] = round(time.perf_counter() - start, 1)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    prediction_frame(rows, items, predictions).to_csv(out / "predictions.csv", index=False)
    print(format_metrics(metrics))
    return metrics


def prediction_frame(rows, items, predictions, top_k: int | None = None) -> pd.DataFrame:
    """One row per reaction: row, target (when known), rank of the target (1-based, empty
    when missed), top1_invalid, prediction_1 … and score_1 … (``top_k`` of each; None = as
    many as the reaction with the most valid predictions has). The columns are there even when
    ``rows`` is empty."""
    if top_k is None:
        top_k = max((len(p.smiles) for p in predictions), default=0)
    columns = ["row", "target", "target_rank", "top1_invalid"]
    columns += [
        f"{name}_{rank}" for rank in range(1, top_k + 1) for name in ("prediction", "score")
    ]
    records = []
    for row, item, prediction in zip(rows, items, predictions):
        record = {"row": row, "target": item.product_smiles}
        hit = [r for r, s in enumerate(prediction.smiles) if same_molecules(s, item.product_smiles)]
        record["target_rank"] = hit[0] + 1 if hit and item.product_smiles else None
        record["top1_invalid"] = prediction.top1_invalid
        for rank in range(top_k):
            found = rank < len(prediction.smiles)
            record[f"prediction_{rank + 1}"] = prediction.smiles[rank] if found else ""
            record[f"score_{rank + 1}"] = prediction.scores[rank] if found else None
        records.append(record)
    return pd.DataFrame(records, columns=columns)


def parse_input_reaction(text: str) -> Reaction:
    """A reaction whose products may be missing (``"CC(=O)Cl.OCC>c1ccncc1>"``).

    Raises:
        ReactionParseError: see :func:`chemgraph.chem.parse_reaction_smiles`.
    """
    return parse_reaction_smiles(text, allow_empty_products=True)


def predict_file(
    checkpoint: str | Path,
    input_path: str | Path,
    output: str | Path,
    top_k: int = 5,
    beam_width: int = 8,
    batch_size: int = 32,
) -> tuple[pd.DataFrame, dict[str, float] | None]:
    """``chemgraph react --input``: predict the products of every reaction of a file.

    Each line holds a reaction SMILES ``reactants>reagents>[products]`` (text after the first
    whitespace, such as USPTO-MIT edit labels, is ignored); blank lines are skipped. Every
    other line gives one row, in input order; a line that cannot be parsed or turned into
    graphs keeps its row with the reason in ``error`` and no prediction.

    Returns:
        The table written to ``output``, one row per non-blank line: ``row`` (0-based line
        number, int64), ``reaction`` (the reaction SMILES as read), ``target`` (canonical
        SMILES of the products given, ``""`` when none), ``target_rank`` (Int64, 1-based rank
        of the target among the predictions, missing when it is not among them),
        ``top1_invalid`` (nullable boolean: the best-scoring decoded graph is not a valid
        molecule; missing for a line with an error), ``prediction_1, score_1`` …
        ``prediction_{top_k}, score_{top_k}`` (valid canonical product SMILES, best first,
        ``""`` past the last valid one; their length-normalised log-probabilities, NaN past
        the last) and ``error`` (``""`` for a decoded reaction). Also, when every usable line
        has products, the :func:`top_k_metrics` of the predictions (else None).

    Raises:
        FileNotFoundError, ValueError: see :func:`load_reaction_model`.
    """
    module = load_reaction_model(checkpoint, "cuda" if torch.cuda.is_available() else "cpu")
    reactions, rows, errors, texts = [], [], {}, {}
    with open_text(Path(input_path)) as lines:
        for row, line in enumerate(lines):
            if not line.strip():
                continue
            texts[row] = line.split()[0]
            try:
                reactions.append(parse_input_reaction(line))
                rows.append(row)
            except ReactionParseError as error:
                errors[row] = error.reason
    scored = bool(reactions) and all(r.products for r in reactions)
    items, kept, bad = encode_reactions(reactions, rows, with_product=scored)
    errors.update({row: reason for row, _, reason in bad})
    predictions = predict_reactions(module, items, beam_width, top_k, batch_size)
    table = pd.DataFrame(
        {"row": pd.Series(list(texts), dtype="int64"), "reaction": list(texts.values())}
    )
    table = table.merge(prediction_frame(kept, items, predictions, top_k), on="row", how="left")
    ranks = range(1, top_k + 1)
    text_columns = ["target"] + [f"prediction_{rank}" for rank in ranks]
    table[text_columns] = table[text_columns].fillna("")
    dtypes = {"target_rank": "Int64", "top1_invalid": "boolean"}
    table = table.astype(dtypes | {f"score_{rank}": "float64" for rank in ranks})
    table["error"] = [errors.get(row, "") for row in table["row"]]
    table.to_csv(output, index=False)
    metrics = top_k_metrics(predictions, [i.product_smiles for i in items]) if scored else None
    return table, metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="YAML over recipes/reaction_outcome/config.yaml")
    parser.add_argument("--out", help="override the output folder")
    args = parser.parse_args(argv)
    run(args.config, out=args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
