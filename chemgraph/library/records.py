"""One record of a library -> its molecule -> its features (the steps of ``chemgraph featurize``).

:func:`featurize_record` runs a record through :data:`STEPS` (parse, standardize, conformers,
canonical SMILES, fingerprints, descriptors) with the run's :class:`FeaturizeOptions`;
:func:`features_table` makes a shard's feature table of the results; :func:`process_records`
runs any such per-record function over a shard's records, rejecting the records it fails on
(:func:`rejected_row`: the rejected-row schema); :func:`reason_kind` sorts a rejection reason
into the summary table's categories. :func:`parse_record` and :func:`lowest_energy_conformer`
are the steps ``chemgraph qc`` shares. Imported by the worker processes: it imports neither DGL
nor pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from rdkit import Chem, rdBase

from chemgraph.chem import (
    MoleculeParseError,
    MoleculePreparation,
    embed_conformers,
    mols_from_smiles,
)
from chemgraph.chem.parse import check_smiles_molecule, mol_from_sdf_block
from chemgraph.data.labels import parse_label
from chemgraph.data.readers import Record
from chemgraph.featurize import get_preset
from chemgraph.featurize.descriptors import RDKitDescriptors, parse_descriptors
from chemgraph.featurize.fingerprints import parse_fingerprint

__all__ = [
    "BLANK_RECORD",
    "STEPS",
    "STEP_CODE",
    "FeaturizeOptions",
    "Featurized",
    "Steps",
    "featurize_record",
    "features_table",
    "lowest_energy_conformer",
    "parse_record",
    "process_records",
    "reason_kind",
    "rejected_row",
]

#: What a record goes through, in order (``"start"``, ``"graphs"`` and ``"write"`` are
#: shard-level phases, never timed against the per-record limit); ``"xtb"`` is the step of
#: ``chemgraph qc`` (:mod:`chemgraph.jobs.qc`), whose shards run in the same workers.
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
    "xtb",
)
STEP_CODE = {name: code for code, name in enumerate(STEPS)}


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
        label_columns: table columns or SD properties kept in the features table as
            ``float64`` columns of the same names (empty or missing cells NaN), as ``chemgraph
            train`` reads targets (:func:`chemgraph.data.labels.parse_label`); a record with a
            cell that is not a number is rejected with the reason. ``chemgraph train --data
            FOLDER`` trains on them. Recorded in the manifest only when given.
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
    label_columns: tuple[str, ...] = ()

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
        taken = {"id", "row", "smiles", *(parse_fingerprint(s).name for s in self.fingerprints)}
        if self.descriptors is not None:
            taken.update(parse_descriptors(self.descriptors).column_names)
        clashes = sorted(taken.intersection(self.label_columns))
        if (
            clashes
            or len(set(self.label_columns)) != len(self.label_columns)
            or any(not name for name in self.label_columns)
        ):
            raise ValueError(
                f"label columns must be distinct names, none of id, row, smiles or a "
                f"fingerprint or descriptor column; got {list(self.label_columns)}"
            )

    @property
    def preparation(self) -> MoleculePreparation:
        """Standardisation, then the fragment policy, of every parsed molecule."""
        return MoleculePreparation(standardize=self.standardize, fragments=self.fragments)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["fingerprints"] = [parse_fingerprint(s).spec for s in self.fingerprints]
        if self.label_columns:
            values["label_columns"] = list(self.label_columns)
        else:  # the manifests of runs without labels stay as they were
            del values["label_columns"]
        return values


BLANK_RECORD = "blank record"
"""The reason given for a blank record (whitespace only; :mod:`chemgraph.data.readers`)."""


def reason_kind(reason: str) -> str:
    """A short category of a rejection reason, for the summary table."""
    lowered = reason.lower()
    for prefix, kind in (("timeout:", "timeout"), ("crash:", "worker crash"), ("target ", "label")):
        if lowered.startswith(prefix):
            return kind
    for needle, kind in (
        ("malformed row", "malformed table row"),
        ("not valid utf-8", "not UTF-8"),
        ("empty", "empty record"),
        ("query structure", "query structure"),
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


def parse_record(record: Record) -> Chem.Mol:
    """The record's molecule (an SDF record's without its explicit hydrogens), or
    :class:`MoleculeParseError` with the reason."""
    if record.kind == "blank":
        raise MoleculeParseError(BLANK_RECORD)
    if record.error is not None:
        raise MoleculeParseError(record.error)
    if record.kind == "molblock":
        return mol_from_sdf_block(record.text)
    if "\ufffd" in record.text:
        raise MoleculeParseError("input is not valid UTF-8", record.text)
    # mols_from_smiles([record.text]) without its per-call BlockLogs: featurize_shard blocks
    # RDKit's logs once for all its records (a BlockLogs per record costs time on every molecule)
    text = record.text.strip()
    if len(text.split()) == 1:
        mol = Chem.MolFromSmiles(text)
        if mol is not None and mol.GetNumAtoms():
            return check_smiles_molecule(mol, text)
    (result,) = mols_from_smiles([record.text])  # rejected: the reason, as mols_from_smiles says
    if isinstance(result, MoleculeParseError):
        raise result
    return result


def lowest_energy_conformer(mol: Chem.Mol, conformers: int, seed: int) -> tuple[Chem.Mol, bool]:
    """The molecule with explicit hydrogens and only the lowest-MMFF94-energy conformer of
    ``conformers`` embedded with ``seed`` (:func:`chemgraph.chem.embed_conformers`; the first
    embedded one when MMFF94 has no parameters for the molecule), and whether MMFF94 relaxed
    it (False: the ETKDGv3 geometry).

    Raises:
        MoleculeParseError: no conformer could be embedded.
    """
    result = embed_conformers(mol, conformers, seed=seed)
    relaxed = any(e is not None for e in result.energies)
    energies = [e if e is not None else float("inf") for e in result.energies]
    best = result.conformer_ids[energies.index(min(energies))] if energies else -1
    return Chem.Mol(result.mol, False, best), relaxed


@dataclass
class Featurized:
    """One record's results: the molecule for the graph and the feature-table values."""

    graph_mol: Chem.Mol
    smiles: str
    fingerprints: list[np.ndarray]
    descriptors: np.ndarray | None
    labels: list[float]


