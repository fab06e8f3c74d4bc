"""Predictions for a compound library from trained checkpoints (what ``chemgraph predict`` runs).

The input is a library file in any format ``chemgraph featurize`` reads (``.smi``, ``.sdf``,
``.csv``, ``.tsv``, ``.parquet``, each optionally gzipped; :mod:`chemgraph.data.readers`) or the
output folder of ``chemgraph featurize`` (:mod:`chemgraph.jobs.featurize`). A file is first
featurized by :func:`chemgraph.library.featurize.featurize_library` itself, with the checkpoint's
graph preset, into a folder of the run's work folder: its worker processes (``workers``), its
per-record time limit and crash isolation, its reasons for rejected records. Either way the
graph shards are then scored one shard at a time (on the CPU, in ``workers`` processes of one
torch thread each), so memory does not grow with the library.

3D models (radius graphs, e.g. ``esa-3d`` from ``chemgraph transfer --geometry``) read 3D
structures: an ``.sdf`` with 3D coordinates and every hydrogen, an ``.xyz`` or an ``.extxyz``
file, one structure per record (:func:`chemgraph.library.records.record_structure`), made into
radius graphs with the checkpoint's own featurizer (cutoff, Gaussian basis, elements, neighbour
cap, per-atom distance sums) and every atom as given, as ``chemgraph transfer`` made them. A
file of SMILES is refused: such a model was trained on the structures of a geometry file, and
conformers chemgraph would embed from SMILES are not those structures. A record without 3D
coordinates (a 2D SDF record), a 3D SDF record without all its hydrogens, a periodic
extended-XYZ frame (a cell with ``pbc``: not a molecule in vacuum), an element without a
column of the featurizer's element one-hot, or a record that cannot be read gets an error row
with the reason. Its ``smiles`` is that of the molecule of the structure (an SDF record's bonds;
an XYZ frame's bonds as RDKit determines them from the geometry and the comment line's
``charge=``, else 0), ``""`` where RDKit cannot determine them (the row is still predicted, its
applicability domain unknown; :attr:`PredictionSummary.without_smiles` counts them).

Output: one row per input record, in input order, bad records included::

    row                      int64    0-based record of the input (as the readers count)
    id                       string   the record's id (id column, .smi name, SDF title, or row)
    input                    string   the record as given: its SMILES as written (kept for
                                      every record, those with an error too), an SDF record's
                                      title line, an XYZ frame's comment line ("" for a blank
                                      record; null for a featurized record of a featurize
                                      folder written before chemgraph kept it)
    smiles                   string   canonical SMILES (RDKit); "" when not featurized (or, for
                                      a 3D structure, when RDKit cannot determine its bonds)
    <target>_pred            float32  target units (regression) or probability of class 1
    <target>_std             float32  ensembles only: sample standard deviation over the K
                                      members (ddof=1: sqrt(sum (p_k - mean)^2 / (K - 1)))
    max_similarity_to_train  float32  applicability domain (chemgraph.data.applicability): of
                                      the Morgan fingerprint of the molecule the smiles column
                                      names (a 3D structure's molecule without its hydrogens)
    in_domain                bool     max_similarity_to_train >= the threshold: the one
                                      calibrated on the training set and stored in the
                                      checkpoint, unless given (below)
    <target>_outside_training_range
                             bool     regression only: <target>_pred is below the smallest or
                                      above the largest training label of the target (of any
                                      member's training set, for an ensemble)
    error                    string   null (an empty CSV cell) when predicted, else why the
                                      record could not be featurized, or that it has no
                                      value in a low-fidelity column a transductive
                                      Δ-learning checkpoint reads (below)

Predictions, similarity, ``in_domain`` and the range flags are empty (NaN / null) for records
with an error; similarity and ``in_domain`` also for checkpoints written before chemgraph
stored the training fingerprints (a warning says so once the options are checked), for 3D
checkpoints trained without SMILES, and for structures without a SMILES; the range flags for
checkpoints written before chemgraph stored the training labels' range (a warning too).
``table.error.isna()`` selects the predicted rows of either format (``pandas.read_csv`` reads
the empty cells as NaN).

The threshold of ``in_domain`` is calibrated on each training set
(:meth:`chemgraph.data.applicability.TrainingFingerprints.calibrated_threshold`: the 5th
percentile of the training molecules' leave-one-out nearest-neighbour similarities) and stored
in the checkpoint; :attr:`PredictOptions.similarity_threshold` given overrides it, and a
checkpoint written before chemgraph calibrated it falls back to
:data:`~chemgraph.data.applicability.DEFAULT_SIMILARITY_THRESHOLD` (0.3), with a warning.

Δ-learning checkpoints of ``chemgraph transfer`` (``delta_learning``;
:class:`chemgraph.train.delta.DeltaLearning`) predict a residual that is added to a linear
correction of the molecule's low-fidelity values, which they hold: an inductive one predicts
those values with the pretrained model it holds; a transductive one reads them from the input
columns (SD properties of an SDF) named in the checkpoint, the run's low-fidelity columns, so
an input without them is refused (the message names them), and a record with an empty cell gets
an ``error`` instead of predictions. Ensembles of them (a run's seeds) give the mean and sample
standard deviation of the members' full predictions. A checkpoint of a ``stack_kernel_ridge``
run is the unstacked network (its run's plain row): predict gives its prediction, not the
stacked one of the run's table, whose kernel ridge is not stored, and says so in a warning.

Work folder and resuming. Until the output is complete, the run keeps its state in
``<output>.partial/``: ``run.json`` (the sha256 of the checkpoints and the input, the options),
``featurized/`` (a file input's featurization) and ``predictions/shard-NNNNN.parquet`` (one per
scored shard, written atomically). An interrupted run is continued with ``resume`` (complete
shards are kept) and refused otherwise; ``overwrite`` starts again. The output is written to a
temporary name and renamed, then the work folder is removed.

On a cluster (``dask_scheduler``): a file is featurized by ``featurize``'s dask path and each
shard is scored as one dask.distributed task that writes its part atomically
(:func:`chemgraph.train.inference.run_shard_tasks`); the parts and the output are those of a
local run, byte for byte on the same kind of device, and a shard whose worker dies is run
again by dask. The workers need the input, the checkpoints and the work folder at the same paths
(a shared file system).

This data path (arguments, work folder, featurizing a file, shards, parts) is the library's
:class:`chemgraph.library.scoring.LibraryRun` and :func:`chemgraph.library.scoring.shard_table`,
which ``chemgraph fingerprint`` (:mod:`chemgraph.jobs.fingerprint`) runs too; this module holds
what predict computes per shard and the output it writes.
"""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from chemgraph._files import atomic_path, write_parquet_atomically
from chemgraph.data.applicability import (
    DEFAULT_SIMILARITY_THRESHOLD,
    FINGERPRINT,
    canonical_smiles_fingerprints,
)
from chemgraph.errors import ConfigError
from chemgraph.library.output import shard_name
from chemgraph.library.records import BLANK_RECORD
from chemgraph.library.scoring import LibraryRun, at_least_one, shard_table
from chemgraph.train.ensemble import Ensemble, checkpoint_files

