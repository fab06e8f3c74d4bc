"""A whole transfer run: every chain of every strategy and seed, the baselines of each setting on
the same split, and every output file (:func:`run_transfer`); the test RMSE against the number
of high-fidelity training labels (:func:`label_curve`); and :func:`transfer_job`, what
``chemgraph transfer`` (:mod:`chemgraph.jobs.transfer`) and the ``dft_to_gw`` recipe run once
their molecules are read and split.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import yaml

from chemgraph._files import atomic_path
from chemgraph._interrupts import Interrupted
from chemgraph._output import refuse_changed_settings, remove_outputs
from chemgraph.data.multi_fidelity import MultiFidelityData
from chemgraph.errors import ConfigError, setting
from chemgraph.train.baselines import (
    BASELINES,
    BaselineModel,
    baseline_names,
    morgan_fingerprints,
    transfer_baselines,
)
from chemgraph.train.delta import DELTA_STRATEGIES
from chemgraph.train.metrics import regression_metrics
from chemgraph.train.plots import plot_label_curve
from chemgraph.train.predictors import BASELINE_KIND
from chemgraph.transfer.chains import (
    CHAIN_STATE,
    STACKED,
    Chain,
    chain_rows,
    pretraining_pool,
    stacked_chain,
    transformed_graphs,
)
from chemgraph.transfer.config import (
    LABEL_AUGMENTATION,
    TRANSFER_ONLY_SETTINGS,
    TransferConfig,
    model_label,
    target_groups,
    turned_off,
)
from chemgraph.transfer.pool import run_chains
from chemgraph.transfer.report import (
    STRATEGY_LABELS,
    format_selection,
    format_table,
    model_selection,
    results_table,
    seed_ensembles,
    test_frame,
    write_recommended_predictions,
    write_unlabelled,
)

__all__ = [
    "RECOMMENDED",
    "RESUME_FREE_SETTINGS",
    "AfterTrainingError",
    "baseline_runs",
    "check_resumable",
    "check_stacking",
    "label_curve",
    "run_transfer",
    "stacking_needs_smiles",
    "transfer_job",
]

log = logging.getLogger(__name__)


def run_transfer(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: str | Path,
    pretrained_cache: dict | None = None,
    unlabelled_ids: list[str] | None = None,
    resume: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Run every strategy for every seed and every model (:func:`target_groups`); write
    results, table, learning curves.

    Each model is one chain: pretraining on the low-fidelity labels of its targets (not for
    ``high_fidelity_only``), then fine-tuning on their high-fidelity labels. With
    ``config.joint_targets`` one model per strategy and seed predicts every target; otherwise
    each target has its own chain and a model with one output. The chains are independent
    (each seeds itself): ``config.workers`` processes train them side by side, with the same
    results as one after another at the same thread count (:func:`run_chains`).

    Writes to ``out``: ``runs.csv`` (strategy, seed, target, model (the model family, e.g.
    ``esa``), targets (the model's targets joined by ``+``), test RMSE/MAE and validation RMSE
    (``val_rmse``) in the labels' units, epochs and wall-clock seconds of each phase of that
    model), ``table.md`` / ``table.csv`` (:func:`results_table`), ``learning_curves.csv``
    (strategy, seed, targets, phase, epoch,
    losses), ``curves/*.png``, ``predictions.csv``
    (test-set predictions of every run), ``ensembles.csv`` (:func:`seed_ensembles`: the test
    RMSE of each strategy's mean prediction over its seeds, what ``predictions_unlabelled.csv``
    gives, and ``chemgraph predict`` with every seed's checkpoint for the unstacked strategies;
    also under the table in ``table.md``) and ``config.yaml``.

    ``pretrained_cache``: a dict that keeps every pretrained model, keyed by strategy, seed and
    targets, and gives it to a later run with the same key instead of pretraining again (for
    runs whose pretraining pools are equal: :func:`label_curve`; the pool depends on the
    test molecules only); None = a cache of this run alone when it trains both
    ``transductive`` and ``label_augmentation`` (which share their pretraining,
    :attr:`Chain.key`), else always pretrain.

    With ``config.baselines`` it also writes ``baselines.csv`` (:func:`baseline_runs`), adds the
    baselines' test predictions to ``predictions.csv`` and their rows to the table. With
    ``config.stack_kernel_ridge`` every Δ-learning chain also gives a stacked Δ-learning model
    (:func:`stacked_chain`), strategy :data:`STACKED` in ``runs.csv`` (with its
    ``stack_weight``), ``predictions.csv``, ``predictions_unlabelled.csv`` and the table.

    ``unlabelled_ids``: one identifier per molecule of ``data``; with it every fine-tuned model
    also predicts the molecules without every high-fidelity label, written to
    ``predictions_unlabelled.csv`` (per strategy: the mean over seeds and the sample standard
    deviation, ``ddof=1``; NaN with one seed, where no spread is defined); None = not.

    Each chain keeps its state in ``out/chains/`` (:func:`~chemgraph.transfer.chains.
    train_chain`); ``resume`` continues an interrupted run of the same settings in ``out``:
    the finished chains are read back, the interrupted one continues from its ``last.ckpt``,
    and every output is written as the uninterrupted run writes it (at a fixed thread count,
    the same values but the wall-clock seconds of the chains that ran again). A run without
    ``resume`` removes the chains' state of an earlier run first.

    Returns:
        ``(runs, baselines)``: the rows of ``runs.csv`` and of ``baselines.csv`` (None without
        ``config.baselines``).

    With ``delta_learning`` (or ``stack_kernel_ridge``) and ``high_fidelity_only`` among
    the strategies, the log says which strategies it applies to.

    Raises:
        ConfigError: ``stack_kernel_ridge`` without SMILES (before anything is written).
        ValueError: a fine-tuning stopped before its first validation (time or epoch limit).
            Any error of a chain carries a note naming the chain (strategy, seed, target).
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM stopped the training (in worker
            processes: in the main thread only, the workers stopped first); the message says
            that ``--resume`` continues it.
    """
    out = Path(out)
    check_stacking(data, config)
    if not resume:
        remove_outputs(out, [CHAIN_STATE])
    if pretrained_cache is None and {"transductive", LABEL_AUGMENTATION} <= set(config.strategies):
        pretrained_cache = {}  # label_augmentation fine-tunes transductive's pretrained models
    corrections = [name for name in TRANSFER_ONLY_SETTINGS if getattr(config, name)]
    plain = [s for s in config.strategies if s not in DELTA_STRATEGIES]
    if corrections and plain:
        log.info(
            "%s: for %s; not for %s (not a Δ-learning strategy)",
            " and ".join(setting(name) for name in corrections),
            ", ".join(s for s in config.strategies if s in DELTA_STRATEGIES), ", ".join(plain),
        )  # fmt: skip
    (out / "curves").mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    data = transformed_graphs(data, config)
    targets = list(data.targets)
    chains = [
        Chain(strategy, seed, tuple(columns), tuple(targets[c] for c in columns),
               config.joint_targets)
        for seed in range(config.seeds)
        for strategy in config.strategies
        for columns in target_groups(targets, config.joint_targets)
    ]  # fmt: skip
    unlabelled = (
        None
        if unlabelled_ids is None
        else np.flatnonzero(torch.isnan(data.high).any(dim=1).numpy())
    )
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]] = {}

    def finished(index: int, result: tuple[np.ndarray, np.ndarray, dict[str, Any]]) -> None:
        results[index] = result
        chain, record = chains[index], result[2]
        for t, target in enumerate(chain.names):
            log.info(
                "chain %d of %d done (%s seed %d %s): validation RMSE %.4f",
                len(results), len(chains), chain.strategy, chain.seed, target,
                record["val_rmse"][t],
            )  # fmt: skip
        # partial results survive, in chain order whatever order the chains finish in
        partial = [
            row for i in sorted(results) for row in chain_rows(chains[i], results[i], config.model)
        ]
        pd.DataFrame(partial).to_csv(out / "runs.csv", index=False)

    try:
        run_chains(chains, data, split, config, out, pretrained_cache, unlabelled, finished, resume)
    except Interrupted as stop:
        raise Interrupted(
            stop.signum,
            f"{stop}; {len(results)} of {len(chains)} chains finished, kept with the "
            f"interrupted one's last checkpoint in {out}: run the same command with --resume "
            "to continue",
        ) from None
    try:
        return _write_results(data, split, config, out, chains, results, unlabelled, unlabelled_ids)
    except Exception as error:  # noqa: BLE001 - not the user's: say so, keep what finished
        raise AfterTrainingError(
            f"every chain trained ({len(results)}; their checkpoints and runs.csv are in "
            f"{out}), then writing the results failed: {type(error).__name__}: {error}. This "
            "is a chemgraph bug: please report it with the traceback"
        ) from error


