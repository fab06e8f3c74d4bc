"""QM9 (Ramakrishnan et al., Sci. Data 1, 140022 (2014)): 133,885 molecules, B3LYP/6-31G(2df,p).

Four source formats, detected from the file:

- the original extended-XYZ records ``dsgdb9nsd_NNNNNN.xyz`` (one file each, usually inside
  ``dsgdb9nsd.xyz.tar.bz2``, https://ndownloader.figshare.com/files/3195389): line 1 the atom
  count ``na``; line 2 ``gdb <index>`` and 15 properties (A B C mu alpha homo lumo gap r2 zpve
  U0 U H G Cv); ``na`` lines ``element x y z mulliken_charge``; the harmonic frequencies; the
  GDB-17 and the B3LYP-relaxed SMILES; the two InChIs. Numbers may use Mathematica's
  ``*^`` exponent (``1.2*^-6`` = 1.2e-6). A folder or tar of such files is read whole.
- ASE extended XYZ (``Properties=species:S:1:pos:R:3...``, ``info`` keys ``qm9_index, smiles,
  A, B, C, mu, alpha, homo, lumo, gap, r2, zpve, U0, U, H, G, Cv``), read with ``ase.io``.
- DeepChem ``qm9.csv`` (``mol_id, smiles, A ... g298_atom``; no coordinates) and
  ``gdb9.sdf`` + ``gdb9.sdf.csv`` (coordinates in the SDF, properties in the CSV).
- qm9pack CSV parts (``XYZ_file, Index, SMILES, ..., XYZ_Ang, ...``; PyPI ``qm9pack`` 1.0.3).

Every format gives the same table: ``qm9_index`` (int, 1..133885), ``smiles``, and, where the
format has coordinates, ``atomic_numbers`` (``int64 [n]``) and ``positions`` (``float32 [n,
3]``, Å, all atoms including hydrogens), plus the 19 targets of Buterez et al. 2024 Table 1 (PyTorch
Geometric's QM9 targets and units) in :data:`TARGETS`. Energies are converted from Hartree to
eV with :data:`chemgraph.units.HARTREE_TO_EV` (CODATA 2018); atomization energies are
the energy minus the isolated-atom references of :data:`ATOM_REFERENCES` (QM9's
``atomref.txt``, https://ndownloader.figshare.com/files/3195395).
"""

from __future__ import annotations

import logging
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from chemgraph.chem import iter_sdf
from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.datasets.download import fetch, open_binary, open_text
from chemgraph.data.qm9pack import parse_qm9pack_geometry
from chemgraph.data.table import MoleculeDataset, featurize_table
from chemgraph.featurize import FeaturizerPreset, GaussianBasis
from chemgraph.graph_keys import ATOMIC_NUMBERS, DISTANCE, EDGE_FEATURES
from chemgraph.graphs import radius_graph
from chemgraph.units import HARTREE_PER_KCAL_MOL, HARTREE_TO_EV

__all__ = [
    "ATOM_REFERENCES",
    "QM9Dataset",
    "TARGETS",
    "build_qm9_graphs",
    "parse_qm9_xyz",
    "read_qm9_file",
    "read_uncharacterized",
]

logger = logging.getLogger(__name__)

#: The 19 targets: name -> (unit, description). Order = PyTorch Geometric's QM9 target order
#: with the rotational constants last, as in Buterez et al. 2024 Table 1.
TARGETS: dict[str, tuple[str, str]] = {
    "mu": ("D", "dipole moment"),
    "alpha": ("bohr^3", "isotropic polarizability"),
    "homo": ("eV", "HOMO energy"),
    "lumo": ("eV", "LUMO energy"),
    "gap": ("eV", "HOMO-LUMO gap"),
    "r2": ("bohr^2", "electronic spatial extent"),
    "zpve": ("eV", "zero-point vibrational energy"),
    "u0": ("eV", "internal energy at 0 K"),
    "u298": ("eV", "internal energy at 298.15 K"),
    "h298": ("eV", "enthalpy at 298.15 K"),
    "g298": ("eV", "free energy at 298.15 K"),
    "cv": ("cal/(mol K)", "heat capacity at 298.15 K"),
    "u0_atom": ("eV", "atomization energy at 0 K"),
    "u298_atom": ("eV", "atomization internal energy at 298.15 K"),
    "h298_atom": ("eV", "atomization enthalpy at 298.15 K"),
    "g298_atom": ("eV", "atomization free energy at 298.15 K"),
    "A": ("GHz", "rotational constant A"),
    "B": ("GHz", "rotational constant B"),
    "C": ("GHz", "rotational constant C"),
}

