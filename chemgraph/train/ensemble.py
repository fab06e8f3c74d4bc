"""Ensembles of trained property models: which checkpoints form one, their consistency, and
the one definition of an ensemble's prediction (the members' mean) and spread (their sample
standard deviation), used by ``chemgraph predict`` (:mod:`chemgraph.jobs.predict`) and
``chemgraph train --ensemble`` (:mod:`chemgraph.jobs.train`) alike.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from chemgraph._dgl import dgl
from chemgraph._files import file_digest
from chemgraph.data.applicability import TrainingFingerprints, TrainingLabelRange
from chemgraph.featurize import FeaturizerPreset, RadiusGraphFeaturizer
from chemgraph.models import get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.inference import model_inputs, predict_graphs
from chemgraph.train.predictors import BaselinePredictor, PropertyPredictorBase

__all__ = ["Ensemble", "checkpoint_files", "ensemble_statistics", "mean_prediction_frame"]

log = logging.getLogger(__name__)


def ensemble_statistics(stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The mean over the members and their sample standard deviation.

    Args:
        stacked: ``float [K, ...]``, one prediction per member on the first axis.

    Returns:
        ``(mean, std)``, each ``[...]``: ``std`` is the sample standard deviation
        (``ddof=1``, the sum of squared deviations divided by ``K - 1``, the usual estimate of
        the spread of independently trained models); None for one member, whose spread is
        undefined.
    """
    mean = stacked.mean(axis=0)
    return mean, (stacked.std(axis=0, ddof=1) if len(stacked) > 1 else None)


def mean_prediction_frame(frames: list[pd.DataFrame], targets: list[str]) -> pd.DataFrame:
    """The members' prediction tables (columns ``split``, ``row``, ``<target>_pred``, ...;
    same rows, same order; ``chemgraph train --ensemble``'s ``predictions.csv``) with each
    ``<target>_pred`` replaced by the members' mean and a ``<target>_std`` column added.

    Raises:
        ValueError: the members' rows differ (not one split).
    """
    first = frames[0]
    for frame in frames[1:]:
        if not frame[["split", "row"]].equals(first[["split", "row"]]):
            raise ValueError("the ensemble's members were evaluated on different rows")
    mean = first.drop(columns=[f"{t}_pred" for t in targets])
    for target in targets:
        stacked = np.stack([frame[f"{target}_pred"].to_numpy(dtype=float) for frame in frames])
        mean[f"{target}_pred"], mean[f"{target}_std"] = ensemble_statistics(stacked)
    return mean


def checkpoint_files(checkpoints: str | Path | Sequence[str | Path]) -> list[Path]:
    """The checkpoint files named by ``checkpoints``.

    Args:
        checkpoints: one or several of: a checkpoint file; a ``chemgraph train`` output folder
            (its ``best.ckpt``); an ensemble folder of ``chemgraph train --ensemble K`` (the
            ``best.ckpt`` of each ``model-<k>`` sub-folder, in member order).

    Raises:
        FileNotFoundError: a path that does not exist, or a folder with no checkpoint.
        ValueError: the same model named twice (:func:`_refuse_duplicate_members`).
    """
    if isinstance(checkpoints, (str, Path)):
        checkpoints = [checkpoints]
    files: list[Path] = []
    for path in map(Path, checkpoints):
        if path.is_file():
            files.append(path)
        elif (path / "best.ckpt").is_file():
            files.append(path / "best.ckpt")
        else:
            members = sorted(
                (p for p in path.glob("model-*/best.ckpt") if _member(p) is not None),
                key=_member,
            )
            if not members:
                raise FileNotFoundError(
                    f"checkpoint {path} does not exist"
                    if not path.exists()
                    else f"{path} holds no best.ckpt and no model-<k>/best.ckpt"
                )
            files.extend(members)
    _refuse_duplicate_members(files)
    return files


