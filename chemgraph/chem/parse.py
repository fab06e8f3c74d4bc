"""RDKit parsing: SMILES strings and SDF files to sanitised ``Chem.Mol`` objects.

This is the first layer of chemgraph (``docs/architecture.md``, "Layers"): everything that turns
a text record into an RDKit molecule lives here, and every failure is reported the same way, as
a :class:`MoleculeParseError` whose ``reason`` is RDKit's own message. Nothing here prints: RDKit's
log output for bad records is captured (error log) or blocked (warnings, info) while a record is
parsed, so a dataset with thousands of bad rows leaves stderr clean. Callers decide whether to
log, count or re-raise.

Public API
----------
- :class:`MoleculeParseError` — ``ValueError`` with a ``reason: str`` attribute.
- :data:`FragmentPolicy` — ``"keep"`` (all fragments) or ``"largest"`` (largest fragment).
- :func:`mol_from_smiles` — one SMILES string to a sanitised molecule, or raise.
- :func:`iter_sdf` — every record of an SDF file (plain or gzip), bad ones included.
- :func:`iter_sdf_blocks` — the raw text of every record of an SDF file: the one SDF record
  splitter of chemgraph (``iter_sdf`` and ``chemgraph featurize`` both use it).
- :func:`mol_from_sdf_block` — one SDF record to a sanitised molecule, or raise.
- :func:`positions` — float32 [num_atoms, 3] coordinates (Å) of the first conformer.
- :func:`atoms_from_xyz_block` — one XYZ or extended-XYZ frame to atomic numbers and
  coordinates (ASE), or raise.
- :func:`mol_from_atoms` — atoms with 3D coordinates to a sanitised molecule whose bonds RDKit
  determines from the geometry (``rdDetermineBonds``), or raise.
- :func:`check_complete_molecule` — a record's molecule unless it holds a dummy atom (``*``,
  :func:`dummy_atom_reason`): what ``featurize``, ``predict``, ``train`` and ``transfer`` accept.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
from rdkit import Chem, rdBase
from rdkit.Chem.MolStandardize import rdMolStandardize

from chemgraph._files import open_compressed
from chemgraph.errors import ChemgraphError

__all__ = [
    "FRAGMENT_POLICIES",
    "FragmentPolicy",
    "MoleculeParseError",
    "apply_fragment_policy",
    "atoms_from_xyz_block",
    "check_complete_molecule",
    "check_fragment_policy",
    "check_smiles_molecule",
    "dummy_atom_reason",
    "iter_sdf",
    "iter_sdf_blocks",
    "mol_from_atoms",
    "mol_from_sdf_block",
    "mol_from_smiles",
    "mols_from_smiles",
    "positions",
    "query_reason",
    "split_smiles_line",
]

FragmentPolicy = Literal["keep", "largest"]
"""What to do with multi-fragment records (salts, solvates, mixtures such as ``CC(=O)[O-].[Na+]``):

- ``"keep"``: keep every fragment; the molecule is one disconnected graph.
- ``"largest"``: keep only the fragment with the most heavy atoms (ties broken by RDKit's
  ``LargestFragmentChooser``: larger molecular weight, then alphabetical canonical SMILES).
