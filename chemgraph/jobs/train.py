"""End-to-end training from a table of SMILES and targets (what ``chemgraph train`` runs).

:func:`train` runs five steps, each a function of this module: featurize the table
(:func:`_featurize`), split it (:func:`_split`), fit a model (:func:`_fit`), evaluate the best
checkpoint (:func:`_evaluate`) and write the results (:func:`_write_results`). The settings are
a :class:`chemgraph.train.config.TrainingConfig`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import torch
import yaml

from chemgraph._interrupts import Interrupted
from chemgraph._output import check_output_folder, claimed_folder, refuse_changed_settings
from chemgraph.chem import MoleculePreparation, mols_from_smiles
from chemgraph.data import (
    Duplicates,
    MoleculeDataModule,
    MoleculeDataset,
    duplicate_groups,
    featurize_table,
    find_duplicates,
    predefined_parts,
    random_split,
    read_split_file,
    scaffold_split,
    warn_single_class,
    write_rejected,
)
from chemgraph.data.applicability import (
    DEFAULT_SIMILARITY_THRESHOLD,
    FINGERPRINT,
    TrainingFingerprints,
    TrainingLabelRange,
)
from chemgraph.data.datasets import DataSource, dataset_card, list_datasets, read_data
from chemgraph.data.labels import label_outliers
from chemgraph.featurize import FeaturizerPreset, get_preset
from chemgraph.library.training_set import (
    featurize_folder,
    prepared_as_the_folder,
    read_featurized,
)
from chemgraph.models import get_model_spec
from chemgraph.train.callbacks import EpochProgress, LossHistory
from chemgraph.train.config import TrainingConfig, paper_protocol_differences
from chemgraph.train.ensemble import mean_prediction_frame
from chemgraph.train.finetune import load_pretrained, transfer_weights
from chemgraph.train.fit import fit
from chemgraph.train.metrics import (
    domain_metrics,
    mean_over_tasks,
    per_task_metrics,
    spread_error_correlation,
)
from chemgraph.train.module import PropertyPredictionModule, build_property_module
from chemgraph.train.plots import (
    plot_confusion_matrices,
    plot_learning_curve,
    plot_parity,
    plot_precision_recall,
    plot_residuals,
    plot_roc,
)
from chemgraph.train.trainer import hide_lightning_info, make_trainer

__all__ = ["OUTPUT_FILES", "ensemble_member", "infer_task", "train", "train_ensemble"]

log = logging.getLogger(__name__)

OUTPUT_FILES = (
    "best.ckpt", "last.ckpt", "metrics.json", "predictions.csv", "rejected.csv",
    "learning_curve.png", "parity.png", "residuals.png", "roc_curve.png", "pr_curve.png",
    "confusion_matrix.png", "config.yaml",
)  # fmt: skip
"""The files :func:`train` writes to ``config.out`` (those of an earlier run are replaced)."""

SPLITS = ("train", "val", "test")


def train(
    config: TrainingConfig, overwrite: bool = False, resume: bool = False
) -> dict[str, dict[str, float]]:
    """Featurize the table, split, train with Lightning, evaluate the best checkpoint.

    Writes to ``config.out``: ``rejected.csv`` (row, input, reason), ``best.ckpt``,
    ``last.ckpt`` (the whole state of the fit after its last validation, from which
    ``resume`` continues an interrupted run: :func:`chemgraph.train.fit.fit`),
    ``metrics.json`` (``{"val": {...}, "test": {...}, "mean_predictor": {...}, "epochs_trained":
    n}``, and for a
    mixture of experts ``"experts"``: per training epoch, the expert usage ``[layer][expert]``
    and the importance and load CV² per layer; RMSE/MAE/R² in
    the targets' units, or ROC-AUC/PR-AUC/MCC/balanced accuracy/accuracy, averaged over tasks,
    and ``"per_task"``: the same per split and task; ``"duplicates"``: the molecules given in
    more than one row, :meth:`chemgraph.data.Duplicates.to_dict`, whose rows the split kept
    together; ``"applicability_domain"``: the similarity threshold calibrated on the training
    set and the validation metrics in and out of the domain, :func:`_validation_reliability`;
    NaN written as null), ``predictions.csv``
    (split, row, smiles, each target and its ``_pred`` column, ``max_similarity_to_train``
    and ``in_domain``), ``learning_curve.png``, plots of
    the test split (``parity.png`` and ``residuals.png`` for regression, ``roc_curve.png``,
    ``pr_curve.png`` and ``confusion_matrix.png`` for classification) and ``config.yaml`` (the
    settings, with ``task`` decided when it was None). These files of an earlier run in
    ``config.out`` are replaced, other files are left; a non-empty folder is refused unless
    ``overwrite`` (``--overwrite``; :func:`chemgraph._output.check_output_folder`). With
    ``config.progress``, progress is logged (INFO) and shown within each epoch
    (:class:`chemgraph.train.callbacks.EpochProgress`).

    ``resume`` continues the interrupted run of the same settings in ``config.out`` (its
    ``config.yaml`` and ``last.ckpt``): the table is featurized and split again as before, and
    the fit goes on from ``last.ckpt``; on one process it ends as the uninterrupted run would
    have (the same weights at a fixed thread count).

    With ``config.devices > 1`` only the fit is distributed (DDP over forked processes,
    :func:`chemgraph.train.trainer.make_trainer`); this process does everything else, and
    evaluates the best checkpoint on the whole validation and test splits on one device.

    Returns:
        The metrics written to ``metrics.json``.

    Raises:
        ValueError: a non-empty ``config.out`` without ``overwrite``, ``resume`` without an
            interrupted run of the same settings there (the message says which differ), bad
            settings, missing columns, too few valid molecules to split, an empty split,
            non-binary classification labels, training stopped before its first validation,
            a ``chemgraph featurize`` folder the model cannot use
            (:func:`chemgraph.library.training_set.read_featurized`), or a folder another run
            is writing to (:func:`chemgraph._output.claim_folder`).
    """
    with claimed_folder(config.out, "--output"):
        return _train(config, overwrite, resume)


def _train(config: TrainingConfig, overwrite: bool, resume: bool) -> dict[str, dict[str, float]]:
    """:func:`train` in its claimed output folder."""
    out = Path(config.out)
    if resume:
        _check_resumable(out)
    else:
        check_output_folder(config.out, "--output", overwrite, "--overwrite")
        for name in OUTPUT_FILES:  # a rerun into the same folder must not leave stale results
            (out / name).unlink(missing_ok=True)
    L.seed_everything(config.seed, workers=True, verbose=False)
    if config.protocol == "paper":
        log.info(
            "protocol paper (Buterez et al. 2024, SI 7), with these differences: %s",
            "; ".join(paper_protocol_differences(config)),
        )
    config = prepared_as_the_folder(config)
    dataset, preset, source = _featurize(config, out)
    if config.task is None:
        config = replace(config, task=infer_task(dataset.labels, config.target_columns))
    recorded = yaml.safe_dump(_recorded(config), sort_keys=False)
    if resume:
        refuse_changed_settings(out, "config.yaml", yaml.safe_load(recorded))
    (out / "config.yaml").write_text(recorded)
    parts, duplicates = _split(config, dataset, _predefined_parts(config, source, dataset))
    fingerprints = _training_fingerprints(parts["train"], config.preparation)
    try:
        fitted = _fit(
            config, parts, preset, out, fingerprints, out / "last.ckpt" if resume else None
        )
    except Interrupted as stop:
        if not (out / "last.ckpt").is_file():
            raise
        raise Interrupted(
            stop.signum,
            f"{stop}; the fit so far is kept in {out / 'last.ckpt'}: run the same command "
            "with --resume to continue it",
        ) from None
    metrics, predictions = _evaluate(config, fitted, parts, fingerprints)
    metrics.update(_validation_reliability(predictions, config, _threshold(fingerprints)))
    metrics["duplicates"] = duplicates.to_dict()
    if config.init_from is not None:
        metrics["init_from"] = _init_from_record(config)
    _write_results(config, out, metrics, predictions, fitted.history)
    return metrics


def ensemble_member(config: TrainingConfig, index: int) -> TrainingConfig:
    """The settings of member ``index`` of an ensemble of ``config``: seed ``config.seed +
    index`` (weights and shuffling), the split of ``config`` (``split_seed``), output folder
    ``<config.out>/model-<index>``."""
    split_seed = config.seed if config.split_seed is None else config.split_seed
    return replace(
        config,
        seed=config.seed + index,
        split_seed=split_seed,
        out=str(Path(config.out) / f"model-{index}"),
    )


def train_ensemble(config: TrainingConfig, size: int, overwrite: bool = False) -> dict:
    """Train ``size`` models of ``config`` on one split that differ only in their seed
    (weights, shuffling) and score their mean prediction.

    Member ``k`` is :func:`train` of :func:`ensemble_member` ``(config, k)``, with all its files
    in ``<config.out>/model-<k>``. The ensemble's own results go to ``config.out``:
    ``predictions.csv`` (split, row, smiles, each target, its ``_pred`` column = the members'
    mean prediction, in the targets' units or as a probability of class 1, and its ``_std``
    column = the members' sample standard deviation, ``ddof=1``), ``metrics.json`` (the metrics of
    :func:`train` computed from the mean prediction, ``"spread_vs_error"`` (the Spearman
    correlation of the spread with the absolute error on the validation split,
    :func:`_validation_reliability`), ``"ensemble_size"`` and
    ``"members"``: each member's ``val`` and ``test`` metrics), the test-split plots and
    ``config.yaml`` (the settings of ``config``, with ``task`` decided: ``chemgraph train
    --config <config.out>/config.yaml --ensemble K`` repeats the run). Member folders of an
    earlier, larger ensemble in ``config.out`` are removed. ``chemgraph predict --checkpoint
    <config.out>`` predicts with the same mean.

    Returns:
        The metrics written to ``<config.out>/metrics.json``.

    Raises:
        ValueError: ``size`` below 2; a non-empty ``config.out`` without ``overwrite``; see
            :func:`train`.
    """
    if size < 2:
        raise ValueError(f"an ensemble needs at least 2 models, got {size}")
    with claimed_folder(config.out, "--output"):
        return _train_ensemble(config, size, overwrite)


def _train_ensemble(config: TrainingConfig, size: int, overwrite: bool) -> dict:
    """:func:`train_ensemble` in its claimed output folder."""
    check_output_folder(config.out, "--output", overwrite, "--overwrite")
    out = Path(config.out)
    for name in OUTPUT_FILES:
        (out / name).unlink(missing_ok=True)
    for folder in out.glob("model-*"):
        index = folder.name.removeprefix("model-")
        if not index.isdigit():
            continue
        if folder.is_symlink():  # never followed: the members are written inside out only
            log.warning(
                "removed %s, a symbolic link to %s: the members of an ensemble are written in "
                "%s itself", folder, os.readlink(folder), out,
            )  # fmt: skip
            folder.unlink()
        elif folder.is_dir() and int(index) >= size:  # an earlier, larger ensemble's member
            shutil.rmtree(folder)
    members = [ensemble_member(config, index) for index in range(size)]
    member_metrics = [train(member, overwrite=True) for member in members]
    task = yaml.safe_load((Path(members[0].out) / "config.yaml").read_text())["task"]
    frames = [pd.read_csv(Path(member.out) / "predictions.csv") for member in members]
    predictions = mean_prediction_frame(frames, config.target_columns)
    metrics: dict = {}
    per_task: dict = {}
    for name in ("val", "test"):
        part = predictions[predictions["split"] == name]
        truth = part[config.target_columns].to_numpy(dtype=float)
        predicted = part[[f"{t}_pred" for t in config.target_columns]].to_numpy(dtype=float)
        per_task[name] = per_task_metrics(truth, predicted, task, config.target_columns)
        metrics[name] = mean_over_tasks(per_task[name])
    metrics["per_task"] = per_task
    threshold = member_metrics[0]["applicability_domain"]["similarity_threshold"]
    metrics.update(_validation_reliability(predictions, replace(config, task=task), threshold))
    metrics["duplicates"] = member_metrics[0]["duplicates"]  # one split for every member
    if config.init_from is not None:
        metrics["init_from"] = _init_from_record(config)
    metrics["ensemble_size"] = size
    metrics["members"] = [{"val": m["val"], "test": m["test"]} for m in member_metrics]
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(_json_safe(metrics), indent=2))
    predictions.to_csv(out / "predictions.csv", index=False)
    config = replace(config, task=task)
    (out / "config.yaml").write_text(yaml.safe_dump(_recorded(config), sort_keys=False))
    _plot_test_split(config, out, predictions)
    return metrics


def _recorded(config: TrainingConfig) -> dict:
    """The settings as ``config.yaml`` records them: paths made absolute, so that ``--config
    config.yaml`` repeats the run from any folder (a registered dataset name stays a name)."""
    values = config.to_dict()
    for key in ("data", "data_root", "out", "split_file", "init_from"):
        value = values.get(key)
        if value is not None and (key != "data" or Path(value).exists()):
            values[key] = str(Path(value).resolve())
    return values


def _predefined_parts(
    config: TrainingConfig, source: DataSource, dataset: MoleculeDataset
) -> np.ndarray | None:
    """With a predefined split, the split of each molecule of ``dataset`` (0 train, 1
    validation, 2 test, -1 none), from ``split_column`` of the data or from ``split_file``
    (rows = source rows); ``None`` otherwise.

    Raises:
        ValueError: the split column is missing or names an unknown split; see
            :func:`chemgraph.data.read_split_file`.
    """
    if config.split != "predefined":
        return None
    if config.split_column is not None:
        if config.split_column not in source.table:
            raise ValueError(
                f"split column {config.split_column!r} is not in {config.data}; columns: "
                f"{', '.join(map(str, source.table.columns))}"
            )
        names = source.table[config.split_column].to_numpy(dtype=object)
        by_row = dict(zip(source.rows.tolist(), predefined_parts(names).tolist()))
    else:
        rows = np.concatenate([source.rows, source.rejected["row"].to_numpy(dtype=np.int64)])
        by_row = dict(enumerate(read_split_file(config.split_file, int(rows.max()) + 1)))
    parts = np.asarray([by_row.get(row, -1) for row in dataset.rows.tolist()], dtype=np.int64)
    if (parts < 0).any():
        log.info("predefined split: %d molecules are in no split (left out)", (parts < 0).sum())
    return parts


def _featurize(
    config: TrainingConfig, out: Path
) -> tuple[MoleculeDataset, FeaturizerPreset, DataSource]:
    """Read the data (a table or SDF file, or a registered dataset), featurize it, write
    ``rejected.csv``; also return what was read. A ``chemgraph featurize`` folder is read as
    it is (:func:`chemgraph.library.training_set.read_featurized`), not featurized again.

    Raises:
        ValueError: fewer than 10 valid molecules; see
            :func:`chemgraph.library.training_set.read_featurized`.
    """
    preset = get_preset(config.featurizer)  # a folder's, when it is one (read_featurized)
    if featurize_folder(config) is not None:
        source, dataset, rejected = read_featurized(config)
    else:
        source = read_data(config.data, config.data_root, config.smiles_column)
        source = source.head(config.max_rows)
        dataset, rejected = featurize_table(
            source.table,
            config.smiles_column,
            config.target_columns,
            preset,
            preparation=config.preparation,
            progress=config.progress,
            rows=source.rows,
        )
    table = source.table
    if len(source.rejected):  # the records the dataset's reader rejected, by source row
        rejected = pd.concat([source.rejected, rejected], ignore_index=True)
        rejected = rejected.sort_values("row", kind="stable", ignore_index=True)
    write_rejected(rejected, out / "rejected.csv")
    log.info(
        "read %s; featurized %d of %d rows; rejected %d (see %s)",
        source.description, len(dataset), len(table) + len(source.rejected), len(rejected),
        out / "rejected.csv",
    )  # fmt: skip
    if len(dataset) < 10:
        first = (
            f"; e.g. row {rejected['row'].iloc[0]}: {rejected['reason'].iloc[0]}"
            if len(rejected)
            else ""
        )
        raise ValueError(
            f"only {len(dataset)} usable rows in {config.data}; need at least 10 "
            f"({len(rejected)} rejected{first})"
        )
    return dataset, preset, source


def _split(
    config: TrainingConfig, dataset: MoleculeDataset, predefined: np.ndarray | None = None
) -> tuple[dict[str, MoleculeDataset], Duplicates]:
    """The train/val/test subsets of ``dataset`` (random or scaffold split), with the rows
    of one molecule (:func:`chemgraph.data.duplicate_groups` of what the model sees) in one
    split, and what was found (logged as a warning when a molecule is given twice). With
    ``predefined`` (the split of each molecule, :func:`_predefined_parts`), that split is
    used as given, and a molecule in more than one of its splits is reported as leakage.

    Raises:
        ValueError: an empty split; a target without training labels; classification labels
            other than 0 and 1.
    """
    groups = duplicate_groups(dataset.smiles, config.preparation)
    duplicates = find_duplicates(groups, dataset.rows, dataset.labels.numpy(), predefined)
    if duplicates.molecules:
        log.warning("duplicates: %s", duplicates)
    if predefined is not None:
        index = tuple(np.flatnonzero(predefined == part) for part in range(3))
    elif config.split == "random":
        seed = config.seed if config.split_seed is None else config.split_seed
        index = random_split(len(dataset), config.split_fractions, seed=seed, groups=groups)
    else:
        index = scaffold_split(dataset.smiles, config.split_fractions, groups=groups)
    splits = dict(zip(SPLITS, index))
    sizes = ", ".join(f"{name} {len(rows)}" for name, rows in splits.items())
    log.info("%s split: %s", config.split, sizes)
    empty = [name for name, rows in splits.items() if len(rows) == 0]
    if empty:
        raise ValueError(
            f"the {' and '.join(empty)} split{'s are' if len(empty) > 1 else ' is'} empty "
            f"({sizes} of {len(dataset)} molecules); "
            "use more molecules, other split_fractions, or a random split (a scaffold split "
            "keeps each scaffold, e.g. all acyclic molecules, in one split)"
        )
    _check_training_labels(dataset.labels, splits["train"], config.target_columns)
    if config.task == "regression":
        for message in label_outliers(
            dataset.labels.numpy(), config.target_columns, dataset.rows, dataset.smiles
        ):
            log.warning("%s; kept, it will dominate the scaler and the RMSE: check it", message)
    if config.task == "classification":
        _check_binary(dataset.labels, config.target_columns)
        warn_single_class(dataset.labels, splits, config.target_columns)
    return {name: dataset.subset(rows) for name, rows in splits.items()}, duplicates


@dataclass
class _Fitted:
    """What :func:`_fit` leaves for evaluation: the module with its best weights loaded."""

    module: PropertyPredictionModule
    trainer: L.Trainer
    data: MoleculeDataModule
    history: LossHistory


def _check_resumable(out: Path) -> None:
    """Raises ValueError: ``out`` holds no interrupted run to resume (no ``last.ckpt`` or no
    ``config.yaml``), or a finished one (``metrics.json``)."""
    missing = [name for name in ("config.yaml", "last.ckpt") if not (out / name).is_file()]
    if missing:
        raise ValueError(
            f"--resume: {out} holds no interrupted chemgraph train run (no {' or '.join(missing)}"
            "); start it without --resume"
        )
    if (out / "metrics.json").is_file():
        raise ValueError(
            f"--resume: the run in {out} finished (metrics.json); nothing to resume (--overwrite "
            "trains again)"
        )


def _fit(
    config: TrainingConfig,
    parts: dict[str, MoleculeDataset],
    preset: FeaturizerPreset,
    out: Path,
    fingerprints: TrainingFingerprints,
    resume_from: Path | None = None,
) -> _Fitted:
    """Build the model, train it with early stopping (from ``resume_from``, the last checkpoint
    of an interrupted run, when given), load the best checkpoint's weights. The checkpoint
    also holds the training molecules' ``fingerprints`` (with their calibrated similarity
    threshold) and, for regression, the training labels' range.

    Raises:
        ValueError: training stopped before its first validation.
    """
    spec = get_model_spec(config.model)
    module = build_property_module(
        config.model, preset, config.target_columns, config.task, parts["train"].labels,
        config.model_options, learning_rate=config.learning_rate,
        weight_decay=config.weight_decay, lr_schedule=config.lr_schedule,
        warmup_steps=config.warmup_steps, lr_patience=config.lr_patience,
        max_minutes=config.max_time_minutes, fragments=config.fragments,
        standardize=config.standardize,
        train_fingerprints=fingerprints.to_dict(),
        train_label_range=(
            TrainingLabelRange.from_labels(parts["train"].labels).to_dict()
            if config.task == "regression"
            else None
        ),
    )  # fmt: skip
    if config.init_from is not None:
        pretrained = load_pretrained(config.init_from)
        transfer_weights(pretrained, module, config.freeze_encoder)
        log.info(
            "started from %s: every weight but the output head%s",
            config.init_from, " (frozen: only the head trains)" if config.freeze_encoder else "",
        )  # fmt: skip
    for part in parts.values():  # e.g. Graphormer's shortest paths, once per molecule
        part.graphs = spec.transform_graphs(module.model.config, part.graphs)
    data = MoleculeDataModule(
        parts["train"],
        parts["val"],
        parts["test"],
        spec.collate(module.model.config, preset),
        batch_size=config.batch_size,
        num_workers=config.num_workers,
        seed=config.seed,
        size_buckets=spec.padded_batches,
    )
    history = LossHistory(log_epochs=config.progress)
    progress = [EpochProgress()] if config.progress else []
    result = fit(
        module,
        data,
        budget_hint="raise max_time_minutes or max_epochs",
        max_epochs=config.max_epochs,
        max_minutes=config.max_time_minutes,
        gradient_clip=config.gradient_clip,
        checkpoint_dir=out,
        keep_last=True,
        resume_from=resume_from,
        early_stopping_patience=config.early_stopping_patience,
        callbacks=[*progress, history],
        accelerator=config.accelerator,
        devices=config.devices,
        model_summary=config.progress,
    )
    return _Fitted(module, result.trainer, data, history)


def _init_from_record(config: TrainingConfig) -> dict:
    """``metrics.json``'s record of the checkpoint the run started from: its absolute path,
    SHA-256 and whether the encoder was frozen."""
    return {
        "path": str(Path(config.init_from).resolve()),
        "sha256": config.init_from_sha256,
        "freeze_encoder": config.freeze_encoder,
    }


def _prepared_mols(part: MoleculeDataset, preparation: MoleculePreparation) -> list:
    """The molecules of ``part``, each SMILES parsed and prepared as it was featurized (so
    every one parses)."""
    return [preparation(mol) for mol in mols_from_smiles(part.smiles)]


def _training_fingerprints(
    part: MoleculeDataset, preparation: MoleculePreparation
) -> TrainingFingerprints:
    """The Morgan fingerprints of the training molecules with their calibrated similarity
    threshold, for the checkpoint and the validation split's applicability domain
    (:class:`chemgraph.data.applicability.TrainingFingerprints`)."""
    return TrainingFingerprints.from_mols(_prepared_mols(part, preparation))


def _threshold(fingerprints: TrainingFingerprints) -> float:
    """The threshold of ``in_domain`` ``chemgraph predict`` uses for these fingerprints: the
    calibrated one, else (a single training molecule) the fallback of old checkpoints."""
    calibrated = fingerprints.similarity_threshold
    return DEFAULT_SIMILARITY_THRESHOLD if calibrated is None else calibrated


def _validation_reliability(
    predictions: pd.DataFrame, config: TrainingConfig, threshold: float
) -> dict:
    """``metrics.json``'s record of how the error of the validation molecules (the rows of
    ``predictions`` whose ``split`` is ``val``) follows what ``chemgraph predict`` reports
    with a prediction: ``"applicability_domain"``: the calibrated ``similarity_threshold`` and
    the ``val`` metrics of the molecules in and out of the domain
    (:func:`chemgraph.train.metrics.domain_metrics`); for an ensemble (``<target>_std``
    columns) also ``"spread_vs_error"``: ``{"val": {target: {"molecules", "spearman"}}}``
    (:func:`chemgraph.train.metrics.spread_error_correlation`)."""
    val = predictions[predictions["split"] == "val"]
    targets = config.target_columns
    truth = val[targets].to_numpy(dtype=float)
    predicted = val[[f"{t}_pred" for t in targets]].to_numpy(dtype=float)
    in_domain = val["in_domain"].to_numpy(dtype=bool)
    record: dict = {
        "applicability_domain": {
            "similarity_threshold": threshold,
            "val": domain_metrics(truth, predicted, in_domain, config.task, targets),
        }
    }
    if f"{targets[0]}_std" in val:
        spread = val[[f"{t}_std" for t in targets]].to_numpy(dtype=float)
        record["spread_vs_error"] = {
            "val": spread_error_correlation(truth, predicted, spread, targets)
        }
    return record


def _evaluate(
    config: TrainingConfig,
    fitted: _Fitted,
    parts: dict[str, MoleculeDataset],
    fingerprints: TrainingFingerprints,
) -> tuple[dict, pd.DataFrame]:
    """Metrics and predictions of the validation and test sets (targets' units), on one
    device: the whole splits, also after a DDP fit (whose samplers shard and pad them). The
    predictions hold each molecule's ``max_similarity_to_train`` to the training
    ``fingerprints`` and ``in_domain`` (at their calibrated threshold), as ``chemgraph
    predict`` reports them.

    ``metrics[split]`` holds each metric's mean over tasks, ``metrics["per_task"][split]`` the
    table of :func:`chemgraph.train.metrics.per_task_metrics`, ``metrics["mean_predictor"]
    [split]`` the mean metrics of predicting the training labels' mean for every molecule."""
    metrics: dict = {}
    per_task: dict = {}
    frames = []
    with hide_lightning_info():  # the fit's Trainer has shown Lightning's banner
        predictor = make_trainer(max_epochs=1, accelerator=config.accelerator)
        outputs = {
            name: predictor.predict(fitted.module, fitted.data.loader(parts[name]))
            for name in ("val", "test")
        }
    for name, batches in outputs.items():
        predicted = torch.cat(batches).float().numpy()
        truth = parts[name].labels.numpy()
        per_task[name] = per_task_metrics(truth, predicted, config.task, config.target_columns)
        metrics[name] = mean_over_tasks(per_task[name])
        frame = _prediction_frame(name, parts[name], predicted, config.target_columns)
        bits = FINGERPRINT.featurize(_prepared_mols(parts[name], config.preparation))
        frame["max_similarity_to_train"] = fingerprints.max_similarity(bits)
        frame["in_domain"] = frame["max_similarity_to_train"] >= _threshold(fingerprints)
        frames.append(frame)
    metrics["per_task"] = per_task
    # the simplest baseline: every molecule gets the training labels' mean (a probability of
    # class 1 for classification)
    train_mean = np.nanmean(parts["train"].labels.numpy(), axis=0)
    metrics["mean_predictor"] = {
        name: mean_over_tasks(
            per_task_metrics(
                parts[name].labels.numpy(),
                np.broadcast_to(train_mean, parts[name].labels.shape),
                config.task,
                config.target_columns,
            )
        )
        for name in ("val", "test")
    }
    metrics["epochs_trained"] = fitted.trainer.current_epoch
    history = getattr(fitted.module.model, "expert_history", None)
    if history:  # a mixture of experts: its routing per epoch and layer
        metrics["experts"] = [{"epoch": e, **s.to_dict()} for e, s in enumerate(history)]
    return metrics, pd.concat(frames, ignore_index=True)


def _write_results(
    config: TrainingConfig,
    out: Path,
    metrics: dict,
    predictions: pd.DataFrame,
    history: LossHistory,
) -> None:
    """``metrics.json``, ``predictions.csv``, ``learning_curve.png``, and plots of the test
    split: ``parity.png`` and ``residuals.png`` (regression, units from the dataset card when
    ``config.data`` names one) or ``roc_curve.png``, ``pr_curve.png`` and
    ``confusion_matrix.png`` (classification)."""
    (out / "metrics.json").write_text(json.dumps(_json_safe(metrics), indent=2))
    predictions.to_csv(out / "predictions.csv", index=False)
    loss_name = {
        "regression": "mean squared error of standardised targets",
        "classification": "binary cross-entropy",
    }[config.task]
    plot_learning_curve(history.epochs, out / "learning_curve.png", loss_name)
    _plot_test_split(config, out, predictions)


def _plot_test_split(config: TrainingConfig, out: Path, predictions: pd.DataFrame) -> None:
    """Plots of the test rows of ``predictions``: ``parity.png`` and ``residuals.png``
    (regression, units from the dataset card when ``config.data`` names one) or
    ``roc_curve.png``, ``pr_curve.png`` and ``confusion_matrix.png`` (classification)."""
    test = predictions[predictions["split"] == "test"]
    targets = config.target_columns
    if config.task == "regression":
        units = _target_units(config.data)
        plot_parity(test, targets, out / "parity.png", "test", units)
        plot_residuals(test, targets, out / "residuals.png", "test", units)
    else:
        plot_roc(test, targets, out / "roc_curve.png", "test")
        plot_precision_recall(test, targets, out / "pr_curve.png", "test")
        plot_confusion_matrices(test, targets, out / "confusion_matrix.png", "test")


def _target_units(data) -> dict[str, str | None]:
    """Column -> unit from the card of the registered dataset ``data`` names (not a file);
    ``{}`` for a table file."""
    if Path(str(data)).is_file() or str(data) not in list_datasets():
        return {}
    return dataset_card(str(data)).units


def _values_other_than_0_and_1(column: torch.Tensor) -> torch.Tensor:
    """The distinct labels of one target column that are neither 0 nor 1 (NaN = missing)."""
    values = column[~torch.isnan(column)]
    return torch.unique(values[(values != 0) & (values != 1)])


def infer_task(labels: torch.Tensor, targets: list[str]) -> str:
    """The task when none was given.

    Args:
        labels: ``float32 [N, T]`` labels, NaN = missing.
        targets: the ``T`` target names (for the note).

    Returns:
        ``"classification"`` if every target column holds only 0 and 1 (and at least one
        label), else ``"regression"``. Whenever a column is 0/1, a note (INFO) says what was
        chosen and how to choose otherwise.
    """
    binary = [
        target
        for index, target in enumerate(targets)
        if not torch.isnan(labels[:, index]).all()
        and _values_other_than_0_and_1(labels[:, index]).numel() == 0
    ]
    if not binary:
        return "regression"
    names = ", ".join(map(repr, binary))
    if len(binary) == len(targets):
        log.info(
            "note: target %s holds only 0 and 1, so this is a classification task "
            "(pass --task regression to fit the values as numbers)",
            names,
        )
        return "classification"
    others = ", ".join(repr(t) for t in targets if t not in binary)
    log.info(
        "note: target %s holds only 0 and 1 but %s does not: training regression on all "
        "targets (train the 0/1 targets in their own run to classify them)",
        names,
        others,
    )
    return "regression"


def _check_training_labels(labels: torch.Tensor, train: np.ndarray, targets: list[str]) -> None:
    """Every target needs labels among the training molecules: one without any would be
    learned as nothing (a mean-0/std-1 scaler, untrained outputs) and scored as if learned.

    Raises:
        ValueError: a target has no label in the training split (named, with its counts).
    """
    present = ~torch.isnan(labels)
    in_train = present[torch.from_numpy(np.asarray(train, dtype=np.int64))].sum(0)
    empty = [
        f"{target!r} ({int(present[:, j].sum())} labelled rows, none of them in training)"
        for j, target in enumerate(targets)
        if in_train[j] == 0
    ]
    if empty:
        raise ValueError(
            f"target {', '.join(empty)} has no training labels; remove it from "
            "--target-columns, train it in its own run, or choose a split that gives it "
            "training labels"
        )


def _check_binary(labels: torch.Tensor, targets: list[str]) -> None:
    """Classification labels must be 0 or 1 (missing = NaN)."""
    for index, target in enumerate(targets):
        bad = _values_other_than_0_and_1(labels[:, index])
        if bad.numel():
            shown = ", ".join(f"{v:g}" for v in bad[:5].tolist())
            raise ValueError(
                f"classification target {target!r} holds values other than 0 and 1 ({shown}"
                f"{', ...' if bad.numel() > 5 else ''}); recode it to 0/1 or use --task regression"
            )


def _json_safe(value):
    """NaN (e.g. ROC-AUC of a single-class split) becomes null: JSON has no NaN."""
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    return None if isinstance(value, float) and math.isnan(value) else value


def _prediction_frame(
    split: str, part: MoleculeDataset, predicted: np.ndarray, targets: list[str]
) -> pd.DataFrame:
    frame = pd.DataFrame({"split": split, "row": part.rows, "smiles": part.smiles})
    labels = part.labels.numpy()
    for index, target in enumerate(targets):
        frame[target] = labels[:, index]
        frame[f"{target}_pred"] = predicted[:, index]
    return frame
