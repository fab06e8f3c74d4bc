"""Featurize a compound library into graph shards and feature tables (``chemgraph featurize``).

Output folder::

    manifest.json                 input sha256, options, chemgraph version, counts, status
    graphs/shard-NNNNN.bin        the shard's graphs, compact (chemgraph.graphs.load_shard)
    features/shard-NNNNN.parquet  id, row, canonical SMILES, fingerprints, named descriptors
    rejected.csv                  row, id, input, reason (every record that was not featurized)
    parts/shard-NNNNN.json        per-shard counts; written last, it marks the shard complete
    parts/shard-NNNNN.csv         per-shard rejected records (concatenated into rejected.csv)

Every record of the input is accounted for: the manifest's counts satisfy
``read + blank == featurized + rejected`` (``read``: records with content; ``blank``: blank
records, each listed in ``rejected.csv`` as ``"blank record"``), and ids used by more than one
record are counted with examples (``counts["duplicate_ids"]``). ``row`` is the record's 0-based
index in the file as :mod:`chemgraph.data.readers` defines it per format.

Each shard is a pure function of its records and the options, so the output does not depend on
the number of workers or on whether the run was resumed. Every file is written to a temporary
name and renamed. Every file, graph shards included (:mod:`chemgraph.graphs.shards`), is
byte-identical between runs of the same input and options, so a file's sha256 can key a cache.

Progress. On a terminal (never in a log file, where a bar is a line of ``\r``-joined text),
``progress`` shows a bar of the records finished, counted as the workers finish them (from their
heartbeat, below), and — once a background thread has counted the input's records with the same
reader — the total and an estimate of the time left.

Slow records. Local runs featurize shards in worker processes (``forkserver``, else ``spawn``)
that publish, in shared memory, which record and which step (parse, standardize, conformers,
canonical SMILES, fingerprints, descriptors) they are working on. The parent names a record
that has spent 10 s (or half the limit) in one step, and when it exceeds ``record_timeout`` it
kills the worker — the only way to stop C++ code such as RDKit's ``Ipc`` that holds the GIL —
starts a new one and computes the shard again with that record rejected as ``"timeout: <step>
(over N s)"``. A worker that dies on a record (segfault, out-of-memory kill) is handled the same
way (``"crash: <step> (...)"``). Whether a record hits the limit depends on the machine, so the
default limit (60 s per step) is far above what any normal molecule needs. Dask runs do not
enforce the limit.

Interrupts. SIGINT (Ctrl-C) and SIGTERM make :func:`featurize_library` kill its workers at once
(they ignore SIGINT themselves, and die with their parent on Linux), mark the manifest
``"interrupted"`` and raise :class:`FeaturizeInterrupted`; complete shards are kept, stale
temporary files are removed on ``resume``, and the resumed output equals an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import io
import json
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from rdkit import Chem, rdBase
from tqdm.auto import tqdm

import chemgraph
from chemgraph._files import (
    atomic_path,
    file_digest,
    write_parquet_atomically,
    write_text_atomically,
)
from chemgraph._interrupts import Interrupted, interrupts_raise
from chemgraph._output import resumable_folder
from chemgraph.chem import (
    MoleculeParseError,
    MoleculePreparation,
    embed_conformers,
    mols_from_smiles,
)
from chemgraph.chem.parse import check_smiles_molecule, mol_from_sdf_block
from chemgraph.data.readers import REJECTED_COLUMNS, Record, iter_record_chunks, library_format
from chemgraph.errors import MissingDependencyError
from chemgraph.featurize import get_preset
from chemgraph.featurize.descriptors import RDKitDescriptors, parse_descriptors
from chemgraph.featurize.fingerprints import parse_fingerprint
from chemgraph.graphs.molecule import mols_to_graph_arrays
from chemgraph.graphs.shards import save_shard_arrays, shard_rows

__all__ = [
    "BLANK_RECORD",
    "FeaturizeInterrupted",
    "FeaturizeOptions",
    "STEPS",
    "featurize_library",
    "featurize_shard",
    "reason_kind",
]


#: What a record goes through, in order (``"start"``, ``"graphs"`` and ``"write"`` are
#: shard-level phases, never timed against the per-record limit).
STEPS = (
    "start",
    "parse",
    "standardize",
    "conformers",
    "canonical SMILES",
    "fingerprints",
    "descriptors",
    "graphs",
    "write",
)
_STEP_CODE = {name: code for code, name in enumerate(STEPS)}
_POLL_SECONDS = 0.1
_NOTICE_SECONDS = 10.0
_DUPLICATE_EXAMPLES = 5
_COUNT_CHUNK = 10_000  # records per chunk of the progress bar's count


@dataclass(frozen=True)
class FeaturizeOptions:
    """What to compute for every molecule (recorded in the manifest).

    Attributes:
        graphs: atom/bond featurizer preset of the graph shards, or None for no graphs.
        fingerprints: fingerprint specs, e.g. ``("morgan:radius=2,size=2048", "maccs")``.
        descriptors: descriptor set (``"rdkit2d"``) or None.
        conformers: ETKDGv3 + MMFF94 conformers embedded per molecule (0 = none); the graph
            then holds explicit hydrogens and ``ndata["pos"]`` (Å) of the lowest-MMFF94-energy
            conformer. The feature table is computed without them.
        standardize: ``"none"``, ``"basic"`` or ``"chembl"`` (see
            :func:`chemgraph.chem.standardize`).
        fragments: ``"keep"`` every fragment or only the ``"largest"`` (salts, solvents);
            with ``standardize`` the :attr:`preparation` of every molecule, the same step
            ``chemgraph train`` runs (``predict`` passes its checkpoint's).
        smiles_column, id_column: input columns (tables) or SD property (``id_column``, SDF).
        seed: conformer embedding seed.
    """

    graphs: str | None = "canonical"
    fingerprints: tuple[str, ...] = ()
    descriptors: str | None = None
    conformers: int = 0
    standardize: str = "none"
    fragments: str = "keep"
    smiles_column: str | None = None
    id_column: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.graphs is not None:
            get_preset(self.graphs)
        for spec in self.fingerprints:
            parse_fingerprint(spec)
        if self.descriptors is not None:
            parse_descriptors(self.descriptors)
        self.preparation  # noqa: B018  (checks standardize and fragments)
        if self.conformers < 0:
            raise ValueError(f"conformers must be >= 0, got {self.conformers}")
        if self.graphs is None and not self.fingerprints and self.descriptors is None:
            raise ValueError("nothing to compute: choose --graphs, --fingerprint or --descriptors")

    @property
    def preparation(self) -> MoleculePreparation:
        """Standardisation, then the fragment policy, of every parsed molecule."""
        return MoleculePreparation(standardize=self.standardize, fragments=self.fragments)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["fingerprints"] = [parse_fingerprint(s).spec for s in self.fingerprints]
        return values


@dataclass
class ShardSummary:
    """Counts of one shard (``parts/shard-NNNNN.json``): ``read`` records with content and
    ``blank`` blank ones, of which ``featurized``; ``rejected`` counts by reason kind (blank
    records included)."""

    shard: int
    read: int = 0
    blank: int = 0
    featurized: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


class FeaturizeInterrupted(Interrupted):
    """SIGINT (Ctrl-C) or SIGTERM stopped :func:`featurize_library`.

    By the time it is raised every worker process has been killed; the complete shards stay in
    ``output`` and ``resume=True`` (``--resume``) continues the run. An
    :class:`~chemgraph._interrupts.Interrupted`, so ``except Exception`` does not swallow it.

    Attributes:
        signum: ``signal.SIGINT`` or ``signal.SIGTERM``.
        output: the output folder, or None when the signal came before it was prepared.
        shards_done: complete shards in ``output``.
    """

    def __init__(self, signum: int, output: Path | None = None, shards_done: int = 0) -> None:
        self.output, self.shards_done = output, shards_done
        name = signal.Signals(signum).name
        if output is None:
            message = f"stopped by {name} before any output was written"
        else:
            message = (
                f"stopped by {name}; {shards_done} complete shard(s) kept in {output}; run the "
                "same command with --resume to continue"
            )
        super().__init__(signum, message)


BLANK_RECORD = "blank record"
"""The reason given for a blank record (whitespace only; :mod:`chemgraph.data.readers`)."""


def reason_kind(reason: str) -> str:
    """A short category of a rejection reason, for the summary table."""
    lowered = reason.lower()
    for prefix, kind in (("timeout:", "timeout"), ("crash:", "worker crash")):
        if lowered.startswith(prefix):
            return kind
    for needle, kind in (
        (BLANK_RECORD, "blank record"),
        ("malformed row", "malformed table row"),
        ("not valid utf-8", "not UTF-8"),
        ("empty", "empty record"),
        ("smiles parse error", "SMILES syntax"),
        ("smiles holds whitespace", "SMILES with whitespace"),
        ("sdf parse error", "unreadable SDF record"),
        ("valence", "valence"),
        ("kekulize", "aromaticity (kekulize)"),
        ("standardi", "standardisation failed"),
        ("etkdg", "conformer embedding failed"),
    ):
        if needle in lowered:
            return kind
    return "other RDKit error"


def _parse(record: Record) -> Chem.Mol:
    """The record's molecule, or :class:`MoleculeParseError` with the reason."""
    if record.kind == "blank":
        raise MoleculeParseError(BLANK_RECORD)
    if record.error is not None:
        raise MoleculeParseError(record.error)
    if record.kind == "molblock":
        return mol_from_sdf_block(record.text)
    if "\ufffd" in record.text:
        raise MoleculeParseError("input is not valid UTF-8", record.text)
    # mols_from_smiles([record.text]) without its per-call BlockLogs: featurize_shard blocks
    # RDKit's logs once for all its records (a BlockLogs per record cost about 30 µs a molecule)
    text = record.text.strip()
    if len(text.split()) == 1:
        mol = Chem.MolFromSmiles(text)
        if mol is not None and mol.GetNumAtoms():
            return check_smiles_molecule(mol, text)
    (result,) = mols_from_smiles([record.text])  # rejected: the reason, as mols_from_smiles says
    if isinstance(result, MoleculeParseError):
        raise result
    return result


def _lowest_energy_conformer(mol: Chem.Mol, options: FeaturizeOptions) -> Chem.Mol:
    """The molecule with explicit hydrogens and only its lowest-MMFF94-energy conformer."""
    result = embed_conformers(mol, options.conformers, seed=options.seed)
    energies = [e if e is not None else float("inf") for e in result.energies]
    best = result.conformer_ids[energies.index(min(energies))] if energies else -1
    return Chem.Mol(result.mol, False, best)


@dataclass
class _Featurized:
    """One record's results: the molecule for the graph and the feature-table values."""

    graph_mol: Chem.Mol
    smiles: str
    fingerprints: list[np.ndarray]
    descriptors: np.ndarray | None


class _Steps:
    """Reports ``(position, step)`` to ``on_step`` and remembers the current step."""

    def __init__(self, on_step: Callable[[int, str], None] | None) -> None:
        self.on_step = on_step
        self.position, self.step = -1, "start"

    def __call__(self, step: str) -> None:
        self.step = step
        if self.on_step is not None:
            self.on_step(self.position, step)


def _featurize_record(
    record: Record,
    options: FeaturizeOptions,
    fingerprints: list[Any],
    descriptors: RDKitDescriptors | None,
    steps: _Steps,
) -> _Featurized:
    """Every step for one record. Fingerprints, descriptors and the canonical SMILES use the
    (standardised) molecule as read; only the graph gets the explicit hydrogens and the 3D
    conformer, so the feature table does not depend on ``--conformers``."""
    steps("parse")
    mol = _parse(record)
    if options.preparation != MoleculePreparation():
        steps("standardize")  # the step name of reasons and timeouts, as before
        mol = options.preparation(mol)
    graph_mol = mol
    if options.conformers:
        steps("conformers")
        graph_mol = _lowest_energy_conformer(mol, options)
    steps("canonical SMILES")
    smiles = Chem.MolToSmiles(mol)
    steps("fingerprints")
    values = [fingerprint(mol) for fingerprint in fingerprints]
    row = None
    if descriptors is not None:
        steps("descriptors")
        row = descriptors(mol)
    return _Featurized(graph_mol, smiles, values, row)


def _features_table(
    records: list[Record], results: list[_Featurized], options: FeaturizeOptions
) -> pa.Table:
    """The shard's feature table, its columns built from their buffers (:func:`_numbers`,
    :func:`_strings`): ``pa.array`` imports pandas (about 0.3 CPU s in every worker) to check
    whether its argument is a pandas object."""
    columns: dict[str, pa.Array] = {
        "id": _strings([r.id for r in records]),
        "row": _numbers(np.array([r.row for r in records], dtype=np.int64)),
        "smiles": _strings([r.smiles for r in results]),
    }
    for k, spec in enumerate(options.fingerprints):
        fingerprint = parse_fingerprint(spec)
        values = np.array([r.fingerprints[k] for r in results], dtype=fingerprint.dtype)
        flat = _numbers(values.reshape(-1))
        columns[fingerprint.name] = pa.FixedSizeListArray.from_arrays(flat, len(fingerprint))
    if options.descriptors is not None:
        descriptors = parse_descriptors(options.descriptors)
        values = np.array([r.descriptors for r in results], dtype=np.float64)
        values = values.reshape(len(results), len(descriptors))
        for name, column in zip(descriptors.column_names, values.T):
            columns[name] = _numbers(column)
    return pa.table(columns)


def _numbers(values: np.ndarray) -> pa.Array:
    """A 1-D numeric (not bool) array as an Arrow array without nulls."""
    values = np.ascontiguousarray(values)
    dtype = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(dtype, len(values), [None, pa.py_buffer(values)])


def _strings(texts: list[str]) -> pa.Array:
    """Arrow ``string`` array (UTF-8) of ``texts``, without nulls."""
    data = [text.encode() for text in texts]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(item) for item in data], out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(data), buffers)


