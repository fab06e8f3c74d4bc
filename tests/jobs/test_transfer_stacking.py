"""Stacked Δ-learning (``stack_kernel_ridge``): the blend weight chosen on validation, the
blend itself, and a ``chemgraph transfer --stack-kernel-ridge`` run whose stacked predictions
are the blend of its network's and its Δ-learning kernel ridge baseline's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from chemgraph.cli.main import main
from chemgraph.data.multi_fidelity import MultiFidelityData
from chemgraph.errors import ConfigError
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.delta import STACK_WEIGHTS, stack, stack_weights
from chemgraph.transfer.config import TransferConfig
from chemgraph.transfer.report import KERNEL_RIDGE_ALONE, format_table, results_table
from chemgraph.transfer.run import run_transfer

LABELS = Path(__file__).resolve().parents[1] / "fixtures" / "transfer" / "labels.csv"
LOW = ["cheap_logp", "cheap_mr"]
TARGETS = ["fine_logp", "fine_mr"]


def test_stack_gives_each_model_exactly_at_the_ends_of_the_grid():
    rng = np.random.default_rng(0)
    network, kernel_ridge = rng.normal(size=(7, 2)), rng.normal(size=(7, 2))
    np.testing.assert_array_equal(stack(network, kernel_ridge, [1.0, 0.0])[:, 0], network[:, 0])
    np.testing.assert_array_equal(
        stack(network, kernel_ridge, [1.0, 0.0])[:, 1], kernel_ridge[:, 1]
    )
    np.testing.assert_allclose(
        stack(network, kernel_ridge, [0.3, 0.3]), 0.3 * network + 0.7 * kernel_ridge, rtol=1e-15
    )


def test_stack_weights_is_the_brute_force_minimiser_on_validation():
    """Two learners with errors of opposite sign on a hand-made validation set: for target 0
    the truth is 0.7·network + 0.3·kernel ridge exactly; target 1 is chosen by brute force."""
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(40, 2))
    network = truth + rng.normal(scale=[0.1, 0.3], size=(40, 2))
    kernel_ridge = truth + rng.normal(scale=[0.1, 0.2], size=(40, 2))
    truth[:, 0] = 0.7 * network[:, 0] + 0.3 * kernel_ridge[:, 0]
    truth[3, 1] = np.nan  # a missing label is skipped
    weights = stack_weights(truth, network, kernel_ridge)
    assert weights[0] == 0.7
    rows = ~np.isnan(truth[:, 1])
    errors = [
        np.sqrt(np.mean((w * network[rows, 1] + (1 - w) * kernel_ridge[rows, 1]
                         - truth[rows, 1]) ** 2))
        for w in STACK_WEIGHTS
    ]  # fmt: skip
    assert weights[1] == STACK_WEIGHTS[int(np.argmin(errors))]
    assert 0.0 < weights[1] < 1.0  # the two learners' errors are independent: a real blend
    # one learner exact: all weight on it
    assert list(stack_weights(truth[:, :1], truth[:, :1], kernel_ridge[:, :1])) == [1.0]
    assert list(stack_weights(truth[:, :1], network[:, :1], truth[:, :1])) == [0.0]
    with pytest.raises(ValueError, match="must be the same"):
        stack_weights(truth, network[:, :1], kernel_ridge)
    with pytest.raises(ValueError, match="no validation label"):
        stack_weights(np.full((3, 1), np.nan), np.zeros((3, 1)), np.zeros((3, 1)))


def test_stacking_needs_delta_learning_a_transfer_strategy_and_smiles(tmp_path):
    """Refused in the words of a configuration (the recipe's, a YAML file's); ``chemgraph
    transfer`` names its flags instead (test_transfer_table.py)."""
    with pytest.raises(ConfigError) as error:
        TransferConfig(stack_kernel_ridge=True, delta_learning=False)
    assert str(error.value) == (
        "stack_kernel_ridge blends two Δ-learning models: it needs delta_learning: true"
    )
    assert TransferConfig(stack_kernel_ridge=True).delta_learning  # the default protocol's
    with pytest.raises(ConfigError, match="it needs delta_learning: true"):
        TransferConfig(stack_kernel_ridge=True, protocol="paper")  # the paper has none
    # high_fidelity_only has no correction to stack on: a silent no-op otherwise
    with pytest.raises(ConfigError) as error:
        TransferConfig(
            stack_kernel_ridge=True, delta_learning=True, strategies=["high_fidelity_only"]
        )
    assert str(error.value) == (
        "delta_learning and stack_kernel_ridge apply to the transfer strategies (inductive, "
        "transductive) only, and strategies has none (high_fidelity_only): add one, or set "
        "delta_learning: false and stack_kernel_ridge: false"
    )
    data = MultiFidelityData([], np.zeros(0), np.zeros((0, 1)), np.zeros((0, 1)), ["t"])
    config = TransferConfig(stack_kernel_ridge=True, delta_learning=True, progress=False)
    with pytest.raises(ConfigError) as error:
        run_transfer(data, {}, config, tmp_path / "out")
    assert str(error.value) == (
        "stack_kernel_ridge needs every molecule's SMILES (its kernel ridge reads their Morgan "
        "fingerprints), and the molecules have none: give them, or set stack_kernel_ridge: false"
    )
    assert not (tmp_path / "out").exists()


def test_the_log_names_the_strategies_stacking_applies_to(tmp_path, monkeypatch, caplog):
    """With high_fidelity_only among the strategies, the log says which ones are stacked,
    before any training (stopped here once the chains would start)."""
    import chemgraph.transfer.run as transfer

    class Started(Exception):
        pass

    def started(*args, **kwargs):
        raise Started

    monkeypatch.setattr(transfer, "run_chains", started)
    data = MultiFidelityData([], np.zeros(0), np.zeros((0, 1)), np.zeros((0, 1)), ["t"], smiles=[])
    config = TransferConfig(stack_kernel_ridge=True, delta_learning=True, progress=False)
    with caplog.at_level("INFO", logger="chemgraph.transfer.run"), pytest.raises(Started):
        run_transfer(data, {}, config, tmp_path)
    assert caplog.messages == [
        "delta_learning and stack_kernel_ridge: for inductive, transductive; not for "
        "high_fidelity_only (not a Δ-learning strategy)"
    ]


@pytest.fixture(scope="module")
def run(delta_learning_run) -> Path:
    """``chemgraph transfer --delta-learning --stack-kernel-ridge``: inductive and
    transductive, 2 seeds, one joint model of both targets, tiny epochs."""
    return delta_learning_run("stacked", "--stack-kernel-ridge")


def test_the_stacked_rows_are_in_the_table_runs_and_margins(run):
    assert yaml.safe_load((run / "transfer.yaml").read_text())["training"]["stack_kernel_ridge"]
    table = pd.read_csv(run / "table.csv")
    mine = table[table.target == TARGETS[0]]
    assert list(mine.loc[mine.method != "baseline", "strategy"]) == [
        "Ind.", "Ind. + kernel ridge (stacked Δ)", "Trans.", "Trans. + kernel ridge (stacked Δ)"
    ]  # fmt: skip
    stacked = table[table.strategy.str.endswith("(stacked Δ)")]
    assert set(stacked["method"]) == {"ESA + kernel ridge"} and (stacked["seeds"] == 2).all()
    assert "Trans. + kernel ridge (stacked Δ)" in (run / "table.md").read_text()
    assert table.loc[~table.strategy.str.endswith("(stacked Δ)"), "stack weight"].isna().all()
    runs = pd.read_csv(run / "runs.csv")
    assert len(runs) == 4 * 2 * 2  # (2 strategies + their stacked rows) x 2 seeds x 2 targets
    is_stacked = runs.strategy.isin(["inductive_stacked", "transductive_stacked"])
    assert runs.loc[is_stacked, "stack_weight"].isin(STACK_WEIGHTS).all()
    assert runs.loc[~is_stacked, "stack_weight"].isna().all()
    # the weight is chosen on validation, and w = 1 (the network alone) is among the choices
    network = runs[~is_stacked].set_index(["strategy", "seed", "target"])["val_rmse"]
    for row in runs[is_stacked].itertuples():
        assert row.val_rmse <= network[(row.strategy.removesuffix("_stacked"), row.seed,
                                        row.target)] + 1e-6  # fmt: skip
    # no checkpoint of its own: the checkpoints hold the unstacked networks
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "inductive_seed0", "inductive_seed1", "transductive_seed0", "transductive_seed1"
    ]  # fmt: skip
    unlabelled = pd.read_csv(run / "predictions_unlabelled.csv")
    assert set(unlabelled.strategy) == {
        "inductive", "inductive_stacked", "transductive", "transductive_stacked"
    }  # fmt: skip
    assert unlabelled[[f"{t}_pred" for t in TARGETS]].notna().all().all()


def test_the_stacked_prediction_blends_the_network_and_the_delta_kernel_ridge_baseline(run):
    """Transductive, joint model: its correction is the ``linear_all`` baseline's fit, so its
    kernel ridge is the ``delta_all`` baseline's, and the stacked test predictions are
    ``w·network + (1 − w)·delta_all`` with the weight of ``runs.csv``: w = 1 is the network's
    prediction, w = 0 the baseline's."""
    predictions = pd.read_csv(run / "predictions.csv")
    runs = pd.read_csv(run / "runs.csv").set_index(["strategy", "seed", "target"])
    baseline = predictions[predictions.strategy == "delta_all"].set_index("id")
    for seed in (0, 1):
        network = predictions[(predictions.strategy == "transductive")
                              & (predictions.seed == seed)].set_index("id")  # fmt: skip
        stacked = predictions[(predictions.strategy == "transductive_stacked")
                              & (predictions.seed == seed)].set_index("id")  # fmt: skip
        for target in TARGETS:
            w = runs.loc[("transductive_stacked", seed, target), "stack_weight"]
            kernel_ridge = baseline.loc[stacked.index, f"{target}_pred"]
            np.testing.assert_allclose(
                stacked[f"{target}_pred"], w * network[f"{target}_pred"] + (1 - w) * kernel_ridge,
                rtol=1e-12, atol=1e-12,
            )  # fmt: skip
            rmse = np.sqrt(np.mean((stacked[f"{target}_pred"] - stacked[target]) ** 2))
            assert runs.loc[("transductive_stacked", seed, target), "rmse"] == pytest.approx(rmse)