#: B3LYP/6-31G(2df,p) energies of the isolated atoms (Hartree), QM9 ``atomref.txt``:
#: atomic number -> (U0, U298, H298, G298).
ATOM_REFERENCES: dict[int, tuple[float, float, float, float]] = {
    1: (-0.500273, -0.498857, -0.497912, -0.510927),
    6: (-37.846772, -37.845355, -37.844411, -37.861317),
    7: (-54.583861, -54.582445, -54.581501, -54.598897),
    8: (-75.064579, -75.063163, -75.062219, -75.079532),
    9: (-99.718730, -99.717314, -99.716370, -99.733544),
}

_SYMBOLS = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}
# Order of the 15 properties on line 2 of an original QM9 record, in QM9's units.
_XYZ_PROPERTIES = ("A", "B", "C", "mu", "alpha", "homo", "lumo", "gap", "r2", "zpve",
                   "u0", "u298", "h298", "g298", "cv")  # fmt: skip
_HARTREE_COLUMNS = ("homo", "lumo", "gap", "zpve", "u0", "u298", "h298", "g298")


def _number(text: str) -> float:
    """A float, accepting Mathematica's ``*^`` exponent (``2.1*^-6``)."""
    return float(text.replace("*^", "e"))


def _finish(record: dict[str, Any]) -> dict[str, Any]:
    """Hartree -> eV and atomization energies for a record in QM9's units (in place)."""
    z = record.get("atomic_numbers")
    if z is not None and "u0_atom" not in record:
        counts = np.bincount(np.asarray(z), minlength=10)
        for k, name in enumerate(("u0", "u298", "h298", "g298")):
            reference = sum(counts[n] * ATOM_REFERENCES[n][k] for n in ATOM_REFERENCES)
            record[f"{name}_atom"] = (record[name] - reference) * HARTREE_TO_EV
    for name in _HARTREE_COLUMNS:
        record[name] = record[name] * HARTREE_TO_EV
    return record


def parse_qm9_xyz(text: str) -> dict[str, Any]:
    """Parse one original QM9 record (``dsgdb9nsd_NNNNNN.xyz``).

    Returns:
        ``qm9_index``, ``smiles`` (B3LYP-relaxed SMILES), ``smiles_gdb``, ``inchi``,
        ``atomic_numbers`` (``int64 [n]``), ``positions`` (``float32 [n, 3]``, Å),
        ``mulliken_charges`` (``float32 [n]``, e), ``frequencies`` (``float32``, cm^-1) and
        the 19 :data:`TARGETS` (energies in eV).

    Raises:
        ValueError: the record does not have the layout above; the message says which line
            and what was expected.
    """
    lines = text.strip("\n").split("\n")
    try:
        na = int(lines[0].strip())
    except (ValueError, IndexError):
        raise ValueError(f"line 1: expected the atom count, got {lines[:1]!r}") from None
    if len(lines) != na + 5:
        raise ValueError(f"expected {na + 5} lines for {na} atoms, got {len(lines)}")
    header = lines[1].split()
    if len(header) != 17 or header[0] != "gdb":
        raise ValueError(f"line 2: expected 'gdb <index>' and 15 properties, got {lines[1]!r}")
    record: dict[str, Any] = {"qm9_index": int(header[1])}
    record.update(zip(_XYZ_PROPERTIES, map(_number, header[2:])))
    z, xyz, charges = [], [], []
    for i, line in enumerate(lines[2 : 2 + na]):
        fields = line.split()
        if len(fields) != 5 or fields[0] not in _SYMBOLS:
            raise ValueError(f"line {i + 3}: expected 'element x y z charge', got {line!r}")
        z.append(_SYMBOLS[fields[0]])
        xyz.append([_number(v) for v in fields[1:4]])
        charges.append(_number(fields[4]))
    smiles = lines[na + 3].split()
    inchi = lines[na + 4].split()
    if len(smiles) != 2 or len(inchi) != 2:
        raise ValueError(f"lines {na + 4}-{na + 5}: expected two SMILES and two InChIs")
    record.update(
        smiles=smiles[1],
        smiles_gdb=smiles[0],
        inchi=inchi[1],
        atomic_numbers=np.asarray(z, dtype=np.int64),
        positions=np.asarray(xyz, dtype=np.float32).reshape(na, 3),
        mulliken_charges=np.asarray(charges, dtype=np.float32),
        frequencies=np.asarray([_number(v) for v in lines[na + 2].split()], dtype=np.float32),
    )
    return _finish(record)


