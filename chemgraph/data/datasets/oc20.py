"""Open Catalyst 2020 (Chanussot et al., ACS Catal. 11, 6059 (2021)) through ASE formats.

Any file ASE reads (extended XYZ, ``.extxyz.xz``, ASE JSON database, ``.traj``) or a tar of
S2EF ``*.extxyz[.xz]`` files gives one record per frame: cell, pbc, tags, fixed atoms and the
DFT energy (eV) from the frame's calculator (or ``info["energy"]``/``info["y_relaxed"]``).

Tags follow the OC20 LMDB convention: 0 = subsurface slab atom, 1 = surface slab atom,
2 = adsorbate. Older files (e.g. fairchem's test ``atoms.json``) use 1 = adsorbate, 0 = slab;
they are remapped: adsorbate -> 2, fixed slab atoms -> 0, free slab atoms -> 1 (see
:func:`oc20_tags`).
"""

from __future__ import annotations

import lzma
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from chemgraph.data.datasets.base import CardDataset, rejected_frame
from chemgraph.data.table import MoleculeDataset
from chemgraph.featurize import FeaturizerPreset, GaussianBasis
from chemgraph.graph_keys import DISTANCE, EDGE_FEATURES, FIXED, TAGS
from chemgraph.graphs import periodic_radius_graph

__all__ = ["OC20Dataset", "oc20_tags", "read_oc20_file"]


def _fixed_mask(atoms) -> np.ndarray:
    from ase.constraints import FixAtoms

    fixed = np.zeros(len(atoms), dtype=bool)
    for constraint in atoms.constraints:
        if isinstance(constraint, FixAtoms):
            fixed[constraint.get_indices()] = True
    if "move_mask" in atoms.arrays:  # S2EF extxyz: move_mask = True for free atoms
        fixed |= ~atoms.arrays["move_mask"].astype(bool)
    return fixed


def oc20_tags(tags: np.ndarray, fixed: np.ndarray, scheme: str = "auto") -> np.ndarray:
    """Tags in the OC20 convention (0 subsurface, 1 surface, 2 adsorbate).

    Args:
        tags: ``int [n]`` tags as stored.
        fixed: ``bool [n]`` atoms held fixed in the relaxation.
        scheme: ``"oc20"`` (already 0/1/2), ``"adsorbate_slab"`` (1 = adsorbate, 0 = slab:
            adsorbate -> 2, fixed slab -> 0, free slab -> 1) or ``"auto"``: ``"oc20"`` when a
            tag 2 occurs or every tag-0 atom is fixed, ``"adsorbate_slab"`` when some tag-0
            atom is free (in OC20's convention free slab atoms are tag 1).

    Returns:
        ``int64 [n]`` OC20 tags.

    Raises:
        ValueError: tags outside 0-2, an unknown scheme, or ``"auto"`` on a structure without
            fixed atoms whose tags are only 0/1 (ambiguous: pass the scheme).
    """
    tags = np.asarray(tags, dtype=np.int64)
    if tags.size and (tags.min() < 0 or tags.max() > 2):
        raise ValueError(f"tags must be 0, 1 or 2, got {sorted(set(tags.tolist()))}")
    if scheme == "auto":
        if (tags == 2).any() or (fixed[tags == 0].all() and fixed.any()):
            scheme = "oc20"
        elif fixed.any():
            scheme = "adsorbate_slab"
        else:
            raise ValueError(
                "tags are only 0/1 and no atom is fixed: cannot tell OC20 tags (0 subsurface, "
                "1 surface) from the older 1 = adsorbate scheme; pass tag_scheme"
            )
    if scheme == "oc20":
        return tags
    if scheme != "adsorbate_slab":
        raise ValueError(f"tag scheme must be auto, oc20 or adsorbate_slab, got {scheme!r}")
    if (tags == 2).any():
        raise ValueError("tag 2 in the adsorbate_slab scheme (which has only 0 and 1)")
    return np.where(tags == 1, 2, np.where(fixed, 0, 1)).astype(np.int64)


def _energy(atoms) -> float:
    if atoms.calc is not None:
        try:
            return float(atoms.get_potential_energy())
        except Exception:  # noqa: BLE001 (calculators without a stored energy)
            pass
    for key in ("energy", "y_relaxed", "free_energy"):
        if key in atoms.info:
            return float(atoms.info[key])
    return float("nan")


def _frames(path: Path):
    """``(label, atoms)`` of every frame of an ASE file or a tar of extxyz[.xz] files."""
    from ase.io import read

    if tarfile.is_tarfile(path):
        import io

        with tarfile.open(path, "r:*") as archive:
            for member in sorted(archive.getmembers(), key=lambda m: m.name):
                if not member.isfile() or ".extxyz" not in member.name:
                    continue
                data = archive.extractfile(member).read()  # type: ignore[union-attr]
                if member.name.endswith(".xz"):
                    data = lzma.decompress(data)
                text = io.StringIO(data.decode("utf-8"))
                for i, atoms in enumerate(read(text, index=":", format="extxyz")):
                    yield f"{member.name}:{i}", atoms
        return
    for i, atoms in enumerate(read(str(path), index=":")):
        yield f"{path.name}:{i}", atoms