def test_the_table_shows_the_weights_of_the_stacked_rows(run):
    """table.md gives each stacked row's ``w`` of every seed (runs.csv's ``stack_weight``),
    in words when it is 0 (the kernel ridge alone) or 1 (the network alone) for every seed."""
    runs = pd.read_csv(run / "runs.csv")
    table = pd.read_csv(run / "table.csv", dtype={"stack weight": str})
    lines = (run / "table.md").read_text().splitlines()
    assert lines[0].endswith("| seeds | stack weight |")
    for stacked, label in [("inductive_stacked", "Ind."), ("transductive_stacked", "Trans.")]:
        for target in TARGETS:
            weights = runs[(runs.strategy == stacked) & (runs.target == target)]
            weights = weights.sort_values("seed")["stack_weight"].tolist()
            expected = (
                KERNEL_RIDGE_ALONE if weights == [0.0, 0.0]
                else "1 (network alone)" if weights == [1.0, 1.0]
                else ", ".join(f"{w:g}" for w in weights)
            )  # fmt: skip
            row = table[(table.target == target)
                        & (table.strategy == f"{label} + kernel ridge (stacked Δ)")]  # fmt: skip
            assert row["stack weight"].tolist() == [expected]
            assert any(
                line.startswith(f"| {target} | {label} + kernel ridge (stacked Δ) |")
                and line.endswith(f"| 2 | {expected} |")
                for line in lines
            )


