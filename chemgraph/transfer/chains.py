"""One chain of a transfer run: a strategy, a seed and a group of targets, pretrained on the
low-fidelity labels (not for ``high_fidelity_only``) and fine-tuned on the high-fidelity
labels (:func:`train_chain`); and the stacked Δ-learning model of a Δ-learning chain
(:func:`stacked_chain`).

Pretraining stops early on a held-out share of the pretraining pool and keeps its best weights
(``pretrain_early_stopping``, the ``default`` protocol), or runs a fixed number of epochs and
keeps the last weights (Buterez et al. 2024: 150; the ``paper`` protocol), the held-out share
then only drawing its learning curve. Fine-tuning builds the
same model with a fresh output head, copies every other weight (full fine-tuning;
``freeze_encoder`` trains only the head), standardises the high-fidelity labels anew and trains
with early stopping on the high-fidelity validation set; the best checkpoint is evaluated on
the high-fidelity test set. Each seed repeats every strategy (weights, shuffling, pretraining
hold-out); the high-fidelity split stays fixed.

A chain keeps its state in ``<out>/chains/<stem>/`` (:data:`CHAIN_STATE`), so that a run
stopped by a signal continues where it stopped (``resume``): each phase's ``last.ckpt`` while
it trains (the pretraining's in ``pretrain/``, the fine-tuning's beside its ``best.ckpt``), then
what the phase left (``pretrained.pt``, ``finetuned.pt``), and at the end the chain's result
(``result.pt``), which a resumed run reads instead of training the chain again.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch

from chemgraph._files import replacing
from chemgraph.data import MoleculeDataModule, MoleculeDataset
from chemgraph.data.applicability import TrainingLabelRange
from chemgraph.data.multi_fidelity import SPLITS, MultiFidelityData
from chemgraph.models import get_model_spec
from chemgraph.train.baselines import LinearCorrection, residual_kernel_ridge
from chemgraph.train.callbacks import EpochProgress, LossHistory
from chemgraph.train.checkpoint import load_weights
from chemgraph.train.delta import DeltaLearning, stack, stack_weights
from chemgraph.train.finetune import transfer_weights
from chemgraph.train.fit import fit
from chemgraph.train.inference import predict_graphs
from chemgraph.train.metrics import regression_metrics
from chemgraph.train.module import PropertyPredictionModule, build_property_module
from chemgraph.train.plots import plot_learning_curve
from chemgraph.transfer.config import (
    LABEL_AUGMENTATION,
    PRETRAINING_POOLS,
    STRATEGIES,
    TransferConfig,
)

__all__ = [
    "CHAIN_STATE",
    "PHASE_COLUMNS",
    "STACKED",
    "Chain",
    "build_module",
    "chain_rows",
    "label_augmentation",
    "pretraining_pool",
    "stacked_chain",
    "train_chain",
    "training_fingerprints",
    "transformed_graphs",
]

log = logging.getLogger(__name__)


def pretraining_pool(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int] | None = None,
) -> np.ndarray:
    """Positions of the molecules whose low-fidelity labels pretrain the model.

    Every molecule with all low-fidelity labels of ``columns`` (positions in ``data.targets``;
    None = every target; ``"transductive"`` and ``"label_augmentation"``, the same pool:
    :data:`~chemgraph.transfer.config.PRETRAINING_POOLS`), minus the high-fidelity test
    molecules for ``"inductive"`` (and,
    with ``data.groups``, every other entry of a test molecule, e.g. a second SMILES of it
    with only the low-fidelity label); empty for ``"high_fidelity_only"``. Only ``data.low``
    is ever read for these molecules (:meth:`MultiFidelityData.dataset` with ``"low"``).

    Raises:
        ValueError: unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {STRATEGIES}")
    if strategy == "high_fidelity_only":
        return np.zeros(0, dtype=np.int64)
    low = data.low if columns is None else data.low[:, list(columns)]
    pool = np.flatnonzero(~torch.isnan(low).any(dim=1).numpy())
    if PRETRAINING_POOLS[strategy] == "inductive":
        pool = np.setdiff1d(pool, split["test"])
        if data.groups is not None:
            pool = pool[~np.isin(data.groups[pool], data.groups[split["test"]])]
    return pool


