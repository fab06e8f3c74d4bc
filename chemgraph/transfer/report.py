"""What a transfer run reports: the results table in the layout of Buterez et al. 2024 Table 5
with the baselines (:func:`results_table`), each strategy's margin over the best baseline of its
setting and the claim it supports (:func:`transfer_margins`, :func:`transfer_claim`), the seed
ensembles (:func:`seed_ensembles`), the markdown of ``table.md`` (:func:`format_table`) and the
predictions of the molecules without high-fidelity labels (:func:`write_unlabelled`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from chemgraph.data.multi_fidelity import MultiFidelityData
from chemgraph.train.ensemble import ensemble_statistics
from chemgraph.train.metrics import regression_metrics
from chemgraph.transfer.chains import STACKED, Chain
from chemgraph.transfer.config import model_label

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "KERNEL_RIDGE_ALONE",
    "SELECTION_ORDER",
    "SETTINGS",
    "STRATEGY_LABELS",
    "format_selection",
    "format_table",
    "model_selection",
    "results_table",
    "seed_ensembles",
    "test_frame",
    "transfer_claim",
    "transfer_margins",
    "write_recommended_predictions",
    "write_unlabelled",
]

STRATEGY_LABELS = {
    "inductive": "Ind.",
    "inductive_stacked": "Ind. + kernel ridge (stacked Δ)",
    "transductive": "Trans.",
    "transductive_stacked": "Trans. + kernel ridge (stacked Δ)",
    "label_augmentation": "Trans., label augmentation",
}
SETTINGS = {
    "high_fidelity_only": "none",
    "inductive": "inductive",
    "inductive_stacked": "inductive",
    "transductive": "transductive",
    "transductive_stacked": "transductive",
    "label_augmentation": "transductive",
}


def _spread_text(std: float, seeds: int) -> str:
    """``"± 0.012"``, or ``"± undefined"`` for one seed (no sample spread), nothing for a
    deterministic baseline (``seeds == 0``)."""
    if seeds == 0:
        return ""
    return " ± undefined" if seeds < 2 or np.isnan(std) else f" ± {std:.3f}"


def results_table(
    runs: pd.DataFrame,
    high_name: str = "GW",
    model: str = "ESA",
    baselines: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Buterez et al. 2024 Table 5 layout, with the baselines: one row per (target, method),
    test RMSE mean ± std.

    Args:
        runs: rows with ``strategy``, ``seed``, ``target``, ``rmse``
            (:func:`~chemgraph.transfer.run.run_transfer`; a stacked Δ-learning row,
            :data:`~chemgraph.transfer.chains.STACKED`, has its own row after its strategy's).
        high_name: label of the no-transfer strategy (``"GW"`` -> "GW" row, as in Table 5).
        model: the model's name, written into the ``method`` of its rows.
        baselines: rows with ``baseline`` (its label), ``setting`` (``both``, ``inductive``,
            ``transductive``), ``target``, ``rmse``
            (:func:`~chemgraph.transfer.run.baseline_runs`); None = none.

    Returns:
        Columns ``target``, ``strategy`` (``GW``, ``Ind.``, ``Trans.``, ``Trans. + kernel ridge
        (stacked Δ)`` … or the baseline's label), ``setting`` (``none`` for the no-transfer
        row), ``method`` (the model, ``ESA + kernel ridge`` for a stacked row, or
        ``baseline``), ``test RMSE`` (``"0.152 ± 0.003"``; ``"0.152 ± undefined"`` for one
        seed; ``"0.152"`` for a baseline, which no seed changes), ``rmse_mean``, ``rmse_std``
        (sample standard deviation, ddof 1; NaN for one seed and for a baseline), ``seeds``
        (``Int64``; missing for a baseline, which is deterministic), and, when ``runs`` has
        stacked rows, ``stack weight``: a stacked row's ``w`` of each seed in seed order
        (``"0.8, 0.7"``; :data:`KERNEL_RIDGE_ALONE` when every ``w`` is 0, ``"1 (network
        alone)"`` when every one is 1), empty for the other rows. ``target`` as the user
        named it.
    """
    labels = {"high_fidelity_only": high_name, **STRATEGY_LABELS}
    records = []
    targets = list(dict.fromkeys(runs["target"])) if len(runs) else []
    if baselines is not None and len(baselines):
        targets += [t for t in dict.fromkeys(baselines["target"]) if t not in targets]
    for target in targets:
        for strategy in [s for s in SETTINGS if s in set(runs.get("strategy", []))]:
            values = runs[(runs.target == target) & (runs.strategy == strategy)]["rmse"]
            if values.empty:
                continue
            std = float(values.std(ddof=1)) if len(values) > 1 else float("nan")
            stacked = strategy in STACKED.values()
            records.append(
                {
                    "target": target, "strategy": labels[strategy],
                    "setting": SETTINGS[strategy],
                    "method": f"{model} + kernel ridge" if stacked else model,
                    "test RMSE": f"{values.mean():.3f}{_spread_text(std, len(values))}",
                    "rmse_mean": float(values.mean()), "rmse_std": std, "seeds": len(values),
                }
            )  # fmt: skip
            if stacked:
                rows = runs[(runs.target == target) & (runs.strategy == strategy)]
                records[-1]["stack weight"] = _weights_text(rows.sort_values("seed"))
        if baselines is None or not len(baselines):
            continue
        for row in baselines[baselines.target == target].itertuples(index=False):
            records.append(
                {
                    "target": target, "strategy": row.baseline, "setting": row.setting,
                    "method": "baseline", "test RMSE": f"{row.rmse:.3f}",
                    "rmse_mean": float(row.rmse), "rmse_std": float("nan"), "seeds": pd.NA,
                }
            )  # fmt: skip
    columns = ["target", "strategy", "setting", "method", "test RMSE", "rmse_mean", "rmse_std"]
    columns.append("seeds")
    if any("stack weight" in record for record in records):
        columns.append("stack weight")
    table = pd.DataFrame(records, columns=columns)
    return table.astype({"seeds": "Int64"})


