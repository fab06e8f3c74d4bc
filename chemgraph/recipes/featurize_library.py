"""Featurize a compound library into graph shards and feature tables (``chemgraph featurize``).

Output folder::

    manifest.json                 input sha256, options, chemgraph version, counts, status
    graphs/shard-NNNNN.bin        one batched DGL graph per shard (chemgraph.graphs.load_shard)
    features/shard-NNNNN.parquet  id, row, canonical SMILES, fingerprints, named descriptors
    rejected.csv                  row, id, input, reason (every record that was not featurized)
    parts/shard-NNNNN.json        per-shard counts; written last, it marks the shard complete
    parts/shard-NNNNN.csv         per-shard rejected records (concatenated into rejected.csv)

Each shard is a pure function of its records and the options, so the output does not depend on
the number of workers or on whether the run was resumed. Every file is written to a temporary
name and renamed. Features, rejected records and the manifest are byte-identical between runs;
graph shards hold identical tensors but not identical bytes, because ``dgl.save_graphs`` embeds
process memory addresses in its files.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from rdkit import Chem, rdBase
from tqdm.auto import tqdm

import chemgraph
from chemgraph.chem import MoleculeParseError, embed_conformers, mols_from_smiles
from chemgraph.data.readers import Record, iter_record_chunks, library_format
from chemgraph.featurize import get_preset
from chemgraph.featurize.descriptors import parse_descriptors
from chemgraph.featurize.fingerprints import parse_fingerprint
from chemgraph.graphs import mols_to_graphs
from chemgraph.graphs.shards import atomic_path, save_shard

__all__ = ["FeaturizeOptions", "featurize_library", "featurize_shard", "reason_kind"]

REJECTED_HEADER = ("row", "id", "input", "reason")


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
        smiles_column, id_column: input columns (tables) or SD property (``id_column``, SDF).
        seed: conformer embedding seed.
    """

    graphs: str | None = "canonical"
    fingerprints: tuple[str, ...] = ()
    descriptors: str | None = None
    conformers: int = 0
    standardize: str = "none"
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
        if self.standardize not in ("none", "basic", "chembl"):
            raise ValueError(f"standardize must be none, basic or chembl, got {self.standardize!r}")
        if self.conformers < 0:
            raise ValueError(f"conformers must be >= 0, got {self.conformers}")
        if self.graphs is None and not self.fingerprints and self.descriptors is None:
            raise ValueError("nothing to compute: choose --graphs, --fingerprint or --descriptors")

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["fingerprints"] = [parse_fingerprint(s).spec for s in self.fingerprints]
        return values


@dataclass
class ShardSummary:
    """Counts of one shard (``parts/shard-NNNNN.json``)."""

    shard: int
    read: int = 0
    featurized: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


def reason_kind(reason: str) -> str:
    """A short category of a rejection reason, for the summary table."""
    lowered = reason.lower()
    for needle, kind in (
        ("not valid utf-8", "not UTF-8"),
        ("empty", "empty record"),
        ("smiles parse error", "SMILES syntax"),
        ("valence", "valence"),
        ("kekulize", "aromaticity (kekulize)"),
        ("molblock", "unreadable SDF record"),
        ("standardi", "standardisation failed"),
        ("etkdg", "conformer embedding failed"),
    ):
        if needle in lowered:
            return kind
    return "other RDKit error"


def _parse_molblock(record: Record) -> Chem.Mol | MoleculeParseError:
    with rdBase.BlockLogs():
        mol = Chem.MolFromMolBlock(record.text, removeHs=True)
    if mol is None or mol.GetNumAtoms() == 0:
        return MoleculeParseError("RDKit could not read the molblock of this SDF record")
    return mol


def _parse(records: list[Record]) -> list[Chem.Mol | MoleculeParseError]:
    smiles_index = [i for i, r in enumerate(records) if r.kind == "smiles"]
    parsed: list[Chem.Mol | MoleculeParseError] = [None] * len(records)  # type: ignore[list-item]
    for i, result in zip(smiles_index, mols_from_smiles([records[i].text for i in smiles_index])):
        if "\ufffd" in records[i].text:
            result = MoleculeParseError("input is not valid UTF-8", records[i].text)
        parsed[i] = result
    for i, record in enumerate(records):
        if record.kind == "molblock":
            parsed[i] = _parse_molblock(record)
    return parsed


def _prepare(mol: Chem.Mol, options: FeaturizeOptions) -> tuple[Chem.Mol, Chem.Mol]:
    """``(molecule for the feature table, molecule for the graph)``.

    Fingerprints, descriptors and the canonical SMILES use the (standardised) molecule as
    read; only the graph gets the explicit hydrogens and the 3D conformer, so the feature table
    does not depend on ``--conformers``.
    """
    if options.standardize != "none":
        from chemgraph.chem import standardize

        mol = standardize(mol, options.standardize)
    if not options.conformers:
        return mol, mol
    result = embed_conformers(mol, options.conformers, seed=options.seed)
    energies = [e if e is not None else float("inf") for e in result.energies]
    best = result.conformer_ids[energies.index(min(energies))] if energies else -1
    return mol, Chem.Mol(result.mol, False, best)  # keeps only the lowest-energy conformer


