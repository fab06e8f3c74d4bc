"""Recipe ``dft_to_gw``: GW HOMO/LUMO from 3D structures by DFT -> GW transfer learning.

Buterez et al. 2024, "An end-to-end attention-based approach for learning on graphs"
(arXiv:2402.10793), section 4.1, SI 4 and Table 5: 3D ESA (radius-graph edges, atom types and
Gaussian distance features only) pretrained on DFT HOMO/LUMO, fine-tuned on GW HOMO/LUMO, in
three strategies (GW only, inductive, transductive; :mod:`chemgraph.train.transfer`); test RMSE
in eV, mean ± std over seeds.

Two data sources, one command (``chemgraph recipe run dft_to_gw``):

* ``full``: QM9 (B3LYP/6-31G(2df,p) DFT labels and geometries) + QM9-GW (G0W0@PBE labels,
  Fediai et al. 2023) through :func:`chemgraph.data.datasets.get_dataset`; the paper's
  25K/5K/10K GW split, 150 pretraining epochs, 5 seeds (``profiles.full``).
* ``embedded`` (offline, ``make demo``): GW labels computed by this project with pyscf
  (``datasets/qm9_gw_embedded.csv``, G0W0@PBE/def2-SVP of the 1,000 smallest qm9pack
  molecules; ``recipes/dft_to_gw/compute_gw_labels.py``) and the B3LYP labels and geometries
  of qm9pack for the DFT pretraining pool (``profiles.embedded``).

``data.source: auto`` picks ``full`` when both downloads are present, else ``embedded``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chemgraph._resources import cards_folder
from chemgraph.errors import ConfigError
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.graphs import atoms_to_radius_graph
from chemgraph.recipes.registry import recipe_settings
from chemgraph.train.config import merge_settings, read_settings
from chemgraph.train.transfer import (
    MultiFidelityData,
    TransferConfig,
    format_table,
    high_fidelity_split,
    pretraining_pool,
    results_table,
    run_transfer,
    transfer_claim,
)

__all__ = [
    "DESCRIPTION",
    "default_config",
    "embedded_data",
    "full_data",
    "full_data_available",
    "run",
]

log = logging.getLogger(__name__)

DESCRIPTION = (
    "DFT -> GW transfer learning of HOMO/LUMO energies with 3D ESA (Buterez et al. 2024, Table 5): "
    "GW only, inductive and transductive pretraining"
)
DFT_THEORY = "B3LYP/6-31G(2df,p) (QM9)"
TARGETS = ["homo", "lumo"]


def default_config() -> dict[str, Any]:
    """The recipe's ``config.yaml`` as a dict."""
    return recipe_settings("dft_to_gw", None)


def _graphs(numbers: list, positions: list, featurizer: RadiusGraphFeaturizer) -> list:
    # distance features are expanded per batch (chemgraph.train.transfer): K x less memory
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
        graphs=_graphs(numbers, list(molecules["positions"]), featurizer),
        ids=molecules["qm9_index"].to_numpy(),
        low=dft[["homo_ev", "lumo_ev"]].to_numpy(np.float32),
        high=high[["gw_homo_ev", "gw_lumo_ev"]].to_numpy(np.float32),
        targets=TARGETS,
        low_name="DFT",
        high_name="GW",
        low_theory=DFT_THEORY,
        high_theory=_gw_theory(gw),
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


def full_data(
    data_config: dict[str, Any], featurizer: RadiusGraphFeaturizer
) -> tuple[MultiFidelityData, dict[str, np.ndarray]]:
    """QM9 (DFT labels, geometries) joined with QM9-GW (GW labels) on the QM9 index.

    Every QM9 molecule is in the DFT pool; GW labels where QM9-GW has both targets.

    Raises:
        FileNotFoundError: a download is missing (the message says how to get it).
    """
    settings = data_config["full"]
    qm9, qm9_gw = _full_datasets(settings)
    structures = qm9.parse().table
    gw = qm9_gw.parse().table.set_index("qm9_index")
    high = gw.reindex(structures["qm9_index"])[list(settings["gw_targets"])]
    data = MultiFidelityData(
        graphs=_graphs(
            list(structures["atomic_numbers"]), list(structures["positions"]), featurizer
        ),
        ids=structures["qm9_index"].to_numpy(),
        low=structures[TARGETS].to_numpy(np.float32),
        high=high.to_numpy(np.float32),
        targets=TARGETS,
        low_name="DFT",
        high_name="GW",
        low_theory=DFT_THEORY,
        high_theory=f"{', '.join(settings['gw_targets'])} (QM9-GW, Fediai et al. 2023)",
    )
    counts = dict(settings["split_counts"])
    split = high_fidelity_split(data, data_config["split_seed"], counts=counts)
    return data, split