def _xyz_records(path: Path):
    """``(row, name, text)`` of every ``.xyz`` member of a tar archive or folder, in name order."""
    if path.is_dir():
        for row, member in enumerate(sorted(path.glob("*.xyz"))):
            yield row, member.name, member.read_text()
        return
    with tarfile.open(path, "r:*") as archive:
        members = sorted((m for m in archive if m.isfile() and m.name.endswith(".xyz")),
                         key=lambda m: m.name)  # fmt: skip
        for row, member in enumerate(members):
            data = archive.extractfile(member).read()  # type: ignore[union-attr]
            yield row, member.name, data.decode("utf-8")


def _read_original(path: Path) -> tuple[list[dict], list[tuple[int, str, str]]]:
    records, bad = [], []
    for row, name, text in _xyz_records(path):
        try:
            record = parse_qm9_xyz(text)
        except ValueError as error:
            bad.append((row, name, str(error)))
            continue
        records.append(record)
    return records, bad


_ASE_KEYS = {"mu": "mu", "alpha": "alpha", "homo": "homo", "lumo": "lumo", "gap": "gap",
             "r2": "r2", "zpve": "zpve", "u0": "U0", "u298": "U", "h298": "H", "g298": "G",
             "cv": "Cv", "A": "A", "B": "B", "C": "C"}  # fmt: skip


def _read_ase(path: Path) -> tuple[list[dict], list[tuple[int, str, str]]]:
    from ase.io import read

    with open_text(path) as fh:
        frames = read(fh, index=":", format="extxyz")
    records, bad = [], []
    for row, atoms in enumerate(frames):
        info = atoms.info
        missing = [key for key in ("qm9_index", "smiles", *_ASE_KEYS.values()) if key not in info]
        if missing:
            bad.append((row, str(info.get("xyz_file", row)), f"info lacks {missing}"))
            continue
        record = {name: float(info[key]) for name, key in _ASE_KEYS.items()}
        record.update(
            qm9_index=int(info["qm9_index"]),
            smiles=str(info["smiles"]),
            atomic_numbers=np.asarray(atoms.get_atomic_numbers(), dtype=np.int64),
            positions=np.asarray(atoms.get_positions(), dtype=np.float32),
        )
        records.append(_finish(record))
    return records, bad


_DEEPCHEM_COLUMNS = ("mol_id", "A", "B", "C", "mu", "alpha", "homo", "lumo", "gap", "r2", "zpve",
                     "u0", "u298", "h298", "g298", "cv", "u0_atom", "u298_atom", "h298_atom",
                     "g298_atom")  # fmt: skip


def _deepchem_record(values: dict) -> dict:
    record = {name: float(values[name]) for name in _DEEPCHEM_COLUMNS[1:]}
    record["qm9_index"] = int(str(values["mol_id"]).removeprefix("gdb_"))
    for name in ("u0_atom", "u298_atom", "h298_atom", "g298_atom"):  # kcal/mol in DeepChem
        record[name] *= HARTREE_PER_KCAL_MOL * HARTREE_TO_EV
    return _finish(record)