def read_oc20_file(path: str | Path, tag_scheme: str = "auto") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read the frames of an OC20 file.

    Returns:
        ``(table, rejected)``: ``row``, ``frame`` (file:index), ``formula``,
        ``atomic_numbers`` int64 [n], ``positions`` float32 [n, 3] Å, ``cell`` float32 [3, 3] Å,
        ``pbc`` bool [3], ``tags`` int64 [n] (OC20 convention), ``fixed`` bool [n],
        ``energy`` (eV, NaN when absent) and ``forces`` float32 [n, 3] eV/Å (or None).
        A frame whose tags cannot be mapped is rejected with the reason.
    """
    path = Path(path)
    records, bad = [], []
    for row, (label, atoms) in enumerate(_frames(path)):
        fixed = _fixed_mask(atoms)
        try:
            tags = oc20_tags(atoms.get_tags(), fixed, tag_scheme)
        except ValueError as error:
            bad.append((row, label, str(error)))
            continue
        try:
            forces = np.asarray(atoms.get_forces(), dtype=np.float32)
        except Exception:  # noqa: BLE001 (no forces stored)
            forces = None
        records.append(
            {
                "row": row,
                "frame": label,
                "formula": atoms.get_chemical_formula(),
                "atomic_numbers": np.asarray(atoms.get_atomic_numbers(), dtype=np.int64),
                "positions": np.asarray(atoms.get_positions(), dtype=np.float32),
                "cell": np.asarray(atoms.cell.array, dtype=np.float32),
                "pbc": np.asarray(atoms.get_pbc(), dtype=bool),
                "tags": tags,
                "fixed": fixed,
                "energy": _energy(atoms),
                "forces": forces,
            }
        )
    rejected = rejected_frame(bad)
    rejected["file"] = path.name
    return pd.DataFrame(records), rejected


class OC20Dataset(CardDataset):
    """OC20 frames (S2EF/IS2RE) from ASE-readable files; target ``energy`` (eV).

    Options: ``tag_scheme`` (see :func:`oc20_tags`). Graphs (:meth:`featurize`): periodic
    radius graphs (:func:`chemgraph.graphs.periodic_radius_graph`; ``cutoff`` Å, default 6.0;
    ``max_neighbors``, default 50, as in OC20 baselines) with ``ndata["z"]``, ``ndata["pos"]``,
    ``ndata["tags"]`` int64, ``ndata["fixed"]`` bool, and ``edata["e"]`` float32 [E, K]
    (``num_basis`` K Gaussians, default 50; 0 = none). The preset is not used (no RDKit
    molecule). Split ``"official"``: the files' splits.
    """

    family = "oc20"
    default_options = {"tag_scheme": "auto"}

    def _parse(self, files: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
        tables, rejected = [], []
        for name, path in files.items():
            table, bad = read_oc20_file(path, self.options["tag_scheme"])
            split = self.card.file(name).split
            if split is not None:
                table["split"] = split
            tables.append(table)
            rejected.append(bad)
        return pd.concat(tables, ignore_index=True), pd.concat(rejected, ignore_index=True)

    def _build_graphs(
        self, table: pd.DataFrame, preset: FeaturizerPreset, **options: Any
    ) -> tuple[MoleculeDataset, pd.DataFrame]:
        import ase

        cutoff = float(options.pop("cutoff", 6.0))
        max_neighbors = options.pop("max_neighbors", 50)
        num_basis = int(options.pop("num_basis", 50))
        if options:
            raise ValueError(f"unknown graph option(s) {sorted(options)}")
        basis = GaussianBasis(num_basis, cutoff) if num_basis else None
        graphs = []
        for record in table.itertuples():
            atoms = ase.Atoms(
                numbers=record.atomic_numbers,
                positions=record.positions,
                cell=record.cell,
                pbc=record.pbc,
            )
            graph = periodic_radius_graph(atoms, cutoff, max_neighbors=max_neighbors)
            graph.ndata[TAGS] = torch.as_tensor(record.tags, dtype=torch.int64)
            graph.ndata[FIXED] = torch.as_tensor(record.fixed, dtype=torch.bool)
            if basis is not None:
                with torch.no_grad():
                    graph.edata[EDGE_FEATURES] = basis(graph.edata[DISTANCE])
            graphs.append(graph)
        targets = self.target_columns
        values = table[targets].to_numpy(np.float32, copy=True)
        labels = torch.from_numpy(values).reshape(len(table), -1)
        dataset = MoleculeDataset(
            graphs, labels, np.arange(len(table)), table["formula"].tolist(), targets
        )
        return dataset, rejected_frame([])