"""

FRAGMENT_POLICIES: tuple[str, ...] = ("keep", "largest")

# RDKit prefixes every log line with a "[HH:MM:SS] " timestamp.
_TIMESTAMP = re.compile(r"^\[\d{2}:\d{2}:\d{2}\] ?")


class MoleculeParseError(ChemgraphError, ValueError):
    """A record could not be turned into a sanitised RDKit molecule.

    Attributes:
        reason: human-readable cause, RDKit's own message where RDKit gives one, e.g.
            ``"Explicit valence for atom # 0 N, 5, is greater than permitted"``,
            ``"Can't kekulize mol.  Unkekulized atoms: 0 1 2 3 4"``,
            ``"SMILES parse error: unclosed ring for input: 'C1CC'"`` or ``"empty SMILES"``.
            Never empty.
        record: the offending SMILES string (stripped), or ``None`` when there is none to show.
    """

    def __init__(self, reason: str, record: str | None = None) -> None:
        # RDKit's messages can span lines (a caret under the bad token); one line reads better
        # in a CSV cell or a log.
        lines = [line.strip() for line in (reason or "").splitlines() if line.strip()]
        self.reason = " | ".join(lines) or "unknown RDKit error"
        self.record = record
        if record is None:
            super().__init__(self.reason)
        else:
            super().__init__(f"cannot parse {record!r}: {self.reason}")

    def __reduce__(self) -> tuple[type[MoleculeParseError], tuple[str, str | None]]:
        # Keep ``reason`` and ``record`` across pickling (DataLoader worker processes).
        return type(self), (self.reason, self.record)


class _Capture:
    """RDKit error-log lines emitted inside :func:`rdkit_log_capture`, timestamps removed."""

    def __init__(self) -> None:
        self._source: rdBase.CaptureErrorLog | None = None

    @property
    def lines(self) -> list[str]:
        if self._source is None:
            return []
        out = []
        for line in self._source.messages.splitlines():
            line = _TIMESTAMP.sub("", line).rstrip()
            if line:
                out.append(line)
        return out


@contextlib.contextmanager
def rdkit_log_capture() -> Iterator[_Capture]:
    """Silence RDKit's logs and collect its error-log lines for the enclosed calls.

    Uses ``rdBase.BlockLogs`` (nothing reaches stderr or the Python logger) around
    ``rdBase.CaptureErrorLog`` (error messages are recorded, not printed). With an RDKit older
    than ``CaptureErrorLog`` the logs are only blocked and ``lines`` stays empty, so callers
    fall back to a generic reason. Keep the enclosed block short (one record): ``BlockLogs`` is
    process-wide, so other threads' RDKit warnings are also silenced meanwhile.
    """
    capture = _Capture()
    with contextlib.ExitStack() as stack:
        stack.enter_context(rdBase.BlockLogs())
        if hasattr(rdBase, "CaptureErrorLog"):
            capture._source = stack.enter_context(rdBase.CaptureErrorLog())
        yield capture


def _smiles_parse_reason(lines: list[str]) -> str:
    """``"SMILES parse error: <RDKit's lines>"`` with RDKit's own prefix removed."""
    cleaned = [re.sub(r"^SMILES Parse Error:\s*", "", line) for line in lines]
    if not cleaned:
        return "SMILES parse error"
    return "SMILES parse error: " + "\n".join(cleaned)


def _chemistry_reason(mol: Chem.Mol) -> str | None:
    """RDKit's messages for why an unsanitised molecule fails sanitisation, or ``None``."""
    with rdkit_log_capture():
        problems = Chem.DetectChemistryProblems(mol)
    return "; ".join(p.Message() for p in problems) or None


def apply_fragment_policy(mol: Chem.Mol, fragments: FragmentPolicy) -> Chem.Mol:
    """``mol`` (``"keep"``), or its largest fragment by heavy atoms (``"largest"``, RDKit's
    ``LargestFragmentChooser``): the salt and solvent policy of :data:`FragmentPolicy`."""
    if fragments == "largest" and len(Chem.GetMolFrags(mol)) > 1:
        params = rdMolStandardize.CleanupParameters()
        params.largestFragmentChooserCountHeavyAtomsOnly = True
        with rdkit_log_capture():
            mol = rdMolStandardize.LargestFragmentChooser(params).choose(mol)
    return mol


def check_fragment_policy(fragments: str) -> None:
    """Raises ValueError unless ``fragments`` is one of :data:`FRAGMENT_POLICIES`."""
    if fragments not in FRAGMENT_POLICIES:
        raise ValueError(f"fragments must be one of {FRAGMENT_POLICIES}, got {fragments!r}")


def query_reason(mol: Chem.Mol) -> str | None:
    """Why ``mol`` is a query structure rather than a molecule, or ``None`` when it is not.

    A query bond (``~`` in SMILES; molfile bond types 5-8: single or double, single or
    aromatic, double or aromatic, any) or a query atom (molfile ``A``, ``Q``, atom lists)
    stands for a set of molecules: it has no bond order or element to featurize, and its
    written SMILES does not read back as the same structure. RDKit marks both with
    ``HasQuery()``.
    """
    for bond in mol.GetBonds():
        if bond.HasQuery():
            return (
                f"query structure, not a molecule: bond {bond.GetIdx()} (atoms "
                f"{bond.GetBeginAtomIdx()}-{bond.GetEndAtomIdx()}) is a query bond ('~' in "
                "SMILES, molfile bond types 5-8: single or double, single or aromatic, double "
                "or aromatic, any)"
            )
    for atom in mol.GetAtoms():
        if atom.HasQuery():
            return (
                f"query structure, not a molecule: atom {atom.GetIdx()} is a query atom "
                f"({atom.GetSmarts()}; molfile A, Q or an atom list)"
            )
    return None