def seed_ensembles(
    predictions: pd.DataFrame, high_name: str = "GW", model: str = "ESA"
) -> pd.DataFrame:
    """The test RMSE of every trained strategy's seed ensemble: per molecule the mean of its
    seeds' predictions, which is what ``predictions_unlabelled.csv`` gives for the molecules
    without high-fidelity labels and ``chemgraph predict`` gives with every seed's checkpoint
    (not for a stacked row, whose kernel ridge is not stored): an ensemble of independently
    trained networks (Lakshminarayanan, Pritzel and Blundell 2017, "Simple and scalable
    predictive uncertainty estimation using deep ensembles", NeurIPS, arXiv:1612.01474).
    :func:`results_table` reports the seeds one by one, as
    Buterez et al. 2024 Table 5 does; this table says how accurate the averaged prediction a
    user receives is. It is one model, so it has no seed-to-seed spread, and
    :func:`transfer_claim` does not use it.

    Args:
        predictions: the test predictions of the trained runs in the layout of
            ``predictions.csv`` (``strategy``, ``seed``, ``id``, per target ``<target>`` and
            ``<target>_pred``), one block per strategy and seed in the same molecule order.
        high_name, model: as :func:`results_table`'s.

    Raises:
        ValueError: a strategy whose seeds list different test molecules (``id``, in order).

    Returns:
        One row per target and strategy with at least 2 seeds, in :func:`results_table`'s
        order: ``target``, ``strategy`` (its label and "ensemble of N seeds"), ``setting``,
        ``method``, ``seeds``, ``test RMSE`` (the ensemble's, text), ``mean over seeds``
        (the per-seed mean RMSE of :func:`results_table`, text), the numbers ``rmse``,
        ``mae`` and ``seed_mean_rmse``, and ``key``, the strategy as ``runs.csv`` and
        ``predictions.csv`` name it (e.g. ``transductive_stacked``). Empty (those columns)
        without such a strategy (one seed).
    """
    labels = {"high_fidelity_only": high_name, **STRATEGY_LABELS}
    targets = [c[: -len("_pred")] for c in predictions.columns if c.endswith("_pred")]
    records = []
    for target in targets:
        for strategy in [s for s in SETTINGS if s in set(predictions["strategy"])]:
            runs = [
                rows for _, rows in
                predictions[predictions["strategy"] == strategy].groupby("seed", sort=True)
            ]  # fmt: skip
            if len(runs) < 2:
                continue
            if any(list(rows["id"]) != list(runs[0]["id"]) for rows in runs):
                raise ValueError(f"{strategy}: the seeds predicted different test molecules")
            truth = runs[0][target].to_numpy(np.float64)
            members = np.stack([rows[f"{target}_pred"].to_numpy(np.float64) for rows in runs])
            metrics = regression_metrics(truth, members.mean(axis=0))
            seed_mean = float(
                np.mean([regression_metrics(truth, member)["rmse"] for member in members])
            )
            stacked = strategy in STACKED.values()
            records.append(
                {
                    "target": target,
                    "strategy": f"{labels[strategy]}, ensemble of {len(runs)} seeds",
                    "setting": SETTINGS[strategy],
                    "method": f"{model} + kernel ridge" if stacked else model,
                    "seeds": len(runs), "test RMSE": f"{metrics['rmse']:.3f}",
                    "mean over seeds": f"{seed_mean:.3f}", "rmse": metrics["rmse"],
                    "mae": metrics["mae"], "seed_mean_rmse": seed_mean, "key": strategy,
                }
            )  # fmt: skip
    columns = ["target", "strategy", "setting", "method", "seeds", "test RMSE"]
    columns += ["mean over seeds", "rmse", "mae", "seed_mean_rmse", "key"]
    return pd.DataFrame(records, columns=columns)


