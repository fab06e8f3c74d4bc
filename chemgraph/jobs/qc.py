"""Cheap quantum-chemistry labels for a compound library (``chemgraph qc``): GFN2-xTB HOMO,
LUMO and gap in eV, on conformers RDKit embeds.

GFN2-xTB: C. Bannwarth, S. Ehlert, S. Grimme (2019), "GFN2-xTB — An Accurate and Broadly
Parametrized Self-Consistent Tight-Binding Quantum Chemical Method with Multipole
Electrostatics and Density-Dependent Dispersion Contributions", *J. Chem. Theory Comput.* 15,
1652-1671, doi:10.1021/acs.jctc.8b01176; computed with tblite (:func:`chemgraph.qc.
xtb_frontier_orbitals`). The orbital energies are tight-binding eigenvalues, not ionisation
energies or electron affinities: a cheap, systematically shifted label, to pretrain on before
fine-tuning on a few expensive ones (``chemgraph train --init-from``, the transfer guide).

Per record (:func:`label_record`): the molecule is read as ``chemgraph featurize`` reads it
(:func:`chemgraph.library.records.parse_record`); a SMILES, or an SDF record without 3D
coordinates, gets ``conformers`` ETKDGv3 conformers relaxed with MMFF94, and the one of
lowest MMFF94 energy is used (:func:`chemgraph.library.records.lowest_energy_conformer`,
seeded; when MMFF94 has no parameters for the molecule, the first ETKDGv3 conformer, not
relaxed; a single atom is put at the origin, nothing to embed); an SDF record with 3D
coordinates is used as given, with its hydrogens (a 3D record whose hydrogens are not all in
the file is rejected). The ``geometry`` column says which (:data:`EMBEDDED`,
:data:`NOT_RELAXED`, :data:`SINGLE_ATOM`, :data:`AS_GIVEN`). The total charge is the sum of the
formal charges. The labels are the HOMO and LUMO of one closed-shell singlet, so what that
cannot describe is rejected: open shells (radicals, an odd electron count), transition metals
and lanthanides (:data:`TRANSITION_METALS`: open d/f shells the electron count does not show),
records of several fragments (salts, solvates: the ions' orbitals depend on where the fragments
are put) and results whose HOMO and LUMO are one level (:data:`DEGENERATE_GAP_EV`).

Output folder::

    manifest.json                input sha256, options, chemgraph and tblite versions, counts,
                                 status ("running", "interrupted", "complete")
    labels.csv | labels.parquet  row, id, smiles, homo_ev, lumo_ev, gap_ev, method, geometry:
                                 one row per labelled record, in input order
    rejected.csv                 row, id, input, reason (every record that got no label)
    parts/shard-NNNNN.parquet    a shard's labels; parts/shard-NNNNN.csv its rejects;
    parts/shard-NNNNN.json       its counts, written last: the shard is complete

``overwrite`` (``--overwrite``) removes these (:data:`OUTPUTS`) from an earlier run's folder
before writing, and leaves every other file there.

Every record is accounted for: ``read == labelled + rejected``, and ``blank`` counts the blank
records (whitespace only; neither labelled nor in ``rejected.csv``). The kinds of rejection
reasons are :data:`REJECT_REASONS` (also in ``chemgraph qc --help`` and the transfer guide):
the parser's (invalid SMILES, unreadable SDF record: RDKit's message), ``"several fragments
..."``, ``"transition metal or lanthanide ..."``, ``"3D SDF record without all its hydrogens
..."``, ``"ETKDGv3 could not embed a conformer ..."``, ``"unsupported element(s) ..."``
(GFN2-xTB is parametrised for H-Rn, Z 1-86), ``"open shell ..."``, ``"SCF not converged
..."``, ``"xtb failed: ..."`` (another tblite error), ``"degenerate HOMO and LUMO ..."``, and
``"timeout: <step> (over N s)"`` / ``"crash: ..."`` from the workers.

The shards run in the library's worker processes, as ``chemgraph featurize``'s do
(:func:`chemgraph.library.workers.run_local`: heartbeats, a per-record time limit, a crashed
worker replaced), each on one thread, and the folder is kept as featurize's is
(:mod:`chemgraph.library.output`: shard parts, manifest, ``rejected.csv``, counts). ``resume``
keeps the complete shards of an interrupted run (same input and options) and computes the
others; SIGINT (Ctrl-C) and SIGTERM stop the workers at once and keep the complete shards
(:class:`QCInterrupted`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from rdkit import Chem

import chemgraph
from chemgraph._files import (
    atomic_path,
    file_digest,
    write_parquet_atomically,
)
from chemgraph._interrupts import ShardsInterrupted, interrupts_raise
from chemgraph._output import claimed_folder
from chemgraph.chem import MoleculeParseError
from chemgraph.data.readers import Record, iter_record_chunks
from chemgraph.errors import MissingDependencyError
from chemgraph.library.output import (
    ShardSummary,
    finish_output,
    finish_shard,
    mark_interrupted,
    prepare_output,
    shard_name,
    summary_lines,
)
from chemgraph.library.records import (
    Steps,
    check_input_format,
    lowest_energy_conformer,
    parse_record,
    process_records,
    reason_kind,
    sdf_3d_molecule,
)
from chemgraph.library.runner import check_restart, check_run, run_shards
from chemgraph.library.workers import run_local
from chemgraph.qc import QCMolecule, SCFNotConvergedError, xtb_frontier_orbitals

__all__ = [
    "LABEL_COLUMNS",
    "METHODS",
    "OUTPUTS",
    "REJECT_REASONS",
    "QCInterrupted",
    "QCOptions",
    "label_library",
    "label_record",
    "label_shard",
    "qc_reason_kind",
    "summary_table",
]

METHODS = ("GFN2-xTB", "GFN1-xTB")
"""The tight-binding methods of tblite."""
LABEL_COLUMNS = ("row", "id", "smiles", "homo_ev", "lumo_ev", "gap_ev", "method", "geometry")
"""The columns of ``labels.csv`` / ``labels.parquet``."""
OUTPUTS = ("manifest.json", "parts", "labels.csv", "labels.parquet", "rejected.csv")
"""Everything :func:`label_library` writes in its output folder: what ``overwrite`` removes."""
REJECT_REASONS = (
    "invalid SMILES or unreadable SDF record (RDKit's message)",
    "several fragments (a salt or solvate)",
    "transition metal or lanthanide",
    "3D SDF record without all its hydrogens",
    "ETKDGv3 could not embed a conformer",
    "unsupported element (GFN2-xTB: H-Rn)",
    "open shell",
    "SCF not converged (--max-cycle)",
    "xtb failed (another tblite error)",
    "degenerate HOMO and LUMO",
    "timeout: <step> (--record-timeout)",
    "crash: <step> (the worker died)",
)
"""The kinds of reason of ``chemgraph qc``'s ``rejected.csv``, in the order a record's steps
meet them (``chemgraph qc --help`` and the transfer guide list them)."""
XTB_ELEMENTS = range(1, 87)
"""Atomic numbers GFN2-xTB (and GFN1-xTB) are parametrised for: H to Rn."""
EMBEDDED, NOT_RELAXED, SINGLE_ATOM, AS_GIVEN = (
    "ETKDGv3+MMFF94", "ETKDGv3 (no MMFF94 parameters)", "single atom", "input"
)  # fmt: skip
"""The ``geometry`` column: what was done to get the coordinates: a conformer embedded with
ETKDGv3 and relaxed with MMFF94; embedded but not relaxed (MMFF94 has no parameters for an
element or atom type of the molecule); a single atom at the origin (nothing to embed or relax);
the SDF record's own coordinates."""
TRANSITION_METALS = frozenset([*range(21, 31), *range(39, 49), *range(57, 81)])
"""Atomic numbers of the transition metals (groups 3-12: Sc-Zn, Y-Cd, Hf-Hg) and lanthanides
(La-Lu), which ``chemgraph qc`` rejects: their partly filled d or f shells give near-degenerate
frontier orbitals and spin states that the HOMO and LUMO of one closed-shell singlet
determinant (what GFN2-xTB computes here) do not describe."""
DEGENERATE_GAP_EV = 1e-3
"""A result with ``|LUMO - HOMO|`` below this (eV) is rejected as degenerate: the HOMO and LUMO
are one partly filled level, not a closed shell."""