class AfterTrainingError(RuntimeError):
    """A transfer run failed after its chains trained: an internal error (never a user's;
    ``chemgraph`` shows its traceback), whose message says where the finished work is."""


def _write_results(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: Path,
    chains: list[Chain],
    results: dict[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]],
    unlabelled: np.ndarray | None,
    unlabelled_ids: list[str] | None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Everything :func:`run_transfer` writes once its chains trained: the stacked chains,
    ``runs.csv``, curves, baselines, predictions, ensembles, the table and the model
    selection (:func:`_write_selection`)."""
    fingerprints = (
        morgan_fingerprints(list(data.smiles))
        if data.smiles is not None and (config.baselines or config.stack_kernel_ridge)
        else None
    )
    for index in [i for i in range(len(chains)) if "correction" in results[i][2]]:
        chains.append(chains[index].stacked())
        results[len(chains) - 1] = stacked_chain(
            data, split, chains[index], results[index], fingerprints, unlabelled
        )
    rows, curves, frames = [], [], {}
    for index, chain in enumerate(chains):
        truth, predicted, record = results[index]
        rows += chain_rows(chain, results[index], config.model)
        curves += [
            dict(strategy=chain.strategy, seed=chain.seed, targets=chain.model, **e)
            for e in record["curves"]
        ]
        frame = frames.setdefault(
            (chain.seed, chain.strategy),
            test_frame(data, split, chain.strategy, chain.seed),
        )
        for t, target in enumerate(chain.names):
            frame[target] = truth[:, t]
            frame[f"{target}_pred"] = predicted[:, t]
    predictions = list(frames.values())
    runs = pd.DataFrame(rows)
    runs.to_csv(out / "runs.csv", index=False)  # with the stacked rows, when any
    pd.DataFrame(curves).to_csv(out / "learning_curves.csv", index=False)
    baselines, baseline_predictions, baseline_models = None, {}, {}
    if config.baselines:
        baselines, baseline_frames, baseline_predictions, baseline_models = baseline_runs(
            data, split, config.strategies, fingerprints, unlabelled
        )
        baselines.to_csv(out / "baselines.csv", index=False)
    ensembles = seed_ensembles(
        pd.concat(predictions, ignore_index=True), data.high_name, model_label(config.model)
    )
    ensembles.to_csv(out / "ensembles.csv", index=False)
    if config.baselines:
        predictions += baseline_frames
    pd.concat(predictions, ignore_index=True).to_csv(out / "predictions.csv", index=False)
    table = results_table(runs, data.high_name, model_label(config.model), baselines)
    table.to_csv(out / "table.csv", index=False)
    selection = model_selection(
        chains, results, data, split, baselines, baseline_predictions, config.model
    )
    recommended = _write_selection(selection, chains, out, data, baseline_models)
    if unlabelled is not None:
        write_unlabelled(data, chains, results, unlabelled, unlabelled_ids, out)
        write_recommended_predictions(
            data, selection, chains, results, unlabelled, unlabelled_ids, baseline_predictions,
            out,
        )  # fmt: skip
    (out / "table.md").write_text(
        format_table(table, ensembles) + "\n\n" + format_selection(selection, recommended) + "\n"
    )
    return runs, baselines


RECOMMENDED = "recommended"
"""The folder of a run's recommended models, one sub-folder per target
(:func:`_write_selection`)."""


def _write_selection(
    selection: pd.DataFrame,
    chains: list[Chain],
    out: Path,
    data: MultiFidelityData,
    baseline_models: dict[str, BaselineModel],
) -> dict[str, str]:
    """Write ``selection.csv`` (:func:`chemgraph.transfer.report.model_selection`),
    ``recommendation.json`` and, for each target, its recommended model where ``chemgraph
    predict --checkpoint recommended/<target>`` loads it: a trained network's
    ``recommended/<target>/model-<k>/best.ckpt``, a copy of each seed's checkpoint (an
    ensemble folder); a baseline's ``recommended/<target>/best.ckpt``
    (:func:`_write_baseline`). A stacked network + kernel ridge is not written: its
    checkpoints do not hold the kernel ridge.

    Returns:
        ``{target: the chemgraph predict command of its recommended model, or why there is
        none}``.
    """
    selection.to_csv(out / "selection.csv", index=False)
    folder = out / RECOMMENDED
    if folder.exists():
        shutil.rmtree(folder)
    recommendation, commands = {}, {}
    for row in selection[selection["recommended"]].itertuples(index=False):
        entry = dict(
            model=row.model, key=row.key, kind=row.kind, setting=row.setting,
            validation_rmse=float(row.val_rmse), test_rmse=float(row.rmse),
        )  # fmt: skip
        members = [c for c in chains if c.strategy == row.key and row.target in c.names]
        command = (
            f"chemgraph predict --checkpoint {folder / row.target} -i NEW_MOLECULES -o PREDICTIONS"
        )
        if row.kind == "baseline":
            network = next(c for c in chains if row.target in c.names)
            reads = _write_baseline(
                baseline_models[row.key].select(data.targets.index(row.target)), row.model,
                row.target, data.low_fidelity_columns,
                out / "checkpoints" / network.stem / "best.ckpt", folder / row.target,
            )  # fmt: skip
            entry["checkpoint"] = str(folder / row.target)
            commands[row.target] = command + (
                f" (NEW_MOLECULES with the column(s) {', '.join(reads)})" if reads else ""
            )
        elif row.key not in STACKED.values():
            for k, chain in enumerate(sorted(members, key=lambda c: c.seed)):
                target = folder / row.target / f"model-{k}" / "best.ckpt"
                target.parent.mkdir(parents=True)
                shutil.copyfile(out / "checkpoints" / chain.stem / "best.ckpt", target)
            entry["checkpoint"] = str(folder / row.target)
            commands[row.target] = command
        else:
            commands[row.target] = (
                "none: a stacked network + kernel ridge, which chemgraph predict cannot load; "
                "its predictions of this table's molecules without high-fidelity labels are in "
                "predictions_recommended.csv"
            )
        entry["predict"] = commands[row.target]
        recommendation[row.target] = entry
    text = json.dumps(recommendation, indent=2, ensure_ascii=False)
    (out / "recommendation.json").write_text(text + "\n", encoding="utf-8")
    return commands


BASELINE_HYPER_PARAMETERS = (
    "model", "featurizer", "fragments", "standardize", "train_fingerprints"
)  # fmt: skip
"""What a baseline checkpoint copies from a network checkpoint of its run, so that ``chemgraph
predict`` featurizes molecules for it as for the networks (the same records accepted and
rejected) and judges their applicability domain on the same training molecules (with their
calibrated threshold); the training labels' range of its target is copied too."""


