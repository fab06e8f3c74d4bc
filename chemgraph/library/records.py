"""One record of a library -> its molecule -> its features (the steps of ``chemgraph featurize``).

:func:`featurize_record` runs a record through :data:`STEPS` (parse, standardize, conformers,
canonical SMILES, fingerprints, descriptors) with the run's :class:`FeaturizeOptions`, or, for
the radius graphs of a 3D model, through its 3D structure (:func:`record_structure`), canonical
SMILES and fingerprints; :func:`check_input_format` refuses a file that the options cannot
read;
:func:`features_table` makes a shard's feature table of the results; :func:`process_records`
runs any such per-record function over a shard's records, rejecting the records it fails on
(:func:`rejected_row`: the rejected-row schema); :func:`reason_kind` sorts a rejection reason
into the summary table's categories. :func:`parse_record` and :func:`lowest_energy_conformer`
and :func:`sdf_3d_molecule` are the steps ``chemgraph qc`` shares. Imported by the worker
processes: it imports neither DGL nor pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
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
from chemgraph.chem.parse import (
    atoms_from_xyz_block,
    check_complete_molecule,
    check_smiles_molecule,
    mol_from_atoms,
    mol_from_sdf_block,
)
from chemgraph.data.labels import parse_label
from chemgraph.data.readers import Record, library_format
from chemgraph.featurize import RadiusGraphFeaturizer, get_preset
from chemgraph.featurize.descriptors import RDKitDescriptors, parse_descriptors
from chemgraph.featurize.fingerprints import parse_fingerprint

__all__ = [
    "BLANK_RECORD",
    "STEPS",
    "STEP_CODE",
    "STRUCTURE_FORMATS",
    "FeaturizeOptions",
    "Featurized",
    "Steps",
    "Structure",
    "check_input_format",
    "featurize_record",
    "features_table",
    "lowest_energy_conformer",
    "parse_record",
    "process_records",
    "reason_kind",
    "record_molecule",
    "record_structure",
    "record_input",
    "rejected_row",
    "sdf_3d_molecule",
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
        radius_graphs: instead of ``graphs``, the radius graphs of each record's 3D structure
            (:func:`record_structure`: an SDF record with 3D coordinates and every hydrogen,
            or an XYZ / extended-XYZ frame; every atom as given) made by this featurizer as
            ``chemgraph transfer --geometry`` makes them
            (:func:`chemgraph.graphs.atoms_to_radius_graph`, the Gaussian distance features
            left to the model's collate); what ``chemgraph predict`` asks for with a 3D
            checkpoint, whose featurizer it is. A structure with an element that has no column
            of the featurizer's element one-hot is rejected. The canonical SMILES and the
            fingerprints are those of the molecule the structure gives (an SDF record's bonds;
            for an XYZ frame the bonds RDKit determines from the geometry,
            :func:`chemgraph.chem.parse.mol_from_atoms`, or, where it cannot, ``""`` and
            fingerprints of zeros). Needs ``graphs=None`` and no conformers, descriptors,
            standardisation, fragment policy or labels (the structure is used as given).
            Recorded in the manifest only when given.
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
    radius_graphs: RadiusGraphFeaturizer | None = None

    def __post_init__(self) -> None:
        if self.graphs is not None:
            get_preset(self.graphs)
        if self.radius_graphs is not None and (
            self.graphs is not None
            or self.conformers
            or self.descriptors is not None
            or self.preparation != MoleculePreparation()
            or self.label_columns
        ):
            raise ValueError(
                "radius graphs are made of the 3D structures as given: without bond graphs, "
                "conformers, descriptors, standardisation, a fragment policy or label columns"
            )
        for spec in self.fingerprints:
            parse_fingerprint(spec)
        if self.descriptors is not None:
            parse_descriptors(self.descriptors)
        self.preparation  # noqa: B018  (checks standardize and fragments)
        if self.conformers < 0:
            raise ValueError(f"conformers must be >= 0, got {self.conformers}")
        if (
            self.graphs is None
            and self.radius_graphs is None
            and not self.fingerprints
            and self.descriptors is None
        ):
            raise ValueError("nothing to compute: choose --graphs, --fingerprint or --descriptors")
        taken = {"id", "row", "input", "smiles"}
        taken.update(parse_fingerprint(s).name for s in self.fingerprints)
        if self.descriptors is not None:
            taken.update(parse_descriptors(self.descriptors).column_names)
        clashes = sorted(taken.intersection(self.label_columns))
        if (
            clashes
            or len(set(self.label_columns)) != len(self.label_columns)
            or any(not name for name in self.label_columns)
        ):
            raise ValueError(
                f"label columns must be distinct names, none of id, row, input, smiles or a "
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
        if self.radius_graphs is not None:
            values["radius_graphs"] = self.radius_graphs.to_dict()
        else:  # the same for runs of bond graphs
            del values["radius_graphs"]
        return values

    @property
    def graph_featurizer(self) -> dict[str, Any] | None:
        """The full description of the graphs' featurizer (the manifest's
        ``graph_featurizer``: a preset's or the radius-graph featurizer's ``to_dict``), or
        None without graphs."""
        if self.radius_graphs is not None:
            return self.radius_graphs.to_dict()
        return get_preset(self.graphs).to_dict() if self.graphs is not None else None


STRUCTURE_FORMATS = ("sdf", "xyz")
"""The library formats that hold 3D structures (:func:`chemgraph.data.readers.library_format`):
what radius graphs are made of."""


def check_input_format(path: str | Path, radius_graphs: bool) -> None:
    """Refuse a library file whose records a job cannot read, before any work.

    Args:
        path: the library file.
        radius_graphs: the job makes radius graphs of 3D structures
            (:attr:`FeaturizeOptions.radius_graphs`); False: it reads molecules (bond graphs,
            fingerprints, ``chemgraph qc``).

    Raises:
        ValueError: radius graphs of a file without 3D structures (SMILES), or molecules of an
            XYZ file (3D structures without bonds).
    """
    kind = library_format(path)
    if radius_graphs and kind not in STRUCTURE_FORMATS:
        raise ValueError(
            f"{path} holds SMILES, not 3D structures: radius graphs (3D models such as esa-3d) "
            "are made of the structures of an .sdf with 3D coordinates, an .xyz or an .extxyz "
            "file. A 3D model is trained on the structures of a geometry file (chemgraph "
            "transfer --geometry), and conformers embedded from SMILES are not those "
            "structures, so chemgraph embeds none for it: give the structures, computed as "
            "the training ones were (e.g. with the same optimisation)"
        )
    if not radius_graphs and kind == "xyz":
        raise ValueError(
            f"{path} is an XYZ file: 3D structures without bonds, which only the radius graphs "
            "of 3D models read (chemgraph predict with an esa-3d checkpoint); for molecular "
            "graphs give SMILES or an SDF"
        )


BLANK_RECORD = "blank record"
"""The reason given for a blank record (whitespace only; :mod:`chemgraph.data.readers`)."""


def reason_kind(reason: str) -> str:
    """A short category of a rejection reason, for the summary table."""
    lowered = reason.lower()
    for prefix, kind in (("timeout:", "timeout"), ("crash:", "worker crash"), ("column ", "label")):
        if lowered.startswith(prefix):
            return kind
    for needle, kind in (
        ("malformed row", "malformed table row"),
        ("not valid utf-8", "not UTF-8"),
        ("empty", "empty record"),
        ("query structure", "query structure"),
        ("dummy atom", "dummy atom (not a complete molecule)"),
        ("smiles parse error", "SMILES syntax"),
        ("smiles holds whitespace", "SMILES with whitespace"),
        ("sdf parse error", "unreadable SDF record"),
        ("valence", "valence"),
        ("kekulize", "aromaticity (kekulize)"),
        ("standardi", "standardisation failed"),
        ("etkdg", "conformer embedding failed"),
        ("xyz parse error", "unreadable XYZ frame"),
        ("no 3d coordinates", "no 3D coordinates"),
        ("3d sdf record without", "SDF without hydrogens"),
        ("no column of the model's element", "element without a column"),
    ):
        if needle in lowered:
            return kind
    return "other RDKit error"


def parse_record(record: Record) -> Chem.Mol:
    """The record's molecule (an SDF record's without its explicit hydrogens), or
    :class:`MoleculeParseError` with the reason: the parser's, or a dummy atom (``*``: not a
    complete molecule, :func:`chemgraph.chem.parse.check_complete_molecule`)."""
    if record.kind == "blank":
        raise MoleculeParseError(BLANK_RECORD)
    if record.error is not None:
        raise MoleculeParseError(record.error)
    if record.kind == "molblock":
        return check_complete_molecule(mol_from_sdf_block(record.text))
    # mols_from_smiles([record.text]) without its per-call BlockLogs: featurize_shard blocks
    # RDKit's logs once for all its records (a BlockLogs per record costs time on every molecule)
    text = record.text.strip()
    if len(text.split()) == 1:
        mol = Chem.MolFromSmiles(text)
        if mol is not None and mol.GetNumAtoms():
            return check_complete_molecule(check_smiles_molecule(mol, text), text)
    (result,) = mols_from_smiles([record.text])  # rejected: the reason, as mols_from_smiles says
    if isinstance(result, MoleculeParseError):
        raise result
    return check_complete_molecule(result, text)


def record_molecule(
    record: Record, preparation: MoleculePreparation, steps: Steps | None = None
) -> Chem.Mol:
    """The molecule a record's graph and features are made from: :func:`parse_record`, then
    the molecule preparation (standardisation and fragment policy,
    :class:`chemgraph.chem.MoleculePreparation`), the one step of ``featurize``, ``predict``
    and ``transfer``; ``steps`` is told ``"standardize"`` before a preparation that changes
    anything.

    Raises:
        MoleculeParseError: the record's reason (:func:`parse_record`) or the preparation's.
    """
    mol = parse_record(record)
    if preparation != MoleculePreparation():
        if steps is not None:
            steps("standardize")  # the step name of reasons and timeouts
        mol = preparation(mol)
    return mol


def sdf_3d_molecule(record: Record) -> Chem.Mol | None:
    """An SDF record's molecule with every atom of the record and its coordinates (Å) as the
    conformer, when they are 3D; None for a record without 3D coordinates (RDKit reads a 2D
    record, one whose header says 2D and whose z coordinates are all 0, as 2D).

    Raises:
        MoleculeParseError: the reasons of :func:`chemgraph.chem.parse.mol_from_sdf_block`, or
            a 3D record whose hydrogens are not all in it (``"3D SDF record without all its
            hydrogens (N implicit) ..."``): its coordinates lack the hydrogens', which a 3D
            structure (an xTB calculation, a radius graph) needs.
    """
    mol = mol_from_sdf_block(record.text, remove_hs=False)
    if not (mol.GetNumConformers() and mol.GetConformer().Is3D()):
        return None
    missing = sum(atom.GetTotalNumHs() for atom in mol.GetAtoms())
    if missing:
        raise MoleculeParseError(
            f"3D SDF record without all its hydrogens ({missing} implicit): a 3D structure "
            "needs every atom's coordinates; add them with coordinates (e.g. RDKit's "
            "Chem.AddHs(mol, addCoords=True), then relax them), or, for chemgraph qc, give the "
            "record without 3D coordinates (or as SMILES) to have a conformer embedded"
        )
    return mol


@dataclass(frozen=True)
class Structure:
    """One record's 3D structure, every atom as given (hydrogens included).

    Attributes:
        numbers: ``int64 [N]`` atomic numbers.
        positions: ``float64 [N, 3]`` coordinates in Å.
        mol: the SDF record's molecule (:func:`sdf_3d_molecule`); None for an XYZ frame, which
            has no bonds.
        charge: the total charge: the sum of an SDF record's formal charges, an extended-XYZ
            comment line's integer ``charge=``, else 0.
    """

    numbers: np.ndarray
    positions: np.ndarray
    mol: Chem.Mol | None
    charge: int

    def molecule(self) -> Chem.Mol:
        """The molecule with its bonds: the SDF record's, or those RDKit determines from the
        geometry and :attr:`charge` (:func:`chemgraph.chem.parse.mol_from_atoms`).

        Raises:
            MoleculeParseError: RDKit could not determine the bonds.
        """
        if self.mol is not None:
            return self.mol
        return mol_from_atoms(self.numbers, self.positions, self.charge)


def record_structure(record: Record) -> Structure:
    """The 3D structure of an SDF record (with 3D coordinates and every hydrogen:
    :func:`sdf_3d_molecule`) or of an XYZ / extended-XYZ frame
    (:func:`chemgraph.chem.parse.atoms_from_xyz_block`); what radius graphs are made of, by
    ``chemgraph predict`` and ``chemgraph transfer --geometry`` alike.

    Raises:
        MoleculeParseError: a blank or malformed record, the parsers' reasons, an SDF record
            without 3D coordinates (``"no 3D coordinates: ..."``), a SMILES record.
    """
    if record.kind == "blank":
        raise MoleculeParseError(BLANK_RECORD)
    if record.error is not None:
        raise MoleculeParseError(record.error)
    if record.kind == "xyz":
        numbers, positions, info = atoms_from_xyz_block(record.text)
        charge = info.get("charge", 0)
        charge = int(charge) if isinstance(charge, (int, np.integer)) else 0
        return Structure(numbers, positions, None, charge)
    if record.kind != "molblock":
        raise MoleculeParseError(f"a SMILES, not a 3D structure: {record.text!r}")
    mol = sdf_3d_molecule(record)
    if mol is None:
        raise MoleculeParseError(
            "no 3D coordinates: a 2D SDF record (its header says 2D, or names no dimension, "
            "and every z coordinate is 0); give the structure in 3D"
        )
    numbers = np.array([atom.GetAtomicNum() for atom in mol.GetAtoms()], dtype=np.int64)
    positions = np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64).reshape(-1, 3)
    return Structure(numbers, positions, mol, Chem.GetFormalCharge(mol))


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
    """One record's results: the molecule for the graph (or the 3D structure of a radius
    graph) and the feature-table values."""

    graph_mol: Chem.Mol | None
    smiles: str
    fingerprints: list[np.ndarray]
    descriptors: np.ndarray | None
    labels: list[float]
    structure: Structure | None = None


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
    conformer, so the feature table does not depend on ``--conformers``. With
    ``options.radius_graphs``: :func:`_featurize_structure`."""
    if options.radius_graphs is not None:
        return _featurize_structure(record, options.radius_graphs, fingerprints, steps)
    steps("parse")
    labels = []
    if record.kind != "blank" and record.error is None:  # the reasons parse_record gives go first
        for column, cell in zip(options.label_columns, record.labels):
            value, reason = parse_label(cell, column)
            if reason is not None:
                raise MoleculeParseError(reason)
            labels.append(value)
    mol = record_molecule(record, options.preparation, steps)
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