PHASE_COLUMNS = ("pretrain_epochs", "finetune_epochs", "pretrain_seconds", "finetune_seconds")


def transformed_graphs(data: MultiFidelityData, config: TransferConfig) -> MultiFidelityData:
    """``data`` with the family's per-molecule graph transform applied once (e.g. Graphormer's
    shortest paths; :meth:`chemgraph.models.ModelSpec.transform_graphs`)."""
    spec = get_model_spec(config.model)
    if spec.graph_transform is None:
        return data
    model_config = spec.config_class(
        **{**config.model_options, **spec.input_options(config.graph_featurizer), "num_outputs": 1}
    )
    return dataclasses.replace(data, graphs=spec.transform_graphs(model_config, data.graphs))


def _fit(
    module: PropertyPredictionModule,
    train_set: MoleculeDataset,
    val_set: MoleculeDataset,
    config: TransferConfig,
    *,
    max_epochs: int,
    max_minutes: float | None,
    seed: int,
    checkpoint_dir: Path,
    early_stopping: bool,
    resume: bool,
    batch_size: int,
    progress_bars: bool,
    budget_hint: str = "raise finetune_max_minutes or finetune_max_epochs",
) -> tuple[list[dict[str, float]], int]:
    """Train ``module``, keeping ``checkpoint_dir/best.ckpt`` (the lowest validation loss) and
    ``checkpoint_dir/last.ckpt`` (the whole state after the last validation). With
    ``early_stopping``: stop early on the validation loss and load the best weights (a
    fine-tuning's ``best.ckpt`` is kept for ``chemgraph predict``; a Δ-learning module's holds
    its correction, ``module.delta_learning``); without: run ``max_epochs`` and keep the last
    weights. ``resume``: continue from ``checkpoint_dir/last.ckpt`` when there is one
    (:func:`chemgraph.train.fit.fit`). ``budget_hint``: which limits to raise when a phase
    stops before its first validation. ``progress_bars``: the in-epoch progress of
    :class:`~chemgraph.train.callbacks.EpochProgress` (off in worker processes, whose bars
    would overwrite one another's on one terminal).

    Returns:
        The per-epoch losses and the number of epochs run.
    """
    spec = get_model_spec(config.model)
    data = MoleculeDataModule(
        train_set, val_set, None, module.batch_builder(), batch_size, config.num_workers, seed,
        size_buckets=spec.padded_batches,
    )  # fmt: skip
    history = LossHistory(log_epochs=config.progress)
    progress = [EpochProgress()] if config.progress and progress_bars else []
    last = checkpoint_dir / "last.ckpt"
    resume_from = last if resume and last.is_file() else None
    if resume_from is not None:
        log.info("continuing from %s", resume_from)
    result = fit(
        module,
        data,
        budget_hint=budget_hint,
        restore_best=early_stopping,
        quiet=True,  # a banner per Trainer would drown the epoch lines
        resume_from=resume_from,
        max_epochs=max_epochs,
        max_minutes=max_minutes,
        gradient_clip=config.gradient_clip,
        checkpoint_dir=checkpoint_dir,
        keep_last=True,
        early_stopping_patience=config.early_stopping_patience if early_stopping else None,
        callbacks=[*progress, history],
        accelerator=config.accelerator,
        precision=config.precision,
    )
    return history.epochs, result.trainer.current_epoch


def build_module(
    config: TransferConfig,
    targets: list[str],
    labels: torch.Tensor,
    learning_rate: float,
    max_minutes: float | None = None,
    train_fingerprints: dict | None = None,
    train_label_range: dict | None = None,
    label_augmentation: dict | None = None,
) -> PropertyPredictionModule:
    """A fresh regression module of ``config``'s model family (random weights;
    :func:`chemgraph.train.module.build_property_module`); with ``label_augmentation``
    (:func:`label_augmentation`) the family's model inside a
    :class:`chemgraph.models.LabelAugmentation`.

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
        train_fingerprints: the training molecules' packed Morgan fingerprints, kept in the
            checkpoint for ``chemgraph predict``'s applicability domain
            (:func:`training_fingerprints`); None = none.
        train_label_range: the high-fidelity training labels' range per target
            (:meth:`chemgraph.data.applicability.TrainingLabelRange.to_dict`; of the labels, not
            of a Δ-learning model's residuals), kept for ``chemgraph predict``'s
            ``<target>_outside_training_range``; None = none.
    """
    return build_property_module(
        config.model, config.graph_featurizer, targets, "regression", labels,
        config.model_options, learning_rate=learning_rate, weight_decay=config.weight_decay,
        lr_schedule=config.lr_schedule, warmup_steps=config.warmup_steps,
        lr_patience=config.lr_patience, max_minutes=max_minutes,
        final_lr_fraction=config.final_lr_fraction, train_fingerprints=train_fingerprints,
        train_label_range=train_label_range, fragments=config.fragments,
        standardize=config.standardize, label_augmentation=label_augmentation,
    )  # fmt: skip