def _rejected_csv(rows: list[tuple]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(rows)
    return buffer.getvalue()


def _shard_name(shard: int) -> str:
    return f"shard-{shard:05d}"


def featurize_shard(
    shard: int,
    records: list[Record],
    options: FeaturizeOptions,
    output: str,
    skip: Mapping[int, str] | None = None,
    on_step: Callable[[int, str], None] | None = None,
) -> ShardSummary:
    """Featurize one shard of records and write its files (a pure function of its inputs).

    Writes ``graphs/``, ``features/`` and ``parts/`` files of shard ``shard`` under ``output``;
    the ``parts/<shard>.json`` summary is written last and marks the shard complete.

    Args:
        shard: shard number (names the files).
        records: the shard's records, in input order.
        options: what to compute.
        output: the output folder (its ``graphs``, ``features``, ``parts`` folders exist).
        skip: ``{row: reason}`` of records to reject without processing them (records that
            timed out or crashed a worker in an earlier attempt).
        on_step: called as ``on_step(position, step)`` when record ``records[position]`` enters
            a step of :data:`STEPS`, and with ``position == -1`` for the shard-level phases.

    Returns:
        The shard's counts. Bad records never raise: they are listed in the shard's rejected
        part with RDKit's reason (or ``"<step> failed: <exception>"`` for an unexpected error
        in a step).
    """
    torch.set_num_threads(1)
    out = Path(output)
    name = _shard_name(shard)
    fingerprints = [parse_fingerprint(spec) for spec in options.fingerprints]
    descriptors = parse_descriptors(options.descriptors) if options.descriptors else None
    steps = _Steps(on_step)
    rejected: list[tuple] = []
    kept_records: list[Record] = []
    results: list[_Featurized] = []
    skip = skip or {}
    # RDKit's logs stay blocked for all the records (parsing, standardising, conformers and
    # descriptors blocked them record by record before; a BlockLogs per record cost more than a
    # tenth of the parsing); rejection reasons are still captured (chemgraph.chem.parse)
    with rdBase.BlockLogs():
        for position, record in enumerate(records):
            steps.position = position
            reason = skip.get(record.row)
            if reason is None:
                try:
                    results.append(
                        _featurize_record(record, options, fingerprints, descriptors, steps)
                    )
                    kept_records.append(record)
                    continue
                except MoleculeParseError as error:
                    reason = error.reason
                except Exception as error:  # noqa: BLE001 - one bad record never stops a library
                    reason = f"{steps.step} failed: {type(error).__name__}: {error}"
            text = (
                record.text if record.kind != "molblock" else record.text.split("\n", 1)[0].strip()
            )
            rejected.append((record.row, record.id, text, reason))

    steps.position = -1
    steps("graphs")
    if options.graphs is not None:
        graphs = mols_to_graph_arrays(
            [r.graph_mol for r in results],
            get_preset(options.graphs),
            with_positions=options.conformers > 0,
        )
        rows = torch.tensor([r.row for r in kept_records], dtype=torch.int64)
        save_shard_arrays(out / "graphs" / f"{name}.bin", graphs, rows)
    steps("write")
    table = _features_table(kept_records, results, options)
    write_parquet_atomically(table, out / "features" / f"{name}.parquet")
    write_text_atomically(_rejected_csv(rejected), out / "parts" / f"{name}.csv")
    blank = sum(record.kind == "blank" for record in records)
    summary = ShardSummary(
        shard=shard,
        read=len(records) - blank,
        blank=blank,
        featurized=len(kept_records),
        rejected=dict(sorted(Counter(reason_kind(r[3]) for r in rejected).items())),
    )
    write_text_atomically(
        json.dumps(asdict(summary), sort_keys=True), out / "parts" / f"{name}.json"
    )
    return summary


def _completed(out: Path, shard: int, options: FeaturizeOptions) -> ShardSummary | str | None:
    """The summary of a complete shard; ``None`` when the shard was not finished; a reason
    (``str``) when its summary says finished but a file of it is missing or damaged (a
    truncated or foreign graph shard, a features table of another length), so that
    ``--resume`` featurizes it again instead of keeping it."""
    name = _shard_name(shard)
    path = out / "parts" / f"{name}.json"
    if not path.exists():
        return None
    try:
        summary = ShardSummary(**json.loads(path.read_text()))
        rows = pq.read_table(out / "features" / f"{name}.parquet", columns=["row"])["row"]
        if len(rows) != summary.featurized:
            raise ValueError(
                f"features/{name}.parquet has {len(rows)} rows, not {summary.featurized}"
            )
        if options.graphs is not None:
            graph_rows = shard_rows(out / "graphs" / f"{name}.bin")
            if graph_rows.tolist() != rows.to_pylist():
                raise ValueError(f"graphs/{name}.bin holds the graphs of other records")
        (out / "parts" / f"{name}.csv").stat()
    except (OSError, TypeError, ValueError, pa.ArrowException) as error:
        return f"shard {shard} is damaged ({error}); featurizing it again"
    return summary


# -- worker processes ----------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: have the kernel SIGKILL this process when its parent dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    prctl = getattr(ctypes.CDLL(None), "prctl", None)
    if prctl is None:
        return
    prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _worker_main(connection: Any, heartbeat: Any) -> None:
    """A worker process: featurize the shards sent on ``connection`` until ``None`` or EOF.

    ``heartbeat`` (shared ``int64[3]``) holds ``[tick, position, step code]``: the tick is
    incremented after every step change, so the parent can time each record's steps.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us
    # and blocked, because RDKit installs its own SIGINT handler around long searches (it
    # would print "Substructure search was interrupted" before the parent kills us)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    _die_with_parent()

    def beat(position: int, step: str) -> None:
        heartbeat[1] = position
        heartbeat[2] = _STEP_CODE[step]
        heartbeat[0] += 1

    while True:
        try:
            task = connection.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            summary = featurize_shard(*task, on_step=beat)
        except Exception as error:  # noqa: BLE001 - reported to the parent, which re-raises
            detail = f"in the worker featurizing shard {task[0]}:\n{traceback.format_exc()}"
            try:
                pickle.dumps(error)
            except Exception:  # noqa: BLE001 - an exception that cannot cross processes
                error = RuntimeError(f"{type(error).__name__}: {error}")
            connection.send(("error", (error, detail)))
        else:
            connection.send(("done", summary))


def _context() -> multiprocessing.context.BaseContext:
    """``forkserver`` (workers forked from a server that has imported this module: a restart
    after a timeout is cheap) where available, else ``spawn``; never plain ``fork`` of a parent
    that may run threads."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        _start_forkserver()
        return context
    return multiprocessing.get_context("spawn")


def _start_forkserver() -> None:
    """Start the forkserver (if it is not running) with ``PYTHONSAFEPATH=1``.

    The server is ``python -c ...``, which puts the current folder first on its import path and
    ignores the parent's (CPython passes ``sys_path`` but its ``forkserver.main`` does not
    apply it): run from a folder holding another ``chemgraph`` checkout, the server would
    preload that code and every worker forked from it would featurize with it."""
    saved = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = saved


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (shown as its cause)."""

    def __str__(self) -> str:
        return self.args[0]


@dataclass
class _Task:
    """A shard to featurize; ``skip`` grows as records time out or crash a worker, and
    ``counted`` records were reported as finished (a retried shard does not count them again)."""

    shard: int
    records: list[Record]
    skip: dict[int, str] = field(default_factory=dict)
    counted: int = 0

    def finished(self, done: int, advance: Callable[[int], None]) -> None:
        """Report to ``advance`` the records newly finished, ``done`` of ``records`` now."""
        if done > self.counted:
            advance(done - self.counted)
            self.counted = done


class _Worker:
    """One worker process, its pipe and heartbeat, and the task it is working on."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self.heartbeat = context.RawArray("q", 3)
        self.heartbeat[1] = -1
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, self.heartbeat), daemon=True
        )
        self.process.start()
        child.close()
        self.task: _Task | None = None
        self.tick, self.since, self.noticed = -1, time.monotonic(), False

    def assign(self, task: _Task, options: FeaturizeOptions, output: Path) -> None:
        # the worker waits for the task, so this does not race its own writes: without it, the
        # previous shard's last phase would count the new shard as finished
        self.heartbeat[1], self.heartbeat[2] = -1, _STEP_CODE["start"]
        self.task = task
        self.connection.send((task.shard, task.records, options, str(output), task.skip))

    def state(self) -> tuple[int, str, float]:
        """``(position, step, seconds in that step)``, timed by the parent's clock."""
        tick, position, code = self.heartbeat[:]
        now = time.monotonic()
        if tick != self.tick:
            self.tick, self.since, self.noticed = tick, now, False
        return position, STEPS[code], now - self.since

    def receive(self) -> tuple[str, Any] | None:
        """The worker's message (``("done", summary)`` or ``("error", exception)``), if any;
        None also when the pipe is closed (the worker died)."""
        try:
            return self.connection.recv() if self.connection.poll() else None
        except (EOFError, OSError):  # closed or reset by a dying worker
            return None

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()

    def close(self) -> None:
        self.connection.send(None)
        self.process.join()
        self.connection.close()