def _check_columns(frame: pd.DataFrame, wanted, path: Path) -> None:
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; found {list(frame.columns)}")


def _read_deepchem_csv(path: Path) -> tuple[list[dict], list[tuple[int, str, str]]]:
    frame = pd.read_csv(open_binary(path))
    _check_columns(frame, ("smiles", *_DEEPCHEM_COLUMNS), path)
    records = []
    for values in frame.to_dict("records"):
        record = _deepchem_record(values)
        record["smiles"] = str(values["smiles"])
        records.append(record)
    return records, []


def _read_deepchem_sdf(
    path: Path, csv_path: Path | None
) -> tuple[list[dict], list[tuple[int, str, str]]]:
    """gdb9.sdf structures joined on ``mol_id`` with gdb9.sdf.csv properties; without the CSV
    the targets are NaN (structures only, logged)."""
    from rdkit import Chem

    if csv_path is None:
        logger.warning("%s: no %s.csv beside it; targets are NaN", path, path.name)
        by_id = None
    else:
        frame = pd.read_csv(open_binary(csv_path))
        _check_columns(frame, _DEEPCHEM_COLUMNS, csv_path)
        by_id = {str(v["mol_id"]): v for v in frame.to_dict("records")}

    records, bad = [], []
    for row, mol, reason in iter_sdf(path, remove_hs=False):
        if mol is None:
            # RDKit's invariant violations carry a C++ stack trace; keep its last line.
            reason = (
                (reason or "unreadable").split("; ")[-1]
                if "Stacktrace" in (reason or "")
                else reason
            )
            bad.append((row, f"record {row}", reason or "unreadable"))
            continue
        name = mol.GetProp("_Name").strip()
        if by_id is None:
            record = dict.fromkeys(TARGETS, float("nan"))
            record["qm9_index"] = int(name.removeprefix("gdb_"))
        elif name not in by_id:
            bad.append((row, name, f"no row with mol_id {name!r} in {csv_path.name}"))
            continue
        else:
            record = _deepchem_record(by_id[name])
        record.update(
            smiles=Chem.MolToSmiles(Chem.RemoveHs(mol)),
            atomic_numbers=np.asarray([a.GetAtomicNum() for a in mol.GetAtoms()], np.int64),
            positions=np.asarray(mol.GetConformer().GetPositions(), np.float32),
        )
        records.append(record)
    return records, bad


_QM9PACK_KEYS = {"mu": "Dipole_debye", "alpha": "Polarizability_bohr3", "homo": "HOMO_au",
                 "lumo": "LUMO_au", "gap": "HOMO_LUMO_gap_au", "r2": "R2_bohr2",
                 "zpve": "ZPVE_au", "u0": "InternalEnergy_0K_au",
                 "u298": "InternalEnergy_298K_au", "h298": "Enthalphy_298K_au",
                 "g298": "GibbsFreeEnergy_298K_au", "cv": "Heatcapacity_Cv_cal_mol_K",
                 "A": "RotA_GHz", "B": "RotB_GHz", "C": "RotC_GHz"}  # fmt: skip


def _read_qm9pack(path: Path) -> tuple[list[dict], list[tuple[int, str, str]]]:
    frame = pd.read_csv(open_binary(path))
    _check_columns(frame, ("Index", "SMILES", "Elements", "XYZ_Ang", *_QM9PACK_KEYS.values()), path)
    records, bad = [], []
    for row, values in enumerate(frame.to_dict("records")):
        try:
            symbols, xyz = parse_qm9pack_geometry(str(values["Elements"]), str(values["XYZ_Ang"]))
            xyz = xyz.astype(np.float32)
            z = np.asarray([_SYMBOLS[s] for s in symbols], dtype=np.int64)
        except (ValueError, KeyError) as error:
            bad.append((row, str(values.get("XYZ_file", row)), f"bad geometry: {error}"))
            continue
        record = {name: float(values[key]) for name, key in _QM9PACK_KEYS.items()}
        record.update(qm9_index=int(values["Index"]), smiles=str(values["SMILES"]),
                      atomic_numbers=z, positions=xyz)  # fmt: skip
        records.append(_finish(record))
    return records, bad


