"""Recipe ``dft_to_gw``: GW HOMO/LUMO from 3D structures by DFT -> GW transfer learning.

Buterez et al. 2024, "An end-to-end attention-based approach for learning on graphs"
(arXiv:2402.10793), section 4.1, SI 4 and Table 5: 3D ESA (radius-graph edges, atom types and
Gaussian distance features only) pretrained on DFT HOMO/LUMO, fine-tuned on GW HOMO/LUMO, in
three strategies (GW only, inductive, transductive; :mod:`chemgraph.transfer`); test RMSE
in eV, mean ± std over seeds.

Two data sources, one command (``chemgraph recipe run dft_to_gw``):

* ``full``: QM9 geometries + QM9-GW (Fediai et al. 2023) through
  :func:`chemgraph.data.datasets.get_dataset`: the DFT (PBE) HOMO/LUMO of the QM9-GW file
  itself pretrain (``data.full.dft_source: qm9_gw``, as the paper; ``qm9`` = QM9's B3LYP
  values instead, a labelled choice), its G0W0@PBE HOMO/LUMO fine-tune; the paper's
  25K/5K/10K GW split, 150 pretraining epochs, 5 seeds, one chain per target, the authors' 3D
  settings (``training``; ``profiles.full`` adds nothing).
* ``embedded`` (offline, ``make demo``): GW labels computed by this project with pyscf
  (``datasets/qm9_gw_embedded.csv``, G0W0@PBE/def2-SVP of the 1,000 smallest qm9pack
  molecules; ``recipes/dft_to_gw/compute_gw_labels.py``) and the B3LYP labels and geometries
  of qm9pack for the DFT pretraining pool; one joint HOMO+LUMO model (``profiles.embedded``).

``data.source: auto`` picks ``full`` when both downloads are present, else ``embedded``. Before
the table, the log (and ``table.md``) lists every remaining difference from the paper's
protocol, one per line (:func:`paper_differences`).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chemgraph._resources import recipe_path
from chemgraph.data.multi_fidelity import MultiFidelityData
from chemgraph.data.qm9_gw import DFT_THEORY, embedded_data, full_data, full_data_available
from chemgraph.errors import ConfigError
from chemgraph.recipes.registry import RECIPES, recipe_settings
from chemgraph.train.config import merge_settings, read_settings
from chemgraph.train.trainer import resolve_precision
from chemgraph.transfer.chains import STACKED, pretraining_pool
from chemgraph.transfer.config import PAPER_STRATEGIES, TransferConfig
from chemgraph.transfer.report import transfer_claim
from chemgraph.transfer.run import label_curve, transfer_job

__all__ = [
    "DESCRIPTION",
    "PAPER_PROTOCOL",
    "default_config",
    "paper_differences",
    "run",
]

log = logging.getLogger(__name__)

DESCRIPTION = RECIPES["dft_to_gw"].description
PAPER_POOL = 133_885  # SI 4: "from the total 133,885"; the transductive DFT pool

#: The Table 5 protocol, ``(block, setting) -> (value, source)``: ``block`` is ``""`` for a
#: :class:`~chemgraph.transfer.config.TransferConfig` field, else ``featurizer`` or
#: ``model_options``. "paper" = Buterez et al. 2024; "authors' code" =
#: github.com/davidbuterez/edge-set-attention (transfer_learning/esa_3d and the README's
#: DFT -> GW commands). A value of None with a source = the paper gives none.
PAPER_PROTOCOL: dict[tuple[str, str], tuple[Any, str]] = {
    ("", "strategies"): (list(PAPER_STRATEGIES), "paper Table 5: GW only, Ind., Trans."),
    ("", "seeds"): (5, "paper Table 5"),
    ("", "joint_targets"): (False, "authors' code: one target per model"),
    ("", "pretrain_epochs"): (150, "paper SI 4"),
    ("", "pretrain_max_minutes"): (None, "paper SI 4: a fixed number of epochs"),
    ("", "finetune_max_epochs"): (None, "paper SI 7: early stopping ends training"),
    ("", "finetune_max_minutes"): (None, "paper SI 7: early stopping ends training"),
    ("", "early_stopping_patience"): (30, "paper SI 7; the authors' command: 10"),
    ("", "lr_schedule"): ("plateau", "paper SI 7: halve after 15 epochs without improvement"),
    ("", "lr_patience"): (15, "paper SI 7"),
    ("", "batch_size"): (128, "paper SI 7"),
    ("", "finetune_batch_size"): (None, "paper SI 7: batch 128 in both phases"),
    ("", "delta_learning"): (False, "paper Table 5: the DFT labels only pretrain"),
    ("", "stack_kernel_ridge"): (False, "paper Table 5: ESA alone"),
    ("", "learning_rate"): (1e-4, "paper SI 7"),
    ("", "finetune_learning_rate"): (None, "paper SI 7: one learning rate, 1e-4"),
    ("", "gradient_clip"): (0.5, "paper SI 7"),
    ("", "freeze_encoder"): (False, "authors' code: every weight fine-tuned"),
    ("featurizer", "cutoff"): (2.0, "authors' code: radius_graph(r=2)"),
    ("featurizer", "max_neighbors"): (32, "authors' code: max_num_neighbors=32"),
    ("featurizer", "num_basis"): (32, "authors' code: GaussianLayer K=32"),
    ("featurizer", "atom_distance_basis"): (32, "authors' code: 32 Gaussians over all atoms"),
    ("model_options", "hidden_dim"): (256, "authors' command"),
    ("model_options", "num_heads"): (16, "authors' command"),
    ("model_options", "layer_pattern"): ("MMMMMMMMP", "authors' command"),
    ("model_options", "num_seeds"): (32, "authors' code: PMA num_outputs=32"),
    ("model_options", "norm"): ("post", "authors' command"),
    ("model_options", "mlp"): ("swiglu", "authors' command: gated_mlp, SiLU-gated"),
    ("model_options", "mlp_hidden_multiplier"): (2, "authors' command: MLP width 512"),
    ("model_options", "dropout"): (0.0, "authors' command"),
    ("model_options", "attend_to_self"): (False, "official ESA code"),
}


def default_config() -> dict[str, Any]:
    """The recipe's ``config.yaml`` as a dict."""
    return recipe_settings("dft_to_gw", None)