__all__ = [
    "OUTPUT_SUFFIXES",
    "PredictOptions",
    "PredictionSummary",
    "predict_table",
    "top_path",
]

log = logging.getLogger(__name__)

OUTPUT_SUFFIXES = (".csv", ".csv.gz", ".parquet")
"""File names the output may end with (case-insensitive); the suffix sets the format."""


@dataclass(frozen=True)
class PredictionSummary:
    """What :func:`predict_table` wrote.

    Attributes:
        records: input records (rows of the output).
        predicted: records with predictions.
        failed: records with an ``error`` (``records - predicted``).
        blank: failed records that are blank (whitespace only: a blank ``.smi`` line, a table
            row of empty fields), which ``row`` counts like any record.
        without_smiles: predicted records whose ``smiles`` is ``""``: 3D structures whose
            bonds RDKit could not determine (so their applicability domain is unknown).
        out_of_domain: predicted records with ``in_domain`` False; None when no prediction
            has an ``in_domain`` value (a checkpoint without training fingerprints).
        similarity_threshold: the threshold ``in_domain`` was judged with (calibrated, given or
            the fallback); None without training fingerprints.
        outside_training_range: per target, the predicted records with
            ``<target>_outside_training_range`` True; None when no prediction has such a value
            (classification, or a checkpoint without the training labels' range).
        output: the output file.
        top: the ``--top`` file, or None.
    """

    records: int
    predicted: int
    failed: int
    blank: int
    without_smiles: int
    out_of_domain: int | None
    similarity_threshold: float | None
    outside_training_range: dict[str, int] | None
    output: Path
    top: Path | None


