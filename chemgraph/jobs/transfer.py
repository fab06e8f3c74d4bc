"""Transfer learning across levels of theory: pretrain on low-fidelity labels, fine-tune on
high-fidelity labels.

Buterez et al. 2024, "An end-to-end attention-based approach for learning on graphs"
(arXiv:2402.10793), section 4.1 and SI 4; the inductive/transductive terms are those of Buterez,
Janet, Kiddle, Oglic and Liò 2024, "Transfer learning with graph neural networks for improved
molecular property prediction in the multi-fidelity setting" (Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8).

Fidelity-agnostic: any pair of label sets on the same molecules (DFT -> GW, xTB -> DFT,
assay -> assay). Three strategies, the rows of Buterez et al. 2024 Table 5:

* ``high_fidelity_only`` ("GW only"): train on the high-fidelity training set alone.
* ``inductive``: pretrain on the low-fidelity labels of every molecule *except* the
  high-fidelity test molecules, then fine-tune.
* ``transductive``: pretrain on the low-fidelity labels of every molecule, the high-fidelity
  test molecules included (their low-fidelity labels only), then fine-tune.

Pretraining runs a fixed number of epochs (Buterez et al. 2024: 150) and keeps the last weights;
5% of the pretraining pool is held out to draw its learning curve. Fine-tuning builds the same
model with a fresh output head, copies every other weight (full fine-tuning; ``freeze_encoder``
trains only the head), standardises the high-fidelity labels anew and trains with early stopping
on the high-fidelity validation set; the best checkpoint is evaluated on the high-fidelity test
set. Each seed repeats every strategy (weights, shuffling, pretraining hold-out); the high-
fidelity split stays fixed.

By default every target gets its own chain, one pretraining and one fine-tuning of a model with
one output, as in the authors' code for Buterez et al. 2024 Table 5 (one target per run);
``joint_targets`` trains one model with an output per target instead (:func:`target_groups`).
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pandas as pd
import torch
import yaml

from chemgraph._dgl import dgl
from chemgraph.batches import batch_builder
from chemgraph.data import MoleculeDataModule, MoleculeDataset
from chemgraph.errors import ConfigError
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.graph_keys import EDGE_FEATURES
from chemgraph.graphs import add_distance_features
from chemgraph.models import ESAConfig
from chemgraph.train.baselines import (
    BASELINES,
    LinearCorrection,
    baseline_names,
    morgan_fingerprints,
    transfer_baselines,
)
from chemgraph.train.callbacks import EpochProgress, LossHistory
from chemgraph.train.config import RunConfig
from chemgraph.train.finetune import transfer_weights
from chemgraph.train.fit import fit
from chemgraph.train.inference import predict_graphs
from chemgraph.train.metrics import regression_metrics
from chemgraph.train.module import LR_SCHEDULES, PropertyPredictionModule
from chemgraph.train.plots import plot_label_curve, plot_learning_curve
from chemgraph.train.scaler import TargetScaler

__all__ = [
    "STRATEGIES",
    "MultiFidelityData",
    "TransferConfig",
    "build_module",
    "high_fidelity_split",
    "label_curve",
    "pretraining_pool",
    "format_table",
    "results_table",
    "run_transfer",
    "target_groups",
    "transfer_claim",
    "transfer_margins",
    "transfer_weights",
    "baseline_runs",
]

log = logging.getLogger(__name__)

STRATEGIES = ("high_fidelity_only", "inductive", "transductive")
SPLITS = ("train", "val", "test")


@dataclass
class MultiFidelityData:
    """Molecules with labels at two levels of theory.

    Attributes:
        graphs: one :class:`dgl.DGLGraph` per molecule (``ndata["x"]``, ``edata["e"]``).
        ids: ``int64 [N]`` molecule identifiers (e.g. QM9 index), written into predictions.
        low: ``float32 [N, T]`` low-fidelity labels (e.g. DFT HOMO/LUMO, eV); NaN = missing.
        high: ``float32 [N, T]`` high-fidelity labels (e.g. GW HOMO/LUMO, eV); NaN = missing
            (most molecules).
        targets: the ``T`` target names (``["homo", "lumo"]``).
        low_name, high_name: short names of the two levels (``"DFT"``, ``"GW"``).
        low_theory, high_theory: the exact levels of theory, for reports.
        smiles: one SMILES per molecule, for the fingerprint baselines
            (:mod:`chemgraph.train.baselines`); None = only the linear-correction baselines.

    Raises:
        ValueError: lengths or shapes disagree.
    """

    graphs: list[dgl.DGLGraph]
    ids: np.ndarray
    low: torch.Tensor
    high: torch.Tensor
    targets: list[str]
    low_name: str = "low fidelity"
    high_name: str = "high fidelity"
    low_theory: str = ""
    high_theory: str = ""
    smiles: list[str] | None = None

    def __post_init__(self) -> None:
        n, t = len(self.graphs), len(self.targets)
        self.ids = np.asarray(self.ids, dtype=np.int64)
        self.low = torch.tensor(np.array(self.low, dtype=np.float32))  # a writable copy
        self.high = torch.tensor(np.array(self.high, dtype=np.float32))
        for name in ("low", "high"):
            if tuple(getattr(self, name).shape) != (n, t):
                raise ValueError(
                    f"{name} labels must be [{n}, {t}], got {tuple(getattr(self, name).shape)}"
                )
        if len(self.ids) != n:
            raise ValueError(f"{len(self.ids)} ids for {n} graphs")
        if self.smiles is not None and len(self.smiles) != n:
            raise ValueError(f"{len(self.smiles)} SMILES for {n} graphs")

    def __len__(self) -> int:
        return len(self.graphs)

    def dataset(
        self, index: np.ndarray, fidelity: str, columns: list[int] | None = None
    ) -> MoleculeDataset:
        """Molecules ``index`` with their ``"low"`` or ``"high"`` labels only; ``columns``:
        only these targets (positions in :attr:`targets`; None = all)."""
        labels = (self.low if fidelity == "low" else self.high)[torch.as_tensor(index)]
        columns = list(range(len(self.targets))) if columns is None else list(columns)
        if columns != list(range(len(self.targets))):
            labels = labels[:, columns]
        return MoleculeDataset(
            [self.graphs[i] for i in index],
            labels,
            np.asarray(index),
            [str(self.ids[i]) for i in index],
            [
                f"{self.high_name if fidelity == 'high' else self.low_name} {self.targets[c]}"
                for c in columns
            ],
        )


def high_fidelity_split(
    data: MultiFidelityData,
    seed: int,
    counts: dict[str, int] | None = None,
    fractions: tuple[float, float, float] | None = None,
) -> dict[str, np.ndarray]:
    """Seeded random train/val/test split of the molecules with every high-fidelity label.

    Give ``counts`` (Buterez et al. 2024 SI 4: 25,000 / 5,000 / 10,000) or ``fractions``.

    Returns:
        ``{"train", "val", "test"}`` -> sorted ``int64`` positions in ``data``.

    Raises:
        ValueError: neither or both given; more molecules asked for than labelled; an empty
            split.
    """
    if (counts is None) == (fractions is None):
        raise ValueError("give exactly one of counts and fractions")
    labelled = np.flatnonzero(~torch.isnan(data.high).any(dim=1).numpy())
    if fractions is not None:
        if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-6:
            raise ValueError(f"fractions must be 3 numbers summing to 1, got {fractions}")
        n_train = int(round(fractions[0] * len(labelled)))
        n_val = int(round(fractions[1] * len(labelled)))
        sizes = [n_train, n_val, len(labelled) - n_train - n_val]
    else:
        sizes = [int(counts[name]) for name in SPLITS]
    if sum(sizes) > len(labelled):
        raise ValueError(
            f"split sizes {sizes} need {sum(sizes)} molecules with {data.high_name} labels; "
            f"only {len(labelled)} have them"
        )
    if min(sizes) < 1:
        raise ValueError(f"every split needs at least one molecule, got sizes {sizes}")
    order = labelled[np.random.default_rng(seed).permutation(len(labelled))]
    bounds = np.cumsum([0, *sizes])
    return {name: np.sort(order[bounds[i] : bounds[i + 1]]) for i, name in enumerate(SPLITS)}


def pretraining_pool(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int] | None = None,
) -> np.ndarray:
    """Positions of the molecules whose low-fidelity labels pretrain the model.

    Every molecule with all low-fidelity labels of ``columns`` (positions in ``data.targets``;
    None = every target), minus the high-fidelity test molecules for ``"inductive"``; empty
    for ``"high_fidelity_only"``. Only ``data.low`` is ever read for these molecules
    (:meth:`MultiFidelityData.dataset` with ``"low"``).

    Raises:
        ValueError: unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {STRATEGIES}")
    if strategy == "high_fidelity_only":
        return np.zeros(0, dtype=np.int64)
    low = data.low if columns is None else data.low[:, list(columns)]
    pool = np.flatnonzero(~torch.isnan(low).any(dim=1).numpy())
    if strategy == "inductive":
        pool = np.setdiff1d(pool, split["test"])
    return pool