KERNEL_RIDGE_ALONE = "0 (kernel ridge alone)"
"""The ``stack weight`` of a stacked row in :func:`results_table` whose ``w`` is 0 for every
seed: the row is the kernel ridge alone, without the network (:func:`format_table` says so
under the table)."""


def _weights_text(rows: pd.DataFrame) -> str:
    """The ``stack weight`` cell of the stacked ``rows`` of ``runs.csv`` (one per seed)."""
    weights = rows["stack_weight"].astype(float).tolist()
    if all(w == 0 for w in weights):
        return KERNEL_RIDGE_ALONE
    if all(w == 1 for w in weights):
        return "1 (network alone)"
    return ", ".join(f"{w:g}" for w in weights)


def transfer_margins(table: pd.DataFrame, high_name: str = "GW") -> pd.DataFrame:
    """How far each transfer strategy beats the best baseline of its setting, against the seed
    spread.

    For every target and transfer strategy, the candidates are the no-transfer row
    (``high_name``) and every baseline of the strategy's setting or of ``both``; the best is the
    one with the lowest mean RMSE. ``margin = mean RMSE(best) − mean RMSE(strategy)``
    (positive = the strategy is ahead) and ``spread = max(std(best), std(strategy))`` (the
    larger sample std over seeds; a baseline has none).

    Args:
        table: :func:`results_table`.
        high_name: the label of the no-transfer row.

    Returns:
        Columns ``target``, ``strategy``, ``best`` (the best candidate's label), ``margin``,
        ``spread`` (NaN with one seed), ``seeds`` (the strategy's), ``shown`` (``margin >
        spread`` with at least 2 seeds) and ``negative`` (``margin < 0``: negative transfer);
        one row per target and transfer strategy, in table order. Empty when no target has a
        transfer strategy and a candidate.
    """
    records = []
    for target, rows in table.groupby("target", sort=False):
        strategies = rows[(rows["method"] != "baseline") & (rows["strategy"] != high_name)]
        for row in strategies.itertuples(index=False):
            candidates = rows[
                (rows["strategy"] == high_name)
                | ((rows["method"] == "baseline") & rows["setting"].isin(["both", row.setting]))
            ]
            if candidates.empty:
                continue
            best = candidates.loc[candidates["rmse_mean"].idxmin()]
            margin = float(best["rmse_mean"] - row.rmse_mean)
            deterministic = pd.isna(best["seeds"])  # a baseline: no spread of its own
            seeds = int(row.seeds if deterministic else min(best["seeds"], row.seeds))
            spread = float(row.rmse_std if deterministic else max(best["rmse_std"], row.rmse_std))
            spread = spread if seeds >= 2 else float("nan")
            records.append(
                dict(
                    target=target, strategy=row.strategy, best=best["strategy"], margin=margin,
                    spread=spread, seeds=seeds, shown=bool(seeds >= 2 and margin > spread),
                    negative=bool(margin < 0),
                )
            )  # fmt: skip
    columns = ["target", "strategy", "best", "margin", "spread", "seeds", "shown", "negative"]
    return pd.DataFrame(records, columns=columns)