def _write_baseline(
    model: BaselineModel,
    label: str,
    target: str,
    low_columns: list[str],
    network: Path,
    folder: Path,
) -> list[str]:
    """Write ``folder/best.ckpt``, the checkpoint of a recommended baseline of ``target``
    (:class:`chemgraph.train.predictors.BaselinePredictor`): the hyper-parameters
    :data:`BASELINE_HYPER_PARAMETERS` of the run's ``network`` checkpoint, the baseline's
    ``label``, ``target``, the input columns it reads (of the run's ``low_columns``), and
    ``model`` (:meth:`BaselineModel.to_dict`).

    Returns:
        The low-fidelity columns a prediction reads (the input needs them).
    """
    network_parameters = torch.load(network, "cpu", weights_only=True)["hyper_parameters"]
    reads = [low_columns[i] for i in model.reads]
    parameters = {key: network_parameters.get(key) for key in BASELINE_HYPER_PARAMETERS}
    label_range = network_parameters.get("train_label_range")  # per network target
    if label_range is not None:
        column = list(network_parameters["target_columns"]).index(target)
        parameters["train_label_range"] = {key: [v[column]] for key, v in label_range.items()}
    parameters.update(
        kind=BASELINE_KIND, baseline=label, task="regression", target_columns=[target],
        low_fidelity_columns=reads,
    )  # fmt: skip
    folder.mkdir(parents=True)
    temporary = atomic_path(folder / "best.ckpt")
    torch.save(
        {"hyper_parameters": parameters, "state_dict": {}, "baseline": model.to_dict()}, temporary
    )
    temporary.replace(folder / "best.ckpt")
    return reads