@dataclass(frozen=True)
class QCOptions:
    """What ``chemgraph qc`` computes (recorded in the manifest; resume needs the same).

    Attributes:
        method: ``"GFN2-xTB"`` (default) or ``"GFN1-xTB"``.
        conformers: ETKDGv3 conformers embedded per molecule (>= 1); the lowest-MMFF94-energy
            one is labelled. Not used for SDF records with 3D coordinates.
        seed: conformer embedding seed (the same seed gives the same geometry and label).
        max_cycle: self-consistent-charge iteration limit of tblite.
        smiles_column, id_column: input columns (tables) or SD property (``id_column``, SDF).

    Raises:
        ValueError: an unknown method, ``conformers`` or ``max_cycle`` below 1.
    """

    method: str = "GFN2-xTB"
    conformers: int = 10
    seed: int = 0
    max_cycle: int = 250
    smiles_column: str | None = None
    id_column: str | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.conformers < 1 or self.max_cycle < 1:
            raise ValueError(
                f"conformers and max_cycle must be >= 1, got {self.conformers}, {self.max_cycle}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class QCInterrupted(ShardsInterrupted):
    """SIGINT (Ctrl-C) or SIGTERM stopped :func:`label_library`; the workers are stopped, the
    complete shards are kept in ``output`` and ``resume=True`` (``--resume``) continues.

    Attributes:
        signum: ``signal.SIGINT`` or ``signal.SIGTERM``.
        output: the output folder, or None when the signal came before it was prepared.
        shards_done: complete shards in ``output``.
    """


def qc_reason_kind(reason: str) -> str:
    """A short category of a rejection reason of ``chemgraph qc``, for the summary table
    (the parser's and the workers' reasons as :func:`chemgraph.library.records.reason_kind`
    sorts them)."""
    for prefix, kind in (
        ("scf not converged", "SCF not converged"),
        ("unsupported element", "unsupported element"),
        ("transition metal", "transition metal/lanthanide"),
        ("several fragments", "several fragments"),
        ("degenerate homo", "degenerate HOMO/LUMO"),
        ("open shell", "open shell"),
        ("xtb failed", "xtb failed"),
    ):
        if reason.lower().startswith(prefix):
            return kind
    return reason_kind(reason)


def _geometry(record: Record, options: QCOptions, steps: Steps) -> tuple[Chem.Mol, str]:
    """The molecule with explicit hydrogens and one conformer (Å), and what was done to get it
    (:data:`EMBEDDED`, :data:`NOT_RELAXED`, :data:`SINGLE_ATOM`, :data:`AS_GIVEN`)."""
    steps("parse")
    mol = parse_record(record)
    fragments = len(Chem.GetMolFrags(mol))
    if fragments > 1:  # embedded apart or together, the ions' HOMO/LUMO depend on where
        raise MoleculeParseError(
            f"several fragments ({fragments}, e.g. a salt or a solvate): chemgraph qc labels "
            "one molecule per record; give the fragments as records of their own, or the "
            "largest (chemgraph.chem.MoleculePreparation(fragments='largest'))"
        )
    metals = sorted(
        {a.GetSymbol() for a in mol.GetAtoms() if a.GetAtomicNum() in TRANSITION_METALS}
    )
    if metals:
        raise MoleculeParseError(
            f"transition metal or lanthanide {', '.join(metals)}: open d/f shells that the "
            "HOMO and LUMO of a closed-shell GFN2-xTB singlet do not describe"
        )
    if record.kind == "molblock":
        given = sdf_3d_molecule(record)
        if given is not None:
            return given, AS_GIVEN
    with_hydrogens = Chem.AddHs(mol)
    if with_hydrogens.GetNumAtoms() == 1:  # nothing to embed or relax: the atom at the origin
        with_hydrogens.AddConformer(Chem.Conformer(1), assignId=True)
        return with_hydrogens, SINGLE_ATOM
    steps("conformers")
    conformer, relaxed = lowest_energy_conformer(mol, options.conformers, options.seed)
    return conformer, EMBEDDED if relaxed else NOT_RELAXED


def label_record(record: Record, options: QCOptions, steps: Steps | None = None) -> dict:
    """The label row of one record (:data:`LABEL_COLUMNS`).

    Args:
        record: a record of :func:`chemgraph.data.readers.iter_record_chunks`.
        options: the method and conformer settings.
        steps: reports the steps (``parse``, ``conformers``, ``xtb``) to the worker's
            heartbeat; None: not reported.

    Returns:
        ``{"row", "id", "smiles" (canonical, without hydrogens), "homo_ev", "lumo_ev",
        "gap_ev" (= LUMO − HOMO, eV), "method", "geometry"}`` (``geometry``: what was done,
        :data:`EMBEDDED`, :data:`NOT_RELAXED`, :data:`SINGLE_ATOM` or :data:`AS_GIVEN`).

    Raises:
        MoleculeParseError: the record is rejected; ``reason`` says why (see the module
            docstring).
    """
    steps = steps or Steps(None)
    mol, geometry = _geometry(record, options, steps)
    numbers = [atom.GetAtomicNum() for atom in mol.GetAtoms()]
    unsupported = sorted(
        {a.GetSymbol() for a in mol.GetAtoms() if a.GetAtomicNum() not in XTB_ELEMENTS}
    )
    if unsupported:
        raise MoleculeParseError(
            f"unsupported element(s) {', '.join(unsupported)} for {options.method} "
            "(parametrised for H-Rn, Z 1-86)"
        )
    radicals = sum(atom.GetNumRadicalElectrons() for atom in mol.GetAtoms())
    charge = Chem.GetFormalCharge(mol)
    if radicals or (sum(numbers) - charge) % 2:
        raise MoleculeParseError(
            f"open shell ({radicals} radical electron(s), {sum(numbers) - charge} electrons); "
            "chemgraph qc labels closed-shell molecules only"
        )
    molecule = QCMolecule(
        record.id,
        tuple(atom.GetSymbol() for atom in mol.GetAtoms()),
        mol.GetConformer().GetPositions(),
        charge=charge,
    )
    steps("xtb")
    try:
        result = xtb_frontier_orbitals(molecule, options.method, options.max_cycle)
    except SCFNotConvergedError as error:
        raise MoleculeParseError(f"SCF not converged: {error}") from None
    except Exception as error:  # noqa: BLE001 - tblite's errors: the record is rejected
        raise MoleculeParseError(f"xtb failed: {type(error).__name__}: {error}") from None
    gap = result.lumo_ev - result.homo_ev
    if abs(gap) < DEGENERATE_GAP_EV:
        raise MoleculeParseError(
            f"degenerate HOMO and LUMO (gap {gap:.1e} eV, below {DEGENERATE_GAP_EV:g} eV): a "
            "partly filled level, not a closed shell"
        )
    return {
        "row": record.row,
        "id": record.id,
        "smiles": Chem.MolToSmiles(Chem.RemoveHs(mol)),
        "homo_ev": result.homo_ev,
        "lumo_ev": result.lumo_ev,
        "gap_ev": gap,
        "method": result.method,
        "geometry": geometry,
    }


_SCHEMA = pa.schema(
    [("row", pa.int64()), ("id", pa.string()), ("smiles", pa.string())]
    + [(name, pa.float64()) for name in ("homo_ev", "lumo_ev", "gap_ev")]
    + [("method", pa.string()), ("geometry", pa.string())]
)


def label_shard(
    shard: int,
    records: list[Record],
    options: QCOptions,
    output: str,
    skip: Mapping[int, str] | None = None,
    on_step: Callable[[int, str], None] | None = None,
) -> ShardSummary:
    """Label one shard and write ``parts/shard-NNNNN.{parquet,csv,json}`` under ``output``
    (the ``.json`` counts last: the shard is complete). The form
    :func:`chemgraph.library.workers.run_local` runs in its workers.

    Args:
        shard: shard number (names the files).
        records: the shard's records, in input order.
        options: what to compute.
        output: the output folder (its ``parts`` folder exists).
        skip: ``{row: reason}`` of records to reject without computing them (records that
            timed out or crashed a worker in an earlier attempt).
        on_step: called as ``on_step(position, step)`` when ``records[position]`` enters a
            step, and with ``position == -1`` for the shard's ``"write"`` phase.

    Returns:
        The shard's counts (``featurized`` counts the labelled records). Bad records never
        raise: they are written to the shard's rejected part with the reason.
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # tblite's OpenMP, loaded in this worker
    out = Path(output)
    steps = Steps(on_step)

    def compute(record: Record, steps: Steps) -> dict:
        return label_record(record, options, steps)

    done, rejected = process_records(records, compute, steps, skip or {})
    # qc's input column is the record's text stripped (featurize's keeps a SMILES as read)
    rejected = [(row, identifier, text.strip(), why) for row, identifier, text, why in rejected]
    steps("write")
    table = pa.Table.from_pylist([row for _, row in done], schema=_SCHEMA)
    write_parquet_atomically(table, out / "parts" / f"{shard_name(shard)}.parquet")
    return finish_shard(out, shard, records, len(done), rejected, qc_reason_kind)


def _completed(out: Path, shard: int) -> ShardSummary | None:
    """The summary of a complete shard (its counts, labels and rejects all there and
    consistent), else None: the shard is computed again."""
    name = shard_name(shard)
    try:
        summary = ShardSummary(**json.loads((out / "parts" / f"{name}.json").read_text()))
        labelled = pq.ParquetFile(out / "parts" / f"{name}.parquet").metadata.num_rows
        (out / "parts" / f"{name}.csv").stat()
    except (OSError, TypeError, ValueError, pa.ArrowException):
        return None
    return summary if labelled == summary.featurized else None


def _tblite_version() -> str:
    """The installed tblite's version.

    Raises:
        MissingDependencyError: tblite is not installed.
    """
    if importlib.util.find_spec("tblite") is None:
        raise MissingDependencyError(
            "chemgraph qc needs tblite (GFN2-xTB): pip install 'chemgraph[qc]'"
        )
    return importlib.metadata.version("tblite")


def label_library(
    input_path: str | Path,
    output: str | Path,
    options: QCOptions,
    workers: int = 1,
    shard_size: int = 100,
    resume: bool = False,
    table_format: Literal["csv", "parquet"] = "csv",
    progress: bool = True,
    record_timeout: float | None = 600.0,
    overwrite: bool = False,
) -> dict[str, Any]:
    """GFN2-xTB HOMO, LUMO and gap (eV) of every molecule of a library, into ``output`` (the
    layout is in the module docstring).

    Args:
        input_path: ``.smi``, ``.csv``, ``.tsv``, ``.parquet`` or ``.sdf``, optionally gzipped
            (as ``chemgraph featurize`` reads them); read streaming, ``shard_size`` at a time.
        output: output folder; new or empty, with ``resume`` an earlier run of the same
            input and options (:func:`chemgraph._output.resumable_folder`), or with
            ``overwrite`` any folder.
        options: method and conformer settings.
        workers: worker processes (at least one; shards never run in this process). A script
            calling this function needs the ``if __name__ == "__main__":`` guard.
        shard_size: records per shard: the unit of resuming (a shard is computed again when
            it was not finished).
        resume: continue an interrupted run in ``output``: complete shards are kept.
        table_format: ``labels.csv`` or ``labels.parquet``.
        progress: records done, and the total once counted: a bar on stderr when it is a
            terminal, else a plain line every 30 s (:mod:`chemgraph.library.progress`).
        record_timeout: the most seconds one record may spend in one step (parse,
            conformers, xtb); a record over it is rejected as ``"timeout: <step> (over N s)"``;
            None: no limit.
        overwrite: start again in an ``output`` that holds an earlier run or other files:
            what this function writes there (:data:`OUTPUTS`) is removed once the input and its
            columns have been checked; any other file is left.

    Returns:
        The manifest (also ``output/manifest.json``): ``counts`` holds ``read``, ``blank``,
        ``labelled``, ``rejected`` (``read == labelled + rejected``; a blank record is counted
        in ``blank`` only),
        ``rejected_by_reason`` and ``shards``; ``table`` the labels file's name.

    Raises:
        MissingDependencyError: tblite is not installed.
        ConfigError: ``resume`` with ``overwrite``.
        ValueError: bad arguments, an XYZ input (no bonds, no charges: chemgraph qc reads
            SMILES and SDF records), an input with no records, or (without ``overwrite``) an
            ``output`` that holds a different run, any run without ``resume``, or other files.
        FileNotFoundError: no such input.
        QCInterrupted: SIGINT or SIGTERM (main thread only); the manifest's status is then
            ``"interrupted"``.
    """
    if table_format not in ("csv", "parquet"):
        raise ValueError(f"table_format must be 'csv' or 'parquet', got {table_format!r}")
    check_restart(resume, overwrite)
    input_path, out = check_run(input_path, output, workers, shard_size, record_timeout)
    check_input_format(input_path, radius_graphs=False)
    tblite = _tblite_version()
    with interrupts_raise(QCInterrupted), claimed_folder(out, "--output"):
        manifest: dict[str, Any] = {
            "chemgraph_version": chemgraph.__version__,
            "program": f"tblite {tblite}",
            "input": input_path.name,
            "input_sha256": file_digest(input_path),
            "options": options.to_dict(),
            "shard_size": shard_size,
        }
        chunks = iter_record_chunks(input_path, 1, options.smiles_column, options.id_column)
        if next(chunks, None) is None:  # checks the columns before anything is written
            raise ValueError(f"{input_path} holds no records")
        identity = tuple(key for key in manifest if key != "input")
        prepare_output(out, manifest, identity, ("parts",), resume, OUTPUTS if overwrite else None)
        try:
            summaries = _label_shards(
                input_path, out, options, workers, shard_size, resume, progress, record_timeout
            )
        except QCInterrupted as stop:
            raise QCInterrupted(stop.signum, out, mark_interrupted(manifest, out)) from None
        return _finish(manifest, summaries, out, table_format)


def _label_shards(
    input_path: Path,
    out: Path,
    options: QCOptions,
    workers: int,
    shard_size: int,
    resume: bool,
    progress: bool,
    record_timeout: float | None,
) -> list[ShardSummary]:
    """Run every shard not already complete; the summaries in shard order."""

    def runner(
        shards: Iterator[tuple[int, list[Record]]],
        notice: Callable[[str], None],
        advance: Callable[[int], None],
    ) -> Iterator[ShardSummary]:
        return run_local(
            shards, options, out, workers, record_timeout, notice, advance, label_shard
        )

    return run_shards(
        input_path, shard_size, runner, command="qc", progress=progress,
        smiles_column=options.smiles_column, id_column=options.id_column,
        completed=(lambda shard: _completed(out, shard)) if resume else None,
    )  # fmt: skip


def _finish(
    manifest: dict[str, Any], shards: list[ShardSummary], out: Path, table_format: str
) -> dict[str, Any]:
    """Write the labels table, ``rejected.csv`` and the complete manifest."""
    numbers = [s.shard for s in shards]
    table = pa.concat_tables(
        [pq.read_table(out / "parts" / f"{shard_name(n)}.parquet") for n in numbers]
        or [_SCHEMA.empty_table()]
    )
    name = f"labels.{table_format}"
    for stale in {"labels.csv", "labels.parquet"} - {name}:
        (out / stale).unlink(missing_ok=True)
    if table_format == "parquet":
        write_parquet_atomically(table, out / name)
    else:
        temporary = atomic_path(out / name)
        pa_csv.write_csv(table, temporary)
        os.replace(temporary, out / name)
    manifest["table"] = name
    return finish_output(manifest, shards, out, "labelled")


def summary_table(manifest: dict[str, Any]) -> str:
    """The end-of-run summary: read, blank, labelled, rejected by reason."""
    return "\n".join(summary_lines(manifest["counts"], "labelled"))