def _died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"the worker was killed by {signal.Signals(-exitcode).name}"
    return f"the worker exited with code {exitcode}"


def _run_local(
    chunks: Iterator[tuple[int, list[Record]]],
    options: FeaturizeOptions,
    out: Path,
    workers: int,
    record_timeout: float | None,
    say: Callable[[str], None],
    advance: Callable[[int], None],
) -> Iterator[ShardSummary]:
    """Featurize shards in ``workers`` processes, one shard each at a time, watching every
    record's steps (see the module docstring); yields summaries as shards complete and calls
    ``advance(n)`` as ``n`` more records are finished (every record once)."""
    context = _context()
    pool: list[_Worker] = []
    retries: deque[_Task] = deque()
    notice = _NOTICE_SECONDS if record_timeout is None else min(_NOTICE_SECONDS, record_timeout / 2)
    more = True

    def next_task() -> _Task | None:
        nonlocal more
        if retries:
            return retries.popleft()
        chunk = next(chunks, None) if more else None
        more = chunk is not None
        return _Task(*chunk) if chunk is not None else None

    try:
        pool += [_Worker(context) for _ in range(workers)]
        while True:
            for worker in pool:
                if worker.task is None and (task := next_task()) is not None:
                    worker.assign(task, options, out)
            busy = [w for w in pool if w.task is not None]
            if not busy:
                break
            wait([w.connection for w in busy] + [w.process.sentinel for w in busy], _POLL_SECONDS)
            for index, worker in enumerate(pool):
                task = worker.task
                if task is None:
                    continue
                message = worker.receive()
                if message is not None:
                    kind, payload = message
                    if kind == "error":
                        error, detail = payload
                        raise error from _RemoteTraceback(detail)
                    task.finished(len(task.records), advance)
                    worker.task = None
                    yield payload
                    continue
                position, step, seconds = worker.state()
                alive = worker.process.is_alive()
                if position < 0:
                    if step in ("graphs", "write"):  # past the last record
                        task.finished(len(task.records), advance)
                    if alive:
                        continue
                    raise RuntimeError(
                        f"shard {task.shard}: {_died(worker.process.exitcode)} during {step}"
                    )
                task.finished(position, advance)  # the records before ``position``
                record = task.records[position]
                where = f"shard {task.shard}, row {record.row} (id {record.id!r})"
                if not alive:
                    reason = f"crash: {step} ({_died(worker.process.exitcode)})"
                elif record_timeout is not None and seconds > record_timeout:
                    reason = f"timeout: {step} (over {record_timeout:g} s)"
                else:
                    if seconds >= notice and not worker.noticed:
                        worker.noticed = True
                        limit = f" (limit {record_timeout:g} s)" if record_timeout else ""
                        say(f"{where}: {step} still running after {seconds:.0f} s{limit}")
                    continue
                worker.kill()
                say(f"{where}: rejected, {reason}; computing the shard again without it")
                task.skip[record.row] = reason
                retries.append(task)
                pool[index] = _Worker(context)
    except BaseException:  # an error, an interrupt or an abandoned generator: stop at once
        for worker in pool:
            worker.kill()
        raise
    for worker in pool:
        worker.close()


