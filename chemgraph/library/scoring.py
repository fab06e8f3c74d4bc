"""A library's shards scored by a model into one output (:class:`LibraryRun`, :func:`shard_table`).

The data path that ``chemgraph predict`` (:func:`chemgraph.jobs.predict.predict_table`) and
``chemgraph fingerprint`` (:func:`chemgraph.jobs.fingerprint.fingerprint_table`) share: the
input, a library file or a ``chemgraph featurize`` folder made with the checkpoint's preset and
molecule preparation (:func:`~chemgraph.library.featurize.featurize_library` featurizes a file
first, into the work folder; for a 3D model, a file of 3D structures into radius graphs of its
featurizer, :class:`~chemgraph.library.records.FeaturizeOptions`); the work folder
``<output>.partial/`` (``run.json``: the sha256 of the checkpoints and the input, the options;
``featurized/``; one part per scored shard, written atomically), resumed with ``resume`` and
refused otherwise, removed once the output is written; each shard scored by a job's task
(:func:`chemgraph.train.inference.run_shard_tasks`: this process, worker processes or
dask.distributed tasks) into the rows of :func:`shard_table`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from chemgraph._files import file_digest
from chemgraph._interrupts import Interrupted, interrupts_raise
from chemgraph._output import FolderClaim, claim_folder, resumable_folder
from chemgraph._processes import release_freed_memory
from chemgraph.chem import MoleculePreparation
from chemgraph.data.applicability import FINGERPRINT
from chemgraph.data.readers import iter_record_chunks
from chemgraph.errors import ConfigError
from chemgraph.featurize import FeaturizerPreset, RadiusGraphFeaturizer
from chemgraph.graphs.shards import load_shard_batch
from chemgraph.library.featurize import featurize_library
from chemgraph.library.output import read_manifest, shard_name
from chemgraph.library.progress import LibraryProgress
from chemgraph.library.records import FeaturizeOptions, check_input_format
from chemgraph.library.workers import worker_context
from chemgraph.train.ensemble import Ensemble
from chemgraph.train.inference import run_shard_tasks

__all__ = ["LibraryRun", "at_least_one", "shard_table"]


def at_least_one(**values: int | None) -> None:
    """Check counts given as keywords named after their options (``top=None`` is not checked).

    Raises:
        ConfigError: a value below 1, named as its option (``--batch-size``).
    """
    for name, value in values.items():
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


class LibraryRun:
    """The shards of one library scored into one output: the arguments checked, the work folder
    (``<output>.partial/``: ``run.json``, ``featurized/`` for a file input, one part per scored
    shard), the featurization of a file (:func:`~chemgraph.library.featurize.featurize_library`
    with the checkpoint's preset and molecule preparation, or for a 3D model the radius graphs
    of its featurizer, locally or on dask), the shards run
    through a task (:func:`~chemgraph.train.inference.run_shard_tasks`: this process, worker
    processes or dask) and the parts read back in order. What
    :func:`chemgraph.jobs.predict.predict_table` and
    :func:`chemgraph.jobs.fingerprint.fingerprint_table` share; in order: construct (checks the
    arguments, writes nothing), :meth:`start`, :meth:`score`, :meth:`tables`, :meth:`finish`.

    Args:
        input_path: a library file or a ``chemgraph featurize`` output folder.
        output: the file the job writes.
        smiles_column, id_column: a table's SMILES and id columns (a file input).
        workers, shard_size, resume, overwrite, progress, dask_scheduler: as in
            :func:`chemgraph.jobs.predict.predict_table`.
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
        at_least_one(workers=workers, shard_size=shard_size)
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
        self.claim: FolderClaim | None = None  # of the work folder, from start to finish

    def start(
        self,
        models: Ensemble,
        identity: dict[str, Any],
        domain: bool = False,
        refused: Sequence[tuple[Path, str]] = (),
        label_columns: Sequence[str] = (),
        label_use: str = "",
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
            label_columns: input columns (SD properties of an SDF) whose values the job reads
                per record, from the shards' feature tables (``float64``, NaN where a cell is
                empty; :attr:`~chemgraph.library.records.FeaturizeOptions.label_columns`): a
                file is featurized with them, a folder must have been.
            label_use: why the job reads them, ending the error of an input without them.

        Raises:
            ValueError: see :func:`chemgraph.jobs.predict.predict_table`; an input without
                one of the ``label_columns`` (named, with ``label_use``).
        """
        self.models = models
        options = _featurize_options(
            models, domain, self.smiles_column, self.id_column, tuple(label_columns)
        )
        if self.source.is_dir():
            _check_folder(self.source, models, models.files[0])
            _check_label_columns(self.source, models, label_columns, label_use)
        else:
            check_input_format(self.source, options.radius_graphs is not None)
            if (
                next(iter_record_chunks(self.source, 1, self.smiles_column, self.id_column), None)
                is None
            ):
                raise ValueError(f"{self.source} holds no records")
            if label_columns:
                try:  # the only difference from the reading above: the label columns
                    next(
                        iter_record_chunks(
                            self.source, 1, self.smiles_column, self.id_column, label_columns
                        )
                    )
                except ValueError as error:
                    raise ValueError(f"{error}; {label_use}") from None
        identity = {
            "checkpoints_sha256": models.digests,
            "input_sha256": file_digest(
                self.source / "manifest.json" if self.source.is_dir() else self.source
            ),
            "smiles_column": self.smiles_column,
            "id_column": self.id_column,
            "shard_size": self.shard_size,
            # the scored parts' leading columns: a part written before ``input`` cannot be
            # resumed into this output
            "columns": ["row", "id", "input", "smiles"],
            **identity,
        }
        self.claim = claim_folder(self.work, "--output")
        _prepare_work(self.output, identity, self.resume, self.overwrite, refused)
        if domain:
            models.warn_missing_fingerprints()
        if not self.source.is_dir():
            self.folder = self.work / "featurized"
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

    @contextlib.contextmanager
    def keeping_work(self) -> Iterator[None]:
        """Within the block (featurizing a file, scoring its shards), SIGINT or SIGTERM raises
        :class:`~chemgraph._interrupts.Interrupted` with the message a user needs: the finished
        shards are kept in :attr:`work` and ``--resume`` continues (``chemgraph`` prints it).
        An error or interrupt releases the work folder's claim
        (:func:`chemgraph._output.claim_folder`, made by :meth:`start`)."""
        try:
            yield
        except BaseException as stop:
            if self.claim is not None:
                self.claim.release()
            if not isinstance(stop, Interrupted):
                raise
            name = signal.Signals(stop.signum).name
            raise Interrupted(
                stop.signum,
                f"stopped by {name}; the finished shards are kept in {self.work}: run the same "
                "command with --resume to continue",
            ) from None

    def part(self, shard: int) -> Path:
        """Where a task writes the part of ``shard`` (atomically)."""
        return self.parts / f"shard-{shard:05d}.parquet"

    def score(self, task: Callable[[int], int], name: str) -> None:
        """Run ``task(shard)`` (it writes :meth:`part` and returns the shard's records) for each
        shard without a part, with a progress of records named ``name``
        (:class:`~chemgraph.library.progress.LibraryProgress`).

        Raises:
            chemgraph._interrupts.Interrupted: SIGINT or SIGTERM (main thread only); the parts
                written are kept.
        """
        counts = self.counts
        bar = LibraryProgress(name, self.progress, total=counts["read"] + counts["blank"])
        todo = []
        for shard in range(self.shards):
            if self.part(shard).exists():
                bar.advance(pq.ParquetFile(self.part(shard)).metadata.num_rows, resumed=True)
            else:
                todo.append(shard)
        if self.models is None:
            raise RuntimeError("LibraryRun.score before LibraryRun.start")
        workers = self.workers if self.models.device.type == "cpu" else 1
        # fresh workers (from the library's forkserver), not copies of this process: after
        # featurizing a large library its heap made each worker's memory grow shard by shard
        context = worker_context() if workers > 1 and self.dask_scheduler is None else None
        tasks = run_shard_tasks(task, todo, workers, self.dask_scheduler, self._shard_rows, context)
        with closing(bar), interrupts_raise(), closing(tasks):
            for records in tasks:
                bar.advance(records)

    def _shard_rows(self, shard: int) -> str | None:
        """The input rows of a featurized shard, for a message (None when unreadable)."""
        try:
            rows = pq.read_table(self.folder / "features" / f"{shard_name(shard)}.parquet",
                                 columns=["row"])["row"]  # fmt: skip
        except (OSError, pa.ArrowException):
            return None
        return f"input rows {rows[0]}-{rows[-1]}" if len(rows) else "no featurized record"

    def tables(self) -> Iterator[pa.Table]:
        """The parts, one table per shard in shard order (so rows in input order); the memory
        the caller freed with a table is given back before the next is read
        (:func:`chemgraph._processes.release_freed_memory`), so that writing the output takes
        the memory of one part however many there are."""
        for shard in range(self.shards):
            yield pq.read_table(self.part(shard))
            release_freed_memory()

    def finish(self) -> None:
        """Remove the work folder (the job has written its output) and release it."""
        shutil.rmtree(self.work)
        if self.claim is not None:
            self.claim.release()


def _featurize_options(
    models: Ensemble,
    domain: bool,
    smiles_column: str | None,
    id_column: str | None,
    label_columns: tuple[str, ...] = (),
) -> FeaturizeOptions:
    """How a library file is featurized for ``models``: bond graphs of their preset and
    molecule preparation, or radius graphs of the structures with their radius-graph
    featurizer; with ``domain`` and training fingerprints, the Morgan fingerprints too; the
    ``label_columns`` read per record."""
    fingerprints = (FINGERPRINT.spec,) if domain and models.fingerprints is not None else ()
    if isinstance(models.featurizer, RadiusGraphFeaturizer):
        return FeaturizeOptions(
            graphs=None, radius_graphs=models.featurizer, fingerprints=fingerprints,
            id_column=id_column, label_columns=label_columns,
        )  # fmt: skip
    return FeaturizeOptions(
        graphs=models.featurizer.name,
        fingerprints=fingerprints,
        standardize=models.preparation.standardize,
        fragments=models.preparation.fragments,
        smiles_column=smiles_column,
        id_column=id_column,
        label_columns=label_columns,
    )


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
        ValueError: no manifest, an incomplete run, no graphs, another graph preset, graphs
            with conformers (explicit hydrogens and positions, which training never had), or
            graphs of another kind than the checkpoint's (radius graphs for a 2D model; for a
            3D model, anything but the radius graphs of its own featurizer).
    """
    manifest = read_manifest(folder)
    options = manifest["options"]
    radius = options.get("radius_graphs")
    if isinstance(models.featurizer, RadiusGraphFeaturizer):
        if radius != models.featurizer.to_dict():
            made = "no radius graphs" if radius is None else f"radius graphs of {radius}"
            raise ValueError(
                f"{folder} holds {made}, but {checkpoint} is a 3D model that reads radius "
                f"graphs of {models.featurizer.to_dict()}; pass the structure file (.sdf with 3D "
                "coordinates, .xyz, .extxyz) as --input"
            )
        return
    redo = (
        f"featurize the library again with `chemgraph featurize LIBRARY --graphs "
        f"{models.featurizer.name} --output NEW_FOLDER`, or pass the library file as --input"
    )
    if radius is not None:
        raise ValueError(
            f"{folder} holds radius graphs of 3D structures but {checkpoint} was trained on "
            f"molecular (bond) graphs; {redo}"
        )
    if options["graphs"] is None:
        raise ValueError(f"{folder} holds no graphs (featurized with --graphs none); {redo}")
    preset = FeaturizerPreset.from_dict(manifest["graph_featurizer"])
    if preset.name != models.featurizer.name:
        raise ValueError(
            f"{folder} holds graphs of the {preset.name!r} preset but {checkpoint} was trained "
            f"on the {models.featurizer.name!r} preset; {redo}"
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
            f"{models.featurizer.name} --standardize {wanted.standardize} --fragments "
            f"{wanted.fragments} --output NEW_FOLDER`, or pass the library file as --input"
        )


def _check_label_columns(
    folder: Path, models: Ensemble, label_columns: Sequence[str], label_use: str
) -> None:
    """A ``chemgraph featurize`` folder whose feature tables hold ``label_columns``.

    Raises:
        ValueError: a column missing (named, with ``label_use`` and the command that fits).
    """
    held = read_manifest(folder)["options"].get("label_columns", [])
    missing = [c for c in label_columns if c not in held]
    if missing:
        raise ValueError(
            f"{folder} holds no column {missing} (featurized without --target-columns "
            f"{','.join(label_columns)}); {label_use}; featurize the library again with "
            f"`chemgraph featurize LIBRARY --graphs {models.featurizer.name} --target-columns "
            f"{','.join(label_columns)} --output NEW_FOLDER`, or pass the library file as --input"
        )


# -- the rows of a shard -------------------------------------------------------------------


def shard_table(
    folder: Path,
    shard: int,
    compute: Callable[[Any, pa.Table], dict[str, Any]],
    feature_columns: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per record of a shard of a ``chemgraph featurize`` folder, in input order:
    ``row``, ``id``, ``input`` (the record as the user gave it,
    :func:`chemgraph.library.records.record_input`: a SMILES as written, an SDF record's title
    line; null for a featurized record of a folder written before feature tables held it),
    ``smiles`` (canonical), the columns ``compute`` gives for the featurized records (empty
    for the others: NaN, null) and ``error`` (null, or why the record was not featurized, from
    the shard's rejected records; ``smiles`` is then ``""``). The rows of every job that scores
    shards (:func:`chemgraph.jobs.predict.predict_table`,
    :func:`chemgraph.jobs.fingerprint.fingerprint_table`).

    Args:
        folder: the featurize folder.
        shard: the shard's number.
        compute: ``compute(graphs, features)`` gets the shard's batched DGLGraph
            (:func:`chemgraph.graphs.load_shard_batch`) and its feature table (``row``, ``id``,
            ``smiles`` and those of ``feature_columns`` it has), and returns ``{column: values}``
            with one value per featurized record, in their order; with an ``error`` column, the
            reason (else None) for each featurized record it could not score.
        feature_columns: further feature-table columns to read when the table has them.

    Raises:
        ValueError: the shard's graphs and features list different rows.
    """
    name = f"shard-{shard:05d}"
    graphs, rows = load_shard_batch(folder / "graphs" / f"{name}.bin")
    path = folder / "features" / f"{name}.parquet"
    present = pq.read_schema(path).names
    columns = ["row", "id", "input", "smiles", *(c for c in feature_columns if c in present)]
    features = pq.read_table(path, columns=[c for c in columns if c in present])
    if features["row"].to_pylist() != rows.tolist():
        raise ValueError(f"{folder}: graphs and features of {name} differ; featurize it again")
    computed = compute(graphs, features)
    featurized = pd.DataFrame(
        {
            "row": rows.numpy(),
            "id": features["id"].to_pylist(),
            "input": features["input"].to_pylist() if "input" in present else None,
            "smiles": features["smiles"].to_pylist(),
            **computed,
        }
    )
    if "error" not in computed:
        featurized["error"] = None
    with open(folder / "parts" / f"{name}.csv", encoding="utf-8", newline="") as handle:
        rejected = [(int(row), identifier, text, reason)
                    for row, identifier, text, reason in csv.reader(handle)]  # fmt: skip
    failed = pd.DataFrame(rejected, columns=["row", "id", "input", "error"]).assign(smiles="")
    table = pd.concat([featurized, failed], ignore_index=True) if len(failed) else featurized
    return table.sort_values("row", kind="stable", ignore_index=True)