def transfer_claim(table: pd.DataFrame, high_name: str = "GW", unit: str = "") -> tuple[bool, str]:
    """Whether the run shows every transfer strategy ahead of the best baseline of its setting
    (:func:`transfer_margins`), for every target, by more than the seed-to-seed spread, and
    lines that say so plainly: the verdict, then one line per strategy and target with its
    margin against its spread, "negative transfer" where a strategy is behind and "level with"
    where the two mean RMSEs differ by less than 0.0005 (e.g. a stacked row whose weight on the
    network was 0, which is the baseline itself).

    Returns:
        ``(shown, text)``; ``shown`` is False with one seed (no spread to compare with), without
        a baseline or without a transfer strategy.
    """
    margins = transfer_margins(table, high_name)
    if margins.empty:
        return False, f"No {high_name}-only or baseline rows and transfer rows to compare."
    units = f" {unit}" if unit else ""
    lines = []
    for m in margins.itertuples(index=False):
        spread = "undefined (one seed)" if np.isnan(m.spread) else f"{m.spread:.3f}"
        if abs(m.margin) < 5e-4:  # "ahead by 0.000" would say more than the digits do
            verdict = f"level with {m.best} (the mean RMSEs differ by less than 0.0005{units})"
        elif m.negative:
            verdict = f"negative transfer: behind {m.best} by {-m.margin:.3f}{units}"
        elif m.shown:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units} > spread {spread}"
        else:
            verdict = f"ahead of {m.best} by {m.margin:.3f}{units}, not above the spread {spread}"
        lines.append(f"{m.target} {m.strategy}: {verdict}")
    details = (
        f"margin = mean RMSE of the best baseline of the setting ({high_name} only included) − "
        "mean RMSE of the strategy, against the larger std of the two:\n" + "\n".join(lines)
    )
    strategies = ", ".join(dict.fromkeys(margins["strategy"]))
    claim = (
        f"every transfer strategy ({strategies}) beats every baseline of its setting for "
        f"{' and '.join(dict.fromkeys(margins['target']))} by more than the seed-to-seed spread"
    )
    if margins["seeds"].min() < 2:
        verdict = f"One seed gives no seed-to-seed spread: this run cannot show that {claim}."
        return False, f"{verdict}\n{details}"
    if margins["shown"].all():
        return True, f"Shown: {claim}.\n{details}"
    missing = ", ".join(
        f"{m.target} {m.strategy}" for m in margins.itertuples(index=False) if not m.shown
    )
    verdict = f"Not shown by this run that {claim}; not for {missing}"
    return False, f"{verdict}\n{details}"


def format_table(table: pd.DataFrame, ensembles: pd.DataFrame | None = None) -> str:
    """The markdown form of :func:`results_table` (what ``table.md`` holds), with a line under
    it for every stacked row whose weight was 0 for every seed (:data:`KERNEL_RIDGE_ALONE`),
    saying so in words; with ``ensembles`` (:func:`seed_ensembles`, not empty) a second table
    of the seed ensembles' test RMSE under it."""
    shown = table.drop(columns=["rmse_mean", "rmse_std"]).copy()
    shown["seeds"] = ["deterministic" if pd.isna(s) else str(s) for s in shown["seeds"]]
    notes = []
    if "stack weight" in shown:
        shown["stack weight"] = shown["stack weight"].fillna("")
        notes = [
            f"{row.target}, {row.strategy}: stacking chose the kernel ridge alone (w = 0) for "
            "every seed, so this row is the Δ-learning kernel ridge without the fine-tuned "
            "network"
            + (
                " (on the linear correction of the pretrained model's low-fidelity predictions, "
                "which differ by seed)"
                if row.setting == "inductive"
                else ""
            )
            for row in table[shown["stack weight"] == KERNEL_RIDGE_ALONE].itertuples()
        ]
    lines = _markdown(shown) + (["", *notes] if notes else [])
    if ensembles is not None and len(ensembles):
        lines += [
            "",
            "Seed ensembles: test RMSE of the mean prediction over the seeds (what "
            "predictions_unlabelled.csv gives, and chemgraph predict with every seed's "
            "checkpoint for the rows without a kernel ridge), beside the mean of the seeds' "
            "own RMSE above:",
            "",
            *_markdown(ensembles.drop(columns=["rmse", "mae", "seed_mean_rmse", "key"])),
        ]
    return "\n".join(lines)