def _refuse_duplicate_members(files: list[Path]) -> None:
    """An ensemble whose members include one model twice (the same file, e.g. a run folder
    and its own ``best.ckpt``, or a copy of it) would report a spread of 0 for that pair.

    Raises:
        ValueError: two members are the same file or have the same bytes (both named).
    """
    if len(files) < 2:
        return
    seen: dict[str, Path] = {}
    for file in files:
        for key in (f"path:{file.resolve()}", f"sha256:{file_digest(file)}"):
            if key in seen:
                raise ValueError(
                    f"{file} and {seen[key]} are the same model "
                    f"({'the same file' if key.startswith('path') else 'identical bytes'}); "
                    "an ensemble needs distinct members (give each checkpoint once)"
                )
            seen[key] = file


def _member(checkpoint: Path) -> int | None:
    """``k`` of ``model-<k>/best.ckpt``, else None."""
    suffix = checkpoint.parent.name.removeprefix("model-")
    return int(suffix) if suffix.isdigit() else None


def _inputs_and_outputs(module: PropertyPredictorBase | BaselinePredictor) -> dict[str, Any]:
    """What the members of an ensemble must share: targets, task, featurization, the baseline
    (a network's is None) and, for Δ-learning models, the strategy and the low-fidelity values
    corrected."""
    hparams = module.hparams
    delta = module.delta_learning
    return {
        "target_columns": list(hparams.target_columns),
        "baseline": hparams.get("baseline"),
        "task": hparams.task,
        "featurizer": hparams.featurizer,
        "preparation": module.preparation,
        "delta_learning": None
        if delta is None
        else {"strategy": delta.strategy, "low_fidelity_columns": delta.low_fidelity_columns},
        "label_augmentation": getattr(module, "low_fidelity_inputs", []),
    }


