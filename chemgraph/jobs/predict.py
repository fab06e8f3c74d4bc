"""Predictions for a compound library from trained checkpoints (what ``chemgraph predict`` runs).

The input is a library file in any format ``chemgraph featurize`` reads (``.smi``, ``.sdf``,
``.csv``, ``.tsv``, ``.parquet``, each optionally gzipped; :mod:`chemgraph.data.readers`) or the
output folder of ``chemgraph featurize`` (:mod:`chemgraph.jobs.featurize`). A file is first
featurized by :func:`chemgraph.jobs.featurize.featurize_library` itself, with the checkpoint's
graph preset, into a folder of the run's work folder: its worker processes (``workers``), its
per-record time limit and crash isolation, its reasons for rejected records. Either way the
graph shards are then scored one shard at a time (on the CPU, in ``workers`` processes of one
torch thread each), so memory does not grow with the library.

Output: one row per input record, in input order, bad records included::

    row                      int64    0-based record of the input (as the readers count)
    id                       string   the record's id (id column, .smi name, SDF title, or row)
    smiles                   string   canonical SMILES (RDKit); "" when not featurized
    <target>_pred            float32  target units (regression) or probability of class 1
    <target>_std             float32  ensembles only: sample standard deviation over the K
                                      members (ddof=1: sqrt(sum (p_k - mean)^2 / (K - 1)))
    max_similarity_to_train  float32  applicability domain (chemgraph.data.applicability)
    in_domain                bool     max_similarity_to_train >= the threshold
    error                    string   null (an empty CSV cell) when predicted, else why the
                                      record could not be featurized

Predictions, similarity and ``in_domain`` are empty (NaN / null) for records with an error, and
the last two for checkpoints written before chemgraph stored the training fingerprints (a
warning says so once the options are checked). ``table.error.isna()`` selects the predicted
rows of either format (``pandas.read_csv`` reads the empty cells as NaN).

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

:class:`LibraryRun` and :func:`shard_table` are this data path (arguments, work folder,
featurizing a file, shards, parts) as ``chemgraph fingerprint``
(:mod:`chemgraph.jobs.fingerprint`) uses it too.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tqdm.auto import tqdm

from chemgraph._files import atomic_path, file_digest, write_parquet_atomically
from chemgraph._interrupts import interrupts_raise
from chemgraph._output import resumable_folder
from chemgraph.chem import MoleculePreparation
from chemgraph.data.applicability import (
    DEFAULT_SIMILARITY_THRESHOLD,
    FINGERPRINT,
    canonical_smiles_fingerprints,
)
from chemgraph.data.readers import iter_record_chunks
from chemgraph.errors import ConfigError
from chemgraph.featurize import FeaturizerPreset
from chemgraph.graphs.shards import load_shard_batch
from chemgraph.jobs.featurize import (
    BLANK_RECORD,
    FeaturizeOptions,
    featurize_library,
    read_manifest,
)
from chemgraph.train.ensemble import Ensemble, checkpoint_files
from chemgraph.train.inference import run_shard_tasks

__all__ = [
    "OUTPUT_SUFFIXES",
    "LibraryRun",
    "PredictOptions",
    "PredictionSummary",
    "predict_table",
    "shard_table",
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
        out_of_domain: predicted records with ``in_domain`` False; None when no prediction
            has an ``in_domain`` value (a checkpoint without training fingerprints).
        output: the output file.
        top: the ``--top`` file, or None.
    """

    records: int
    predicted: int
    failed: int
    blank: int
    out_of_domain: int | None
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
        batch_size: molecules per forward pass (at least 1).
        top: also write the ``top`` best-scoring molecules to :func:`top_path`, best first
            (ties: input order); None: no such file.
        top_target: the target ranked by (default: the first); the score is its ``_pred``
            column (the ensemble mean; a probability for classification).
        ascending: rank the lowest scores first.
        similarity_threshold: ``in_domain`` is ``max_similarity_to_train >=`` this, a
            Tanimoto similarity in [0, 1].

    Raises:
        ConfigError: a value out of range.
    """

    smiles_column: str | None = None
    id_column: str | None = None
    batch_size: int = 256
    top: int | None = None
    top_target: str | None = None
    ascending: bool = False
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD

    def __post_init__(self) -> None:
        _at_least_one(top=self.top, batch_size=self.batch_size)
        if not 0 <= self.similarity_threshold <= 1:
            raise ConfigError(
                "--similarity-threshold is a Tanimoto similarity in [0, 1], got "
                f"{self.similarity_threshold}"
            )


def _at_least_one(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


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
            made with the checkpoint's preset and molecule preparation (then used as they are).
        output_path: ``.csv``, ``.csv.gz`` or ``.parquet`` file to write.
        options: what to predict and write (:class:`PredictOptions`; default its defaults).
        workers: worker processes: featurizing a file, and scoring shards on the CPU (each
            scoring worker runs torch on one thread and scores whole shards).
        shard_size: records per shard when featurizing a file.
        resume: continue an interrupted run with the same checkpoints, input and options.
        overwrite: replace an existing output and discard an interrupted run.
        progress: progress bars on stderr when it is a terminal (featurization, then scoring;
            both count records).
        device: where the models run; None: CUDA when available, else the CPU (with
            ``dask_scheduler``: decided by each dask worker).
        dask_scheduler: address of a dask.distributed scheduler: a file input is featurized by
            :func:`~chemgraph.jobs.featurize.featurize_library`'s dask path, then each shard is
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
            preparation, conformers or no graphs; the message names both and what to do), or
            see :func:`chemgraph.train.checkpoint.load_checkpoint` and
            :func:`chemgraph.jobs.featurize.featurize_library`.
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM (main thread only; while
            featurizing a file, its :class:`~chemgraph.jobs.featurize.FeaturizeInterrupted`);
            complete shards, featurized and scored, are kept for ``resume``.
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
    run.start(
        models,
        {"similarity_threshold": options.similarity_threshold},
        domain=True,
        refused=[] if top is None else [(top_path(output, top), f"the --top {top} file")],
    )
    schema = _schema(models)
    task = _ShardScores(run, models, schema, options.batch_size, options.similarity_threshold)
    run.score(task, "predict")
    summary = _write_output(
        run.tables(), schema, output, suffix, top, f"{top_target}_pred", options.ascending
    )
    run.finish()
    return summary


# -- a library run: the data path of predict and fingerprint -----------------------------------


class LibraryRun:
    """The shards of one library scored into one output: the arguments checked, the work folder
    (``<output>.partial/``: ``run.json``, ``featurized/`` for a file input, one part per scored
    shard), the featurization of a file (:func:`~chemgraph.jobs.featurize.featurize_library`
    with the checkpoint's preset and molecule preparation, locally or on dask), the shards run
    through a task (:func:`~chemgraph.train.inference.run_shard_tasks`: this process, worker
    processes or dask) and the parts read back in order. What :func:`predict_table` and
    :func:`chemgraph.jobs.fingerprint.fingerprint_table` share; in order: construct (checks the
    arguments, writes nothing), :meth:`start`, :meth:`score`, :meth:`tables`, :meth:`finish`.

    Args:
        input_path: a library file or a ``chemgraph featurize`` output folder.
        output: the file the job writes.
        smiles_column, id_column: a table's SMILES and id columns (a file input).
        workers, shard_size, resume, overwrite, progress, dask_scheduler: as in
            :func:`predict_table`.
        parts: the work folder's sub-folder of the parts (``"predictions"``).

    Raises:
        ConfigError: ``workers`` or ``shard_size`` below 1, ``resume`` with ``overwrite``.
        FileNotFoundError: no such input.
        ValueError: the output is the input.
    """

    def __init__(
        self,
        input_path: str | Path,
        output: Path,
        smiles_column: str | None,
        id_column: str | None,
        workers: int,
        shard_size: int,
        *,
        resume: bool,
        overwrite: bool,
        progress: bool,
        dask_scheduler: str | None,
        parts: str,
    ) -> None:
        _at_least_one(workers=workers, shard_size=shard_size)
        if resume and overwrite:
            raise ConfigError("--resume and --overwrite exclude each other")
        self.source, self.output = Path(input_path), output
        if not self.source.exists():
            raise FileNotFoundError(f"input {self.source} does not exist")
        if output.resolve() == self.source.resolve():
            raise ValueError(f"the output {output} is the input; choose another --output")
        self.smiles_column, self.id_column = smiles_column, id_column
        self.workers, self.shard_size = workers, shard_size
        self.resume, self.overwrite, self.progress = resume, overwrite, progress
        self.dask_scheduler = dask_scheduler
        self.work = _work_folder(output)
        self.parts = self.work / parts
        self.folder = self.source  # the featurize folder scored (a file's: after start)
        self.shards = 0
        self.models: Ensemble | None = None

    def start(
        self,
        models: Ensemble,
        identity: dict[str, Any],
        domain: bool = False,
        refused: Sequence[tuple[Path, str]] = (),
    ) -> None:
        """Check the input against ``models``, open the work folder (new, or the run to resume)
        and featurize a file input.

        Args:
            models: the checkpoints that score the shards.
            identity: what else must match to resume the run (the job's options).
            domain: the job computes the applicability domain: featurizing a file also
                computes the molecules' Morgan fingerprints it compares, and a checkpoint
                without training fingerprints is warned about.
            refused: other files the job writes, ``(path, what it is)``: refused when they
                exist, unless ``overwrite``.

        Raises:
            ValueError: see :func:`predict_table`.
        """
        self.models = models
        if self.source.is_dir():
            _check_folder(self.source, models, models.files[0])
        elif (
            next(iter_record_chunks(self.source, 1, self.smiles_column, self.id_column), None)
            is None
        ):
            raise ValueError(f"{self.source} holds no records")  # (the reader checks the format)
        identity = {
            "checkpoints_sha256": models.digests,
            "input_sha256": file_digest(
                self.source / "manifest.json" if self.source.is_dir() else self.source
            ),
            "smiles_column": self.smiles_column,
            "id_column": self.id_column,
            "shard_size": self.shard_size,
            **identity,
        }
        _prepare_work(self.output, identity, self.resume, self.overwrite, refused)
        if domain:
            models.warn_missing_fingerprints()
        if not self.source.is_dir():
            self.folder = self.work / "featurized"
            options = FeaturizeOptions(
                graphs=models.preset.name,
                fingerprints=(FINGERPRINT.spec,)
                if domain and models.fingerprints is not None
                else (),
                standardize=models.preparation.standardize,
                fragments=models.preparation.fragments,
                smiles_column=self.smiles_column,
                id_column=self.id_column,
            )
            if _status(self.folder) != "complete":
                featurize_library(
                    self.source, self.folder, options, self.workers, self.shard_size,
                    resume=self.resume, progress=self.progress,
                    dask_scheduler=self.dask_scheduler,
                )  # fmt: skip
        manifest = json.loads((self.folder / "manifest.json").read_text())
        self.counts: dict[str, Any] = manifest["counts"]
        self.shards = self.counts["shards"]
        self.parts.mkdir(exist_ok=True)

    def part(self, shard: int) -> Path:
        """Where a task writes the part of ``shard`` (atomically)."""
        return self.parts / f"shard-{shard:05d}.parquet"

    def score(self, task: Callable[[int], int], name: str) -> None:
        """Run ``task(shard)`` (it writes :meth:`part` and returns the shard's records) for each
        shard without a part, with a progress bar of records named ``name``.

        Raises:
            chemgraph._interrupts.Interrupted: SIGINT or SIGTERM (main thread only); the parts
                written are kept.
        """
        counts = self.counts
        show = self.progress and sys.stderr.isatty()
        bar = tqdm(total=counts["read"] + counts["blank"], unit="mol", desc=name, disable=not show)
        todo = []
        for shard in range(self.shards):
            if self.part(shard).exists():
                bar.update(pq.ParquetFile(self.part(shard)).metadata.num_rows)
            else:
                todo.append(shard)
        if self.models is None:
            raise RuntimeError("LibraryRun.score before LibraryRun.start")
        workers = self.workers if self.models.device.type == "cpu" else 1
        tasks = run_shard_tasks(task, todo, workers, self.dask_scheduler)
        with closing(bar), interrupts_raise(), closing(tasks):
            for records in tasks:
                bar.update(records)

    def tables(self) -> Iterator[pa.Table]:
        """The parts, one table per shard in shard order (so rows in input order)."""
        for shard in range(self.shards):
            yield pq.read_table(self.part(shard))

    def finish(self) -> None:
        """Remove the work folder (the job has written its output)."""
        shutil.rmtree(self.work)


# -- the work folder -----------------------------------------------------------------------


def _work_folder(output: Path) -> Path:
    return output.with_name(f"{output.name}.partial")


def _prepare_work(
    output: Path,
    identity: dict[str, Any],
    resume: bool,
    overwrite: bool,
    refused: Sequence[tuple[Path, str]],
) -> None:
    """The run's work folder, created, or the interrupted run's (``resume``).

    Raises:
        ValueError: the output or one of the ``refused`` files exists (without ``overwrite``);
            an interrupted run in the way (without ``resume`` or ``overwrite``); a run to
            resume that differs.
    """
    work = _work_folder(output)
    if not overwrite:
        if output.exists() and not (resume and (work / "run.json").exists()):
            raise ValueError(
                f"{output} exists; choose a new --output, or pass --overwrite to write over it"
                + (" (it is complete: there is nothing to resume)" if resume else "")
            )
        for path, what in refused:
            if path.exists():
                raise ValueError(
                    f"{path} exists ({what} of {output}); choose a new --output, "
                    "or pass --overwrite to write over it"
                )
    resumed = resumable_folder(
        work, "run.json", identity, resume=resume, option="--output",
        restart_option="--overwrite", restart=overwrite,
    )  # fmt: skip
    if not resumed:
        (work / "run.json").write_text(json.dumps(identity, indent=2) + "\n")


def _status(folder: Path) -> str | None:
    manifest = folder / "manifest.json"
    return json.loads(manifest.read_text()).get("status") if manifest.exists() else None


def _check_folder(folder: Path, models: Ensemble, checkpoint: Path) -> None:
    """A ``chemgraph featurize`` folder whose graphs the checkpoint can score as they are.

    Raises:
        ValueError: no manifest, an incomplete run, no graphs, another graph preset, or graphs
            with conformers (explicit hydrogens and positions, which training never had).
    """
    manifest = read_manifest(folder)
    options = manifest["options"]
    redo = (
        f"featurize the library again with `chemgraph featurize LIBRARY --graphs "
        f"{models.preset.name} --output NEW_FOLDER`, or pass the library file as --input"
    )
    if options["graphs"] is None:
        raise ValueError(f"{folder} holds no graphs (featurized with --graphs none); {redo}")
    preset = FeaturizerPreset.from_dict(manifest["graph_featurizer"])
    if preset.name != models.preset.name:
        raise ValueError(
            f"{folder} holds graphs of the {preset.name!r} preset but {checkpoint} was trained "
            f"on the {models.preset.name!r} preset; {redo}"
        )
    if options["conformers"]:
        raise ValueError(
            f"{folder} holds 3D graphs with explicit hydrogens (featurized with --conformers "
            f"{options['conformers']}) but {checkpoint} was trained on 2D graphs; {redo}"
        )
    prepared = MoleculePreparation(
        standardize=options["standardize"], fragments=options.get("fragments", "keep")
    )
    if prepared != models.preparation:
        wanted = models.preparation
        raise ValueError(
            f"{folder} holds molecules prepared with --standardize {prepared.standardize} "
            f"--fragments {prepared.fragments} but {checkpoint} was trained on molecules "
            f"prepared with standardize {wanted.standardize}, fragments {wanted.fragments}; "
            f"featurize the library again with `chemgraph featurize LIBRARY --graphs "
            f"{models.preset.name} --standardize {wanted.standardize} --fragments "
            f"{wanted.fragments} --output NEW_FOLDER`, or pass the library file as --input"
        )


# -- scoring a shard -----------------------------------------------------------------------


def _schema(models: Ensemble) -> pa.Schema:
    fields = [("row", pa.int64()), ("id", pa.string()), ("smiles", pa.string())]
    fields += [(name, pa.float32()) for name in models.columns()]
    fields += [("max_similarity_to_train", pa.float32()), ("in_domain", pa.bool_())]
    return pa.schema(fields + [("error", pa.string())])


class _ShardScores:
    """``task(shard)`` scores one shard of a :class:`LibraryRun`, writes its part of the output
    (atomically) and returns its number of records; picklable for worker processes and dask
    (the ensemble pickles as its checkpoint files, :class:`~chemgraph.train.ensemble.Ensemble`).
    """

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
        if models.fingerprints is not None:
            similarity = models.fingerprints.max_similarity(_fingerprint_bits(features))
        in_domain = pd.array(similarity >= threshold, dtype="boolean")
        in_domain[np.isnan(similarity)] = pd.NA
        return {
            **models.predict(graphs, batch_size),
            "max_similarity_to_train": similarity,
            "in_domain": in_domain,
        }

    wanted = [FINGERPRINT.name] if models.fingerprints is not None else []
    return shard_table(folder, shard, scores, wanted)


def shard_table(
    folder: Path,
    shard: int,
    compute: Callable[[Any, pa.Table], dict[str, Any]],
    feature_columns: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per record of a shard of a ``chemgraph featurize`` folder, in input order:
    ``row``, ``id``, ``smiles``, the columns ``compute`` gives for the featurized records (empty
    for the others: NaN, null) and ``error`` (null, or why the record was not featurized, from
    the shard's rejected records; ``smiles`` is then ``""``). The rows of every job that scores
    shards (:func:`predict_table`, :func:`chemgraph.jobs.fingerprint.fingerprint_table`).

    Args:
        folder: the featurize folder.
        shard: the shard's number.
        compute: ``compute(graphs, features)`` gets the shard's batched DGLGraph
            (:func:`chemgraph.graphs.load_shard_batch`) and its feature table (``row``, ``id``,
            ``smiles`` and those of ``feature_columns`` it has), and returns ``{column: values}``
            with one value per featurized record, in their order.
        feature_columns: further feature-table columns to read when the table has them.

    Raises:
        ValueError: the shard's graphs and features list different rows.
    """
    name = f"shard-{shard:05d}"
    graphs, rows = load_shard_batch(folder / "graphs" / f"{name}.bin")
    path = folder / "features" / f"{name}.parquet"
    present = pq.read_schema(path).names
    columns = ["row", "id", "smiles", *(c for c in feature_columns if c in present)]
    features = pq.read_table(path, columns=columns)
    if features["row"].to_pylist() != rows.tolist():
        raise ValueError(f"{folder}: graphs and features of {name} differ; featurize it again")
    featurized = pd.DataFrame(
        {
            "row": rows.numpy(),
            "id": features["id"].to_pylist(),
            "smiles": features["smiles"].to_pylist(),
            **compute(graphs, features),
        }
    )
    featurized["error"] = None
    with open(folder / "parts" / f"{name}.csv", encoding="utf-8", newline="") as handle:
        rejected = [
            (int(row), identifier, reason) for row, identifier, _, reason in csv.reader(handle)
        ]
    failed = pd.DataFrame(rejected, columns=["row", "id", "error"]).assign(smiles="")
    table = pd.concat([featurized, failed], ignore_index=True) if len(failed) else featurized
    return table.sort_values("row", kind="stable", ignore_index=True)


def _fingerprint_bits(features: pa.Table) -> np.ndarray:
    """``uint8 [N, 2048]``: the :data:`FINGERPRINT` column of a feature table (``chemgraph
    featurize --fingerprint morgan:radius=2,size=2048``; featurizing a file asks for it), else
    computed from its canonical SMILES (:func:`canonical_smiles_fingerprints`)."""
    if FINGERPRINT.name in features.column_names:
        values = features[FINGERPRINT.name].combine_chunks().flatten()
        return values.to_numpy().reshape(len(features), FINGERPRINT.size)
    return canonical_smiles_fingerprints(features["smiles"].to_pylist())


# -- the output ----------------------------------------------------------------------------


def _write_output(
    tables: Iterator[pa.Table],
    schema: pa.Schema,
    output: Path,
    suffix: str,
    top: int | None,
    score: str,
    ascending: bool,
) -> PredictionSummary:
    """Concatenate the shards' parts (``tables``, in shard order) into ``output`` (and the
    ``top`` file), atomically."""
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = atomic_path(output)
    writer = _TableWriter(temporary, suffix, schema)
    best = schema.empty_table().to_pandas()
    records = predicted = blank = out_of_domain = judged = 0
    with closing(writer):
        for table in tables:
            writer.write(table)
            frame = table.to_pandas()
            records += len(frame)
            predicted += int(frame["error"].isna().sum())
            blank += int(frame["error"].str.startswith(BLANK_RECORD, na=False).sum())
            out_of_domain += int((frame["in_domain"] == False).sum())  # noqa: E712 (None too)
            judged += int(frame["in_domain"].notna().sum())
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
    return PredictionSummary(
        records, predicted, records - predicted, blank, out_of_domain if judged else None,
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