def _markdown(frame: pd.DataFrame) -> list[str]:
    """The lines of a markdown table of ``frame``."""
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return [header, rule, *body]


def test_frame(
    data: MultiFidelityData, split: dict[str, np.ndarray], strategy: str, seed: Any
) -> pd.DataFrame:
    """The first columns of ``predictions.csv`` for the test molecules: ``strategy``,
    ``seed``, ``id`` (``data.ids``) and ``smiles`` when ``data`` has them."""
    test = split["test"]
    frame = pd.DataFrame({"strategy": strategy, "seed": seed, "id": data.ids[test]})
    if data.smiles is not None:
        frame["smiles"] = [data.smiles[i] for i in test]
    return frame


def write_unlabelled(
    data: MultiFidelityData,
    chains: list[Chain],
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]],
    unlabelled: np.ndarray,
    ids: list[str],
    out: Path,
) -> None:
    """``predictions_unlabelled.csv``: the molecules ``unlabelled`` (without every
    high-fidelity label), per strategy the mean of the fine-tuned models' predictions over
    seeds and their sample standard deviation
    (:func:`chemgraph.train.ensemble.ensemble_statistics`; NaN with one seed, where no spread
    is defined)."""
    frames = {}
    for strategy in dict.fromkeys(c.strategy for c in chains):
        frame = pd.DataFrame({"strategy": strategy, "id": [ids[i] for i in unlabelled]})
        if data.smiles is not None:
            frame["smiles"] = [data.smiles[i] for i in unlabelled]
        frames[strategy] = frame
    models = dict.fromkeys((c.strategy, c.names) for c in chains)
    for strategy, names in models:
        stacked = np.stack(
            [
                results[i][2]["unlabelled"]
                for i, c in enumerate(chains)
                if (c.strategy, c.names) == (strategy, names)
            ]
        )  # [seeds, n, targets]
        mean, spread = ensemble_statistics(stacked)
        if spread is None:  # one seed: no spread is defined
            spread = np.full(stacked.shape[1:], np.nan, np.float32)
        frame = frames[strategy]
        frame["seeds"] = len(stacked)
        for t, name in enumerate(names):
            frame[f"{name}_pred"] = mean[:, t]
            frame[f"{name}_std"] = spread[:, t]
    pd.concat(frames.values(), ignore_index=True).to_csv(
        out / "predictions_unlabelled.csv", index=False
    )


def write_recommended_predictions(
    data: MultiFidelityData,
    selection: pd.DataFrame,
    chains: list[Chain],
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]],
    unlabelled: np.ndarray,
    ids: list[str],
    baselines: dict[str, dict[str, np.ndarray]],
    out: Path,
) -> None:
    """``predictions_recommended.csv``: the molecules ``unlabelled`` predicted, per target, by
    its recommended model (:func:`model_selection`): a trained strategy's mean over seeds, or
    a baseline's prediction (``baselines``: ``{key: {"unlabelled": [len(unlabelled), T]}}``);
    columns ``id``,
    ``smiles`` (when known), per target ``<target>_pred`` and ``<target>_model`` (its
    label)."""
    frame = pd.DataFrame({"id": [ids[i] for i in unlabelled]})
    if data.smiles is not None:
        frame["smiles"] = [data.smiles[i] for i in unlabelled]
    for row in selection[selection["recommended"]].itertuples(index=False):
        if row.kind == "baseline":
            values = baselines[row.key]["unlabelled"][:, data.targets.index(row.target)]
        else:
            values = np.mean(
                [
                    results[i][2]["unlabelled"][:, chain.names.index(row.target)]
                    for i, chain in enumerate(chains)
                    if chain.strategy == row.key and row.target in chain.names
                ],
                axis=0,
            )
        frame[f"{row.target}_pred"] = values
        frame[f"{row.target}_model"] = row.model
    frame.to_csv(out / "predictions_recommended.csv", index=False)