def test_a_stacking_kept_only_for_the_kernel_ridge_is_said_in_words():
    runs = pd.DataFrame(
        {
            "strategy": ["transductive", "transductive_stacked"] * 2,
            "seed": [0, 0, 1, 1],
            "target": ["homo"] * 4,
            "rmse": [0.12, 0.10, 0.14, 0.12],
            "stack_weight": [np.nan, 0.0, np.nan, 0.0],
        }
    )
    table = results_table(runs, "GW")
    assert table["stack weight"].fillna("").tolist() == ["", KERNEL_RIDGE_ALONE]
    assert format_table(table).splitlines()[-2:] == [
        "",
        "homo, Trans. + kernel ridge (stacked Δ): stacking chose the kernel ridge alone "
        "(w = 0) for every seed, so this row is the Δ-learning kernel ridge without the "
        "fine-tuned network",
    ]
    inductive = runs.replace(
        {"transductive": "inductive", "transductive_stacked": "inductive_stacked"}
    )
    assert format_table(results_table(inductive, "GW")).endswith(
        "without the fine-tuned network (on the linear correction of the pretrained model's "
        "low-fidelity predictions, which differ by seed)"
    )
    runs.loc[3, "stack_weight"] = 0.3
    assert results_table(runs, "GW")["stack weight"].tolist()[1] == "0, 0.3"
    assert "stacking chose" not in format_table(results_table(runs, "GW"))
    assert "stack weight" not in results_table(runs[runs.strategy == "transductive"], "GW")


def test_predict_says_the_checkpoint_is_the_unstacked_network(run, tmp_path, capsys):
    """The checkpoints of a stacked run hold the network alone: predict gives the plain
    row's prediction and says in one line that it is not the stacked one."""
    library = tmp_path / "new.csv"
    pd.read_csv(LABELS)[["smiles", *LOW]].head(3).to_csv(library, index=False)
    checkpoint = run / "checkpoints" / "transductive_seed0" / "best.ckpt"
    assert load_checkpoint(checkpoint).delta_learning.stacked
    status = main([
        "predict", "--checkpoint", str(checkpoint), "--input", str(library),
        "--output", str(tmp_path / "out.csv"),
    ])  # fmt: skip
    assert status == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "unstacked" in line]
    assert notes == [
        f"warning: {checkpoint} is the unstacked network of a chemgraph transfer "
        "--stack-kernel-ridge run: predict gives the network's Δ-learning prediction (the "
        "run's plain row), not the stacked one (w x network + (1 - w) x a kernel ridge, "
        "runs.csv stack_weight), whose kernel ridge the checkpoint does not hold"
    ]