def check_smiles_molecule(mol: Chem.Mol, text: str) -> Chem.Mol:
    """``mol`` (parsed from SMILES ``text``) unless it is a query (:func:`query_reason`).

    SMILES can hold query bonds only as ``~``, so molecules whose text has none are not
    scanned (this runs on every record of a library).

    Raises:
        MoleculeParseError: ``mol`` holds a query bond.
    """
    if "~" in text and (reason := query_reason(mol)) is not None:
        raise MoleculeParseError(reason, text)
    return mol


def dummy_atom_reason(mol: Chem.Mol) -> str | None:
    """Why ``mol`` is not a complete molecule, or ``None`` when it is.

    A dummy atom (atomic number 0: ``*``, ``[*:1]``, ``[1*]`` in SMILES; an ``R#`` or ``*``
    atom of a molfile) marks an attachment point or an unspecified group: RDKit sanitises it,
    but the record is a fragment of a molecule, whose properties a model trained on molecules
    does not predict.
    """
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() == 0:
            return (
                f"dummy atom '*' (attachment point) at atom {atom.GetIdx()}; not a complete "
                "molecule: replace it with the atom or group it stands for"
            )
    return None


def check_complete_molecule(mol: Chem.Mol, text: str | None = None) -> Chem.Mol:
    """``mol`` unless it holds a dummy atom (:func:`dummy_atom_reason`): the check of a
    library's or a training table's records (``chemgraph featurize``, ``predict``,
    ``fingerprint``, ``qc``, ``train``, ``transfer``), which reaction parsing does not make.

    Args:
        mol: the record's molecule, as parsed (before standardisation or a fragment policy).
        text: the SMILES ``mol`` was parsed from: one without ``*`` or ``#0`` holds no dummy
            atom and is not scanned (this runs on every record of a library); None (an SDF
            record): scanned.

    Raises:
        MoleculeParseError: ``mol`` holds a dummy atom.
    """
    scan = text is None or "*" in text or "#0" in text
    if scan and (reason := dummy_atom_reason(mol)) is not None:
        raise MoleculeParseError(reason, text)
    return mol


def split_smiles_line(line: str) -> tuple[str, str]:
    """``(smiles, name)`` of a SMILES line as RDKit reads one: the SMILES, its CXSMILES
    extension block when the text after the first whitespace starts with ``|`` (up to the
    closing ``|``, kept with the SMILES: ``"C[C@H](O)CC |&1:1|"``), then the name (stripped,
    ``""`` when none). A ``|`` block that is never closed is left to the name (RDKit then
    rejects nothing, and the SMILES is read without it).
    """
    fields = line.split(maxsplit=1)
    if not fields:
        return "", ""
    if len(fields) == 1:
        return fields[0], ""
    rest = fields[1]
    end = rest.find("|", 1) if rest.startswith("|") else -1
    if end < 0:
        return fields[0], rest.strip()
    return f"{fields[0]} {rest[: end + 1]}", rest[end + 1 :].strip()


def _flatten_enhanced_stereo(mol: Chem.Mol) -> Chem.Mol:
    """Atoms of AND (racemic) and OR (one enantiomer, unknown which) enhanced-stereo groups
    lose their chiral tag, and those groups are removed; absolute (ABS) stereo stays.

    Per-atom chirality features can only say "this enantiomer", so a racemate written with its
    stereo group (``C[C@H](O)CC |&1:1|``) is featurized as the molecule without stereo at
    those atoms, never as the pure enantiomer its tags alone would describe."""
    groups = mol.GetStereoGroups()
    if not any(g.GetGroupType() != Chem.StereoGroupType.STEREO_ABSOLUTE for g in groups):
        return mol
    mol = Chem.Mol(mol)
    for group in mol.GetStereoGroups():
        if group.GetGroupType() != Chem.StereoGroupType.STEREO_ABSOLUTE:
            for atom in group.GetAtoms():
                atom.SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED)
    Chem.CleanupStereoGroups(mol)
    Chem.AssignStereochemistry(mol, cleanIt=True, force=True)
    return mol