def qm9_format(path: str | Path) -> str:
    """``"original"``, ``"ase"``, ``"deepchem_csv"``, ``"deepchem_sdf"`` or ``"qm9pack"``.

    Raises:
        ValueError: the file is none of these (the accepted formats are named).
    """
    path = Path(path)
    name = path.name.lower()
    if path.is_dir() or ".tar" in name or name.endswith(".xyz"):
        return "original"
    if ".extxyz" in name:
        return "ase"
    if ".sdf" in name and ".sdf.csv" not in name:
        return "deepchem_sdf"
    if ".csv" in name:
        with open_text(path) as fh:
            header = fh.readline()
        if header.startswith("mol_id,smiles"):
            return "deepchem_csv"
        if header.startswith("XYZ_file,Index"):
            return "qm9pack"
    raise ValueError(
        f"{path}: not a QM9 file; expected original .xyz records (folder or .tar[.bz2]), ASE "
        ".extxyz, DeepChem qm9.csv or gdb9.sdf (+ .sdf.csv), or qm9pack qm9_part*.csv"
    )


def read_qm9_file(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read any QM9 source file (see :func:`qm9_format`) into the common table.

    Returns:
        ``(table, rejected)``: one row per molecule, columns ``qm9_index``, ``smiles``,
        the 19 :data:`TARGETS`, and ``atomic_numbers``/``positions`` when the format has
        coordinates; ``rejected`` = ``row, input, reason, file``.
    """
    path = Path(path)
    kind = qm9_format(path)
    if kind == "original":
        records, bad = _read_original(path)
    elif kind == "ase":
        records, bad = _read_ase(path)
    elif kind == "deepchem_csv":
        records, bad = _read_deepchem_csv(path)
    elif kind == "qm9pack":
        records, bad = _read_qm9pack(path)
    else:
        companion = path.with_name(path.name.removesuffix(".gz") + ".csv")
        records, bad = _read_deepchem_sdf(path, companion if companion.is_file() else None)
    columns = ["qm9_index", "smiles", *TARGETS]
    table = pd.DataFrame(records)
    table = table[columns + [c for c in table.columns if c not in columns]] if records else (
        pd.DataFrame(columns=columns))  # fmt: skip
    rejected = rejected_frame(bad)
    rejected["file"] = path.name
    return table, rejected


def read_uncharacterized(path: str | Path) -> set[int]:
    """QM9 indices of the 3,054 molecules that failed the consistency check.

    ``uncharacterized.txt`` (https://ndownloader.figshare.com/files/3195404): header lines,
    then one row per molecule starting with its index. Rows whose first field is an integer
    are read; the rest is ignored.
    """
    indices = set()
    with open_text(path) as fh:
        for line in fh:
            fields = line.split()
            if fields and fields[0].isdigit():
                indices.add(int(fields[0]))
    return indices


def build_qm9_graphs(
    table: pd.DataFrame,
    targets: list[str],
    preset: FeaturizerPreset,
    geometry: str = "bonds",
    cutoff: float = 5.0,
    num_basis: int = 0,
    max_neighbors: int | None = None,
) -> tuple[MoleculeDataset, pd.DataFrame]:
    """Graphs of a QM9 table (rows = positions in ``table``).

    ``geometry="bonds"``: bond graphs of ``table["smiles"]`` with the preset's features
    (:func:`chemgraph.data.featurize_table`). ``geometry="radius"``: radius graphs of all atoms
    from ``atomic_numbers``/``positions``: ``ndata["z"]`` int64 [n], ``ndata["pos"]`` float32
    [n, 3] Å, ``edata["distance"]`` float32 [E] Å, and ``edata["e"]`` float32 [E, K] when
    ``num_basis`` K > 0 (:class:`GaussianBasis` with the same ``cutoff``); no preset features
    (Buterez et al. 2024 Table 5: coordinates and atom types only).

    Raises:
        ValueError: unknown ``geometry``, or radius graphs from a table without coordinates.
    """
    if geometry == "bonds":
        return featurize_table(
            table, "smiles", targets, preset, progress=False, require_labels=False
        )
    if geometry != "radius":
        raise ValueError(f"geometry must be 'bonds' or 'radius', got {geometry!r}")
    if "positions" not in table:
        raise ValueError("the QM9 source has no coordinates (DeepChem qm9.csv); use another")
    basis = GaussianBasis(num_basis, cutoff) if num_basis else None
    graphs = []
    for z, pos in zip(table["atomic_numbers"], table["positions"]):
        graph = radius_graph(pos, cutoff, max_neighbors=max_neighbors)
        graph.ndata[ATOMIC_NUMBERS] = torch.as_tensor(z, dtype=torch.int64)
        if basis is not None:
            with torch.no_grad():
                graph.edata[EDGE_FEATURES] = basis(graph.edata[DISTANCE])
        graphs.append(graph)
    values = table[targets].to_numpy(np.float32, copy=True)
    labels = torch.from_numpy(values).reshape(len(table), len(targets))
    dataset = MoleculeDataset(
        graphs, labels, np.arange(len(table)), table["smiles"].tolist(), targets
    )
    return dataset, rejected_frame([])


class QM9Dataset(CardDataset):
    """QM9 from any of its formats (see the module docstring).

    Options:
        targets: target names (default: all 19 of :data:`TARGETS`).
        drop_uncharacterized: drop the 3,054 molecules of ``uncharacterized.txt`` (needs that
            file; a qm9pack source already lacks them).

    Graphs (:meth:`featurize`): ``geometry="bonds"`` (default) bond graphs of the SMILES with
    the preset's features; ``geometry="radius"`` radius graphs of all atoms from the 3D
    coordinates (``cutoff`` Å, default 5.0; ``num_basis`` Gaussians, default 0 = distances
    only; ``max_neighbors``), node input = atomic number only (Buterez et al. 2024, Table 5 setup).
    """

    family = "qm9"
    default_options = {"targets": None, "drop_uncharacterized": False}

    @property
    def target_columns(self) -> list[str]:
        targets = list(self.options["targets"] or TARGETS)
        unknown = [t for t in targets if t not in TARGETS]
        if unknown:
            raise ValueError(f"unknown QM9 target(s) {unknown}; available: {list(TARGETS)}")
        return targets

    def __init__(self, card, root=None, **kwargs: Any) -> None:
        if root is None and card.raw.get("package"):  # qm9pack: the installed package's data
            from chemgraph.data.qm9pack import qm9pack_data_folder

            root = qm9pack_data_folder()
        super().__init__(card, root, **kwargs)

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        roles = {f.name: f.raw_role for f in self.card.files}
        tables, rejected = [], []
        for name, path in files.items():
            if roles[name] != "uncharacterized":
                table, bad = read_qm9_file(path)
                self.records_read[name] = len(table) + len(bad)
                tables.append(table)
                rejected.append(bad)
        table = pd.concat(tables, ignore_index=True)
        if self.options["drop_uncharacterized"]:
            spec = next(f for f in self.card.files if f.raw_role == "uncharacterized")
            path = files.get(spec.name) or self._find(spec)
            if path is None:
                if not self.auto_download:
                    raise FileNotFoundError(
                        f"drop_uncharacterized needs {spec.name} ({spec.url}) in {self.root}"
                    )
                path = fetch(spec, self.root)
            drop = read_uncharacterized(path)
            before = len(table)
            table = table[~table["qm9_index"].isin(drop)]
            logger.info("dropped %d uncharacterized molecules", before - len(table))
        return table, pd.concat(rejected, ignore_index=True)

    def _build_graphs(
        self, table: pd.DataFrame, preset: FeaturizerPreset, **options: Any
    ) -> tuple[MoleculeDataset, pd.DataFrame]:
        return build_qm9_graphs(table, self.target_columns, preset, **options)