def run(
    config: str | Path | dict[str, Any] | None = None,
    seeds: int | None = None,
    out: str | Path = "runs/dft_to_gw",
    source: str | None = None,
) -> pd.DataFrame:
    """Run the recipe and log the Table 5-style results.

    Args:
        config: a YAML file or dict in the layout of ``recipes/dft_to_gw/config.yaml``, merged
            over that file (:func:`chemgraph.recipes.registry.recipe_settings`; its
            ``training`` keys also win over the data source's profile); None = that file.
        seeds: override the number of seeds.
        out: output folder (see :func:`chemgraph.train.transfer.run_transfer`).
        source: override ``data.source`` (``"auto"``, ``"embedded"``, ``"full"``).

    Returns:
        The results table (:func:`chemgraph.train.transfer.results_table`).

    Raises:
        ValueError: unknown source or settings; FileNotFoundError: ``source="full"`` without
            the downloads.
    """
    start = time.perf_counter()
    override = read_settings(config)
    values = recipe_settings("dft_to_gw", override)
    data_config = values["data"]
    source = source or data_config.get("source", "auto")
    if source == "auto":
        source = "full" if full_data_available(data_config) else "embedded"
    if source not in ("embedded", "full"):
        raise ConfigError(f"data.source must be auto, embedded or full, got {source!r}")
    training = merge_settings(values["training"], values.get("profiles", {}).get(source) or {})
    # the profile adapts the file's `training` block; a user's own `training` keys win over it
    training = merge_settings(training, override.get("training") or {})
    if seeds is not None:
        training["seeds"] = seeds
    transfer = TransferConfig.from_dict(training, source="training")
    featurizer = transfer.graph_featurizer
    loader = full_data if source == "full" else embedded_data
    data, split = loader(data_config, featurizer)
    pools = {s: len(pretraining_pool(data, split, s)) for s in ("inductive", "transductive")}
    tokens = np.mean([max(graph.num_edges(), 1) for graph in data.graphs])
    cap = featurizer.max_neighbors
    log.info(
        "dft_to_gw (%s data): %d molecules with %s labels [%s]; %s labels [%s] split "
        "train %d / val %d / test %d\n"
        "DFT pretraining pools: inductive %d molecules (GW test molecules excluded), "
        "transductive %d (their DFT labels included); radius graph %s Å, %s, %d Gaussians "
        "(%.1f ESA tokens per molecule); %d seeds, %d pretraining epochs, %s",
        source, len(data), data.low_name, data.low_theory, data.high_name, data.high_theory,
        len(split["train"]), len(split["val"]), len(split["test"]), pools["inductive"],
        pools["transductive"], featurizer.cutoff,
        "no neighbour cap" if cap is None else f"at most {cap} neighbours",
        featurizer.num_basis, tokens, transfer.seeds, transfer.pretrain_epochs, _budget(transfer),
    )  # fmt: skip
    runs = run_transfer(data, split, transfer, out)
    table = results_table(runs, data.high_name)
    _, claim = transfer_claim(table, data.high_name, "eV")
    log.info(
        "\nTest RMSE (eV) of 3D ESA on %s HOMO/LUMO, mean ± std over %d seeds (%s):\n%s\n"
        "%s\nepochs run (mean over seeds): %s\nwall time %.0f s (%s); results in %s",
        data.high_name, transfer.seeds, data.high_theory, format_table(table), claim,
        _epochs_run(runs), time.perf_counter() - start, _phase_times(runs), out,
    )  # fmt: skip
    return table


def _budget(config: TransferConfig) -> str:
    caps = [
        f"{phase} stops after {minutes:g} min"
        for phase, minutes in (
            ("pretraining", config.pretrain_max_minutes),
            ("fine-tuning", config.finetune_max_minutes),
        )
        if minutes is not None
    ]
    return (
        "wall-clock caps: " + ", ".join(caps) + " (results depend on the machine's speed)"
        if caps
        else "no wall-clock caps (fixed epochs and seeds: a rerun prints the same table)"
    )


def _epochs_run(runs: pd.DataFrame) -> str:
    epochs = runs.groupby("strategy", sort=False)[["pretrain_epochs", "finetune_epochs"]].mean()
    return "; ".join(
        f"{name}: pretrain {row.pretrain_epochs:.1f}, fine-tune {row.finetune_epochs:.1f}"
        for name, row in epochs.iterrows()
    )


def _phase_times(runs: pd.DataFrame) -> str:
    once = runs.drop_duplicates(["strategy", "seed"])  # one row per model, not per target
    return (
        f"pretraining {once['pretrain_seconds'].sum():.0f} s, "
        f"fine-tuning {once['finetune_seconds'].sum():.0f} s"
    )