def mol_from_smiles(smiles: str, fragments: FragmentPolicy = "keep") -> Chem.Mol:
    """Parse one SMILES string into a sanitised RDKit molecule (implicit hydrogens).

    The molecule is exactly what ``Chem.MolFromSmiles(smiles.strip())`` gives with RDKit's
    defaults (sanitised, explicit ``[H]`` atoms merged, stereochemistry assigned), then the
    fragment policy is applied. When RDKit rejects the string, it is parsed again with
    ``sanitize=False`` to find out why: a syntax error keeps RDKit's parser message, otherwise
    ``Chem.DetectChemistryProblems`` names the valence or kekulisation problem. RDKit's log
    output is captured, never printed.

    Args:
        smiles: one SMILES string, optionally followed by its CXSMILES extension block
            (``"C[C@H](O)CC |&1:1|"``, read by RDKit; enhanced stereo groups AND and OR are
            not kept as absolute stereo, see :func:`_flatten_enhanced_stereo`). Surrounding
            whitespace is ignored; other inner whitespace is an error (RDKit would silently
            drop the text after it, so ``"CC O"`` would become ethane): a ``.smi`` line's name
            is split off by the reader (:func:`split_smiles_line`), a table's belongs in its
            own column.
        fragments: ``"keep"`` keeps every fragment of a salt or mixture; ``"largest"`` keeps the
            fragment with the most heavy atoms (see :data:`FragmentPolicy`).

    Returns:
        A sanitised ``Chem.Mol`` without explicit hydrogens (isotopic ones such as ``[2H]``
        stay, as in RDKit), with no conformer.

    Raises:
        MoleculeParseError: ``reason`` is ``"empty SMILES"`` (``""``, whitespace, ``None``,
            NaN as read from an empty CSV cell), ``"SMILES must be a str, got <type>"``,
            ``"SMILES holds whitespace: ..."``, ``"query structure, not a molecule: ..."``
            (a ``~`` bond, :func:`query_reason`),
            ``"SMILES parse error: <RDKit's message>"`` (e.g. an unclosed ring ``"C1CC"``,
            an unknown symbol ``"foo"``), or RDKit's chemistry message (e.g.
            ``"Explicit valence for atom # 0 N, 5, is greater than permitted"``,
            ``"Can't kekulize mol.  Unkekulized atoms: ..."``).
        ValueError: ``fragments`` is not ``"keep"`` or ``"largest"``.
    """
    check_fragment_policy(fragments)
    if smiles is None or (isinstance(smiles, float) and math.isnan(smiles)):
        raise MoleculeParseError(f"empty SMILES (got {smiles!r})")
    if not isinstance(smiles, str):
        raise MoleculeParseError(f"SMILES must be a str, got {type(smiles).__name__}", None)
    text = smiles.strip()
    if not text:
        raise MoleculeParseError("empty SMILES", smiles)
    if split_smiles_line(text)[1]:  # text after the SMILES (and its CXSMILES block)
        raise MoleculeParseError(
            "SMILES holds whitespace: one SMILES per field (RDKit would drop the text after the "
            "whitespace); put a name in its own column",
            text,
        )
    with rdkit_log_capture() as log:
        mol = Chem.MolFromSmiles(text)
    if mol is None:
        with rdkit_log_capture() as raw_log:
            raw = Chem.MolFromSmiles(text, sanitize=False)
        if raw is None:
            raise MoleculeParseError(_smiles_parse_reason(raw_log.lines), text)
        reason = _chemistry_reason(raw) or "; ".join(log.lines) or "RDKit could not sanitize"
        raise MoleculeParseError(reason, text)
    if mol.GetNumAtoms() == 0:
        raise MoleculeParseError("empty SMILES (no atoms)", text)
    mol = _flatten_enhanced_stereo(check_smiles_molecule(mol, text))
    return apply_fragment_policy(mol, fragments)