def label_augmentation(columns: list[str], low: np.ndarray) -> dict:
    """The ``label_augmentation`` hyper-parameter of a label-augmented module
    (:class:`chemgraph.train.module.PropertyPredictionModule`): the low-fidelity ``columns``
    it reads and their mean and standard deviation over ``low``, ``[N, S]`` (the training
    molecules' values, NaN skipped; a column without a value standardises with 0 and 1)."""
    low = np.asarray(low, dtype=np.float64)
    present = ~np.isnan(low)
    counts = present.sum(axis=0)
    mean = np.where(present, low, 0.0).sum(axis=0) / np.maximum(counts, 1)
    spread = np.where(present, (low - mean) ** 2, 0.0).sum(axis=0) / np.maximum(counts, 1)
    return {
        "low_fidelity_columns": list(columns),
        "mean": mean.tolist(),
        "std": np.sqrt(spread).tolist(),
        "hidden_dim": None,
    }


def training_fingerprints(data: MultiFidelityData, index: np.ndarray) -> dict | None:
    """The packed Morgan fingerprints of molecules ``index`` of ``data`` (the high-fidelity
    training molecules of a fine-tuned model), as ``chemgraph train`` stores them in its
    checkpoints (:class:`chemgraph.data.applicability.TrainingFingerprints`); None when
    ``data`` has no SMILES (structures only)."""
    from chemgraph.chem import mols_from_smiles
    from chemgraph.data.applicability import TrainingFingerprints

    if data.smiles is None:
        return None
    mols = mols_from_smiles([data.smiles[i] for i in index])  # every one parsed when read
    return TrainingFingerprints.from_mols(mols).to_dict()


@dataclass(frozen=True)
class Chain:
    """One model of :func:`~chemgraph.transfer.run.run_transfer`: a strategy, a seed and the
    targets (positions in ``data.targets`` and names) of one model."""

    strategy: str
    seed: int
    columns: tuple[int, ...]
    names: tuple[str, ...]
    joint: bool

    @property
    def model(self) -> str:
        return "+".join(self.names)

    @property
    def stem(self) -> str:
        """The name of its files; the joint model keeps the names of the files before
        per-target chains existed."""
        return f"{self.strategy}_seed{self.seed}" + ("" if self.joint else f"_{self.model}")

    @property
    def label(self) -> str:
        return f"{self.strategy} seed {self.seed}" + ("" if self.joint else f" {self.names[0]}")

    @property
    def key(self) -> tuple[str, int, tuple[int, ...]]:
        """What its pretrained model is kept under (``pretrained_cache`` of
        :func:`chemgraph.transfer.run.run_transfer`): the pool depends on the strategy and the
        test molecules only, and ``label_augmentation`` pretrains on the pool of
        ``transductive`` (:data:`~chemgraph.transfer.config.PRETRAINING_POOLS`)."""
        return (PRETRAINING_POOLS.get(self.strategy, self.strategy), self.seed, self.columns)

    def stacked(self) -> Chain:
        """The chain's stacked Δ-learning model (:data:`STACKED`, :func:`stacked_chain`)."""
        return dataclasses.replace(self, strategy=STACKED[self.strategy])