class Ensemble:
    """The checkpoints of one prediction: one model, or the members of an ensemble (their mean
    prediction and its sample standard deviation, :func:`ensemble_statistics`).

    A member that is a label-augmented model of transfer learning
    (:class:`chemgraph.models.LabelAugmentation`) reads each molecule's low-fidelity values
    (:attr:`low_fidelity_columns`) as an input. A member that is a Δ-learning model of transfer
    learning
    (:class:`chemgraph.train.delta.DeltaLearning`) predicts its residual plus the linear
    correction of the molecule's low-fidelity values: given ones (transductive;
    :attr:`low_fidelity_columns` names them) or its pretrained model's (inductive); the mean and
    spread are those of the members' full predictions. A baseline that ``chemgraph transfer``
    recommended (:class:`~chemgraph.train.predictors.BaselinePredictor`) predicts from the
    molecules' Morgan fingerprints and, for a transductive one, their low-fidelity values.

    An ensemble pickles as its checkpoint files, their sha256 and the device asked for, not as
    its weights: a worker process or a dask.distributed worker that receives one loads the
    checkpoints itself (once per process) from a file system it shares with the caller.

    Args:
        files: the checkpoints (:func:`checkpoint_files`).
        device: where the models run; None: CUDA when available, else the CPU (decided again
            by each process an ensemble is unpickled in).

    Attributes:
        targets, task: the members' targets and task (``"regression"`` or
            ``"classification"``).
        low_fidelity_columns: the input columns every prediction needs (:meth:`predict`'s
            ``low_fidelity``): a label-augmented model's
            (:attr:`~chemgraph.train.predictors.PropertyPredictorBase.low_fidelity_inputs`), a
            transductive Δ-learning model's or a baseline's low-fidelity values; empty for the
            others.
        reads_fingerprints: a baseline that predicts from the molecules' Morgan fingerprints
            (:meth:`predict`'s ``fingerprints``).
        stacked: the members whose transfer run also stacked them with a kernel ridge it did
            not store (:attr:`chemgraph.train.delta.DeltaLearning.stacked`), so their
            prediction is the run's plain row, not its stacked one
            (:meth:`note_stacked_members`).
        featurizer: the checkpoints' featurizer, so what they read: a
            :class:`~chemgraph.featurize.FeaturizerPreset` (bond graphs) or a
            :class:`~chemgraph.featurize.RadiusGraphFeaturizer` (radius graphs: cutoff,
            Gaussian basis, elements, as trained).
        preparation: the molecule preparation of training (bond graphs; radius graphs use the
            structures as given).
        fingerprints: the training molecules' fingerprints of every member (identical ones
            once) with their calibrated similarity threshold
            (:meth:`~chemgraph.data.applicability.TrainingFingerprints.concatenate`); None when
            a member holds none.
        missing_threshold: the checkpoints whose fingerprints were stored without a calibrated
            similarity threshold (written before chemgraph calibrated it).
        label_range: a regression's training labels' range per target, covering every
            member's (:meth:`~chemgraph.data.applicability.TrainingLabelRange.union`); None for
            classification or when a member holds none.

    Raises:
        ValueError: a checkpoint that is not a property checkpoint, or members that differ in
            targets, task, featurizer, molecule preparation (standardisation, fragments),
            baseline, Δ-learning (strategy, low-fidelity columns) or the low-fidelity columns a
            label-augmented model reads; when unpickled, a
            checkpoint whose bytes differ from those of the pickled one.
    """

    def __init__(self, files: list[Path], device: str | torch.device | None = None) -> None:
        self.files, self.requested_device = list(files), device
        self.digests = [file_digest(f) for f in self.files]
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.modules = [load_checkpoint(f, kind="property", device=device) for f in files]
        first = self.modules[0].hparams
        for file, module in zip(files[1:], self.modules[1:]):
            for key, ours in _inputs_and_outputs(self.modules[0]).items():
                theirs = _inputs_and_outputs(module)[key]
                if theirs != ours:
                    raise ValueError(
                        f"{file} and {files[0]} differ in {key} ({theirs!r} and {ours!r}); an "
                        "ensemble's members must predict the same targets from the same features"
                    )
        self.targets: list[str] = list(first.target_columns)
        self.task: str = first.task
        delta, first_module = self.modules[0].delta_learning, self.modules[0]
        self.low_fidelity_columns: list[str] = (
            first_module.low_fidelity_columns
            if isinstance(first_module, BaselinePredictor)
            else first_module.low_fidelity_inputs or (delta.input_columns if delta else [])
        )
        self.reads_fingerprints = isinstance(first_module, BaselinePredictor) and (
            first_module.baseline.needs_fingerprints
        )
        self.stacked: list[Path] = [
            f
            for f, m in zip(files, self.modules)
            if m.delta_learning is not None and m.delta_learning.stacked
        ]
        self.featurizer: FeaturizerPreset | RadiusGraphFeaturizer = get_model_spec(
            first.model
        ).featurizer(first.featurizer)
        self.preparation = self.modules[0].preparation
        stored = [m.hparams.get("train_fingerprints") for m in self.modules]
        missing = [str(f) for f, values in zip(files, stored) if values is None]
        self.missing_fingerprints = missing
        self.missing_threshold = [
            str(f)
            for f, values in zip(files, stored)
            if values is not None and values.get("similarity_threshold") is None
        ]
        self.fingerprints: TrainingFingerprints | None = None
        if not missing:
            parts = [TrainingFingerprints.from_dict(values) for values in stored]
            self.fingerprints = TrainingFingerprints.concatenate(parts)
        ranges = [m.hparams.get("train_label_range") for m in self.modules]
        regression = first.task == "regression"
        self.missing_label_range = [
            str(f) for f, values in zip(files, ranges) if regression and values is None
        ]
        self.label_range: TrainingLabelRange | None = None
        if regression and not self.missing_label_range:
            self.label_range = TrainingLabelRange.union(
                [TrainingLabelRange.from_dict(values) for values in ranges]
            )

    def warn_missing_fingerprints(self) -> None:
        """Warn that the similarity columns stay empty, when a checkpoint holds no training
        fingerprints (:func:`predict_table` does so once the user's options are checked)."""
        if self.missing_fingerprints:
            why = (
                "trained on 3D structures without SMILES, which give no fingerprints"
                if isinstance(self.featurizer, RadiusGraphFeaturizer)
                else "written before chemgraph stored them"
            )
            log.warning(
                "no training fingerprints in %s (%s): max_similarity_to_train and in_domain "
                "are left empty", ", ".join(self.missing_fingerprints), why,
            )  # fmt: skip

    def warn_missing_label_range(self) -> None:
        """Warn that the ``<target>_outside_training_range`` columns stay empty, when a
        regression checkpoint holds no training label range (:func:`predict_table` does so once
        the user's options are checked)."""
        if self.missing_label_range:
            log.warning(
                "no training label range in %s (written before chemgraph stored it): "
                "the _outside_training_range columns are left empty",
                ", ".join(self.missing_label_range),
            )

    def note_stacked_members(self) -> None:
        """Say in one line (a warning) that the :attr:`stacked` members give the network's
        prediction, not the stacked one of their run's table; nothing without such a member.
        :func:`chemgraph.jobs.predict.predict_table` calls it once the options are checked."""
        if self.stacked:
            one = len(self.stacked) == 1
            log.warning(
                "%s %s the unstacked network%s of a chemgraph transfer --stack-kernel-ridge "
                "run: predict gives the network's Δ-learning prediction (the run's plain row), "
                "not the stacked one (w x network + (1 - w) x a kernel ridge, runs.csv "
                "stack_weight), whose kernel ridge the checkpoint does not hold",
                ", ".join(str(f) for f in self.stacked), "is" if one else "are", "" if one else "s",
            )  # fmt: skip

    def columns(self) -> list[str]:
        """The prediction columns: ``<target>_pred`` (and ``<target>_std`` for an ensemble)."""
        suffixes = ("_pred", "_std") if len(self.modules) > 1 else ("_pred",)
        return [f"{target}{suffix}" for target in self.targets for suffix in suffixes]

    def predict(
        self,
        graphs: dgl.DGLGraph,
        batch_size: int,
        low_fidelity: np.ndarray | None = None,
        fingerprints: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """``{column: float32 [N]}`` for :meth:`columns` from the batched graph of ``N``
        molecules: each member's predictions, their mean and (ensembles) their sample standard
        deviation over the members (``ddof=1``, the usual estimate of the spread of
        independently trained models).

        Args:
            graphs: the molecules, batched.
            batch_size: the most molecules per forward pass.
            low_fidelity: ``float [N, S]``, the values of :attr:`low_fidelity_columns` (a
                label-augmented or transductive Δ-learning ensemble; a NaN gives NaN
                predictions for that molecule); None for the others.
            fingerprints: ``uint8 [N, 2048]`` Morgan bits, for a baseline that reads them
                (:attr:`reads_fingerprints`).

        Raises:
            ValueError: a label-augmented or transductive Δ-learning ensemble without
                ``low_fidelity``, or a baseline without the inputs it reads.
        """
        predictions = []
        for module in self.modules:
            if isinstance(module, BaselinePredictor):
                predictions.append(module.predict(fingerprints, low_fidelity))
                continue
            reads = low_fidelity if module.low_fidelity_inputs else None
            predicted = predict_graphs(module, *model_inputs(module, graphs), batch_size, reads)
            if module.delta_learning is not None:  # the residual, plus the correction
                predicted = module.delta_learning.add_to(
                    predicted, graphs, batch_size, low_fidelity
                )
            predictions.append(predicted)
        mean, spread = ensemble_statistics(np.stack(predictions))  # [K, N, T] -> [N, T]
        columns = {}
        for index, target in enumerate(self.targets):
            columns[f"{target}_pred"] = mean[:, index]
            if spread is not None:
                columns[f"{target}_std"] = spread[:, index]
        return columns

    def __reduce__(self) -> tuple[Any, ...]:
        files = tuple(str(f) for f in self.files)
        device = None if self.requested_device is None else str(self.requested_device)
        return _loaded_ensemble, (files, tuple(self.digests), device)


@functools.lru_cache(maxsize=1)
def _loaded_ensemble(files: tuple[str, ...], digests: tuple[str, ...], device: str | None):
    """The unpickled :class:`Ensemble` (loaded once per process and kept for the next task).

    Raises:
        ValueError: a checkpoint of this process's file system differs from the pickled one.
    """
    ensemble = Ensemble([Path(f) for f in files], device)
    for file, ours, theirs in zip(files, ensemble.digests, digests):
        if ours != theirs:
            raise ValueError(
                f"{file} is not the checkpoint the run started with (another sha256 here): "
                "the workers need the same checkpoint files (a shared file system)"
            )
    return ensemble