def _features_table(
    records: list[Record], mols: list[Chem.Mol], options: FeaturizeOptions
) -> pa.Table:
    columns: dict[str, pa.Array] = {
        "id": pa.array([r.id for r in records], pa.string()),
        "row": pa.array([r.row for r in records], pa.int64()),
        "smiles": pa.array([Chem.MolToSmiles(m) for m in mols], pa.string()),
    }
    for spec in options.fingerprints:
        fingerprint = parse_fingerprint(spec)
        values = fingerprint.featurize(mols).reshape(len(mols), len(fingerprint))
        flat = pa.array(values.reshape(-1), type=pa.from_numpy_dtype(values.dtype))
        columns[fingerprint.name] = pa.FixedSizeListArray.from_arrays(flat, len(fingerprint))
    if options.descriptors is not None:
        descriptors = parse_descriptors(options.descriptors)
        values = descriptors.featurize(mols).reshape(len(mols), len(descriptors))
        for name, column in zip(descriptors.column_names, values.T):
            columns[name] = pa.array(column, pa.float64())
    return pa.table(columns)


def _write_parquet(table: pa.Table, path: Path) -> None:
    temporary = atomic_path(path)
    pq.write_table(table, temporary)
    os.replace(temporary, path)


def _write_text(text: str, path: Path) -> None:
    temporary = atomic_path(path)
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _rejected_csv(rows: list[tuple]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(rows)
    return buffer.getvalue()


def _shard_name(shard: int) -> str:
    return f"shard-{shard:05d}"


def featurize_shard(
    shard: int, records: list[Record], options: FeaturizeOptions, output: str
) -> ShardSummary:
    """Featurize one shard of records and write its files (a pure function of its inputs).

    Writes ``graphs/``, ``features/`` and ``parts/`` files of shard ``shard`` under ``output``;
    the ``parts/<shard>.json`` summary is written last and marks the shard complete.

    Returns:
        The shard's counts. Bad records never raise: they are listed in the shard's rejected
        part with RDKit's reason.
    """
    torch.set_num_threads(1)
    out = Path(output)
    name = _shard_name(shard)
    rejected: list[tuple] = []
    kept_records: list[Record] = []
    kept: list[Chem.Mol] = []
    graph_mols: list[Chem.Mol] = []
    for record, result in zip(records, _parse(records)):
        if not isinstance(result, MoleculeParseError):
            try:
                mol, graph_mol = _prepare(result, options)
            except MoleculeParseError as error:
                result = error
        if isinstance(result, MoleculeParseError):
            text = record.text if record.kind == "smiles" else record.text.split("\n", 1)[0]
            rejected.append((record.row, record.id, text, result.reason))
            continue
        kept_records.append(record)
        kept.append(mol)
        graph_mols.append(graph_mol)

    if options.graphs is not None:
        graph = mols_to_graphs(
            graph_mols, get_preset(options.graphs), with_positions=options.conformers > 0
        )
        rows = torch.tensor([r.row for r in kept_records], dtype=torch.int64)
        save_shard(out / "graphs" / f"{name}.bin", graph, rows)
    _write_parquet(
        _features_table(kept_records, kept, options), out / "features" / f"{name}.parquet"
    )
    _write_text(_rejected_csv(rejected), out / "parts" / f"{name}.csv")
    summary = ShardSummary(
        shard=shard,
        read=len(records),
        featurized=len(kept),
        rejected=dict(sorted(Counter(reason_kind(r[3]) for r in rejected).items())),
    )
    _write_text(json.dumps(asdict(summary), sort_keys=True), out / "parts" / f"{name}.json")
    return summary


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _completed(out: Path, shard: int) -> ShardSummary | None:
    path = out / "parts" / f"{_shard_name(shard)}.json"
    if not path.exists():
        return None
    return ShardSummary(**json.loads(path.read_text()))


def _run_shards(
    chunks: Iterator[tuple[int, list[Record]]],
    options: FeaturizeOptions,
    out: Path,
    workers: int,
    dask_scheduler: str | None,
) -> Iterator[ShardSummary]:
    """Featurize shards locally, in a process pool, or on a dask cluster, at most
    ``2 × workers`` shards in flight so that memory stays flat."""
    if dask_scheduler is None and workers <= 1:
        for shard, records in chunks:
            yield featurize_shard(shard, records, options, str(out))
        return
    if dask_scheduler is not None:
        from distributed import Client

        client = Client(dask_scheduler)
        submit = functools.partial(client.submit, pure=False)
        window, close = 2 * max(1, sum(client.nthreads().values())), client.close
    else:
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(max_workers=workers)
        submit, window, close = executor.submit, 2 * workers, executor.shutdown
    try:
        pending = []
        for shard, records in chunks:
            pending.append(submit(featurize_shard, shard, records, options, str(out)))
            if len(pending) >= window:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()
    finally:
        close()


def featurize_library(
    input_path: str | Path,
    output: str | Path,
    options: FeaturizeOptions,
    workers: int = 1,
    shard_size: int = 5_000,
    resume: bool = False,
    dask_scheduler: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Featurize a library file into ``output`` (see the module docstring for the layout).

    Args:
        input_path: ``.smi``, ``.csv``, ``.tsv``, ``.parquet`` or ``.sdf``, optionally gzipped;
            read streaming, ``shard_size`` records at a time.
        output: output folder; must be new or empty unless ``resume``.
        options: what to compute.
        workers: local worker processes (1 = in this process).
        shard_size: records per shard.
        resume: continue an interrupted run in ``output`` (same input and options): complete
            shards are kept, the others are computed again.
        dask_scheduler: address of a dask.distributed scheduler; shards then run as dask tasks
            (``output`` must be on a file system the workers share).
        progress: show a progress bar (molecules/second).

    Returns:
        The manifest (also written to ``output/manifest.json``).

    Raises:
        ValueError: bad options, an input with no records, or an ``output`` that holds a
            different run (or any run, without ``resume``).
    """
    if shard_size < 1 or workers < 1:
        raise ValueError(f"shard_size and workers must be >= 1, got {shard_size}, {workers}")
    input_path, out = Path(input_path), Path(output)
    library_format(input_path)
    if not input_path.is_file():
        raise FileNotFoundError(f"input {input_path} does not exist")
    manifest: dict[str, Any] = {
        "chemgraph_version": chemgraph.__version__,
        "input": input_path.name,
        "input_sha256": file_sha256(input_path),
        "options": options.to_dict(),
        "shard_size": shard_size,
    }
    first = next(
        iter_record_chunks(input_path, 1, options.smiles_column, options.id_column), None
    )  # checks the columns before anything is written
    if first is None:
        raise ValueError(f"{input_path} holds no records")
    _prepare_output(out, manifest, resume)
    summaries: list[ShardSummary] = []
    bar = tqdm(unit="mol", unit_scale=True, disable=not progress, desc="featurize")

    def todo() -> Iterator[tuple[int, list[Record]]]:
        chunks = iter_record_chunks(
            input_path, shard_size, options.smiles_column, options.id_column
        )
        for shard, records in enumerate(chunks):
            done = _completed(out, shard) if resume else None
            if done is not None:
                summaries.append(done)
                bar.update(done.read)
            else:
                yield shard, records

    for summary in _run_shards(todo(), options, out, workers, dask_scheduler):
        summaries.append(summary)
        bar.update(summary.read)
    bar.close()
    summaries.sort(key=lambda s: s.shard)
    if not summaries or sum(s.read for s in summaries) == 0:
        raise ValueError(f"{input_path} holds no records")
    _concatenate_rejected(out, [s.shard for s in summaries])
    rejected = Counter()
    for summary in summaries:
        rejected.update(summary.rejected)
    manifest["counts"] = {
        "read": sum(s.read for s in summaries),
        "featurized": sum(s.featurized for s in summaries),
        "rejected": sum(rejected.values()),
        "rejected_by_reason": dict(sorted(rejected.items())),
        "shards": len(summaries),
    }
    manifest["status"] = "complete"
    _write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", out / "manifest.json")
    return manifest


def _prepare_output(out: Path, manifest: dict[str, Any], resume: bool) -> None:
    existing = out / "manifest.json"
    if existing.exists():
        previous = json.loads(existing.read_text())
        keys = ("input_sha256", "options", "shard_size", "chemgraph_version")
        if not resume:
            raise ValueError(
                f"{out} already holds a featurization; use --resume to continue it, or a new "
                "--output"
            )
        changed = [k for k in keys if previous.get(k) != manifest[k]]
        if changed:
            raise ValueError(
                f"cannot resume in {out}: {', '.join(changed)} differ from the run there; "
                "use a new --output"
            )
    elif out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty; choose a new --output")
    for folder in ("graphs", "features", "parts"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    _write_text(
        json.dumps({**manifest, "status": "running"}, indent=2, sort_keys=True) + "\n",
        out / "manifest.json",
    )


def _concatenate_rejected(out: Path, shards: list[int]) -> None:
    temporary = atomic_path(out / "rejected.csv")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(REJECTED_HEADER) + "\n")
        for shard in shards:
            handle.write((out / "parts" / f"{_shard_name(shard)}.csv").read_text(encoding="utf-8"))
    os.replace(temporary, out / "rejected.csv")


def summary_table(manifest: dict[str, Any]) -> str:
    """The end-of-run summary: read, featurized, rejected by reason."""
    counts = manifest["counts"]
    lines = [
        f"read        {counts['read']:>10,}",
        f"featurized  {counts['featurized']:>10,}",
        f"rejected    {counts['rejected']:>10,}",
    ]
    lines += [f"  {kind:<28}{n:>8,}" for kind, n in counts["rejected_by_reason"].items()]
    return "\n".join(lines)