def stacking_needs_smiles(why: str) -> str:
    """The refusal of ``stack_kernel_ridge`` for molecules without SMILES, ``why`` saying
    which."""
    return (
        f"{setting('stack_kernel_ridge')} needs every molecule's SMILES (its kernel ridge reads "
        f"their Morgan fingerprints), and {why}: give them, or "
        f"{turned_off('stack_kernel_ridge')}"
    )


def check_stacking(data: MultiFidelityData, config: TransferConfig) -> None:
    """Refuse ``stack_kernel_ridge`` on molecules without SMILES (``data.smiles`` None).

    Raises:
        ConfigError: naming the setting and what to do.
    """
    if config.stack_kernel_ridge and data.smiles is None:
        raise ConfigError(stacking_needs_smiles("the molecules have none"))


def label_curve(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    counts: list[int],
    out: str | Path,
    unit: str | None = None,
    pretrained_cache: dict | None = None,
    resume: bool = False,
) -> pd.DataFrame:
    """Test RMSE against the number of high-fidelity training labels: how many expensive
    labels transfer learning saves.

    For every ``n`` of ``counts``, :func:`run_transfer` on the first ``n`` molecules of a
    seeded (seed 0) permutation of ``split["train"]`` (so every smaller training set is part of
    every larger one), the same validation and test molecules, into ``out/labels_<n>``. Each
    method of a curve: the no-transfer strategy, the best baseline of each setting at that
    ``n`` (by test RMSE, so the curve is a lower envelope of the baselines), and each transfer
    strategy. The pretraining runs once per strategy, seed and model and serves every ``n``
    (``pretrained_cache`` of :func:`run_transfer`; pass the dict of an earlier run on the same
    split to reuse its pretrained models too).

    Writes ``out/label_curve.csv`` and ``out/label_curve.png``
    (:func:`chemgraph.train.plots.plot_label_curve`). ``resume``: each run continues an
    interrupted one (:func:`run_transfer`).

    Returns:
        Rows ``target``, ``method``, ``labels``, ``rmse_mean``, ``rmse_std``, ``seeds``.

    Raises:
        ValueError: a count below 2 or above the training molecules.
    """
    out = Path(out)
    train = split["train"]
    bad = [n for n in counts if not 2 <= n <= len(train)]
    if bad:
        raise ValueError(f"label counts must be in 2..{len(train)}, got {bad}")
    order = np.random.default_rng(0).permutation(train)
    high_name = data.high_name
    records = []
    pretrained = {} if pretrained_cache is None else pretrained_cache  # pools: test-only
    for n in counts:
        subset = {**split, "train": np.sort(order[:n])}
        runs, baselines = run_transfer(
            data, subset, config, out / f"labels_{n}", pretrained, resume=resume
        )
        table = results_table(runs, high_name, baselines=baselines)
        for target, rows in table.groupby("target", sort=False):
            chosen = [rows[rows["method"] != "baseline"]]
            for kind in ("transductive", "inductive"):
                if STRATEGY_LABELS[kind] not in set(rows["strategy"]):
                    continue
                pool = rows[(rows["method"] == "baseline") & rows["setting"].isin(["both", kind])]
                if len(pool):
                    best = pool.loc[[pool["rmse_mean"].idxmin()]].copy()
                    best["strategy"] = f"best {kind} baseline"
                    chosen.append(best)
            for row in pd.concat(chosen).itertuples(index=False):
                records.append(
                    dict(
                        target=target, method=row.strategy, labels=n, rmse_mean=row.rmse_mean,
                        rmse_std=row.rmse_std, seeds=row.seeds,
                    )
                )  # fmt: skip
    curve = pd.DataFrame(records)
    curve.to_csv(out / "label_curve.csv", index=False)
    plot_label_curve(curve, out / "label_curve.png", unit)
    return curve