def mols_from_smiles(
    smiles: Sequence[str], fragments: FragmentPolicy = "keep"
) -> list[Chem.Mol | MoleculeParseError]:
    """Parse many SMILES: the fast path of :func:`mol_from_smiles` for libraries.

    RDKit's logs are blocked once for the whole list; only a string that RDKit rejects is
    parsed again, by :func:`mol_from_smiles`, to find the reason.

    Args:
        smiles: SMILES strings (as in :func:`mol_from_smiles`).
        fragments: the multi-fragment policy.

    Returns:
        One entry per input, in order: the molecule :func:`mol_from_smiles` returns, or the
        :class:`MoleculeParseError` it raises.
    """
    check_fragment_policy(fragments)
    out: list[Chem.Mol | MoleculeParseError] = []
    with rdBase.BlockLogs():
        for item in smiles:
            text = item.strip() if isinstance(item, str) else ""
            mol = None if len(text.split()) != 1 or "~" in text else Chem.MolFromSmiles(text)
            if mol is None or mol.GetNumAtoms() == 0:
                try:
                    mol = mol_from_smiles(item, fragments)
                except MoleculeParseError as error:
                    mol = error
            elif fragments != "keep":
                mol = apply_fragment_policy(mol, fragments)
            out.append(mol)
    return out