def _featurize_structure(
    record: Record,
    featurizer: RadiusGraphFeaturizer,
    fingerprints: list[Any],
    steps: Steps,
) -> Featurized:
    """One record's 3D structure for a radius graph (:func:`record_structure`), and the
    canonical SMILES and fingerprints of its molecule without its explicit hydrogens (``""``
    and zeros when RDKit cannot determine an XYZ frame's bonds)."""
    steps("parse")
    structure = record_structure(record)
    unknown = sorted(set(structure.numbers.tolist()) - set(featurizer.atomic_numbers))
    if unknown:
        table = Chem.GetPeriodicTable()
        names = ", ".join(table.GetElementSymbol(int(z)) for z in unknown)
        known = ", ".join(table.GetElementSymbol(z) for z in featurizer.atomic_numbers)
        raise MoleculeParseError(
            f"element {names} has no column of the model's element one-hot ({known}: the "
            "radius-graph featurizer's atomic_numbers); its atoms would share the column of "
            "every other element, which the checkpoint does not say training held"
        )
    steps("canonical SMILES")
    try:
        mol = Chem.RemoveHs(structure.molecule())
        smiles = Chem.MolToSmiles(mol)
    except (MoleculeParseError, ValueError, RuntimeError):  # bonds RDKit cannot determine
        mol, smiles = None, ""
    steps("fingerprints")
    values = [
        fingerprint(mol) if mol is not None else np.zeros(len(fingerprint), fingerprint.dtype)
        for fingerprint in fingerprints
    ]
    return Featurized(None, smiles, values, None, [], structure)