def baseline_runs(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    strategies: list[str],
    fingerprints: np.ndarray | None = None,
    unlabelled: np.ndarray | None = None,
) -> tuple[
    pd.DataFrame, list[pd.DataFrame], dict[str, dict[str, np.ndarray]], dict[str, BaselineModel]
]:
    """The baselines of the settings of ``strategies`` on ``split``
    (:func:`chemgraph.train.baselines.transfer_baselines`: the fingerprint ones need
    ``data.smiles``), their test RMSE and MAE and validation RMSE per target, and their test
    predictions.
    ``fingerprints``: the Morgan bits ``[len(data), 2048]`` of every molecule when already
    computed (:func:`chemgraph.train.baselines.morgan_fingerprints` of ``data.smiles``);
    None = computed here. ``unlabelled``: positions of molecules without high-fidelity labels
    that every baseline predicts too; None = none.

    Returns:
        ``(rows, predictions, unlabelled_predictions, models)``: rows with ``baseline`` (label),
        ``key``, ``setting`` (``both``, ``inductive``, ``transductive``), ``target``, ``rmse``,
        ``mae``, ``val_rmse``, ``seconds``; one predictions frame per baseline in the layout of
        ``predictions.csv`` (``strategy`` = the baseline's key, ``seed`` empty); every
        baseline's predictions (:func:`chemgraph.train.baselines.transfer_baselines`: ``{key:
        {"val", "test", "unlabelled" (with ``unlabelled``): float64 [n, T]}}``) and every
        fitted baseline (``{key: BaselineModel}``).
    """
    started = time.perf_counter()
    if fingerprints is None and data.smiles is not None:
        fingerprints = morgan_fingerprints(list(data.smiles))
    pool = pretraining_pool(data, split, "inductive") if "inductive" in strategies else None
    predicted, models = transfer_baselines(
        data.low.numpy(), data.high.numpy(), fingerprints, split, pool, unlabelled=unlabelled
    )
    seconds = time.perf_counter() - started
    names = baseline_names(data.low_name, data.high_name)
    settings = {key: setting for setting, keys in BASELINES.items() for key in keys}
    truth = data.high[split["test"]].numpy()
    val_truth = data.high[split["val"]].numpy()
    rows, frames = [], []
    for key, values in predicted.items():
        frame = test_frame(data, split, key, pd.NA)
        for t, target in enumerate(data.targets):
            metrics = regression_metrics(truth[:, t], values["test"][:, t])
            val_rmse = regression_metrics(val_truth[:, t], values["val"][:, t])["rmse"]
            rows.append(
                dict(
                    baseline=names[key], key=key, setting=settings[key], target=target,
                    rmse=metrics["rmse"], mae=metrics["mae"], val_rmse=val_rmse,
                    seconds=seconds,
                )
            )  # fmt: skip
            frame[target] = truth[:, t]
            frame[f"{target}_pred"] = values["test"][:, t]
        frames.append(frame)
    log.info("baselines: %d in %.1f s", len(predicted), seconds)
    return pd.DataFrame(rows), frames, predicted, models


