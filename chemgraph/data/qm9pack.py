"""QM9 from the PyPI package ``qm9pack`` (offline; optional extra ``chemgraph[offline-data]``).

``qm9pack`` 1.0.3 (R. Ramakrishnan, MIT licence) ships 130,831 of QM9's 133,885 molecules
(the 3,054 "uncharacterized" ones excluded) as ``qm9pack/data/qm9_part{1,2,3}.csv`` with
B3LYP/6-31G(2df,p) properties in atomic units. Source: Ramakrishnan et al., Sci. Data 1,
140022 (2014), https://doi.org/10.6084/m9.figshare.c.978904.v5.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from chemgraph.errors import MissingDependencyError
from chemgraph.units import HARTREE_TO_EV

__all__ = [
    "QM9PACK_MOLECULES",
    "load_qm9pack",
    "load_qm9pack_geometries",
    "parse_qm9pack_geometry",
    "qm9pack_data_folder",
]

QM9PACK_MOLECULES = 130_831


def qm9pack_data_folder() -> Path:
    """Folder of qm9pack's CSV files.

    Raises:
        MissingDependencyError: qm9pack is not installed
            (``pip install "chemgraph[offline-data]"``).
    """
    spec = importlib.util.find_spec("qm9pack")
    if spec is None or spec.origin is None:
        raise MissingDependencyError(
            "qm9pack is not installed; install the offline QM9 data with "
            "pip install 'chemgraph[offline-data]' (or pip install qm9pack==1.0.3)"
        )
    return Path(spec.origin).parent / "data"


def load_qm9pack(num_molecules: int | None = None, seed: int = 0) -> pd.DataFrame:
    """QM9 frontier-orbital energies from qm9pack, in eV.

    Args:
        num_molecules: draw this many molecules uniformly at random without replacement
            (seeded, kept in QM9 index order); None = all 130,831.
        seed: seed of the draw.

    Returns:
        Columns ``qm9_index`` (int, 1..133885), ``smiles`` (GDB-17 SMILES as given by QM9),
        ``homo_ev``, ``lumo_ev``, ``gap_ev`` (float64, eV; converted from Hartree with
        :data:`HARTREE_TO_EV`).

    Raises:
        ImportError: qm9pack missing. ValueError: ``num_molecules`` out of range.
    """
    folder = qm9pack_data_folder()
    columns = ["Index", "SMILES", "HOMO_au", "LUMO_au", "HOMO_LUMO_gap_au"]
    table = pd.concat(
        [pd.read_csv(folder / f"qm9_part{part}.csv", usecols=columns) for part in (1, 2, 3)],
        ignore_index=True,
    )
    if num_molecules is not None:
        if not 0 < num_molecules <= len(table):
            raise ValueError(f"num_molecules must be in 1..{len(table)}, got {num_molecules}")
        chosen = np.sort(np.random.default_rng(seed).choice(len(table), num_molecules, False))
        table = table.iloc[chosen].reset_index(drop=True)
    return pd.DataFrame(
        {
            "qm9_index": table["Index"].astype(int),
            "smiles": table["SMILES"],
            "homo_ev": table["HOMO_au"] * HARTREE_TO_EV,
            "lumo_ev": table["LUMO_au"] * HARTREE_TO_EV,
            "gap_ev": table["HOMO_LUMO_gap_au"] * HARTREE_TO_EV,
        }
    )


def parse_qm9pack_geometry(elements: str, xyz: str) -> tuple[tuple[str, ...], np.ndarray]:
    """One qm9pack geometry from its ``Elements`` and ``XYZ_Ang`` cells.

    Args:
        elements: e.g. ``"['C','H','H','H','H']"``.
        xyz: e.g. ``"[[-0.0127,1.0858,0.0080],[0.,-0.006,0.002],...]"``; numbers such as ``0.``
            are not JSON, so the text is split rather than parsed as JSON.

    Returns:
        Element symbols (hydrogens included) and positions ``float64 [num_atoms, 3]`` in Å.

    Raises:
        ValueError: an unreadable number, or a number of coordinates that is not three per
            element.
    """
    symbols = tuple(symbol.strip().strip("'\"") for symbol in elements.strip("[]").split(","))
    numbers = np.array(xyz.replace("[", "").replace("]", "").split(","), dtype=np.float64)
    if numbers.size != 3 * len(symbols):
        raise ValueError(f"{len(symbols)} elements but {numbers.size} coordinate values")
    return symbols, numbers.reshape(-1, 3)


def load_qm9pack_geometries(qm9_indices: list[int] | None = None) -> pd.DataFrame:
    """QM9 B3LYP/6-31G(2df,p) equilibrium geometries from qm9pack.

    Args:
        qm9_indices: keep only these QM9 indices (in QM9 index order); None = all 130,831.

    Returns:
        Columns ``qm9_index`` (int), ``num_atoms`` (int), ``elements`` (tuple of element
        symbols, hydrogens included) and ``positions`` (float64 [num_atoms, 3] array, Å), in
        QM9 index order.

    Raises:
        ImportError: qm9pack missing. KeyError: an index of ``qm9_indices`` is not in qm9pack
        (one of QM9's 3,054 uncharacterized molecules, or out of range).
    """
    folder = qm9pack_data_folder()
    columns = ["Index", "N_atoms", "Elements", "XYZ_Ang"]
    table = pd.concat(
        [pd.read_csv(folder / f"qm9_part{part}.csv", usecols=columns) for part in (1, 2, 3)],
        ignore_index=True,
    ).set_index("Index", drop=False)
    if qm9_indices is not None:
        missing = sorted(set(qm9_indices) - set(table.index))
        if missing:
            raise KeyError(f"QM9 indices not in qm9pack: {missing[:10]} ({len(missing)} in all)")
        table = table.loc[sorted(set(qm9_indices))]
    geometries = [
        parse_qm9pack_geometry(e, xyz) for e, xyz in zip(table["Elements"], table["XYZ_Ang"])
    ]
    elements = [symbols for symbols, _ in geometries]
    positions = [xyz for _, xyz in geometries]
    return pd.DataFrame(
        {
            "qm9_index": table["Index"].to_numpy(dtype=int),
            "num_atoms": table["N_atoms"].to_numpy(dtype=int),
            "elements": elements,
            "positions": positions,
        }
    )