def iter_sdf_blocks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The raw bytes of every record of an SDF file, in file order, streaming.

    A record ends at a line that starts with ``$$$$`` — RDKit's own rule (``SDMolSupplier``), so
    ``"$$$$ "``, ``"$$$$\\t"`` and ``"$$$$\\r"`` end a record as ``"$$$$"`` does. Lines are cut
    at ``\\n`` only (``\\r\\n`` files work; the ``\\r`` stays in the record, as RDKit expects). A
    last record without its ``$$$$`` line is still a record; whitespace after the last ``$$$$``
    is not. Nothing is parsed: a record may be blank or broken (see :func:`mol_from_sdf_block`).

    Args:
        path: an ``.sdf`` file, plain or gzip-compressed (detected from the first two bytes,
            whatever the suffix).

    Yields:
        One ``bytes`` block per record, its ``$$$$`` line included (absent for a last record
        that has none); block ``i`` is record ``i`` (0-based).

    Raises:
        FileNotFoundError / OSError: the file cannot be opened or decompressed.
    """
    with open_compressed(path) as fh:
        lines: list[bytes] = []
        for line in fh:
            lines.append(line)
            if line.startswith(b"$$$$"):
                yield b"".join(lines)
                lines = []
        if any(line.strip() for line in lines):
            yield b"".join(lines)


def mol_from_sdf_block(
    block: str | bytes, fragments: FragmentPolicy = "keep", remove_hs: bool = True
) -> Chem.Mol:
    """Read one SDF record (molblock plus SD data fields) into a sanitised RDKit molecule.

    The record is read with ``Chem.ForwardSDMolSupplier(sanitize=True, removeHs=remove_hs)``, so
    the molecule is exactly what RDKit's supplier gives (sanitised, stereochemistry from the
    coordinates and wedges, coordinates as the first conformer, the title as
    ``mol.GetProp("_Name")``, the SD data fields as properties), then the fragment policy is
    applied. A record RDKit rejects is read again with ``sanitize=False`` to find out why (as in
    :func:`mol_from_smiles`); RDKit's log output is captured, never printed.

    Args:
        block: the text of one record, e.g. a block from :func:`iter_sdf_blocks` (``str`` is
            encoded as UTF-8); a trailing ``$$$$`` line is optional.
        fragments: fragment policy, see :data:`FragmentPolicy`.
        remove_hs: drop explicit hydrogens (and their coordinates), RDKit's default; ``False``
            keeps every atom of the record.

    Returns:
        A sanitised ``Chem.Mol`` with at least one atom.

    Raises:
        MoleculeParseError: ``reason`` is ``"SDF parse error: <RDKit's message>"`` for a record
            RDKit cannot read (e.g. ``"SDF parse error: Atom line too short: ..."``,
            ``"SDF parse error: Counts line too short: '$$$$' on line4"`` for three blank
            lines), RDKit's chemistry message for one that fails sanitisation (e.g.
            ``"Explicit valence for atom # 0 N, 5, is greater than permitted"``), ``"empty
            record (no atoms)"``, or ``"query structure, not a molecule: ..."`` (molfile bond
            types 5-8 or query atoms, :func:`query_reason`).
            ``record`` is ``None``.
        ValueError: ``fragments`` is not ``"keep"`` or ``"largest"``.
    """
    check_fragment_policy(fragments)
    data = block.encode("utf-8") if isinstance(block, str) else block
    mol, errors = _supply_one(data, sanitize=True, remove_hs=remove_hs)
    if mol is None:
        raw, raw_errors = _supply_one(data, sanitize=False, remove_hs=False)
        if raw is None:
            raise MoleculeParseError(
                f"SDF parse error: {raw_errors or errors or 'no molblock in the record'}"
            )
        reason = _chemistry_reason(raw) or errors or "RDKit could not sanitize the record"
        raise MoleculeParseError(reason)
    if mol.GetNumAtoms() == 0:
        raise MoleculeParseError("empty record (no atoms)")
    if (reason := query_reason(mol)) is not None:
        raise MoleculeParseError(reason)
    return apply_fragment_policy(_flatten_enhanced_stereo(mol), fragments)


def iter_sdf(
    path: str | os.PathLike[str],
    fragments: FragmentPolicy = "keep",
    remove_hs: bool = True,
) -> Iterator[tuple[int, Chem.Mol | None, str | None]]:
    """Read every record of an SDF file, good or bad, in file order.

    The file is streamed (never loaded whole) and cut into records by :func:`iter_sdf_blocks`;
    each record is read by :func:`mol_from_sdf_block`. Cutting first keeps ``index`` exact
    whatever RDKit does with a broken record. Coordinates, the molecule name
    (``mol.GetProp("_Name")``) and the SD data fields (``mol.GetPropsAsDict()``) are kept, so
    :func:`positions` works on the result.

    Args:
        path: an ``.sdf`` file, plain or gzip-compressed (detected from the first two bytes,
            whatever the suffix).
        fragments: fragment policy, see :data:`FragmentPolicy`.
        remove_hs: drop explicit hydrogens (and their coordinates), RDKit's default; ``False``
            keeps every atom of the file.

    Yields:
        ``(index, mol, reason)`` for every record, ``index`` counting records from 0 (it stays
        aligned with the file even when records fail). ``(index, mol, None)`` for a good
        record; ``(index, None, reason)`` for a record that :func:`mol_from_sdf_block` rejects,
        with its ``reason`` (e.g. ``"SDF parse error: Atom line too short: ..."``, ``"Explicit
        valence for atom # 0 N, 5, is greater than permitted"``).

    Raises:
        FileNotFoundError / OSError: the file cannot be opened.
        ValueError: ``fragments`` is not ``"keep"`` or ``"largest"``.
    """
    check_fragment_policy(fragments)
    for index, block in enumerate(iter_sdf_blocks(path)):
        try:
            yield index, mol_from_sdf_block(block, fragments, remove_hs), None
        except MoleculeParseError as error:
            yield index, None, error.reason


def _supply_one(block: bytes, sanitize: bool, remove_hs: bool) -> tuple[Chem.Mol | None, str]:
    """First molecule of one SDF record (or ``None``) and RDKit's error lines, joined."""
    supplier = Chem.ForwardSDMolSupplier(io.BytesIO(block), sanitize=sanitize, removeHs=remove_hs)
    with rdkit_log_capture() as log:
        try:
            mol = next(supplier, None)
        except Exception as exc:  # defensive: RDKit normally returns None instead of raising
            return None, str(exc)
    lines = [line.removeprefix("ERROR: ") for line in log.lines]
    lines = [line for line in lines if not line.startswith("moving to the beginning")]
    return mol, "; ".join(lines)


def positions(mol: Chem.Mol) -> np.ndarray | None:
    """Atom coordinates of the first conformer.

    Args:
        mol: any RDKit molecule.

    Returns:
        ``float32 [num_atoms, 3]`` Cartesian coordinates in Å (row ``i`` is atom ``i``), or
        ``None`` when the molecule has no conformer (e.g. parsed from SMILES). A 2D depiction
        from a 2D SDF is returned as is, with z = 0; check ``mol.GetConformer().Is3D()`` if
        that matters.
    """
    if mol.GetNumConformers() == 0:
        return None
    return np.asarray(mol.GetConformer().GetPositions(), dtype=np.float32).reshape(-1, 3)


def atoms_from_xyz_block(block: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One XYZ or extended-XYZ frame: its atom count line, its comment line and one line per
    atom (element symbol, x, y, z in Å, and for extended XYZ the further columns its
    ``Properties`` name), read by ASE's extended-XYZ reader (``ase.io.read(...,
    format="extxyz")``, which reads plain XYZ too; what ASE reads for a ``.xyz`` file).

    Returns:
        ``(atomic_numbers, positions, info)``: ``int64 [N]``, ``float64 [N, 3]`` (Å) and the
        comment line's ``key=value`` pairs as ASE parses them (``ase.Atoms.info``; a plain
        XYZ comment gives its words as keys).

    Raises:
        MoleculeParseError: ``"XYZ parse error: <what>"`` (an unknown element symbol, a
            coordinate that is not a number, fewer atom lines than the count, coordinates
            that are not finite), ``"empty record (no atoms)"``, or a periodic frame (a
            ``pbc`` with a periodic direction, e.g. ``Lattice=... pbc="T T T"``): the 3D models
            of chemgraph's commands read molecules in vacuum, and a molecule's radius graph of
            such a frame would drop its cell (the periodic radius graph of
            :func:`chemgraph.graphs.periodic_radius_graph` is for crystals and surfaces,
            :mod:`chemgraph.data.datasets.oc20`).
    """
    from ase.io import read

    try:
        atoms = read(io.StringIO(block), format="extxyz")
    except KeyError as error:  # ase.data.atomic_numbers[symbol]
        raise MoleculeParseError(f"XYZ parse error: unknown element symbol {error}") from None
    except Exception as error:  # noqa: BLE001 - ASE raises ValueError, XYZError, IndexError...
        raise MoleculeParseError(f"XYZ parse error: {error}") from None
    if len(atoms) == 0:
        raise MoleculeParseError("empty record (no atoms)")
    numbers = np.asarray(atoms.numbers, dtype=np.int64)
    coordinates = np.asarray(atoms.positions, dtype=np.float64).reshape(-1, 3)
    if not np.isfinite(coordinates).all():
        raise MoleculeParseError("XYZ parse error: coordinates that are not finite numbers")
    if atoms.pbc.any():
        pbc = " ".join("T" if p else "F" for p in atoms.pbc)
        lengths = ", ".join(f"{length:g}" for length in atoms.cell.lengths())
        raise MoleculeParseError(
            f'a periodic structure (pbc="{pbc}", cell lengths {lengths} Å): chemgraph\'s 3D '
            "models read molecules in vacuum, and a molecule's radius graph would drop the "
            'cell; give the molecule without Lattice and pbc (or pbc="F F F")'
        )
    return numbers, coordinates, dict(atoms.info)


def mol_from_atoms(numbers: np.ndarray, coordinates: np.ndarray, charge: int = 0) -> Chem.Mol:
    """A sanitised molecule of atoms with 3D coordinates, every atom kept (hydrogens explicit,
    as given), its bonds and bond orders determined from the geometry and the total charge by
    RDKit's ``rdDetermineBonds.DetermineBonds`` (connectivity from covalent radii, then the
    bond orders of xyz2mol: Y. Kim and W. Y. Kim 2015, "Universal structure conversion method
    for organic molecules: from atomic connectivity to three-dimensional geometry", Bull.
    Korean Chem. Soc. 36, 1769-1777, doi:10.1002/bkcs.10334). The coordinates are its
    conformer.

    Args:
        numbers: ``int [N]`` atomic numbers.
        coordinates: ``float [N, 3]`` in Å.
        charge: the total charge of the molecule.

    Raises:
        MoleculeParseError: RDKit could not assign the bonds or sanitise the result (its
            message, e.g. for a charge that no bond orders give, or a radical).
    """
    from rdkit.Chem import rdDetermineBonds
    from rdkit.Geometry import Point3D

    editable = Chem.RWMol()
    conformer = Chem.Conformer(len(numbers))
    for index, (number, position) in enumerate(zip(numbers, coordinates)):
        editable.AddAtom(Chem.Atom(int(number)))
        conformer.SetAtomPosition(index, Point3D(*(float(v) for v in position)))
    conformer.Set3D(True)
    editable.AddConformer(conformer, assignId=True)
    mol = editable.GetMol()
    with rdkit_log_capture() as log:
        try:
            rdDetermineBonds.DetermineBonds(mol, charge=int(charge))
            Chem.SanitizeMol(mol)
        except Exception as error:  # noqa: BLE001 - RDKit raises ValueError, RuntimeError...
            reason = "; ".join(log.lines) or str(error) or type(error).__name__
            raise MoleculeParseError(f"bonds not determined from the geometry: {reason}") from None
    return mol