RESUME_FREE_SETTINGS = ("training.workers", "training.progress")
"""The settings of ``transfer.yaml`` that a resumed run may change: they change no result."""


def check_resumable(out: Path, settings: dict[str, Any]) -> None:
    """Refuse ``--resume`` unless ``out`` holds an interrupted transfer run of ``settings``
    (its ``transfer.yaml``; :data:`RESUME_FREE_SETTINGS` may differ).

    Raises:
        ValueError: no ``transfer.yaml`` in ``out``, or other settings (named:
            :func:`chemgraph._output.refuse_changed_settings`).
    """
    if not (out / "transfer.yaml").is_file():
        raise ValueError(
            f"--resume: {out} holds no interrupted transfer run (no transfer.yaml); start it "
            "without --resume"
        )
    refuse_changed_settings(out, "transfer.yaml", settings, RESUME_FREE_SETTINGS)


def transfer_job(
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: str | Path,
    settings: dict[str, Any],
    ids: list[str] | None = None,
    pretrained_cache: dict | None = None,
    resume: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """The job of ``chemgraph transfer`` and of the ``dft_to_gw`` recipe once their molecules
    are read and split: every strategy for every seed with the baselines of each setting
    (:func:`run_transfer`), every fine-tuned model kept, the molecules without high-fidelity
    labels scored.

    Writes to ``out``: what :func:`run_transfer` writes (``table.md``/``table.csv``, test RMSE
    with the baselines; ``runs.csv``; ``predictions.csv`` of the test molecules; learning
    curves; ``config.yaml``), ``checkpoints/<strategy>_seed<k>[_<target>]/best.ckpt`` (every
    fine-tuned model, which ``chemgraph predict`` loads; with ``delta_learning`` it holds the
    linear correction its residual is added to, :class:`chemgraph.train.delta.DeltaLearning`,
    so that predict gives what ``predictions_unlabelled.csv`` holds), ``predictions_unlabelled.csv``
    (the molecules without every high-fidelity label: per strategy the mean prediction over
    seeds and its sample standard deviation, NaN with one seed) and ``transfer.yaml`` (``settings``:
    what repeats the run, e.g. ``chemgraph transfer --config transfer.yaml``).

    Args:
        data: the molecules and their labels at both levels.
        split: ``{"train", "val", "test"}`` positions of molecules with every high-fidelity
            label (:func:`high_fidelity_split`).
        config: the transfer settings.
        out: output folder (made if missing; files in it are replaced).
        settings: written to ``transfer.yaml``.
        ids: one identifier per molecule for ``predictions_unlabelled.csv``; None =
            ``data.ids``.
        pretrained_cache: see :func:`run_transfer`.
        resume: continue the interrupted run in ``out`` (:func:`run_transfer`), whose
            ``transfer.yaml`` must hold ``settings`` (the number of ``workers`` and
            ``progress`` may differ: they change no result).

    Returns:
        ``(table, runs, baselines)``: :func:`results_table` and what :func:`run_transfer`
        returns.

    Raises:
        ConfigError: ``stack_kernel_ridge`` without SMILES, before anything is written.
        ValueError: ``resume`` where ``out`` holds no interrupted run of ``settings``
            (:func:`check_resumable`).
    """
    out = Path(out)
    check_stacking(data, config)
    if resume:
        check_resumable(out, settings)
    out.mkdir(parents=True, exist_ok=True)
    (out / "transfer.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    ids = [str(i) for i in data.ids] if ids is None else ids
    runs, baselines = run_transfer(data, split, config, out, pretrained_cache, ids, resume)
    table = results_table(runs, data.high_name, model_label(config.model), baselines)
    return table, runs, baselines