def _run_dask(
    chunks: Iterator[tuple[int, list[Record]]],
    options: FeaturizeOptions,
    out: Path,
    dask_scheduler: str,
    advance: Callable[[int], None],
) -> Iterator[ShardSummary]:
    """Featurize shards as dask tasks, at most ``2 × threads`` in flight (memory stays flat);
    ``advance(n)`` is called with the records of each shard as it completes.

    Raises:
        MissingDependencyError: dask.distributed is not installed.
    """
    try:
        from distributed import Client
    except ImportError as error:
        raise MissingDependencyError(
            "--dask-scheduler needs dask.distributed: pip install 'chemgraph[dask]'"
        ) from error

    client = Client(dask_scheduler)
    submit = functools.partial(client.submit, featurize_shard, pure=False)
    window = 2 * max(1, sum(client.nthreads().values()))

    def result(future: Any) -> ShardSummary:
        summary = future.result()
        advance(summary.read + summary.blank)
        return summary

    try:
        pending = []
        for shard, records in chunks:
            pending.append(submit(shard, records, options, str(out)))
            if len(pending) >= window:
                yield result(pending.pop(0))
        for future in pending:
            yield result(future)
    finally:
        client.close()


# -- duplicate ids ---------------------------------------------------------------


class _DuplicateIds:
    """Finds ids used by more than one record, with 16 bytes of memory per record: the
    BLAKE2b-128 digest of each id, indexed by row (rows are consecutive from 0)."""

    def __init__(self) -> None:
        self._digests = bytearray()

    def add(self, records: list[Record]) -> None:
        for record in records:
            self._digests += hashlib.blake2b(
                record.id.encode("utf-8", "surrogatepass"), digest_size=16
            ).digest()

    def report(self, out: Path, shard_size: int) -> dict[str, Any]:
        """``{"records": n, "ids": k, "examples": [{"id": ..., "rows": [...]}, ...]}``: ``n``
        records reuse an id of an earlier record, ``k`` ids are used more than once; the first
        five such ids in file order, with their first five rows."""
        digests = np.frombuffer(self._digests, dtype="V16")
        _, first, inverse, counts = np.unique(
            digests, return_index=True, return_inverse=True, return_counts=True
        )
        repeated = np.flatnonzero(counts > 1)
        repeated = repeated[np.argsort(first[repeated])][:_DUPLICATE_EXAMPLES]
        rows = [
            np.flatnonzero(inverse == group)[:_DUPLICATE_EXAMPLES].tolist() for group in repeated
        ]
        ids = _ids_of_rows(out, shard_size, {r[0] for r in rows})
        return {
            "records": int(len(digests) - len(counts)),
            "ids": int((counts > 1).sum()),
            "examples": [{"id": ids[r[0]], "rows": r} for r in rows],
        }