def record_input(record: Record) -> str:
    """What a row shows of the record as the user gave it (the ``input`` of ``rejected.csv``
    and of a feature table): its text as read (a SMILES; ``""`` for a blank record), an SDF
    record's title line, an XYZ frame's comment line."""
    text = record.text
    if record.kind == "molblock":
        return text.split("\n", 1)[0].strip()
    if record.kind == "xyz":
        lines = text.split("\n")
        return (lines[1] if len(lines) > 1 else lines[0]).strip()
    return text


def rejected_row(record: Record, reason: str) -> tuple[int, str, str, str]:
    """A rejected record's row of ``rejected.csv``
    (:data:`chemgraph.data.readers.REJECTED_COLUMNS`: ``row, id, input, reason``; the input:
    :func:`record_input`)."""
    return (record.row, record.id, record_input(record), reason)


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
    """The shard's feature table: ``id``, ``row``, ``input`` (:func:`record_input`), ``smiles``
    (canonical), the fingerprints, descriptors and labels; its columns built from their buffers
    (:func:`_numbers`, :func:`_strings`): ``pa.array`` imports pandas (start-up CPU time in
    every worker: ``benchmarks/README.md``, "The whole command beside the in-memory
    featurizer") to check whether its argument is a pandas object."""
    columns: dict[str, pa.Array] = {
        "id": _strings([r.id for r in records]),
        "row": _numbers(np.array([r.row for r in records], dtype=np.int64)),
        "input": _strings([record_input(r) for r in records]),
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