def paper_differences(
    source: str,
    data_config: dict[str, Any],
    config: TransferConfig,
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
) -> list[str]:
    """Every remaining difference of this run from the paper's Table 5 protocol, one line
    each: the data (what the DFT and GW labels are, split sizes, DFT pool), the settings that
    differ from :data:`PAPER_PROTOCOL` and what chemgraph does differently whatever the
    settings (features, loss, optimiser, head, pretraining hold-out, ESA internals)."""
    lines = []
    if source == "embedded":
        lines.append(
            f"DFT labels: {DFT_THEORY} of qm9pack, not the refined DFT (PBE) of QM9-GW that "
            "the paper pretrains on"
        )
        lines.append(
            f"GW labels: {data.high_theory} computed here for the smallest molecules, not "
            "QM9-GW (CP2K, basis-set limit)"
        )
    else:
        if data_config["full"].get("dft_source", "qm9_gw") != "qm9_gw":
            lines.append(
                f"DFT labels: {DFT_THEORY} (data.full.dft_source: qm9), not the refined DFT "
                "(PBE) of QM9-GW that the paper pretrains on"
            )
        lines.append(
            f"GW labels: {', '.join(data_config['full']['gw_targets'])}; the paper says GW "
            "without naming G0W0 or evGW"
        )
    sizes = [len(split[name]) for name in ("train", "val", "test")]
    if sizes != [25_000, 5_000, 10_000]:
        lines.append(
            "GW split {}/{}/{} molecules; the paper 25,000/5,000/10,000 (SI 4)".format(*sizes)
        )
    lines.append(
        f"GW split: seeded random (split_seed {data_config['split_seed']}); the authors' "
        "split files are not used, so the test molecules differ"
    )
    pool = len(pretraining_pool(data, split, "transductive"))
    if pool != PAPER_POOL:
        lines.append(f"DFT pool {pool:,} molecules (transductive); the paper {PAPER_POOL:,}")
    values = config.to_dict()
    for (block, key), (expected, where) in PAPER_PROTOCOL.items():
        value = values[key] if not block else _block_value(config, block, key)
        if value != expected:
            name = f"{block}.{key}" if block else key
            shown = "none" if expected is None else expected
            lines.append(
                f"{name} = {_show(value)}, where the Table 5 protocol has {_show(shown)} ({where})"
            )
    if values["weight_decay"] != 1e-10:
        lines.append(
            f"weight_decay = {values['weight_decay']:g}; not given in the paper (the authors' "
            "command: 1e-10)"
        )
    precision = resolve_precision(config.accelerator, config.precision)
    if precision != "bf16-mixed":
        lines.append(f"precision {precision}; paper SI 7: bf16 mixed precision")
    featurizer = config.graph_featurizer
    if featurizer.atom_distance_basis:
        lines.append(
            f"atom features: element one-hot + the sum over every other atom of the molecule of "
            f"{featurizer.atom_distance_basis} fixed Gaussians of the distance (centres 0-"
            f"{featurizer.atom_distance_range:g} Å); the authors' code: learned per-atom-pair "
            "Gaussians summed over all atoms, projected into a learned atom embedding"
        )
    else:
        lines.append(
            "atom features: element one-hot only (featurizer.atom_distance_basis: 0), so the "
            "model sees no distance beyond the radius graph's; the authors' code adds to every "
            "atom embedding the sum over all atoms of learned per-atom-pair Gaussians"
        )
    lines += [
        "edge tokens: the features of both atoms + fixed Gaussians of the distance; the "
        "authors' code: learned atom embeddings and per-atom-pair learned Gaussians",
        "loss: MSE of standardised labels; the authors' command: MAE",
        "optimiser: 32-bit AdamW; paper SI 7: 8-bit AdamW",
        f"pretraining trains on {1 - config.pretrain_val_fraction:.0%} of its pool (the rest "
        "draws its learning curve"
        + (" and drives the plateau schedule" if config.lr_schedule == "plateau" else "")
        + "); the authors' code on all of it, without a schedule",
        "fine-tuning starts from a fresh output head; the authors' code keeps the pretrained one",
        "ESA internals are chemgraph's (chemgraph.models.esa: its MLPs, seed-mean readout, "
        "Linear-GELU-Linear head); the authors' code: gated MLPs with layer norm, 512-wide "
        "graph output, 512-128-1 head",
    ]
    return lines