def _ids_of_rows(out: Path, shard_size: int, rows: set[int]) -> dict[int, str]:
    """The id written for each of ``rows``, read back from the shards' features and rejected
    parts (every record is in one of them)."""
    found: dict[int, str] = {}
    for shard in sorted({row // shard_size for row in rows}):
        name = _shard_name(shard)
        # ParquetFile, not pq.read_table, which imports pandas (about 0.3 CPU s)
        with pq.ParquetFile(out / "features" / f"{name}.parquet") as features:
            table = features.read(columns=["row", "id"])
        pairs = list(zip(table["row"].to_pylist(), table["id"].to_pylist()))
        with open(out / "parts" / f"{name}.csv", encoding="utf-8", newline="") as handle:
            pairs += [(int(line[0]), line[1]) for line in csv.reader(handle)]
        found.update((row, identifier) for row, identifier in pairs if row in rows)
    return found


# -- the library run -------------------------------------------------------------------------


def featurize_library(
    input_path: str | Path,
    output: str | Path,
    options: FeaturizeOptions,
    workers: int = 1,
    shard_size: int = 5_000,
    resume: bool = False,
    dask_scheduler: str | None = None,
    progress: bool = True,
    record_timeout: float | None = 60.0,
) -> dict[str, Any]:
    """Featurize a library file into ``output`` (see the module docstring for the layout).

    Args:
        input_path: ``.smi``, ``.csv``, ``.tsv``, ``.parquet`` or ``.sdf``, optionally gzipped;
            read streaming, ``shard_size`` records at a time.
        output: output folder; must be new or empty unless ``resume``.
        options: what to compute.
        workers: local worker processes (at least one: shards never run in this process).
            They are started with ``forkserver`` (``spawn`` where there is none), so a script
            that calls this function needs the usual ``if __name__ == "__main__":`` guard.
        shard_size: records per shard.
        resume: continue an interrupted run in ``output`` (same input and options): complete
            shards are kept, the others are computed again.
        dask_scheduler: address of a dask.distributed scheduler; shards then run as dask tasks
            (``output`` must be on a file system the workers share; no per-record limit).
        progress: show a progress bar on stderr when it is a terminal: records finished (as
            the workers finish them), the rate, and once the input's records are counted (by a
            background thread) the total and the time left.
        record_timeout: the most seconds one record may spend in one step (parse, standardize,
            conformers, canonical SMILES, fingerprints, descriptors); a record over it is
            rejected as ``"timeout: <step> (over N s)"``. None: no limit. Records that take
            long are named on stderr after 10 s (or half the limit) either way.

    Returns:
        The manifest (also written to ``output/manifest.json``): ``counts`` holds ``read``,
        ``blank``, ``featurized``, ``rejected`` (``read + blank == featurized + rejected``),
        ``rejected_by_reason``, ``shards`` and ``duplicate_ids``.

    Raises:
        ValueError: bad options, an input with no records, or an ``output`` that holds a
            different run (or any run, without ``resume``).
        FeaturizeInterrupted: SIGINT or SIGTERM (main thread only); the workers are stopped
            and the manifest's status is ``"interrupted"``.
    """
    if shard_size < 1 or workers < 1:
        raise ValueError(f"shard_size and workers must be >= 1, got {shard_size}, {workers}")
    if record_timeout is not None and not record_timeout > 0:
        raise ValueError(f"record_timeout must be > 0 seconds or None, got {record_timeout}")
    input_path, out = Path(input_path), Path(output)
    library_format(input_path)
    if not input_path.is_file():
        raise FileNotFoundError(f"input {input_path} does not exist")
    with interrupts_raise(FeaturizeInterrupted):
        manifest: dict[str, Any] = {
            "chemgraph_version": chemgraph.__version__,
            "input": input_path.name,
            "input_sha256": file_digest(input_path),
            "options": options.to_dict(),
            # the preset's full description (e.g. its stereo encoding), not only its name
            "graph_featurizer": get_preset(options.graphs).to_dict() if options.graphs else None,
            "shard_size": shard_size,
        }
        first = next(
            iter_record_chunks(input_path, 1, options.smiles_column, options.id_column), None
        )  # checks the columns before anything is written
        if first is None:
            raise ValueError(f"{input_path} holds no records")
        _prepare_output(out, manifest, resume)
        try:
            summaries, duplicate_ids = _featurize_shards(
                input_path, out, options, workers, shard_size, resume, dask_scheduler,
                progress, record_timeout,
            )  # fmt: skip
            return _finish(manifest, summaries, duplicate_ids, out)
        except FeaturizeInterrupted as stop:
            _write_manifest({**manifest, "status": "interrupted"}, out)
            done = len(list((out / "parts").glob("shard-*.json")))
            raise FeaturizeInterrupted(stop.signum, out, done) from None


def _featurize_shards(
    input_path: Path,
    out: Path,
    options: FeaturizeOptions,
    workers: int,
    shard_size: int,
    resume: bool,
    dask_scheduler: str | None,
    progress: bool,
    record_timeout: float | None,
) -> tuple[list[ShardSummary], dict[str, Any]]:
    """Run every shard not already complete; ``(summaries in shard order, duplicate ids)``."""
    summaries: list[ShardSummary] = []
    duplicates = _DuplicateIds()
    bar = _Progress(input_path, options, show=progress and sys.stderr.isatty())

    def say(message: str) -> None:
        tqdm.write(f"featurize: {message}", file=sys.stderr)

    def todo() -> Iterator[tuple[int, list[Record]]]:
        chunks = iter_record_chunks(
            input_path, shard_size, options.smiles_column, options.id_column
        )
        for shard, records in enumerate(chunks):
            duplicates.add(records)
            done = _completed(out, shard, options) if resume else None
            if isinstance(done, str):
                say(done)
                done = None
            if done is not None:
                summaries.append(done)
                bar.advance(done.read + done.blank)
            else:
                yield shard, records

    if dask_scheduler is not None:
        results = _run_dask(todo(), options, out, dask_scheduler, bar.advance)
    else:
        results = _run_local(todo(), options, out, workers, record_timeout, say, bar.advance)
    try:
        with contextlib.closing(results):
            summaries.extend(results)
    finally:
        bar.close()
    summaries.sort(key=lambda s: s.shard)
    if dask_scheduler is None and workers > len(summaries):
        say(
            f"note: {workers} workers but the input made {len(summaries)} shard(s) of up to "
            f"{shard_size} records, one worker each, so {workers - len(summaries)} had nothing "
            "to do; a smaller --shard-size spreads a small library over the workers (the shard "
            "size is never chosen from --workers, so that the output does not depend on them)"
        )
    return summaries, duplicates.report(out, shard_size)


class _Progress:
    """The ``featurize`` bar: records finished, out of the input's records once known.

    Args:
        input_path, options: the input, whose records a daemon thread counts with
            :func:`~chemgraph.data.readers.iter_record_chunks` (the run's own reader, so blank
            and malformed records count as they do in the manifest) while the run goes on.
        show: draw the bar (on stderr); when False nothing is counted or drawn.
    """

    def __init__(self, input_path: Path, options: FeaturizeOptions, show: bool) -> None:
        self.bar = tqdm(unit="mol", unit_scale=True, disable=not show, desc="featurize")
        self._total: int | None = None
        self._stop = threading.Event()
        if show:
            threading.Thread(target=self._count, args=(input_path, options), daemon=True).start()

    def _count(self, input_path: Path, options: FeaturizeOptions) -> None:
        total = 0
        try:
            for chunk in iter_record_chunks(
                input_path, _COUNT_CHUNK, options.smiles_column, options.id_column
            ):
                if self._stop.is_set():
                    return
                total += len(chunk)
        except (OSError, ValueError):  # the run's own reader raises it
            return
        self._total = total

    def advance(self, records: int) -> None:
        """``records`` more are finished (called in the main thread only)."""
        if self.bar.total is None and self._total is not None:
            self.bar.total = self._total
        self.bar.update(records)

    def close(self) -> None:
        self._stop.set()
        self.bar.close()


def _finish(
    manifest: dict[str, Any],
    shards: list[ShardSummary],
    duplicate_ids: dict[str, Any],
    out: Path,
) -> dict[str, Any]:
    """Write ``rejected.csv`` and the complete manifest; return the manifest."""
    _concatenate_rejected(out, [s.shard for s in shards])
    rejected: Counter[str] = Counter()
    for summary in shards:
        rejected.update(summary.rejected)
    manifest["counts"] = {
        "read": sum(s.read for s in shards),
        "blank": sum(s.blank for s in shards),
        "featurized": sum(s.featurized for s in shards),
        "rejected": sum(rejected.values()),
        "rejected_by_reason": dict(sorted(rejected.items())),
        "shards": len(shards),
        "duplicate_ids": duplicate_ids,
    }
    manifest["status"] = "complete"
    _write_manifest(manifest, out)
    return manifest


def _write_manifest(manifest: dict[str, Any], out: Path) -> None:
    write_text_atomically(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", out / "manifest.json"
    )


def _prepare_output(out: Path, manifest: dict[str, Any], resume: bool) -> None:
    keys = ("input_sha256", "options", "graph_featurizer", "shard_size", "chemgraph_version")
    identity = {key: manifest[key] for key in keys}
    resumable_folder(out, "manifest.json", identity, resume=resume, option="--output")
    for folder in ("graphs", "features", "parts"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    _write_manifest({**manifest, "status": "running"}, out)


def _concatenate_rejected(out: Path, shards: list[int]) -> None:
    temporary = atomic_path(out / "rejected.csv")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(REJECTED_COLUMNS) + "\n")
        for shard in shards:
            handle.write((out / "parts" / f"{_shard_name(shard)}.csv").read_text(encoding="utf-8"))
    os.replace(temporary, out / "rejected.csv")


def summary_table(manifest: dict[str, Any]) -> str:
    """The end-of-run summary: read, blank, featurized, rejected by reason, duplicate ids."""
    counts = manifest["counts"]
    lines = [
        f"read        {counts['read']:>10,}",
        f"blank       {counts['blank']:>10,}",
        f"featurized  {counts['featurized']:>10,}",
        f"rejected    {counts['rejected']:>10,}",
    ]
    lines += [f"  {kind:<28}{n:>8,}" for kind, n in counts["rejected_by_reason"].items()]
    duplicates = counts["duplicate_ids"]
    if duplicates["ids"]:
        examples = ", ".join(
            f"{e['id']!r} (rows {', '.join(map(str, e['rows']))})" for e in duplicates["examples"]
        )
        lines.append(
            f"duplicate ids {duplicates['ids']:,} ({duplicates['records']:,} records reuse an "
            f"earlier record's id), e.g. {examples}"
        )
    return "\n".join(lines)