class Steps:
    """Reports ``(position, step)`` to ``on_step`` and remembers the current step."""

    def __init__(self, on_step: Callable[[int, str], None] | None) -> None:
        self.on_step = on_step
        self.position, self.step = -1, "start"

    def __call__(self, step: str) -> None:
        self.step = step
        if self.on_step is not None:
            self.on_step(self.position, step)


def featurize_record(
    record: Record,
    options: FeaturizeOptions,
    fingerprints: list[Any],
    descriptors: RDKitDescriptors | None,
    steps: Steps,
) -> Featurized:
    """Every step for one record. Fingerprints, descriptors and the canonical SMILES use the
    (standardised) molecule as read; only the graph gets the explicit hydrogens and the 3D
    conformer, so the feature table does not depend on ``--conformers``."""
    steps("parse")
    labels = []
    if record.kind != "blank" and record.error is None:  # the reasons parse_record gives go first
        for column, cell in zip(options.label_columns, record.labels):
            value, reason = parse_label(cell, column)
            if reason is not None:
                raise MoleculeParseError(reason)
            labels.append(value)
    mol = parse_record(record)
    if options.preparation != MoleculePreparation():
        steps("standardize")  # the step name of reasons and timeouts, as before
        mol = options.preparation(mol)
    graph_mol = mol
    if options.conformers:
        steps("conformers")
        graph_mol, _ = lowest_energy_conformer(mol, options.conformers, options.seed)
    steps("canonical SMILES")
    smiles = Chem.MolToSmiles(mol)
    steps("fingerprints")
    values = [fingerprint(mol) for fingerprint in fingerprints]
    row = None
    if descriptors is not None:
        steps("descriptors")
        row = descriptors(mol)
    return Featurized(graph_mol, smiles, values, row, labels)


def rejected_row(record: Record, reason: str) -> tuple[int, str, str, str]:
    """A rejected record's row of ``rejected.csv``
    (:data:`chemgraph.data.readers.REJECTED_COLUMNS`: ``row, id, input, reason``); the input is
    the record's text as read (``""`` for a blank record), an SDF record's title line."""
    text = record.text if record.kind != "molblock" else record.text.split("\n", 1)[0].strip()
    return (record.row, record.id, text, reason)


def process_records(
    records: Sequence[Record],
    compute: Callable[[Record, Steps], Any],
    steps: Steps,
    skip: Mapping[int, str],
) -> tuple[list[tuple[Record, Any]], list[tuple[int, str, str, str]]]:
    """Run ``compute(record, steps)`` for every record of a shard, in order; a record it fails
    on is rejected and never stops the shard.

    Args:
        records: the shard's records.
        compute: one record's work (:func:`featurize_record`, ``chemgraph qc``'s
            :func:`chemgraph.jobs.qc.label_record`), reporting its steps to ``steps``; raises
            :class:`~chemgraph.chem.MoleculeParseError` with the reason for a bad record.
        steps: the shard's step reporter; ``steps.position`` is each record's position while it
            runs, and ``-1`` (the shard-level phases) on return.
        skip: ``{row: reason}`` of records to reject without computing them (records that
            timed out or crashed a worker in an earlier attempt).

    Returns:
        ``(done, rejected)``: ``(record, result)`` of every record computed, in input order,
        and the :func:`rejected_row` of every other record, with the reason of ``skip``, of
        the :class:`~chemgraph.chem.MoleculeParseError`, or ``"<step> failed: <exception>"``
        for another exception; a blank record's is :data:`BLANK_RECORD` (so that a shard's
        parts give every record a row, as ``predict`` and ``fingerprint`` write them; the
        counts and ``rejected.csv`` count it as blank only:
        :func:`chemgraph.library.output.finish_shard`).
    """
    done: list[tuple[Record, Any]] = []
    rejected: list[tuple[int, str, str, str]] = []
    # RDKit's logs stay blocked for all the records (parsing, standardising, conformers and
    # descriptors blocked them record by record before; a BlockLogs per record cost more than a
    # tenth of the parsing); rejection reasons are still captured (chemgraph.chem.parse)
    with rdBase.BlockLogs():
        for position, record in enumerate(records):
            steps.position = position
            reason = skip.get(record.row)
            if reason is None:
                try:
                    done.append((record, compute(record, steps)))
                    continue
                except MoleculeParseError as error:
                    reason = error.reason
                except Exception as error:  # noqa: BLE001 - one bad record never stops a library
                    reason = f"{steps.step} failed: {type(error).__name__}: {error}"
            rejected.append(rejected_row(record, reason))
    steps.position = -1
    return done, rejected


def features_table(
    records: list[Record], results: list[Featurized], options: FeaturizeOptions
) -> pa.Table:
    """The shard's feature table, its columns built from their buffers (:func:`_numbers`,
    :func:`_strings`): ``pa.array`` imports pandas (start-up CPU time in every worker:
    ``benchmarks/README.md``, "The whole command beside the in-memory featurizer") to check
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
    if options.label_columns:
        values = np.array([r.labels for r in results], dtype=np.float64)
        values = values.reshape(len(results), len(options.label_columns))
        for name, column in zip(options.label_columns, values.T):
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