def _block_value(config: TransferConfig, block: str, key: str) -> Any:
    if block == "featurizer":
        return getattr(config.graph_featurizer, key)
    from chemgraph.models import ESAConfig

    resolved = ESAConfig(in_features=1, **config.model_options)
    return getattr(resolved, key)


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run(
    config: str | Path | dict[str, Any] | None = None,
    seeds: int | None = None,
    out: str | Path = "runs/dft_to_gw",
    source: str | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """Run the recipe and log the Table 5-style results.

    Args:
        config: a YAML file or dict in the layout of ``recipes/dft_to_gw/config.yaml``, merged
            over that file (:func:`chemgraph.recipes.registry.recipe_settings`; its
            ``training`` keys also win over the data source's profile); None = that file.
        seeds: override the number of seeds.
        out: output folder: what ``chemgraph transfer`` writes
            (:func:`chemgraph.transfer.run.transfer_job`: table, runs, predictions of the test
            and of the unlabelled molecules, checkpoints, ``transfer.yaml``), with the
            differences from the paper above the table in ``table.md``.
        source: override ``data.source`` (``"auto"``, ``"embedded"``, ``"full"``).
        resume: continue the run stopped by a signal in ``out``, with the same settings
            (its ``transfer.yaml``): finished chains are kept, the interrupted one continues
            from its ``last.ckpt`` (:func:`chemgraph.transfer.run.transfer_job`), and so does
            the label curve's.

    Returns:
        The results table (:func:`chemgraph.transfer.report.results_table`).

    Raises:
        ValueError: unknown source or settings; ``resume`` without an interrupted run of
            these settings in ``out``; FileNotFoundError: ``source="full"`` without the
            downloads.
    """
    start, cpu_start = time.perf_counter(), _cpu_seconds()
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
    models = (
        "one joint HOMO+LUMO model per strategy and seed (joint_targets: true)"
        if transfer.joint_targets
        else "a separate pretraining + fine-tuning chain per target (HOMO, LUMO)"
    )
    log.info(
        "dft_to_gw (%s data): %d molecules with %s labels [%s]; %s labels [%s] split "
        "train %d / val %d / test %d\n"
        "DFT pretraining pools: inductive %d molecules (GW test molecules excluded), "
        "transductive %d (their DFT labels included); radius graph %s Å, %s, %d Gaussians "
        "(%.1f ESA tokens per molecule); %s; %d seeds, %d pretraining epochs, %s",
        source, len(data), data.low_name, data.low_theory, data.high_name, data.high_theory,
        len(split["train"]), len(split["val"]), len(split["test"]), pools["inductive"],
        pools["transductive"], featurizer.cutoff,
        "no neighbour cap" if cap is None else f"at most {cap} neighbours",
        featurizer.num_basis, tokens, models, transfer.seeds, transfer.pretrain_epochs,
        _budget(transfer),
    )  # fmt: skip
    differences = paper_differences(source, data_config, transfer, data, split)
    header = "\n".join(
        [f"Differences from Buterez et al. 2024 Table 5 ({len(differences)}):"]
        + [f"- {line}" for line in differences]
    )
    counts = data_config.get("label_counts")
    pretrained = {} if counts else None  # the label curve reuses this run's pretrained models
    # the job of `chemgraph transfer` on the QM9-GW molecules; transfer.yaml holds the
    # settings that repeat the run (`chemgraph recipe run dft_to_gw --config transfer.yaml`)
    settings = {"data": {**data_config, "source": source}, "training": transfer.to_dict()}
    table, runs, _ = transfer_job(
        data, split, transfer, out, settings, None, pretrained, resume=resume
    )
    _, claim = transfer_claim(table, data.high_name, "eV")
    tables = (Path(out) / "table.md").read_text().rstrip("\n")  # with the seed ensembles
    (Path(out) / "table.md").write_text(f"{header}\n\n{tables}\n")
    log.info(
        "\n%s\n\nTest RMSE (eV) on %s HOMO/LUMO of 3D ESA (mean ± std over %d seeds) and of "
        "the baselines (deterministic: no seed changes them), %s:\n%s\n%s\n"
        "epochs run (mean over seeds): %s\nwall time %.0f s, CPU time %.0f s (%s); results in %s",
        header, data.high_name, transfer.seeds, data.high_theory, tables, claim,
        _epochs_run(runs), time.perf_counter() - start, _cpu_seconds() - cpu_start,
        _phase_times(runs), out,
    )  # fmt: skip
    if counts:
        folder = Path(out) / "label_curve"
        label_curve(
            data, split, transfer, [int(n) for n in counts], folder, "eV", pretrained, resume
        )
        log.info(
            "label curve (test RMSE against GW training labels): %s", folder / "label_curve.png"
        )
    else:
        log.info(
            "label curve: off (data.label_counts: null); with e.g. [50, 100, 250, 625] the "
            "recipe repeats the run per count and plots test RMSE against GW training labels; "
            "the curve of the embedded profile, measured so: %s",
            _stored_label_curve(),
        )
    return table


def _stored_label_curve() -> str:
    """Where the recipe's measured label curve is (``recipes/dft_to_gw/label_curve.png``, its
    table in the README beside it), or that it is missing."""
    try:
        return str(recipe_path("dft_to_gw", "label_curve.png"))
    except FileNotFoundError as error:
        return f"not found ({error})"


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (the chain workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


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


def _trained(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of trained models: a stacked Δ-learning row (:data:`STACKED`) repeats the
    epochs and seconds of its network's."""
    return runs[~runs["strategy"].isin(STACKED.values())]


def _epochs_run(runs: pd.DataFrame) -> str:
    epochs = (
        _trained(runs)
        .groupby("strategy", sort=False)[["pretrain_epochs", "finetune_epochs"]]
        .mean()
    )
    return "; ".join(
        f"{name}: pretrain {row.pretrain_epochs:.1f}, fine-tune {row.finetune_epochs:.1f}"
        for name, row in epochs.iterrows()
    )


def _phase_times(runs: pd.DataFrame) -> str:
    once = _trained(runs).drop_duplicates(["strategy", "seed", "targets"])  # one row per model
    return (
        f"pretraining {once['pretrain_seconds'].sum():.0f} s, "
        f"fine-tuning {once['finetune_seconds'].sum():.0f} s"
    )