@dataclass
class TransferConfig(RunConfig):
    """Settings of a transfer-learning run (round-trips through YAML; every setting has a
    default).

    Attributes:
        strategies: subset of :data:`STRATEGIES`, in table order.
        seeds: number of seeds (0 .. seeds-1); the table reports mean ± std over them.
        pretrain_epochs: fixed pretraining epochs (Buterez et al. 2024 SI 4: 150).
        pretrain_max_minutes: wall-clock cap of one pretraining (None = none; the run then
            stops early and says so in the log and in ``runs.csv``). A cap makes the results
            depend on the machine's speed and load; None keeps them reproducible.
        finetune_max_epochs: upper bound of fine-tuning epochs (early stopping decides).
        finetune_max_minutes: wall-clock cap of one fine-tuning (None = none).
        early_stopping_patience, lr_patience: in epochs, on the validation loss
            (``lr_patience``: the ``"plateau"`` schedule only).
        freeze_encoder: fine-tune only the fresh head (default False: full fine-tuning).
        joint_targets: one model predicts every target (one pretraining and one fine-tuning
            per strategy and seed); default False: one chain per target, each model with one
            output (the authors' code for Buterez et al. 2024 Table 5: one target per model).
        delta_learning: the transfer strategies fine-tune on the residual of a linear
            correction of what the low-fidelity level says about each molecule, and add the
            correction back: ``high ≈ low @ W + b + model(molecule)``, with ``low`` the
            molecule's own low-fidelity labels (``transductive``: they are known for every
            molecule, the test molecules included) or the pretrained model's prediction of
            them (``inductive``); ``W``, ``b`` fitted by least squares on the high-fidelity
            training molecules over every low-fidelity target of the model
            (:class:`chemgraph.train.baselines.LinearCorrection`). Default False: the
            low-fidelity level is only the pretraining target (Buterez et al. 2024 Table 5).
        baselines: compute the baselines of every setting on the same split
            (:func:`baseline_runs`) and put them in the table (default True).
        batch_size, finetune_batch_size (None = batch_size), learning_rate,
        finetune_learning_rate (None = learning_rate),
        weight_decay, gradient_clip: optimisation (AdamW).
        lr_schedule: ``"plateau"`` (halve the learning rate after ``lr_patience`` epochs
            without improvement; Buterez et al. 2024 SI 7) or ``"cosine"`` (linear warm-up,
            then cosine decay to ``final_lr_fraction`` of the peak over the phase's epochs, or
            over its ``*_max_minutes`` when that runs out first), for both phases
            (:class:`chemgraph.train.module.PropertyPredictionModule`).
        warmup_steps: linear warm-up over this many optimiser steps; None = none for
            ``"plateau"``, the first 5% of each phase for ``"cosine"``.
        final_lr_fraction: floor of the ``"cosine"`` schedule, as a fraction of the peak.
        pretrain_val_fraction: share of the pretraining pool held out for its learning curve.
        featurizer: :class:`chemgraph.featurize.RadiusGraphFeaturizer` fields.
        model_options: :class:`chemgraph.models.ESAConfig` fields (ESA over radius edges).
        accelerator: Lightning accelerator; ``precision`` ``"auto"`` = bf16-mixed on CUDA,
            32-true on CPU (:func:`chemgraph.train.trainer.make_trainer`).
        num_workers: DataLoader workers.
        progress: show progress within each epoch (a bar on a terminal, else a line every
            tenth of an epoch, :class:`chemgraph.train.callbacks.EpochProgress`) and log one
            line per epoch.

    Raises:
        ConfigError: a bad setting (named, with what is allowed).
    """

    strategies: list[str] = field(default_factory=lambda: list(STRATEGIES))
    seeds: int = 5
    pretrain_epochs: int = 150
    pretrain_max_minutes: float | None = None
    finetune_max_epochs: int = 300
    finetune_max_minutes: float | None = None
    early_stopping_patience: int = 30
    lr_patience: int = 15
    freeze_encoder: bool = False
    joint_targets: bool = False
    delta_learning: bool = False
    baselines: bool = True
    batch_size: int = 128
    finetune_batch_size: int | None = None
    learning_rate: float = 1e-4
    finetune_learning_rate: float | None = None
    weight_decay: float = 1e-2
    lr_schedule: str = "plateau"
    warmup_steps: int | None = None
    final_lr_fraction: float = 0.01
    gradient_clip: float = 0.5
    pretrain_val_fraction: float = 0.05
    featurizer: dict[str, Any] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)
    accelerator: str = "auto"
    precision: str = "auto"
    num_workers: int = 0
    progress: bool = True

    NUMBERS = {
        "seeds": (int, 1), "pretrain_epochs": (int, 1), "finetune_max_epochs": (int, 1),
        "batch_size": (int, 1), "finetune_batch_size": (int, 1),
        "early_stopping_patience": (int, 0), "lr_patience": (int, 0), "warmup_steps": (int, 0),
        "num_workers": (int, 0), "learning_rate": (float, 0.0),
        "finetune_learning_rate": (float, 0.0), "weight_decay": (float, 0.0),
        "gradient_clip": (float, 0.0), "pretrain_val_fraction": (float, 0.0),
        "pretrain_max_minutes": (float, 0.0), "finetune_max_minutes": (float, 0.0),
        "final_lr_fraction": (float, 0.0),
    }  # fmt: skip
    CHOICES = {"lr_schedule": LR_SCHEDULES}

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise ConfigError(f"strategies must be a non-empty subset of {STRATEGIES}: {unknown}")
        for name in ("joint_targets", "delta_learning", "baselines"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not 0 < self.pretrain_val_fraction < 1:
            raise ConfigError(
                f"pretrain_val_fraction must be in (0, 1), got {self.pretrain_val_fraction}"
            )
        self.graph_featurizer  # noqa: B018  (validates the featurizer fields)
        ESAConfig.check_options(self.model_options)

    @property
    def graph_featurizer(self) -> RadiusGraphFeaturizer:
        values = dict(self.featurizer)
        if "atomic_numbers" in values:
            values["atomic_numbers"] = tuple(values["atomic_numbers"])
        return RadiusGraphFeaturizer(**values)


def _model_config(config: TransferConfig, num_targets: int) -> dict[str, Any]:
    return {
        **config.model_options,
        "in_features": config.graph_featurizer.edge_token_features,
        "set_type": "edge",
        "num_outputs": num_targets,
    }


def _batch_builder(featurizer: RadiusGraphFeaturizer, attention: str):
    """Collate: Gaussian distance features added to the batched graph, then the ESA batch."""
    return functools.partial(
        _edge_set_batch_3d, featurizer=featurizer, build=batch_builder("edge", attention)
    )


def _edge_set_batch_3d(graph: dgl.DGLGraph, featurizer: RadiusGraphFeaturizer, build):
    if EDGE_FEATURES not in graph.edata:
        add_distance_features(graph, featurizer)
    return build(graph)


def _fit(
    module: PropertyPredictionModule,
    train_set: MoleculeDataset,
    val_set: MoleculeDataset,
    config: TransferConfig,
    *,
    max_epochs: int,
    max_minutes: float | None,
    seed: int,
    checkpoint_dir: Path | None,
    batch_size: int,
) -> tuple[list[dict[str, float]], int]:
    """Train ``module``. With ``checkpoint_dir``: early stopping on the validation loss, then
    the best weights are loaded (and their checkpoint deleted); without: the last weights stay.

    Returns:
        The per-epoch losses and the number of epochs run.
    """
    builder = _batch_builder(config.graph_featurizer, module.model.config.attention)
    data = MoleculeDataModule(
        train_set, val_set, None, builder, batch_size, config.num_workers, seed
    )
    history = LossHistory(log_epochs=config.progress)
    progress = [EpochProgress()] if config.progress else []
    result = fit(
        module,
        data,
        budget_hint="raise finetune_max_minutes or finetune_max_epochs",
        quiet=True,  # a banner per Trainer would drown the epoch lines
        max_epochs=max_epochs,
        max_minutes=max_minutes,
        gradient_clip=config.gradient_clip,
        checkpoint_dir=checkpoint_dir,
        early_stopping_patience=None if checkpoint_dir is None else config.early_stopping_patience,
        callbacks=[*progress, history],
        accelerator=config.accelerator,
        precision=config.precision,
    )
    if result.best is not None:
        result.best.unlink()
    return history.epochs, result.trainer.current_epoch


def build_module(
    config: TransferConfig,
    targets: list[str],
    labels: torch.Tensor,
    learning_rate: float,
    max_minutes: float | None = None,
) -> PropertyPredictionModule:
    """A fresh regression module of ``config``'s ESA (random weights).

    Args:
        config: the model and optimisation settings (``lr_schedule``, ``warmup_steps``,
            ``final_lr_fraction``, ``lr_patience`` among them).
        targets: the ``T`` target names.
        labels: ``float32 [N, T]`` training labels (NaN = missing): the target scaler is fitted
            to them.
        learning_rate: peak AdamW learning rate (pretraining or fine-tuning).
        max_minutes: the phase's wall-clock budget (``pretrain_max_minutes`` or
            ``finetune_max_minutes``), so that a cosine schedule decays over it when it runs
            out before the planned epochs; None = none.
    """
    return PropertyPredictionModule(
        model_config=_model_config(config, len(targets)),
        task="regression",
        target_columns=targets,
        featurizer=config.graph_featurizer.to_dict(),
        scaler=asdict(TargetScaler.fit(labels)),
        learning_rate=learning_rate,
        weight_decay=config.weight_decay,
        lr_schedule=config.lr_schedule,
        warmup_steps=config.warmup_steps,
        final_lr_fraction=config.final_lr_fraction,
        max_minutes=max_minutes,
        lr_patience=config.lr_patience,
        model="esa",
    )


def target_groups(targets: list[str], joint: bool) -> list[list[int]]:
    """The targets of each model a run trains, as positions in ``targets``: one group of every
    target (``joint``) or one group per target."""
    if joint:
        return [list(range(len(targets)))]
    return [[t] for t in range(len(targets))]


def run_transfer(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: str | Path,
    pretrained_cache: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Run every strategy for every seed and every model (:func:`target_groups`); write
    results, table, learning curves.

    Each model is one chain: pretraining on the low-fidelity labels of its targets (not for
    ``high_fidelity_only``), then fine-tuning on their high-fidelity labels. With
    ``config.joint_targets`` one model per strategy and seed predicts every target; otherwise
    each target has its own chain and a model with one output.

    Writes to ``out``: ``runs.csv`` (strategy, seed, target, model (its targets joined by
    ``+``), test RMSE/MAE and validation RMSE (``val_rmse``) in the labels' units, epochs
    and wall-clock seconds of each phase of that model), ``table.md`` / ``table.csv``
    (:func:`results_table`), ``learning_curves.csv`` (strategy, seed, model, phase, epoch,
    losses), ``curves/*.png``, ``predictions.csv``
    (test-set predictions of every run) and ``config.yaml``.

    ``pretrained_cache``: a dict that keeps every pretrained model, keyed by strategy, seed and
    targets, and gives it to a later run with the same key instead of pretraining again (for
    runs whose pretraining pools are equal: :func:`label_curve`; the pool depends on the
    test molecules only); None = always pretrain.

    With ``config.baselines`` it also writes ``baselines.csv`` (:func:`baseline_runs`), adds the
    baselines' test predictions to ``predictions.csv`` and their rows to the table.

    Returns:
        ``(runs, baselines)``: the rows of ``runs.csv`` and of ``baselines.csv`` (None without
        ``config.baselines``).

    Raises:
        ValueError: a fine-tuning stopped before its first validation (time or epoch limit).
    """
    out = Path(out)
    (out / "curves").mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    targets = list(data.targets)
    groups = target_groups(targets, config.joint_targets)
    finetune_lr = config.finetune_learning_rate or config.learning_rate
    rows, curves, predictions = [], [], []
    for seed in range(config.seeds):
        for strategy in config.strategies:
            frame = pd.DataFrame(
                {"strategy": strategy, "seed": seed, "id": data.ids[split["test"]]}
            )
            for columns in groups:
                names = [targets[c] for c in columns]
                model = "+".join(names)
                # one chain per model; the joint model keeps the names of the files before
                # per-target chains existed
                stem = f"{strategy}_seed{seed}" + ("" if config.joint_targets else f"_{model}")
                truth, predicted, chain = _train_chain(
                    data, split, config, strategy, seed, columns, finetune_lr, out, stem,
                    pretrained_cache,
                )  # fmt: skip
                curves += [
                    dict(strategy=strategy, seed=seed, model=model, **e)
                    for e in chain.pop("curves")
                ]
                val_rmse = chain.pop("val_rmse")
                for t, target in enumerate(names):
                    metrics = regression_metrics(truth[:, t], predicted[:, t])
                    rows.append(
                        dict(
                            strategy=strategy, seed=seed, target=target, model=model,
                            rmse=metrics["rmse"], mae=metrics["mae"], val_rmse=val_rmse[t],
                            **chain,
                        )
                    )  # fmt: skip
                    log.info(
                        "%s seed %d %s: test RMSE %.4f", strategy, seed, target, metrics["rmse"]
                    )
                    frame[target] = truth[:, t]
                    frame[f"{target}_pred"] = predicted[:, t]
                pd.DataFrame(rows).to_csv(out / "runs.csv", index=False)  # partial results survive
            predictions.append(frame)
    runs = pd.DataFrame(rows)
    pd.DataFrame(curves).to_csv(out / "learning_curves.csv", index=False)
    baselines = None
    if config.baselines:
        baselines, frames = baseline_runs(data, split, config.strategies)
        baselines.to_csv(out / "baselines.csv", index=False)
        predictions += frames
    pd.concat(predictions, ignore_index=True).to_csv(out / "predictions.csv", index=False)
    table = results_table(runs, data.high_name, baselines=baselines)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(format_table(table) + "\n")
    return runs, baselines


def label_curve(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    counts: list[int],
    out: str | Path,
    unit: str | None = None,
    pretrained_cache: dict | None = None,
) -> pd.DataFrame:
    """Test RMSE against the number of high-fidelity training labels: how many expensive
    labels transfer learning saves.

    For every ``n`` of ``counts``, :func:`run_transfer` on the first ``n`` molecules of a
    seeded (seed 0) permutation of ``split["train"]`` (so every smaller training set is part of
    every larger one), the same validation and test molecules, into ``out/labels_<n>``. Each
    method of a curve: the no-transfer strategy, the best baseline of each setting at that
    ``n`` (by test RMSE, so the curve is a lower envelope of the baselines), and each transfer
    strategy. The pretraining runs once per strategy, seed and model and serves every ``n``
    (``pretrained_cache`` of :func:`run_transfer`; pass the dict of an earlier run on the same
    split to reuse its pretrained models too).

    Writes ``out/label_curve.csv`` and ``out/label_curve.png``
    (:func:`chemgraph.train.plots.plot_label_curve`).

    Returns:
        Rows ``target``, ``method``, ``labels``, ``rmse_mean``, ``rmse_std``, ``seeds``.

    Raises:
        ValueError: a count below 2 or above the training molecules.
    """
    out = Path(out)
    train = split["train"]
    bad = [n for n in counts if not 2 <= n <= len(train)]
    if bad:
        raise ValueError(f"label counts must be in 2..{len(train)}, got {bad}")
    order = np.random.default_rng(0).permutation(train)
    high_name = data.high_name
    records = []
    pretrained = {} if pretrained_cache is None else pretrained_cache  # pools: test-only
    for n in counts:
        subset = {**split, "train": np.sort(order[:n])}
        runs, baselines = run_transfer(data, subset, config, out / f"labels_{n}", pretrained)
        table = results_table(runs, high_name, baselines=baselines)
        for target, rows in table.groupby("target", sort=False):
            chosen = [rows[rows["method"] != "baseline"]]
            for setting in ("transductive", "inductive"):
                if STRATEGY_LABELS[setting] not in set(rows["strategy"]):
                    continue
                pool = rows[
                    (rows["method"] == "baseline") & rows["setting"].isin(["both", setting])
                ]
                if len(pool):
                    best = pool.loc[[pool["rmse_mean"].idxmin()]].copy()
                    best["strategy"] = f"best {setting} baseline"
                    chosen.append(best)
            for row in pd.concat(chosen).itertuples(index=False):
                records.append(
                    dict(
                        target=target, method=row.strategy, labels=n, rmse_mean=row.rmse_mean,
                        rmse_std=row.rmse_std if row.seeds else np.nan, seeds=row.seeds,
                    )
                )  # fmt: skip
    curve = pd.DataFrame(records)
    curve.to_csv(out / "label_curve.csv", index=False)
    plot_label_curve(curve, out / "label_curve.png", unit)
    return curve


def baseline_runs(
    data: MultiFidelityData, split: dict[str, np.ndarray], strategies: list[str]
) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The baselines of the settings of ``strategies`` on ``split``
    (:func:`chemgraph.train.baselines.transfer_baselines`: the fingerprint ones need
    ``data.smiles``), their test RMSE and MAE per target, and their test predictions.

    Returns:
        ``(rows, predictions)``: rows with ``baseline`` (label), ``key``, ``setting``
        (``both``, ``inductive``, ``transductive``), ``target``, ``rmse``, ``mae``, ``seconds``;
        one predictions frame per baseline in the layout of ``predictions.csv`` (``strategy``
        = the baseline's key, ``seed`` empty).
    """
    started = time.perf_counter()
    fingerprints = None if data.smiles is None else morgan_fingerprints(list(data.smiles))
    pool = pretraining_pool(data, split, "inductive") if "inductive" in strategies else None
    predicted = transfer_baselines(data.low.numpy(), data.high.numpy(), fingerprints, split, pool)
    seconds = time.perf_counter() - started
    names = baseline_names(data.low_name, data.high_name)
    settings = {key: setting for setting, keys in BASELINES.items() for key in keys}
    truth = data.high[split["test"]].numpy()
    rows, frames = [], []
    for key, values in predicted.items():
        frame = pd.DataFrame({"strategy": key, "seed": pd.NA, "id": data.ids[split["test"]]})
        for t, target in enumerate(data.targets):
            metrics = regression_metrics(truth[:, t], values[:, t])
            rows.append(
                dict(
                    baseline=names[key], key=key, setting=settings[key], target=target,
                    rmse=metrics["rmse"], mae=metrics["mae"], seconds=seconds,
                )
            )  # fmt: skip
            frame[target] = truth[:, t]
            frame[f"{target}_pred"] = values[:, t]
        frames.append(frame)
    log.info("baselines: %d in %.1f s", len(predicted), seconds)
    return pd.DataFrame(rows), frames


def _train_chain(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    strategy: str,
    seed: int,
    columns: list[int],
    finetune_lr: float,
    out: Path,
    stem: str,
    pretrained_cache: dict | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One model of :func:`run_transfer`: pretraining (unless ``high_fidelity_only``) and
    fine-tuning on the targets ``columns``.

    Returns:
        ``(truth, predicted, chain)``: high-fidelity test labels and predictions
        ``[n_test, len(columns)]``, and ``pretrain_epochs``, ``finetune_epochs``,
        ``pretrain_seconds``, ``finetune_seconds``, ``val_rmse`` (per target, the
        high-fidelity validation RMSE: what settings are chosen on) and ``curves`` (the
        per-epoch losses, each with its ``phase``).
    """
    targets = [data.targets[c] for c in columns]
    label = f"{strategy} seed {seed}" + ("" if config.joint_targets else f" {targets[0]}")
    high_train = data.dataset(split["train"], "high", columns)
    high_val = data.dataset(split["val"], "high", columns)
    high_test = data.dataset(split["test"], "high", columns)
    L.seed_everything(seed, workers=True, verbose=False)
    pretrained = None
    pretrain_epochs, pretrain_seconds, curves = 0, 0.0, []
    key = (strategy, seed, tuple(columns))
    if (
        strategy != "high_fidelity_only"
        and pretrained_cache is not None
        and key in pretrained_cache
    ):
        pretrained, pretrain_epochs, curves = pretrained_cache[key]
        log.info("%s: the pretrained model of an earlier run (same pool, seed, targets)", label)
    elif strategy != "high_fidelity_only":
        pool = pretraining_pool(data, split, strategy, columns)
        held_out = np.random.default_rng(seed).random(len(pool)) < config.pretrain_val_fraction
        held_out[0] |= not held_out.any()  # the learning curve needs one molecule
        pre_train = data.dataset(pool[~held_out], "low", columns)
        pre_val = data.dataset(pool[held_out], "low", columns)
        log.info("%s: pretraining on %d molecules", label, len(pre_train))
        pretrained = build_module(
            config, targets, pre_train.labels, config.learning_rate, config.pretrain_max_minutes
        )
        started = time.perf_counter()
        epochs, pretrain_epochs = _fit(
            pretrained, pre_train, pre_val, config, max_epochs=config.pretrain_epochs,
            max_minutes=config.pretrain_max_minutes, seed=seed, checkpoint_dir=None,
            batch_size=config.batch_size,
        )  # fmt: skip
        pretrain_seconds = time.perf_counter() - started
        curves += [dict(phase="pretrain", **e) for e in epochs]
        plot_learning_curve(
            epochs, out / "curves" / f"{stem}_pretrain.png",
            f"MSE of standardised {data.low_name} labels",
        )  # fmt: skip
        if pretrained_cache is not None:
            pretrained_cache[key] = (pretrained, pretrain_epochs, list(curves))
    # fine-tuning starts from the same random state whether the pretraining ran or was reused
    L.seed_everything(seed, workers=True, verbose=False)
    correction = None
    if pretrained is not None and config.delta_learning:
        correction = _low_fidelity_correction(data, split, strategy, columns, pretrained, config)
        high_train, high_val, high_test = (
            _with_labels(high, high.labels - base)
            for high, base in zip((high_train, high_val, high_test), correction)
        )
    module = build_module(
        config, targets, high_train.labels, finetune_lr, config.finetune_max_minutes
    )
    if pretrained is not None:
        transfer_weights(pretrained, module, config.freeze_encoder)
    started = time.perf_counter()
    epochs, finetune_epochs = _fit(
        module, high_train, high_val, config, max_epochs=config.finetune_max_epochs,
        max_minutes=config.finetune_max_minutes, seed=seed,
        checkpoint_dir=out / "checkpoints" / stem,
        batch_size=config.finetune_batch_size or config.batch_size,
    )  # fmt: skip
    finetune_seconds = time.perf_counter() - started
    curves += [dict(phase="finetune", **e) for e in epochs]
    plot_learning_curve(
        epochs, out / "curves" / f"{stem}_finetune.png",
        f"MSE of standardised {data.high_name} labels",
    )  # fmt: skip
    builder = _batch_builder(config.graph_featurizer, module.model.config.attention)
    outputs = []
    for position, dataset in ((1, high_val), (2, high_test)):
        predicted = predict_graphs(module, dataset.graphs, builder, config.batch_size)
        truth = dataset.labels.numpy()
        if correction is not None:  # back from the residual to the high-fidelity values
            predicted = predicted + correction[position].numpy()
            truth = truth + correction[position].numpy()
        outputs.append((truth, predicted))
    (val_truth, val_predicted), (truth, predicted) = outputs
    chain = dict(
        pretrain_epochs=pretrain_epochs, finetune_epochs=finetune_epochs,
        pretrain_seconds=pretrain_seconds, finetune_seconds=finetune_seconds, curves=curves,
        val_rmse=[
            regression_metrics(val_truth[:, t], val_predicted[:, t])["rmse"]
            for t in range(len(targets))
        ],
    )  # fmt: skip
    return truth, predicted, chain


def _with_labels(dataset: MoleculeDataset, labels: torch.Tensor) -> MoleculeDataset:
    return MoleculeDataset(
        dataset.graphs, labels, dataset.rows, dataset.smiles, dataset.target_columns
    )


def _low_fidelity_correction(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int],
    pretrained: PropertyPredictionModule,
    config: TransferConfig,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The linear correction of ``delta_learning`` for the train, val and test molecules,
    ``float32 [n, len(columns)]`` each, in the high-fidelity units: fitted on the training
    molecules' high-fidelity labels, applied to the molecules' low-fidelity labels
    (``transductive``) or to the pretrained model's predictions of them (``inductive``)."""
    if strategy == "transductive":
        low = [data.low[split[name]][:, columns].numpy() for name in SPLITS]
    else:
        builder = _batch_builder(config.graph_featurizer, pretrained.model.config.attention)
        low = [
            predict_graphs(
                pretrained, [data.graphs[i] for i in split[name]], builder, config.batch_size
            )
            for name in SPLITS
        ]
    if strategy == "inductive":
        truth = data.low[split["test"]][:, columns].numpy()
        errors = [
            regression_metrics(truth[:, i], low[2][:, i])["rmse"] for i in range(len(columns))
        ]
        log.info(
            "inductive: the pretrained model's %s test RMSE %s", data.low_name,
            ", ".join(f"{data.targets[c]} {e:.4f}" for c, e in zip(columns, errors)),
        )  # fmt: skip
    high_train = data.high[split["train"]][:, columns].numpy()
    correction = LinearCorrection.fit(low[0], high_train, same_column=False)
    return tuple(torch.from_numpy(correction.predict(x).astype(np.float32)) for x in low)


STRATEGY_LABELS = {"inductive": "Ind.", "transductive": "Trans."}
SETTINGS = {"high_fidelity_only": "none", "inductive": "inductive", "transductive": "transductive"}


def _spread_text(std: float, seeds: int) -> str:
    """``"± 0.012"``, or ``"± undefined"`` for one seed (no sample spread), nothing for a
    deterministic baseline (``seeds == 0``)."""
    if seeds == 0:
        return ""
    return " ± undefined" if seeds < 2 or np.isnan(std) else f" ± {std:.3f}"


def results_table(
    runs: pd.DataFrame,
    high_name: str = "GW",
    model: str = "ESA",
    baselines: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Buterez et al. 2024 Table 5 layout, with the baselines: one row per (target, method),
    test RMSE mean ± std.

    Args:
        runs: rows with ``strategy``, ``seed``, ``target``, ``rmse`` (:func:`run_transfer`).
        high_name: label of the no-transfer strategy (``"GW"`` -> "GW" row, as in Table 5).
        model: the model's name, written into the ``method`` of its rows.
        baselines: rows with ``baseline`` (its label), ``setting`` (``both``, ``inductive``,
            ``transductive``), ``target``, ``rmse`` (:func:`baseline_runs`); None = none.

    Returns:
        Columns ``target``, ``strategy`` (``GW``, ``Ind.``, ``Trans.`` or the baseline's
        label), ``setting`` (``none`` for the no-transfer row), ``method`` (the model, or
        ``baseline``), ``test RMSE`` (``"0.152 ± 0.003"``; ``"0.152 ± undefined"`` for one
        seed; ``"0.152"`` for a baseline, which no seed changes), ``rmse_mean``, ``rmse_std``
        (sample standard deviation, ddof 1; NaN for one seed, 0 for a baseline), ``seeds``
        (0 for a baseline).
    """
    labels = {"high_fidelity_only": high_name, **STRATEGY_LABELS}
    records = []
    targets = list(dict.fromkeys(runs["target"])) if len(runs) else []
    if baselines is not None and len(baselines):
        targets += [t for t in dict.fromkeys(baselines["target"]) if t not in targets]
    for target in targets:
        for strategy in [s for s in STRATEGIES if s in set(runs.get("strategy", []))]:
            values = runs[(runs.target == target) & (runs.strategy == strategy)]["rmse"]
            if values.empty:
                continue
            std = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
            records.append(
                {
                    "target": target.upper(), "strategy": labels[strategy],
                    "setting": SETTINGS[strategy], "method": model,
                    "test RMSE": f"{values.mean():.3f}{_spread_text(std, len(values))}",
                    "rmse_mean": float(values.mean()), "rmse_std": std, "seeds": len(values),
                }
            )  # fmt: skip
        if baselines is None or not len(baselines):
            continue
        for row in baselines[baselines.target == target].itertuples(index=False):
            records.append(
                {
                    "target": target.upper(), "strategy": row.baseline, "setting": row.setting,
                    "method": "baseline", "test RMSE": f"{row.rmse:.3f}",
                    "rmse_mean": float(row.rmse), "rmse_std": 0.0, "seeds": 0,
                }
            )  # fmt: skip
    columns = ["target", "strategy", "setting", "method", "test RMSE", "rmse_mean", "rmse_std"]
    return pd.DataFrame(records, columns=[*columns, "seeds"])


def transfer_margins(table: pd.DataFrame, high_name: str = "GW") -> pd.DataFrame:
    """How far each transfer strategy beats the best baseline of its setting, against the seed
    spread.

    For every target and transfer strategy, the candidates are the no-transfer row
    (``high_name``) and every baseline of the strategy's setting or of ``both``; the best is the
    one with the lowest mean RMSE. ``margin = mean RMSE(best) − mean RMSE(strategy)``
    (positive = the strategy is ahead) and ``spread = max(std(best), std(strategy))`` (the
    larger sample std over seeds; a baseline has none).

    Args:
        table: :func:`results_table`.
        high_name: the label of the no-transfer row.

    Returns:
        Columns ``target``, ``strategy``, ``best`` (the best candidate's label), ``margin``,
        ``spread`` (NaN with one seed), ``seeds`` (the strategy's), ``shown`` (``margin >
        spread`` with at least 2 seeds) and ``negative`` (``margin < 0``: negative transfer);
        one row per target and transfer strategy, in table order. Empty when no target has a
        transfer strategy and a candidate.
    """
    records = []
    for target, rows in table.groupby("target", sort=False):
        strategies = rows[(rows["method"] != "baseline") & (rows["strategy"] != high_name)]
        for row in strategies.itertuples(index=False):
            candidates = rows[
                (rows["strategy"] == high_name)
                | ((rows["method"] == "baseline") & rows["setting"].isin(["both", row.setting]))
            ]
            if candidates.empty:
                continue
            best = candidates.loc[candidates["rmse_mean"].idxmin()]
            margin = float(best["rmse_mean"] - row.rmse_mean)
            seeds = int(row.seeds if best["seeds"] == 0 else min(best["seeds"], row.seeds))
            spread = float(max(best["rmse_std"], row.rmse_std)) if seeds >= 2 else float("nan")
            records.append(
                dict(
                    target=target, strategy=row.strategy, best=best["strategy"], margin=margin,
                    spread=spread, seeds=seeds, shown=bool(seeds >= 2 and margin > spread),
                    negative=bool(margin < 0),
                )
            )  # fmt: skip
    columns = ["target", "strategy", "best", "margin", "spread", "seeds", "shown", "negative"]
    return pd.DataFrame(records, columns=columns)


def transfer_claim(table: pd.DataFrame, high_name: str = "GW", unit: str = "") -> tuple[bool, str]:
    """Whether the run shows every transfer strategy ahead of the best baseline of its setting
    (:func:`transfer_margins`), for every target, by more than the seed-to-seed spread, and
    lines that say so plainly: the verdict, then one line per strategy and target with its
    margin against its spread, and "negative transfer" where a strategy is behind.

    Returns:
        ``(shown, text)``; ``shown`` is False with one seed (no spread to compare with), without
        a baseline or without a transfer strategy.
    """
    margins = transfer_margins(table, high_name)
    if margins.empty:
        return False, f"No {high_name}-only or baseline rows and transfer rows to compare."
    units = f" {unit}" if unit else ""
    lines = []
    for m in margins.itertuples(index=False):
        spread = "undefined (one seed)" if np.isnan(m.spread) else f"{m.spread:.3f}"
        if m.negative:
            verdict = f"negative transfer: behind {m.best} by {-m.margin:.3f}{units}"
        elif m.shown:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units} > spread {spread}"
        else:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units}, not above the spread {spread}"
        lines.append(f"{m.target} {m.strategy}: {verdict}")
    details = (
        f"margin = mean RMSE of the best baseline of the setting ({high_name} only included) − "
        "mean RMSE of the strategy, against the larger std of the two:\n" + "\n".join(lines)
    )
    strategies = ", ".join(dict.fromkeys(margins["strategy"]))
    claim = (
        f"every transfer strategy ({strategies}) beats every baseline of its setting for "
        f"{' and '.join(dict.fromkeys(margins['target']))} by more than the seed-to-seed spread"
    )
    if margins["seeds"].min() < 2:
        verdict = f"One seed gives no seed-to-seed spread: this run cannot show that {claim}."
        return False, f"{verdict}\n{details}"
    if margins["shown"].all():
        return True, f"Shown: {claim}.\n{details}"
    missing = ", ".join(
        f"{m.target} {m.strategy}" for m in margins.itertuples(index=False) if not m.shown
    )
    verdict = f"Not shown by this run that {claim}; not for {missing}"
    return False, f"{verdict}\n{details}"


def format_table(table: pd.DataFrame) -> str:
    """The markdown form of :func:`results_table` (what ``table.md`` holds)."""
    shown = table.drop(columns=["rmse_mean", "rmse_std"]).copy()
    shown["seeds"] = [str(s) if s else "deterministic" for s in shown["seeds"]]
    header = "| " + " | ".join(shown.columns) + " |"
    rule = "|" + "---|" * len(shown.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join([header, rule, *body])