def chain_rows(
    chain: Chain, result: tuple[np.ndarray, np.ndarray, dict[str, Any]], family: str
) -> list[dict[str, Any]]:
    """The rows of ``runs.csv`` of one chain, one per target: ``model`` the model family
    (``family``, e.g. ``esa``), ``targets`` the chain's model (``homo+lumo`` for a joint one)."""
    truth, predicted, record = result
    phases = {k: record[k] for k in PHASE_COLUMNS}
    rows = []
    for t, target in enumerate(chain.names):
        metrics = regression_metrics(truth[:, t], predicted[:, t])
        rows.append(
            dict(
                strategy=chain.strategy, seed=chain.seed, target=target, model=family,
                targets=chain.model,
                rmse=metrics["rmse"], mae=metrics["mae"], val_rmse=record["val_rmse"][t],
                **phases,
            )
        )  # fmt: skip
        if "stack_weight" in record:
            rows[-1]["stack_weight"] = record["stack_weight"][t]
    return rows


STACKED = {"inductive": "inductive_stacked", "transductive": "transductive_stacked"}
"""The stacked Δ-learning rows of each transfer strategy (``stack_kernel_ridge``), by the name
``runs.csv`` and ``predictions.csv`` give them."""


def stacked_chain(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    chain: Chain,
    result: tuple[np.ndarray, np.ndarray, dict[str, Any]],
    fingerprints: np.ndarray,
    unlabelled: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The stacked Δ-learning model of a Δ-learning chain (``stack_kernel_ridge``;
    :mod:`chemgraph.train.delta`): the kernel ridge of the Δ-learning baseline
    (:func:`chemgraph.train.baselines.residual_kernel_ridge`) fitted to the residuals of the
    chain's own correction (applied in float64, as the baselines do: on the transductive
    joint model's training molecules it is the ``delta_all`` baseline), blended with the
    chain's predictions with the weights :func:`chemgraph.train.delta.stack_weights` chooses
    on the validation molecules.

    Returns:
        ``(truth, predicted, record)`` as :func:`train_chain`'s: the test labels, the
        stacked test predictions, and the chain's record with the stacked ``val_rmse`` and
        ``validation`` predictions (on the molecules the weights were chosen on, so
        optimistic) and ``unlabelled`` predictions, ``stack_weight`` (``w`` per target), no
        ``curves``.
    """
    _, predicted, record = result
    columns = list(chain.columns)
    molecules = [split[name] for name in SPLITS] + ([] if unlabelled is None else [unlabelled])
    base = np.full((len(data), len(columns)), np.nan)
    for index, low in zip(molecules, record["low"]):
        base[index] = record["correction"].predict(low)
    high = data.high[:, columns].numpy()
    kernel_ridge = residual_kernel_ridge(base, high, fingerprints, split)
    val, test = split["val"], split["test"]
    weights = stack_weights(
        high[val], record["validation"], base[val] + kernel_ridge.predict(fingerprints[val])
    )
    network = [record["validation"], predicted, record["unlabelled"]]
    stacked = [
        None if values is None else stack(values, base[index] + kernel_ridge.predict(
            fingerprints[index]), weights)
        for index, values in zip([val, test, unlabelled], network)
    ]  # fmt: skip
    val_rmse = [
        regression_metrics(high[val, t], stacked[0][:, t])["rmse"] for t in range(len(columns))
    ]
    for t, target in enumerate(chain.names):
        log.info(
            "%s seed %d %s: stacked Δ-learning, weight %.1f on the network, %.1f on the kernel "
            "ridge (alpha %g); validation RMSE %.4f (network alone %.4f)",
            chain.strategy, chain.seed, target, weights[t], 1 - weights[t],
            kernel_ridge.alphas[t], val_rmse[t], record["val_rmse"][t],
        )  # fmt: skip
    stacked_record = {
        key: value for key, value in record.items() if key not in ("low", "correction")
    }
    stacked_record.update(
        val_rmse=val_rmse,
        unlabelled=stacked[2],
        stack_weight=list(weights),
        curves=[],
        validation=stacked[0],
    )
    return high[test], stacked[1], stacked_record


CHAIN_STATE = "chains"
"""The folder of a transfer run's output that keeps each chain's state, ``chains/<stem>/``
(module docstring)."""


def train_chain(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    chain: Chain,
    out: Path,
    pretrained_cache: dict | None = None,
    unlabelled: np.ndarray | None = None,
    progress_bars: bool = True,
    resume: bool = False,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One model of :func:`~chemgraph.transfer.run.run_transfer`: pretraining (unless
    ``high_fidelity_only``) and fine-tuning on the targets ``chain.columns``; it seeds itself
    (``chain.seed``) before each phase, so its result does not depend on what ran before it in
    the process. ``progress_bars``: in-epoch progress (off in worker processes).

    Its state is kept in ``out/chains/<stem>/`` (module docstring). ``resume``: continue the
    chain of an interrupted run of the same settings from that state: a finished chain's
    result is read back, a finished phase is not trained again, and an interrupted one
    continues from its ``last.ckpt``; at a fixed thread count the result is the
    uninterrupted chain's (the wall-clock seconds aside).

    Returns:
        ``(truth, predicted, record)``: high-fidelity test labels and predictions
        ``[n_test, len(columns)]``, and ``pretrain_epochs``, ``finetune_epochs``,
        ``pretrain_seconds``, ``finetune_seconds``, ``val_rmse`` (per target, the
        high-fidelity validation RMSE: what settings are chosen on), ``curves`` (the
        per-epoch losses, each with its ``phase``), ``validation`` (the validation
        predictions ``[n_val, len(columns)]``, what the run ranks its models on) and
        ``unlabelled`` (predictions ``[len(unlabelled), len(columns)]`` of the molecules
        ``unlabelled``; None without). A Δ-learning chain of a run with
        ``stack_kernel_ridge`` adds what :func:`stacked_chain` needs: ``low`` and
        ``correction`` (:func:`_delta_learning`'s values and its linear correction).
    """
    strategy, seed, columns, stem = chain.strategy, chain.seed, list(chain.columns), chain.stem
    targets, label = list(chain.names), chain.label
    state = out / CHAIN_STATE / stem
    if resume and (state / "result.pt").is_file():
        log.info("%s: trained before the interruption (%s)", label, state / "result.pt")
        return _read_state(state / "result.pt")
    state.mkdir(parents=True, exist_ok=True)
    finetune_lr = config.finetune_learning_rate or config.learning_rate
    high_train = data.dataset(split["train"], "high", columns)
    high_val = data.dataset(split["val"], "high", columns)
    high_test = data.dataset(split["test"], "high", columns)
    L.seed_everything(seed, workers=True, verbose=False)
    pretrained = None
    pretrain_epochs, pretrain_seconds, curves = 0, 0.0, []
    key = chain.key
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
        pretrained = build_module(
            config, targets, pre_train.labels, config.learning_rate, config.pretrain_max_minutes
        )
        if resume and (state / "pretrained.pt").is_file():
            log.info("%s: pretrained before the interruption", label)
            phase = _read_state(state / "pretrained.pt")
            pretrained.load_state_dict(phase["state_dict"])
        else:
            log.info("%s: pretraining on %d molecules", label, len(pre_train))
            started = time.perf_counter()
            epochs, epochs_run = _fit(
                pretrained, pre_train, pre_val, config, max_epochs=config.pretrain_epochs,
                max_minutes=config.pretrain_max_minutes, seed=seed,
                checkpoint_dir=state / "pretrain", resume=resume,
                early_stopping=config.pretrain_early_stopping,
                batch_size=config.batch_size, progress_bars=progress_bars,
                budget_hint="raise pretrain_max_minutes or pretrain_epochs",
            )  # fmt: skip
            phase = dict(
                state_dict=pretrained.state_dict(), epochs=epochs, epochs_run=epochs_run,
                seconds=time.perf_counter() - started,
            )  # fmt: skip
            _write_state(phase, state / "pretrained.pt")
            shutil.rmtree(state / "pretrain")
        epochs, pretrain_epochs, pretrain_seconds = (
            phase["epochs"], phase["epochs_run"], phase["seconds"]
        )  # fmt: skip
        curves += [dict(phase="pretrain", **e) for e in epochs]
        plot_learning_curve(
            epochs, out / "curves" / f"{stem}_pretrain.png",
            f"MSE of standardised {data.low_name} labels",
        )  # fmt: skip
        if pretrained_cache is not None:
            pretrained_cache[key] = (pretrained, pretrain_epochs, list(curves))
    # fine-tuning starts from the same random state whether the pretraining ran or was reused
    L.seed_everything(seed, workers=True, verbose=False)
    label_range = TrainingLabelRange.from_labels(high_train.labels).to_dict()
    delta, low, bases, augmentation, inputs = None, None, None, None, None
    if pretrained is not None and config.delta_learning and strategy != LABEL_AUGMENTATION:
        delta, low = _delta_learning(data, split, strategy, columns, pretrained, config, unlabelled)
        bases = tuple(torch.from_numpy(delta.base(x)) for x in low)
        high_train, high_val, high_test = (
            _with_labels(high, high.labels - base)
            for high, base in zip((high_train, high_val, high_test), bases)
        )
    if strategy == LABEL_AUGMENTATION:  # each molecule's low-fidelity labels are an input
        molecules = [split[name] for name in SPLITS] + ([] if unlabelled is None else [unlabelled])
        inputs = [data.low[index][:, columns].numpy() for index in molecules]
        augmentation = label_augmentation(
            [data.low_fidelity_columns[c] for c in columns], inputs[0]
        )
        high_train, high_val = (
            _with_inputs(high, values) for high, values in zip((high_train, high_val), inputs)
        )
    module = build_module(
        config, targets, high_train.labels, finetune_lr, config.finetune_max_minutes,
        training_fingerprints(data, split["train"]), label_range, augmentation,
    )  # fmt: skip
    module.delta_learning = delta  # its checkpoints hold the correction (chemgraph predict)
    if pretrained is not None:
        transfer_weights(pretrained, module, config.freeze_encoder)
    checkpoints = out / "checkpoints" / stem
    if resume and (state / "finetuned.pt").is_file():
        phase = _read_state(state / "finetuned.pt")
        load_weights(module, checkpoints / "best.ckpt")
    else:
        started = time.perf_counter()
        epochs, epochs_run = _fit(
            module, high_train, high_val, config, max_epochs=config.finetune_max_epochs,
            max_minutes=config.finetune_max_minutes, seed=seed, checkpoint_dir=checkpoints,
            early_stopping=True, resume=resume,
            batch_size=config.finetune_batch_size or config.batch_size,
            progress_bars=progress_bars,
        )  # fmt: skip
        phase = dict(epochs=epochs, epochs_run=epochs_run, seconds=time.perf_counter() - started)
        _write_state(phase, state / "finetuned.pt")
        (checkpoints / "last.ckpt").unlink()  # best.ckpt is the model
    epochs, finetune_epochs, finetune_seconds = (
        phase["epochs"], phase["epochs_run"], phase["seconds"]
    )  # fmt: skip
    curves += [dict(phase="finetune", **e) for e in epochs]
    plot_learning_curve(
        epochs, out / "curves" / f"{stem}_finetune.png",
        f"MSE of standardised {data.high_name} labels",
    )  # fmt: skip
    builder = module.batch_builder()
    graphs = [high_val.graphs, high_test.graphs]
    graphs += [] if unlabelled is None else [[data.graphs[i] for i in unlabelled]]
    outputs = []
    for position, molecules in enumerate(graphs, start=1):
        predicted = (
            predict_graphs(
                module, molecules, builder, config.batch_size,
                None if inputs is None else inputs[position],
            )
            if len(molecules)
            else np.zeros((0, len(targets)), np.float32)
        )  # fmt: skip
        if bases is not None:  # back from the residual to the high-fidelity values
            predicted = predicted + bases[position].numpy()
        outputs.append(predicted)
    truths = [high_val.labels.numpy(), high_test.labels.numpy()]
    if bases is not None:
        truths = [truth + bases[position].numpy() for position, truth in enumerate(truths, 1)]
    (val_truth, truth), (val_predicted, predicted) = truths, outputs[:2]
    record = dict(
        pretrain_epochs=pretrain_epochs, finetune_epochs=finetune_epochs,
        pretrain_seconds=pretrain_seconds, finetune_seconds=finetune_seconds, curves=curves,
        val_rmse=[
            regression_metrics(val_truth[:, t], val_predicted[:, t])["rmse"]
            for t in range(len(targets))
        ],
        unlabelled=outputs[2] if unlabelled is not None else None, validation=val_predicted,
    )  # fmt: skip
    if delta is not None and config.stack_kernel_ridge:  # what stacked_chain needs
        record.update(low=low, correction=delta.correction)
    _write_state((truth, predicted, record), state / "result.pt")
    for name in ("pretrained.pt", "finetuned.pt"):  # the result holds what they gave
        (state / name).unlink(missing_ok=True)
    return truth, predicted, record


def _write_state(value: Any, path: Path) -> None:
    """Write ``value`` (numbers, text, NumPy arrays, tensors, a
    :class:`~chemgraph.train.baselines.LinearCorrection`, in lists, tuples and dicts) to
    ``path``, beside it and renamed (:func:`chemgraph._files.replacing`), in a form that
    :func:`_read_state` loads with ``weights_only=True``."""
    with replacing(path) as temporary:
        torch.save(_storable(value), temporary)


def _read_state(path: Path) -> Any:
    """What :func:`_write_state` wrote to ``path``, the arrays as NumPy arrays again."""
    return _restored(torch.load(path, map_location="cpu", weights_only=True))


def _storable(value: Any) -> Any:
    """``value`` with tensors for arrays (their dtypes kept), a correction as a tagged dict and
    Python numbers for NumPy scalars: what ``torch.load(weights_only=True)`` reads."""
    if isinstance(value, np.ndarray):
        return {"ndarray": torch.from_numpy(np.ascontiguousarray(value))}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, LinearCorrection):
        return {"linear_correction": _storable([value.weights, value.intercept])}
    if isinstance(value, dict):
        return {k: _storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_storable(v) for v in value)
    return value


