"""QM9 molecules with DFT and GW HOMO/LUMO, as :class:`MultiFidelityData` of radius graphs:
the data of the ``dft_to_gw`` recipe (:mod:`chemgraph.recipes.dft_to_gw`).

* :func:`embedded_data`: GW labels computed by this project with pyscf
  (``datasets/qm9_gw_embedded.csv``, G0W0@PBE/def2-SVP of the 1,000 smallest qm9pack molecules;
  ``recipes/dft_to_gw/compute_gw_labels.py``) and the B3LYP labels and geometries of qm9pack
  for the DFT pretraining pool (offline).
* :func:`full_data`: QM9 geometries + QM9-GW (Fediai et al. 2023) through
  :func:`chemgraph.data.datasets.get_dataset` (downloads), as Buterez et al. 2024
  (arXiv:2402.10793), section 4.1 and SI 4.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from chemgraph._dgl import dgl
from chemgraph._resources import cards_folder
from chemgraph.data.multi_fidelity import MultiFidelityData, high_fidelity_split
from chemgraph.errors import ConfigError
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.graphs import atoms_to_radius_graph

__all__ = [
    "DFT_THEORY",
    "TARGETS",
    "check_orbital_energies_ev",
    "embedded_data",
    "full_data",
    "full_data_available",
    "radius_graphs",
]

DFT_THEORY = "B3LYP/6-31G(2df,p) (QM9)"
TARGETS = ["homo", "lumo"]


def radius_graphs(
    numbers: list, positions: list, featurizer: RadiusGraphFeaturizer
) -> list[dgl.DGLGraph]:
    """One radius graph per molecule (:func:`chemgraph.graphs.atoms_to_radius_graph`) from its
    atomic numbers and positions (Å), without the Gaussian distance features: the 3D model's
    collate expands them per batch (:meth:`chemgraph.models.ModelSpec.collate`), which keeps
    ``K`` times less in memory."""
    return [atoms_to_radius_graph(z, p, featurizer, False) for z, p in zip(numbers, positions)]


def embedded_data(
    data_config: dict[str, Any], featurizer: RadiusGraphFeaturizer
) -> tuple[MultiFidelityData, dict[str, np.ndarray]]:
    """The embedded GW set + qm9pack DFT pool (see the module docstring).

    Raises:
        FileNotFoundError: the label file is missing. ImportError: qm9pack missing.
        ValueError: a GW molecule is not in qm9pack.
    """
    from ase.data import atomic_numbers

    from chemgraph.data.qm9pack import load_qm9pack, load_qm9pack_geometries

    settings = data_config["embedded"]
    gw = pd.read_csv(cards_folder() / settings["labels"])
    geometries = load_qm9pack_geometries()
    order = geometries.sort_values(["num_atoms", "qm9_index"], kind="stable")
    pool_size = settings.get("dft_pool")
    pool = order if pool_size is None else order.head(int(pool_size))
    keep = set(pool["qm9_index"]) | set(gw["qm9_index"])
    missing = sorted(set(gw["qm9_index"]) - set(geometries["qm9_index"]))
    if missing:
        raise ValueError(f"GW molecules not in qm9pack: {missing[:10]}")
    molecules = geometries[geometries["qm9_index"].isin(keep)].reset_index(drop=True)
    dft = load_qm9pack().set_index("qm9_index").loc[molecules["qm9_index"]]
    high = gw.set_index("qm9_index").reindex(molecules["qm9_index"])
    numbers = [[atomic_numbers[e] for e in elements] for elements in molecules["elements"]]
    data = MultiFidelityData(
        graphs=radius_graphs(numbers, list(molecules["positions"]), featurizer),
        ids=molecules["qm9_index"].to_numpy(),
        low=dft[["homo_ev", "lumo_ev"]].to_numpy(np.float32),
        high=high[["gw_homo_ev", "gw_lumo_ev"]].to_numpy(np.float32),
        targets=TARGETS,
        low_name="DFT",
        high_name="GW",
        low_theory=DFT_THEORY,
        high_theory=_gw_theory(gw),
        smiles=list(dft["smiles"]),
        low_columns=["homo_ev", "lumo_ev"],
    )
    split = high_fidelity_split(
        data, data_config["split_seed"], fractions=tuple(settings["split_fractions"])
    )
    return data, split


def _gw_theory(gw: pd.DataFrame) -> str:
    methods = gw[["method", "basis", "program"]].drop_duplicates()
    return "; ".join(f"{m}/{b} ({p})" for m, b, p in methods.itertuples(index=False))


def _full_datasets(settings: dict[str, Any]):
    from chemgraph.data.datasets import get_dataset

    qm9 = get_dataset(settings["qm9_dataset"], settings.get("qm9_root"), download=False)
    qm9_gw = get_dataset(
        settings["qm9_gw_dataset"],
        settings.get("qm9_gw_root"),
        download=False,
        targets=list(settings["gw_targets"]),
    )
    return qm9, qm9_gw


def full_data_available(data_config: dict[str, Any]) -> bool:
    """Whether the QM9 and QM9-GW downloads are present (nothing is downloaded)."""
    try:
        datasets = _full_datasets(data_config["full"])
    except (FileNotFoundError, ValueError, KeyError):
        return False
    return all(
        all(s.name in d.source_files_present() for s in d.files if not s.optional) for d in datasets
    )


def check_orbital_energies_ev(frame: pd.DataFrame, columns: list[str], source: str) -> None:
    """Refuse orbital energies that are not in eV: the median of every HOMO column must lie
    between -30 and -1 eV (QM9 HOMOs are about -6 eV at PBE, -10 eV at GW; in Hartree they
    would be about -0.2 to -0.4).

    Raises:
        ValueError: a HOMO column outside that range (the message says what to fix).
    """
    for column in columns:
        if "homo" not in column.lower():
            continue
        median = float(np.nanmedian(frame[column].to_numpy(np.float64)))
        if not -30.0 < median < -1.0:
            raise ValueError(
                f"{source}: median {column} is {median:.4g}, not an orbital energy in eV "
                "(expected about -5 to -12); if the file holds Hartree, set the card's "
                "layout.unit: hartree"
            )


def full_data(
    data_config: dict[str, Any], featurizer: RadiusGraphFeaturizer
) -> tuple[MultiFidelityData, dict[str, np.ndarray]]:
    """QM9 geometries joined with QM9-GW on the QM9 index.

    DFT labels (``data.full.dft_source``): ``qm9_gw`` = the ``dft_targets`` columns of the
    QM9-GW file (PBE HOMO/LUMO, eV), the paper's choice; ``qm9`` = QM9's B3LYP HOMO/LUMO (eV).
    GW labels: the ``gw_targets`` columns of QM9-GW. Every QM9 molecule is a position of the
    data; the DFT pool holds those with both DFT labels, the GW split those with both GW labels.

    Raises:
        FileNotFoundError: a download is missing (the message says how to get it).
        ConfigError: an unknown ``dft_source`` or a ``dft_targets`` column the card lacks.
        ValueError: labels that are not in eV (:func:`check_orbital_energies_ev`).
    """
    settings = data_config["full"]
    qm9, qm9_gw = _full_datasets(settings)
    structures = qm9.parse().table
    gw = qm9_gw.parse().table.set_index("qm9_index").reindex(structures["qm9_index"])
    gw_targets = list(settings["gw_targets"])
    dft_source = settings.get("dft_source", "qm9_gw")
    if dft_source == "qm9_gw":
        dft_targets = list(settings["dft_targets"])
        unknown = [c for c in dft_targets if c not in gw.columns]
        if unknown:
            raise ConfigError(
                f"data.full.dft_targets: {unknown} are not columns of {settings['qm9_gw_dataset']}"
                f" (it has {[c for c in gw.columns if c != 'gw_row']})"
            )
        low = gw[dft_targets]
        low_theory = (
            f"{', '.join(dft_targets)} of QM9-GW (PBE, the GW starting point; Fediai et al. "
            "2023), eV"
        )
    elif dft_source == "qm9":
        low = structures[TARGETS]
        low_theory = f"{DFT_THEORY}, eV (data.full.dft_source: qm9, not the paper's QM9-GW DFT)"
    else:
        raise ConfigError(f"data.full.dft_source must be qm9_gw or qm9, got {dft_source!r}")
    check_orbital_energies_ev(low, list(low.columns), f"DFT labels ({dft_source})")
    check_orbital_energies_ev(gw, gw_targets, "GW labels (QM9-GW)")
    data = MultiFidelityData(
        graphs=radius_graphs(
            list(structures["atomic_numbers"]), list(structures["positions"]), featurizer
        ),
        ids=structures["qm9_index"].to_numpy(),
        low=low.to_numpy(np.float32),
        high=gw[gw_targets].to_numpy(np.float32),
        targets=TARGETS,
        low_name="DFT",
        high_name="GW",
        low_theory=low_theory,
        high_theory=f"{', '.join(gw_targets)} (QM9-GW, Fediai et al. 2023), eV",
        smiles=list(structures["smiles"]) if "smiles" in structures else None,
        low_columns=list(low.columns),
    )
    counts = dict(settings["split_counts"])
    split = high_fidelity_split(data, data_config["split_seed"], counts=counts)
    return data, split