SELECTION_ORDER = (
    "mean", "linear", "linear_all", "low_model_linear", "kernel_ridge", "delta", "delta_all",
    "low_model_delta", "transductive", "label_augmentation", "transductive_stacked", "inductive",
    "inductive_stacked", "high_fidelity_only",
)  # fmt: skip
"""The candidates of :func:`model_selection` from the simplest to the most complex: the
baselines by their number of fitted parameters, then the networks, those that use more of
the cheap labels first (transductive, inductive, then the high-fidelity labels alone, the
order Buterez et al. 2024 find them in; label augmentation after the transductive Δ-learning
network, whose correction is linear in the cheap label where its head is an MLP)."""

BOOTSTRAP_SAMPLES = 1000
"""Resamples of the validation molecules for :func:`model_selection`'s standard errors."""


def model_selection(
    chains: list[Chain],
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]],
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    baselines: pd.DataFrame | None,
    baseline_predictions: dict[str, dict[str, np.ndarray]] | None,
    model: str = "esa",
) -> pd.DataFrame:
    """Every trained model and every baseline ranked on the validation molecules, per target,
    and the one to use recommended by the one-standard-error rule (Hastie, Tibshirani and
    Friedman, "The Elements of Statistical Learning", 2nd ed. 2009, section 7.10): the lowest
    validation RMSE, unless a simpler candidate (:data:`SELECTION_ORDER`) is within one
    standard error of it: the standard error of the two candidates' RMSE difference over
    :data:`BOOTSTRAP_SAMPLES` paired resamples of the validation molecules (seed 0). A few
    dozen validation molecules cannot tell apart models whose RMSE differs by less; the
    rule then keeps the simpler one rather than the one the noise favoured; a network whose
    validation RMSE is above the best baseline's is never recommended. A trained strategy
    is its seed ensemble (the mean of its seeds' predictions, what ``chemgraph predict`` gives
    with every seed's checkpoint). The test RMSE is reported for reading only: nothing is
    chosen on it. The validation molecules also chose each network's epoch, each kernel
    ridge's ``alpha`` and each stacking weight, so every validation RMSE is a little
    optimistic.

    Args:
        chains, results: the chains of a run and their ``(truth, predicted, record)``
            (:func:`chemgraph.transfer.chains.train_chain`; ``record["validation"]``).
        data, split: the molecules and the split the chains trained on.
        baselines: rows of :func:`chemgraph.transfer.run.baseline_runs` (``baseline``,
            ``key``, ``setting``, ``target``, ``rmse``); None = the trained models only.
        baseline_predictions: the baselines' predictions, ``{key: {"val": [n_val, T]}}``.
        model: the model family (the ``method`` of the trained rows).

    Returns:
        One row per target and candidate: ``target``, ``model`` (its label), ``key`` (the
        strategy as ``runs.csv`` names it, or the baseline's key), ``kind`` (``"network"`` or
        ``"baseline"``), ``method``, ``setting``, ``seeds`` (missing for a baseline),
        ``validation RMSE`` and ``test RMSE`` (text), ``val_rmse``, ``val_se`` (the standard
        error of its RMSE difference from the best), ``rmse`` and ``recommended`` (bool, one
        per target), best validation RMSE first.
    """
    labels = {"high_fidelity_only": data.high_name, **STRATEGY_LABELS}
    val_truth, test_truth = (data.high[split[name]].numpy() for name in ("val", "test"))
    resamples = np.random.default_rng(0).integers(
        0, len(split["val"]), (BOOTSTRAP_SAMPLES, len(split["val"]))
    )
    frames = []
    for t, target in enumerate(data.targets):
        members: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for index, chain in enumerate(chains):
            if target in chain.names:
                column = chain.names.index(target)
                _, predicted, record = results[index]
                members.setdefault(chain.strategy, []).append(
                    (record["validation"][:, column], predicted[:, column])
                )
        records, validation = [], []
        for strategy, runs in members.items():
            seeds = len(runs)
            method = model_label(model) + (
                " + kernel ridge" if strategy in STACKED.values() else ""
            )
            validation.append(np.mean([r[0] for r in runs], axis=0))
            records.append(
                dict(
                    target=target,
                    model=labels[strategy] + (f", mean of {seeds} seeds" if seeds > 1 else ""),
                    key=strategy, kind="network", method=method, setting=SETTINGS[strategy],
                    seeds=seeds,
                    rmse=regression_metrics(
                        test_truth[:, t], np.mean([r[1] for r in runs], axis=0)
                    )["rmse"],
                )
            )  # fmt: skip
        if baselines is not None:
            for row in baselines[baselines["target"] == target].itertuples(index=False):
                validation.append(baseline_predictions[row.key]["val"][:, t])
                records.append(
                    dict(
                        target=target, model=row.baseline, key=row.key, kind="baseline",
                        method="baseline", setting=row.setting, seeds=pd.NA,
                        rmse=float(row.rmse),
                    )
                )  # fmt: skip
        frame = pd.DataFrame(records)
        errors = (np.asarray(validation, dtype=np.float64) - val_truth[:, t]) ** 2  # [C, n_val]
        frame["val_rmse"] = np.sqrt(errors.mean(axis=1))
        best = int(frame["val_rmse"].idxmin())
        resampled = np.sqrt(errors[:, resamples].mean(axis=2))  # [C, samples]
        frame["val_se"] = (resampled - resampled[best]).std(axis=1, ddof=1)
        close = frame["val_rmse"] - frame.loc[best, "val_rmse"] <= frame["val_se"]
        baseline = frame["kind"] == "baseline"
        if baseline.any():  # never a network behind the best baseline
            close &= baseline | (frame["val_rmse"] <= frame.loc[baseline, "val_rmse"].min())
        simplicity = frame["key"].map({key: i for i, key in enumerate(SELECTION_ORDER)})
        chosen = (
            frame[close]
            .assign(order=simplicity[close])
            .sort_values(["order", "val_rmse"], kind="stable")
            .index[0]
        )
        frame["recommended"] = frame.index == chosen
        frames.append(frame.sort_values("val_rmse", kind="stable"))
    frame = pd.concat(frames, ignore_index=True)
    frame["validation RMSE"] = [f"{v:.3f}" for v in frame["val_rmse"]]
    frame["test RMSE"] = [f"{v:.3f}" for v in frame["rmse"]]
    columns = ["target", "model", "key", "kind", "method", "setting", "seeds"]
    columns += ["validation RMSE", "test RMSE", "val_rmse", "val_se", "rmse", "recommended"]
    return frame[columns].astype({"seeds": "Int64"})


def format_selection(selection: pd.DataFrame, commands: dict[str, str]) -> str:
    """The markdown of :func:`model_selection` for ``table.md``: every candidate by target,
    the recommended one marked, and per target how ``chemgraph predict`` uses it
    (``commands``: :func:`chemgraph.transfer.run._write_selection`'s)."""
    shown = selection[["target", "model", "setting", "validation RMSE", "test RMSE"]].copy()
    shown["recommended"] = ["yes" if r else "" for r in selection["recommended"]]
    lines = [
        "Model selection: every trained model (its seed ensemble) and every baseline ranked "
        "on the validation molecules; the lowest validation RMSE is recommended (the test "
        "RMSE is for reading only: nothing was chosen on it):",
        "",
        *_markdown(shown),
        "",
    ]
    for target, command in commands.items():
        (row,) = selection[(selection["target"] == target) & selection["recommended"]].itertuples()
        lines.append(f"Recommended for {target}: {row.model} ({row.setting}). Predict: {command}")
    return "\n".join(lines)