def top_path(output: str | Path, count: int) -> Path:
    """``<output stem>.top<count>.<ext>``: ``hits.parquet`` -> ``hits.top100.parquet``."""
    output = Path(output)
    suffix = _output_suffix(output)
    return output.with_name(f"{output.name[: -len(suffix)]}.top{count}{suffix}")


def _output_suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in sorted(OUTPUT_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            return path.name[-len(suffix) :]
    raise ValueError(f"{path}: the output must end with {', '.join(OUTPUT_SUFFIXES)}")


@dataclass(frozen=True)
class PredictOptions:
    """What :func:`predict_table` predicts and writes; checks itself when built, so the Python
    API and ``chemgraph predict`` refuse the same values with the same message (which names
    the command-line option).

    Attributes:
        smiles_column, id_column: a table's SMILES and id columns (SDF: the id property);
            default: the first of :data:`chemgraph.data.readers.SMILES_COLUMN_NAMES`, and the
            ``.smi`` name / SDF title / row number. Only for a file.
        batch_size: the most molecules per forward pass (at least 1; fewer when they are
            large: :func:`chemgraph.train.inference.predict_graphs`).
        top: also write the ``top`` best-scoring molecules to :func:`top_path`, best first
            (ties: input order); None: no such file.
        top_target: the target ranked by (default: the first); the score is its ``_pred``
            column (the ensemble mean; a probability for classification).
        ascending: rank the lowest scores first.
        similarity_threshold: ``in_domain`` is ``max_similarity_to_train >=`` this, a
            Tanimoto similarity in [0, 1]; None: the threshold calibrated on the training set
            and stored in the checkpoint (the module docstring).

    Raises:
        ConfigError: a value out of range.
    """

    smiles_column: str | None = None
    id_column: str | None = None
    batch_size: int = 256
    top: int | None = None
    top_target: str | None = None
    ascending: bool = False
    similarity_threshold: float | None = None

    def __post_init__(self) -> None:
        at_least_one(top=self.top, batch_size=self.batch_size)
        if self.similarity_threshold is not None and not 0 <= self.similarity_threshold <= 1:
            raise ConfigError(
                "--similarity-threshold is a Tanimoto similarity in [0, 1], got "
                f"{self.similarity_threshold}"
            )


def predict_table(
    checkpoint: str | Path | Sequence[str | Path],
    input_path: str | Path,
    output_path: str | Path,
    options: PredictOptions | None = None,
    workers: int = 1,
    shard_size: int = 5_000,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    device: str | torch.device | None = None,
    dask_scheduler: str | None = None,
) -> PredictionSummary:
    """Predict every record of a library and write the table described in the module
    docstring (what ``chemgraph predict`` runs).

    Args:
        checkpoint: ``best.ckpt`` of ``chemgraph train``, a run or ensemble folder, or several
            checkpoints (an ensemble; see :func:`checkpoint_files`).
        input_path: a library file (``.smi``, ``.sdf``, ``.csv``, ``.tsv``, ``.parquet``,
            optionally ``.gz``) or a ``chemgraph featurize`` output folder whose graphs were
            made with the checkpoint's preset and molecule preparation (then used as they are);
            for a 3D checkpoint, a file of 3D structures (``.sdf``, ``.xyz``, ``.extxyz``,
            optionally ``.gz``; the module docstring).
        output_path: ``.csv``, ``.csv.gz`` or ``.parquet`` file to write.
        options: what to predict and write (:class:`PredictOptions`; default its defaults).
        workers: worker processes: featurizing a file, and scoring shards on the CPU (each
            scoring worker runs torch on one thread and scores whole shards).
        shard_size: records per shard when featurizing a file.
        resume: continue an interrupted run with the same checkpoints, input and options.
        overwrite: replace an existing output and discard an interrupted run.
        progress: show progress, of featurization and then of scoring (both count records):
            bars on stderr when it is a terminal, else a plain line every 30 s
            (:mod:`chemgraph.library.progress`).
        device: where the models run; None: CUDA when available, else the CPU (with
            ``dask_scheduler``: decided by each dask worker).
        dask_scheduler: address of a dask.distributed scheduler: a file input is featurized by
            :func:`~chemgraph.library.featurize.featurize_library`'s dask path, then each shard is
            scored as one dask task on one torch thread (``workers`` is then not used). The
            output, its work folder and the checkpoints must be on a file system the workers
            share; the output is byte-identical to a local run's on the same kind of device.

    Returns:
        The counts and the files written.

    Raises:
        FileNotFoundError: no such checkpoint or input.
        ConfigError: ``workers`` or ``shard_size`` below 1, ``resume`` with ``overwrite``.
        MissingDependencyError: ``dask_scheduler`` without dask.distributed installed.
        ValueError: an output or top file that exists (without ``overwrite``) or an
            interrupted run in the way (without ``resume``), a run to resume with other
            settings, a folder featurized otherwise than the checkpoint needs (its preset,
            preparation, conformers or no graphs; the message names both and what to do), a
            file of SMILES for a 3D checkpoint or an XYZ file for a 2D one, or
            see :func:`chemgraph.train.checkpoint.load_checkpoint` and
            :func:`chemgraph.library.featurize.featurize_library`.
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM (main thread only), while
            featurizing a file or scoring; complete shards, featurized and scored, are kept
            for ``resume``, and the message says where and how to continue.
    """
    options = PredictOptions() if options is None else options
    output = Path(output_path)
    suffix = _output_suffix(output)
    run = LibraryRun(
        input_path, output, options.smiles_column, options.id_column, workers, shard_size,
        resume=resume, overwrite=overwrite, progress=progress, dask_scheduler=dask_scheduler,
        parts="predictions",
    )  # fmt: skip
    models = Ensemble(checkpoint_files(checkpoint), device)
    top_target = models.targets[0] if options.top_target is None else options.top_target
    if top_target not in models.targets:
        raise ValueError(f"top target {top_target!r} is not one of the targets {models.targets}")
    top = options.top
    threshold, fallback = _similarity_threshold(models, options.similarity_threshold)
    with run.keeping_work():  # while featurizing or scoring: the work folder is kept
        run.start(
            models,
            {"similarity_threshold": threshold},
            domain=True,
            refused=[] if top is None else [(top_path(output, top), f"the --top {top} file")],
            label_columns=models.low_fidelity_columns,
            label_use=_low_fidelity_use(models),
        )
        if fallback:
            log.warning(fallback)
        models.warn_missing_label_range()
        models.note_stacked_members()
        schema = _schema(models)
        task = _ShardScores(run, models, schema, options.batch_size, threshold)
        run.score(task, "predict")
    summary = _write_output(
        run.tables(), schema, output, suffix, top, f"{top_target}_pred", options.ascending,
        threshold if models.fingerprints is not None else None, _range_columns(models),
    )  # fmt: skip
    run.finish()
    return summary


def _similarity_threshold(models: Ensemble, given: float | None) -> tuple[float, str]:
    """The threshold of ``in_domain``: ``given``, else the one calibrated on the training set
    (:attr:`~chemgraph.train.ensemble.Ensemble.fingerprints`), else
    :data:`DEFAULT_SIMILARITY_THRESHOLD`; and the warning of that fallback ("" for none)."""
    if given is not None:
        return given, ""
    if models.fingerprints is None:  # no domain at all (warned about by LibraryRun.start)
        return DEFAULT_SIMILARITY_THRESHOLD, ""
    if models.fingerprints.similarity_threshold is None:
        return DEFAULT_SIMILARITY_THRESHOLD, (
            f"no calibrated similarity threshold in {', '.join(models.missing_threshold)} "
            "(written before chemgraph calibrated it on the training set): in_domain is "
            f"max_similarity_to_train >= {DEFAULT_SIMILARITY_THRESHOLD}, the former default "
            "(--similarity-threshold sets another)"
        )
    return models.fingerprints.similarity_threshold, ""


# -- scoring a shard -----------------------------------------------------------------------


def _range_columns(models: Ensemble) -> list[str]:
    """``<target>_outside_training_range`` of each target of a regression; none for
    classification (a probability lies in the labels' range [0, 1])."""
    if models.task != "regression":
        return []
    return [f"{target}_outside_training_range" for target in models.targets]


def _schema(models: Ensemble) -> pa.Schema:
    fields = [("row", pa.int64()), ("id", pa.string()), ("input", pa.string())]
    fields += [("smiles", pa.string())]
    fields += [(name, pa.float32()) for name in models.columns()]
    fields += [("max_similarity_to_train", pa.float32()), ("in_domain", pa.bool_())]
    fields += [(name, pa.bool_()) for name in _range_columns(models)]
    return pa.schema(fields + [("error", pa.string())])


class _ShardScores:
    """``task(shard)`` scores one shard of a :class:`~chemgraph.library.scoring.LibraryRun`,
    writes its part of the output (atomically) and returns its number of records; picklable for
    worker processes and dask (the ensemble pickles as its checkpoint files,
    :class:`~chemgraph.train.ensemble.Ensemble`)."""

    def __init__(
        self,
        run: LibraryRun,
        models: Ensemble,
        schema: pa.Schema,
        batch_size: int,
        threshold: float,
    ) -> None:
        self.folder, self.part = run.folder, run.part
        self.models, self.schema, self.batch_size, self.threshold = (
            models, schema, batch_size, threshold
        )  # fmt: skip

    def __call__(self, shard: int) -> int:
        table = _score_shard(self.folder, shard, self.models, self.batch_size, self.threshold)
        table = pa.Table.from_pandas(table, self.schema, preserve_index=False)
        write_parquet_atomically(table, self.part(shard))
        return len(table)


def _score_shard(
    folder: Path, shard: int, models: Ensemble, batch_size: int, threshold: float
) -> pd.DataFrame:
    """The output rows of one shard of a featurize folder, in input order."""

    def scores(graphs: Any, features: pa.Table) -> dict[str, Any]:
        similarity = np.full(len(features), np.nan, dtype=np.float32)
        path = folder / "features" / f"{shard_name(shard)}.parquet"
        smiles = features["smiles"].to_pylist()
        bits = None
        if models.reads_fingerprints:  # a recommended transfer baseline: the shard's bits
            bits = np.concatenate(
                [np.zeros((0, FINGERPRINT.size), np.uint8), *_fingerprint_batches(path, smiles)]
            )
        if models.fingerprints is not None:
            batches = _fingerprint_batches(path, smiles)
            similarity = np.concatenate(
                [similarity[:0], *map(models.fingerprints.max_similarity, batches)]
            )
            # a 3D structure whose bonds RDKit could not determine has no molecule to compare
            similarity[features["smiles"].to_numpy(zero_copy_only=False) == ""] = np.nan
        low, errors = None, {}
        if models.low_fidelity_columns:  # a label-augmented or transductive Δ model's inputs
            low = np.stack([features[c].to_numpy() for c in models.low_fidelity_columns], axis=1)
            verb = "reads" if getattr(models.modules[0], "low_fidelity_inputs", []) else "corrects"
            missing, errors["error"] = _low_fidelity_errors(low, models.low_fidelity_columns, verb)
            similarity[missing] = np.nan  # (their predictions are NaN: the correction of NaN)
        in_domain = pd.array(similarity >= threshold, dtype="boolean")
        in_domain[np.isnan(similarity)] = pd.NA
        predictions = models.predict(graphs, batch_size, low, bits)
        return {
            **predictions,
            "max_similarity_to_train": similarity,
            "in_domain": in_domain,
            **_outside_training_range(models, predictions),
            **errors,
        }

    return shard_table(folder, shard, scores, models.low_fidelity_columns)


def _outside_training_range(
    models: Ensemble, predictions: dict[str, np.ndarray]
) -> dict[str, pd.arrays.BooleanArray]:
    """The :func:`_range_columns` of a shard's ``predictions`` (``{<target>_pred: [N]}``):
    null for a NaN prediction, and all null without the training labels' range."""
    names = _range_columns(models)
    if not names:
        return {}
    predicted = np.stack([predictions[f"{t}_pred"] for t in models.targets], axis=1)
    if models.label_range is None:
        return {name: pd.array([pd.NA] * len(predicted), dtype="boolean") for name in names}
    outside = models.label_range.outside(predicted)
    columns = {}
    for index, name in enumerate(names):
        flags = pd.array(outside[:, index], dtype="boolean")
        flags[np.isnan(predicted[:, index])] = pd.NA
        columns[name] = flags
    return columns


def _low_fidelity_use(models: Ensemble) -> str:
    """Why ``models`` read input columns (a label-augmented model, a transductive Δ-learning
    model or baseline), for the error of an input without them; "" when they read none."""
    columns = models.low_fidelity_columns
    if not columns:
        return ""
    first = models.modules[0]
    baseline = first.hparams.get("baseline")
    if baseline is None and first.low_fidelity_inputs:
        what = "label-augmented model"
        how = "reads each molecule's own low-fidelity value(s)"
    else:
        what = "Δ-learning model" if baseline is None else f"baseline ({baseline})"
        how = "prediction is a linear correction of each molecule's own low-fidelity value(s)"
    return (
        f"{models.files[0]} is a transductive {what} of chemgraph transfer: its {how} "
        f"{columns}, read from the input; add the column(s) (a record with an empty cell gets "
        "an error), or score with the run's inductive checkpoints, which predict those values "
        "themselves"
    )


def _low_fidelity_errors(
    low: np.ndarray, columns: list[str], verb: str = "corrects"
) -> tuple[np.ndarray, list[str | None]]:
    """The records (``bool [N]``) without every low-fidelity value of ``low`` ``float [N, S]``
    (the ``columns``) and the ``error`` of each record (None when it has them); ``verb``:
    what the model does with the value (``"corrects"``: Δ-learning and the baselines;
    ``"reads"``: label augmentation)."""
    missing = np.isnan(low)
    errors = []
    for row in missing:
        absent = ", ".join(c for c, gone in zip(columns, row) if gone)
        errors.append(
            f"no low-fidelity value in {absent}: this transductive model {verb} the "
            "molecule's own value"
            if absent
            else None
        )
    return missing.any(axis=1), errors


SIMILARITY_BATCH = 1_000
"""Records whose fingerprints are read and compared with the training set's at a time (a
shard's applicability domain): decoding a shard's whole fingerprint column at once took about
27 KiB per record (134 MiB for a shard of 5,000), held by the allocators of the worker that
scored it; a batch bounds it whatever ``--shard-size`` (``benchmarks/predict_memory.py``)."""


def _fingerprint_batches(features_path: Path, smiles: list[str]) -> Iterator[np.ndarray]:
    """``uint8 [n, 2048]``, :data:`SIMILARITY_BATCH` records at a time, in order: the
    :data:`FINGERPRINT` column of a shard's feature table (``chemgraph featurize --fingerprint
    morgan:radius=2,size=2048``; featurizing a file asks for it), else computed from the
    records' canonical ``smiles`` (:func:`canonical_smiles_fingerprints`)."""
    if FINGERPRINT.name not in pq.read_schema(features_path).names:
        for start in range(0, len(smiles), SIMILARITY_BATCH):
            yield canonical_smiles_fingerprints(smiles[start : start + SIMILARITY_BATCH])
        return
    with pq.ParquetFile(features_path) as table:
        for batch in table.iter_batches(SIMILARITY_BATCH, columns=[FINGERPRINT.name]):
            values = batch.column(0).flatten().to_numpy()
            yield values.reshape(len(batch), FINGERPRINT.size)


# -- the output ----------------------------------------------------------------------------


def _write_output(
    tables: Iterator[pa.Table],
    schema: pa.Schema,
    output: Path,
    suffix: str,
    top: int | None,
    score: str,
    ascending: bool,
    threshold: float | None,
    range_columns: list[str],
) -> PredictionSummary:
    """Concatenate the shards' parts (``tables``, in shard order) into ``output`` (and the
    ``top`` file), atomically; ``threshold`` (that of ``in_domain``) and ``range_columns``
    (:func:`_range_columns`) for the summary."""
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = atomic_path(output)
    writer = _TableWriter(temporary, suffix, schema)
    best = schema.empty_table().to_pandas()
    records = predicted = blank = without_smiles = out_of_domain = judged = 0
    outside = dict.fromkeys(range_columns, 0)
    ranged = 0
    with closing(writer):
        for table in tables:
            writer.write(table)
            frame = table.to_pandas()
            records += len(frame)
            predicted += int(frame["error"].isna().sum())
            blank += int(frame["error"].str.startswith(BLANK_RECORD, na=False).sum())
            without_smiles += int((frame["error"].isna() & (frame["smiles"] == "")).sum())
            out_of_domain += int((frame["in_domain"] == False).sum())  # noqa: E712 (None too)
            judged += int(frame["in_domain"].notna().sum())
            for name in range_columns:
                outside[name] += int((frame[name] == True).sum())  # noqa: E712 (None too)
                ranged += int(frame[name].notna().sum())
            if top is not None:
                candidates = pd.concat([best, frame[frame[score].notna()]])
                best = candidates.sort_values(score, ascending=ascending, kind="stable")[:top]
    os.replace(temporary, output)
    written = None
    if top is not None:
        written = top_path(output, top)
        temporary = atomic_path(written)
        with closing(_TableWriter(temporary, suffix, schema)) as top_writer:
            top_writer.write(pa.Table.from_pandas(best, schema, preserve_index=False))
        os.replace(temporary, written)
    by_target = {n.removesuffix("_outside_training_range"): c for n, c in outside.items()}
    return PredictionSummary(
        records, predicted, records - predicted, blank, without_smiles,
        out_of_domain if judged else None, threshold, by_target if ranged else None,
        output, written,
    )  # fmt: skip


class _TableWriter:
    """Appends tables of one schema to a CSV (``.csv``, ``.csv.gz``) or parquet file."""

    def __init__(self, path: Path, suffix: str, schema: pa.Schema) -> None:
        self.parquet = suffix.lower() == ".parquet"
        if self.parquet:
            self.handle = pq.ParquetWriter(path, schema)
        else:
            opener = gzip.open if suffix.lower().endswith(".gz") else open
            self.handle = opener(path, "wt", encoding="utf-8", newline="")
            self.header = True

    def write(self, table: pa.Table) -> None:
        if self.parquet:
            self.handle.write_table(table)
        else:
            table.to_pandas().to_csv(self.handle, header=self.header, index=False)
            self.header = False

    def close(self) -> None:
        self.handle.close()