def _restored(value: Any) -> Any:
    """The inverse of :func:`_storable`."""
    if isinstance(value, dict):
        if value.keys() == {"ndarray"}:
            return value["ndarray"].numpy()
        if value.keys() == {"linear_correction"}:
            return LinearCorrection(*_restored(value["linear_correction"]))
        return {k: _restored(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_restored(v) for v in value)
    return value


def _with_labels(dataset: MoleculeDataset, labels: torch.Tensor) -> MoleculeDataset:
    return dataclasses.replace(dataset, labels=labels)


def _with_inputs(dataset: MoleculeDataset, low: np.ndarray) -> MoleculeDataset:
    """``dataset`` (training or validation molecules) whose molecules give a label-augmented
    model their low-fidelity values ``low`` ``[N, S]`` (:attr:`MoleculeDataset.inputs`); a
    molecule without every value is left out of the loss (its labels NaN: its prediction is
    NaN)."""
    labels = dataset.labels.clone()
    labels[torch.from_numpy(np.isnan(low).any(axis=1))] = torch.nan
    return dataclasses.replace(dataset, labels=labels, inputs=torch.from_numpy(low))


def _delta_learning(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategy: str,
    columns: list[int],
    pretrained: PropertyPredictionModule,
    config: TransferConfig,
    unlabelled: np.ndarray | None = None,
) -> tuple[DeltaLearning, tuple[np.ndarray, ...]]:
    """The linear correction of ``delta_learning`` (:class:`chemgraph.train.delta.
    DeltaLearning`: fitted on the training molecules' high-fidelity labels, applied to the
    molecules' low-fidelity labels, ``transductive``, or to the pretrained model's predictions
    of them, ``inductive``, which it then holds) and what it is applied to, ``low``, for the
    train, val and test molecules (and the ``unlabelled`` ones, when given), ``float32 [n,
    len(columns)]`` each, in the low-fidelity units."""
    molecules = [split[name] for name in SPLITS] + ([] if unlabelled is None else [unlabelled])
    if strategy == "transductive":
        low = [data.low[index][:, columns].numpy() for index in molecules]
    else:
        builder = pretrained.batch_builder()
        low = [
            predict_graphs(pretrained, [data.graphs[i] for i in index], builder, config.batch_size)
            if len(index)
            else np.zeros((0, len(columns)), np.float32)
            for index in molecules
        ]
        truth = data.low[split["test"]][:, columns].numpy()
        errors = [
            regression_metrics(truth[:, i], low[2][:, i])["rmse"] for i in range(len(columns))
        ]
        log.info(
            "inductive: the pretrained model's %s test RMSE %s", data.low_name,
            ", ".join(f"{data.low_fidelity_columns[c]} {e:.4f}" for c, e in zip(columns, errors)),
        )  # fmt: skip
    delta = DeltaLearning.fit(
        strategy,
        [data.low_fidelity_columns[c] for c in columns],
        low[0],
        data.high[split["train"]][:, columns].numpy(),
        pretrained if strategy == "inductive" else None,
        stacked=config.stack_kernel_ridge,
    )
    return delta, tuple(low)
