"""Transfer-learning API: split logic, weight transfer, results table, a tiny end-to-end run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from chemgraph.data.multi_fidelity import MultiFidelityData, high_fidelity_split
from chemgraph.featurize import RadiusGraphFeaturizer
from chemgraph.graphs import atoms_to_radius_graph
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.finetune import transfer_weights
from chemgraph.transfer.chains import build_module, pretraining_pool
from chemgraph.transfer.config import TransferConfig
from chemgraph.transfer.report import (
    format_table,
    results_table,
    seed_ensembles,
    transfer_claim,
    transfer_margins,
)
from chemgraph.transfer.run import run_transfer

FEATURIZER = RadiusGraphFeaturizer(cutoff=3.0, num_basis=8)
TINY_MODEL = {"hidden_dim": 16, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2}


def _data(num_molecules: int = 60, num_high: int = 30) -> MultiFidelityData:
    """Random 3-6 atom point clouds of H/C/O; low = a geometric function, high = a shifted,
    scaled copy for the first ``num_high`` molecules (NaN elsewhere)."""
    rng = np.random.default_rng(0)
    graphs, low = [], []
    for _ in range(num_molecules):
        n = int(rng.integers(3, 7))
        z = rng.choice([1, 6, 8], size=n)
        positions = rng.uniform(0, 2.5, size=(n, 3))
        graphs.append(atoms_to_radius_graph(z, positions, FEATURIZER))
        distance = np.linalg.norm(positions[:, None] - positions[None], axis=-1).sum() / n
        low.append([-6.0 - 0.3 * distance - 0.1 * (z == 8).sum(), 1.0 + 0.2 * distance])
    low = np.asarray(low, dtype=np.float32)
    high = np.full_like(low, np.nan)
    high[:num_high] = 1.2 * low[:num_high] - 0.5
    ids = np.arange(1000, 1000 + num_molecules)
    return MultiFidelityData(graphs, ids, low, high, ["homo", "lumo"], "DFT", "GW")


@pytest.fixture(scope="module")
def data() -> MultiFidelityData:
    return _data()


@pytest.fixture(scope="module")
def split(data) -> dict[str, np.ndarray]:
    return high_fidelity_split(data, seed=0, fractions=(0.6, 0.2, 0.2))


def test_high_fidelity_split(data, split):
    sizes = {name: len(index) for name, index in split.items()}
    assert sizes == {"train": 18, "val": 6, "test": 6}
    everything = np.concatenate(list(split.values()))
    assert len(set(everything)) == 30  # disjoint and complete
    assert set(everything) == set(range(30))  # only molecules with high-fidelity labels
    again = high_fidelity_split(data, seed=0, fractions=(0.6, 0.2, 0.2))
    assert all(np.array_equal(split[k], again[k]) for k in split)
    counts = high_fidelity_split(data, seed=1, counts={"train": 10, "val": 5, "test": 5})
    assert [len(counts[k]) for k in ("train", "val", "test")] == [10, 5, 5]
    with pytest.raises(ValueError, match="only 30 have them"):
        high_fidelity_split(data, seed=0, counts={"train": 25, "val": 5, "test": 5})


def test_high_fidelity_split_keeps_a_molecules_rows_in_one_split(data):
    groups = np.arange(len(data)) // 3  # molecules given three times over; 40 ignored (no label)
    for seed in range(20):
        split = high_fidelity_split(data, seed, fractions=(0.6, 0.2, 0.2), groups=groups)
        parts = [set(groups[split[name]]) for name in ("train", "val", "test")]
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        assert sorted(np.concatenate(list(split.values()))) == list(range(30))
        assert [len(split[name]) for name in ("train", "val", "test")] == [18, 6, 6]
    # one group per row: the split of the molecules as given
    alone = high_fidelity_split(data, 0, fractions=(0.6, 0.2, 0.2), groups=np.arange(len(data)))
    assert sum(len(v) for v in alone.values()) == 30
    with pytest.raises(ValueError, match="with fractions only"):
        high_fidelity_split(data, 0, counts={"train": 10, "val": 5, "test": 5}, groups=groups)


def test_inductive_pool_excludes_every_test_molecule(data, split):
    pool = pretraining_pool(data, split, "inductive")
    assert not set(pool) & set(split["test"])
    assert set(pool) == set(range(len(data))) - set(split["test"])
    assert set(split["train"]) <= set(pool)  # GW training molecules keep their DFT labels


def test_inductive_pool_excludes_a_test_molecules_other_entries(split):
    # entries 30-59 have DFT labels only; entry 30 + k is another SMILES of molecule k
    data = _data()
    data.groups = np.arange(len(data))
    data.groups[30:60] = np.arange(30)
    pool = pretraining_pool(data, split, "inductive")
    twins = {30 + k for k in split["test"]}
    assert not set(pool) & (twins | set(split["test"]))
    assert set(pool) == set(range(len(data))) - set(split["test"]) - twins
    # transductive keeps them: the test molecules' DFT labels are known by definition
    assert len(pretraining_pool(data, split, "transductive")) == len(data)
    with pytest.raises(ValueError, match="5 groups for 60 graphs"):
        MultiFidelityData(data.graphs, data.ids, data.low, data.high, data.targets, groups=[0] * 5)


def test_transductive_pool_has_test_dft_labels_never_gw(data, split):
    pool = pretraining_pool(data, split, "transductive")
    assert set(split["test"]) <= set(pool)
    assert len(pool) == len(data)
    pretraining = data.dataset(pool, "low")
    torch.testing.assert_close(pretraining.labels, data.low[torch.as_tensor(pool)])
    test_rows = np.isin(pool, split["test"])
    gw_of_test = data.high[torch.as_tensor(pool[test_rows])]
    assert not torch.isclose(pretraining.labels[torch.as_tensor(test_rows)], gw_of_test).any()
    assert pretraining.target_columns == ["DFT homo", "DFT lumo"]


def test_gw_only_has_no_pool(data, split):
    assert len(pretraining_pool(data, split, "high_fidelity_only")) == 0
    with pytest.raises(ValueError, match="unknown strategy"):
        pretraining_pool(data, split, "semi")


def test_low_fidelity_pool_skips_missing_low_labels(split):
    data = _data()
    data.low[5, 1] = float("nan")
    assert 5 not in pretraining_pool(data, split, "transductive")


def test_transfer_weights_fresh_head_and_freeze():
    config = TransferConfig(featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL)
    torch.manual_seed(0)
    pretrained = build_module(config, ["homo", "lumo"], torch.zeros(4, 2), 1e-3)
    torch.manual_seed(1)
    fresh = build_module(config, ["homo", "lumo"], torch.zeros(4, 2), 1e-3)
    head_before = {k: v.clone() for k, v in fresh.state_dict().items() if ".head." in k}
    transfer_weights(pretrained, fresh, freeze_encoder=True)
    for name, value in fresh.state_dict().items():
        if name.startswith("model.head."):
            torch.testing.assert_close(value, head_before[name])
            assert not torch.equal(value, pretrained.state_dict()[name])
        elif name.startswith("model."):
            torch.testing.assert_close(value, pretrained.state_dict()[name])
    trainable = {n for n, p in fresh.model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("head.") for n in trainable)


def test_results_table_mean_and_sample_std():
    runs = pd.DataFrame(
        {
            "strategy": ["high_fidelity_only"] * 2 + ["inductive"] * 2,
            "seed": [0, 1, 0, 1],
            "target": ["homo"] * 4,
            "rmse": [0.20, 0.30, 0.10, 0.14],
        }
    )
    table = results_table(runs, "GW")
    assert list(table["strategy"]) == ["GW", "Ind."]
    assert table["rmse_mean"].tolist() == pytest.approx([0.25, 0.12])
    assert table["rmse_std"].tolist() == pytest.approx([np.sqrt(0.005), np.sqrt(0.0008)])
    assert table["test RMSE"].tolist() == ["0.250 ± 0.071", "0.120 ± 0.028"]
    one = results_table(runs[runs.seed == 0], "GW")
    assert one["test RMSE"].tolist() == ["0.200 ± undefined", "0.100 ± undefined"]
    assert one["rmse_std"].isna().all()


def test_tiny_end_to_end_run(data, split, tmp_path):
    config = TransferConfig(
        protocol="paper", seeds=2, pretrain_epochs=2, finetune_max_epochs=2, batch_size=16,
        learning_rate=1e-3, pretrain_val_fraction=0.2, featurizer=FEATURIZER.to_dict(),
        model_options=TINY_MODEL, progress=False, workers=1,
    )  # fmt: skip
    runs, baselines = run_transfer(data, split, config, tmp_path)
    assert len(runs) == 2 * 3 * 2  # seeds x strategies x targets
    # no SMILES: only the linear corrections, computed on the same test molecules
    assert sorted(set(baselines["key"])) == ["linear", "linear_all", "mean"]
    test = split["test"]
    low, high = data.low[:, 0].numpy(), data.high[:, 0].numpy()
    a, b = np.polyfit(low[split["train"]], high[split["train"]], 1)
    expected = np.sqrt(np.mean((a * low[test] + b - high[test]) ** 2))
    row = baselines[(baselines.key == "linear") & (baselines.target == "homo")]
    assert float(row["rmse"].iloc[0]) == pytest.approx(expected, abs=1e-5)
    assert np.isfinite(runs["rmse"]).all() and (runs["rmse"] > 0).all()
    assert set(runs.loc[runs.strategy != "high_fidelity_only", "pretrain_epochs"]) == {2}
    table = pd.read_csv(tmp_path / "table.csv")
    assert list(table["target"]) == ["homo"] * 6 + ["lumo"] * 6  # as the data names them
    # a baseline is deterministic: no seeds and no spread, empty cells (not 0)
    assert table["seeds"].fillna(-1).tolist() == [2, 2, 2, -1, -1, -1] * 2
    assert table["rmse_std"].isna().tolist() == ([False] * 3 + [True] * 3) * 2
    assert "| homo | GW |" in (tmp_path / "table.md").read_text()
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert set(predictions["id"]) == set(data.ids[split["test"]])
    assert {"linear", "linear_all"} <= set(predictions["strategy"])
    curves = pd.read_csv(tmp_path / "learning_curves.csv")
    assert set(curves["phase"]) == {"pretrain", "finetune"}
    assert (tmp_path / "curves" / "transductive_seed1_homo_pretrain.png").exists()
    # the RMSE in runs.csv is the RMSE of the written predictions
    mine = predictions[(predictions.strategy == "inductive") & (predictions.seed == 0)]
    rmse = np.sqrt(np.mean((mine["homo"] - mine["homo_pred"]) ** 2))
    row = runs[(runs.strategy == "inductive") & (runs.seed == 0) & (runs.target == "homo")]
    assert float(row["rmse"].iloc[0]) == pytest.approx(rmse, rel=1e-5)
    # the seed ensemble: the RMSE of the mean of the two seeds' written predictions
    seeds = [predictions[(predictions.strategy == "transductive") & (predictions.seed == k)]
             for k in (0, 1)]  # fmt: skip
    mean = (seeds[0]["lumo_pred"].to_numpy() + seeds[1]["lumo_pred"].to_numpy()) / 2
    expected = np.sqrt(np.mean((mean - seeds[0]["lumo"].to_numpy()) ** 2))
    ensembles = pd.read_csv(tmp_path / "ensembles.csv")
    assert len(ensembles) == 2 * 3  # targets x strategies, the baselines have no seeds
    trans = ensembles.strategy == "Trans., ensemble of 2 seeds"
    row = ensembles[trans & (ensembles.target == "lumo")]
    assert float(row["rmse"].iloc[0]) == pytest.approx(expected, rel=1e-5)
    assert (
        "| lumo | Trans., ensemble of 2 seeds | transductive | ESA | 2 |"
        in (tmp_path / "table.md").read_text()
    )


def test_seed_ensembles_by_hand():
    # two seeds of one strategy on three molecules: truth 0, 0, 0; seed 0 predicts 1, -1, 0
    # and seed 1 predicts 1, 1, 0: RMSE sqrt(2/3) each, their mean 1, 0, 0 has RMSE sqrt(1/3)
    predictions = pd.DataFrame(
        {
            "strategy": ["transductive"] * 6 + ["inductive"] * 3,
            "seed": [0, 0, 0, 1, 1, 1, 0, 0, 0],
            "id": ["a", "b", "c"] * 3,
            "homo": [0.0] * 9,
            "homo_pred": [1.0, -1.0, 0.0, 1.0, 1.0, 0.0, 5.0, 5.0, 5.0],
        }
    )
    table = seed_ensembles(predictions, "GW", "ESA")
    assert table["strategy"].tolist() == ["Trans., ensemble of 2 seeds"]  # one seed: no row
    assert table["key"].tolist() == ["transductive"]
    shuffled = predictions.copy()
    shuffled.loc[3:5, "id"] = ["b", "a", "c"]  # seed 1 in another molecule order
    with pytest.raises(ValueError, match="transductive: the seeds predicted different test"):
        seed_ensembles(shuffled)
    assert table["rmse"].tolist() == pytest.approx([np.sqrt(1 / 3)])
    assert table["mae"].tolist() == pytest.approx([1 / 3])
    assert table["seed_mean_rmse"].tolist() == pytest.approx([np.sqrt(2 / 3)])
    assert table[["test RMSE", "mean over seeds"]].values.tolist() == [["0.577", "0.816"]]
    runs = _runs({("transductive", "homo"): [0.816, 0.816]})
    text = format_table(results_table(runs, "GW"), table)
    last = "| homo | Trans., ensemble of 2 seeds | transductive | ESA | 2 | 0.577 | 0.816 |"
    assert text.endswith(last)
    assert format_table(results_table(runs, "GW"), table.iloc[:0]) == format_table(
        results_table(runs, "GW")
    )


def test_freeze_encoder_without_a_pretrained_model_is_refused():
    # high_fidelity_only has no pretrained encoder to freeze: a silent no-op otherwise
    with pytest.raises(ValueError) as error:
        TransferConfig(freeze_encoder=True, strategies=["high_fidelity_only"])
    assert str(error.value) == (
        "freeze_encoder applies to the transfer strategies (inductive, transductive, "
        "label_augmentation) only, and strategies has none (high_fidelity_only): add one, or "
        "set freeze_encoder: false"
    )
    # label augmentation fine-tunes a pretrained encoder too; it has no Δ-learning to turn on
    assert TransferConfig(freeze_encoder=True, strategies=["label_augmentation"]).freeze_encoder
    with pytest.raises(ValueError, match=r"delta_learning applies to the transfer strategies "
                                         r"\(inductive, transductive\) only"):  # fmt: skip
        TransferConfig(delta_learning=True, strategies=["label_augmentation"])
    with pytest.raises(ValueError, match="freeze_encoder must be true or false"):
        TransferConfig(freeze_encoder="yes")
    assert TransferConfig(freeze_encoder=True, strategies=["inductive"]).freeze_encoder


def test_config_rejects_unknown_keys_and_strategies():
    with pytest.raises(ValueError, match=r"training: unknown keys \['epochs'\]; valid keys: \["):
        TransferConfig.from_dict({"epochs": 3}, source="training")
    with pytest.raises(ValueError, match="strategies"):
        TransferConfig(strategies=["semi"])


def _runs(rmse: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """Per-seed rows of run_transfer from {(strategy, target): [rmse of seed 0, 1, ...]}."""
    return pd.DataFrame(
        [
            {"strategy": strategy, "seed": seed, "target": target, "rmse": value}
            for (strategy, target), values in rmse.items()
            for seed, value in enumerate(values)
        ]
    )


def test_transfer_margins_against_the_seed_spread():
    runs = _runs(
        {
            ("high_fidelity_only", "homo"): [0.60, 0.64, 0.62],  # mean 0.62, std 0.02
            ("inductive", "homo"): [0.50, 0.50, 0.53],  # mean 0.51, std 0.0173
            ("transductive", "homo"): [0.58, 0.61, 0.64],  # mean 0.61, std 0.03
            ("high_fidelity_only", "lumo"): [0.80, 0.80, 0.80],  # std 0
            ("inductive", "lumo"): [0.70, 0.72, 0.74],  # mean 0.72, std 0.02
            ("transductive", "lumo"): [0.81, 0.82, 0.83],  # worse than GW only
        }
    )
    margins = transfer_margins(results_table(runs, "GW"), "GW")
    assert list(zip(margins["target"], margins["strategy"])) == [
        ("homo", "Ind."), ("homo", "Trans."), ("lumo", "Ind."), ("lumo", "Trans."),
    ]  # fmt: skip
    assert margins["margin"].tolist() == pytest.approx([0.11, 0.01, 0.08, -0.02])
    assert margins["spread"].tolist() == pytest.approx([0.02, 0.03, 0.02, 0.01])
    assert margins["shown"].tolist() == [True, False, True, False]
    assert (margins["seeds"] == 3).all()
    assert margins["negative"].tolist() == [False, False, False, True]
    shown, text = transfer_claim(results_table(runs, "GW"), "GW", "eV")
    assert not shown
    verdict, _, *lines = text.splitlines()
    assert verdict.startswith("Not shown by this run")
    assert verdict.endswith("; not for homo Trans., lumo Trans.")
    assert lines == [
        "homo Ind.: ahead of GW by 0.110 eV > spread 0.020",
        "homo Trans.: ahead of GW by 0.010 eV, not above the spread 0.030",
        "lumo Ind.: ahead of GW by 0.080 eV > spread 0.020",
        "lumo Trans.: negative transfer: behind GW by 0.020 eV",
    ]
    # a tie (e.g. a stacked row with no weight on the network, the baseline itself) is "level"
    tied = _runs(
        {("high_fidelity_only", "homo"): [0.60, 0.62], ("inductive", "homo"): [0.6, 0.6202]}
    )
    assert transfer_claim(results_table(tied, "GW"), "GW", "eV")[1].splitlines()[-1] == (
        "homo Ind.: level with GW (the mean RMSEs differ by less than 0.0005 eV)"
    )


def test_margins_against_the_best_baseline_of_each_setting():
    runs = _runs(
        {
            ("high_fidelity_only", "homo"): [0.60, 0.64, 0.62],
            ("inductive", "homo"): [0.50, 0.50, 0.53],  # mean 0.51
            ("transductive", "homo"): [0.20, 0.21, 0.22],  # mean 0.21, std 0.01
        }
    )
    baselines = pd.DataFrame(
        [
            dict(baseline="kernel ridge", setting="both", target="homo", rmse=0.55),
            dict(baseline="Δ-learning", setting="transductive", target="homo", rmse=0.25),
            dict(baseline="DFT model", setting="inductive", target="homo", rmse=0.45),
        ]
    )
    table = results_table(runs, "GW", baselines=baselines)
    assert table["test RMSE"].tolist()[3:] == ["0.550", "0.250", "0.450"]
    margins = transfer_margins(table, "GW")
    assert margins["best"].tolist() == ["DFT model", "Δ-learning"]
    assert margins["margin"].tolist() == pytest.approx([-0.06, 0.04])
    assert margins["spread"].tolist() == pytest.approx([np.std([0.5, 0.5, 0.53], ddof=1), 0.01])
    assert margins["negative"].tolist() == [True, False]
    shown, text = transfer_claim(table, "GW", "eV")
    assert not shown
    assert "homo Ind.: negative transfer: behind DFT model by 0.060 eV" in text
    assert "homo Trans.: ahead of Δ-learning by 0.040 eV > spread 0.010" in text


def test_transfer_claim_shown_and_one_seed():
    both = {
        ("high_fidelity_only", "homo"): [0.60, 0.64],
        ("inductive", "homo"): [0.50, 0.52],
        ("transductive", "homo"): [0.48, 0.49],
        ("high_fidelity_only", "lumo"): [0.80, 0.84],
        ("inductive", "lumo"): [0.70, 0.71],
        ("transductive", "lumo"): [0.66, 0.70],
    }
    shown, text = transfer_claim(results_table(_runs(both), "GW"), "GW")
    assert shown
    assert text.startswith(
        "Shown: every transfer strategy (Ind., Trans.) beats every baseline of its setting for "
        "homo and lumo"
    )
    one_seed = {key: values[:1] for key, values in both.items()}
    shown, text = transfer_claim(results_table(_runs(one_seed), "GW"), "GW")
    assert not shown and text.startswith("One seed gives no seed-to-seed spread")
    no_baseline = {key: v for key, v in both.items() if key[0] != "high_fidelity_only"}
    assert transfer_margins(results_table(_runs(no_baseline), "GW")).empty
    assert transfer_claim(results_table(_runs(no_baseline), "GW"))[0] is False


def test_build_module_schedule_settings():
    config = TransferConfig(
        featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL, lr_schedule="cosine",
        final_lr_fraction=0.05,
    )  # fmt: skip
    module = build_module(config, ["homo", "lumo"], torch.zeros(4, 2), 1e-3, max_minutes=2.5)
    hparams = module.hparams
    assert hparams.lr_schedule == "cosine" and hparams.max_minutes == 2.5
    assert hparams.warmup_steps is None  # cosine: the first 5% of the phase
    assert hparams.final_lr_fraction == 0.05 and hparams.learning_rate == 1e-3
    assert TransferConfig().lr_schedule == "plateau"  # the paper's protocol stays the default
    plain = build_module(TransferConfig(featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL),
                         ["homo"], torch.zeros(4, 1), 1e-4)  # fmt: skip
    assert plain.hparams.lr_schedule == "plateau" and plain.hparams.max_minutes is None
    with pytest.raises(ValueError, match="lr_schedule must be one of"):
        TransferConfig(lr_schedule="step")


def test_delta_learning_adds_the_linear_correction_back(tmp_path):
    """high = 1.2·low − 0.5 + a residual of at most 1 meV: transductive Δ-learning predicts
    the linear correction of the test molecules' own low-fidelity labels plus a residual of
    the residual's size (the network's standardised output times its std), so it is within a
    few meV whatever the network learned; without the correction added back it would be
    eV off. The inductive base is the pretrained model's prediction, far less exact."""
    data = _data()
    labelled = ~torch.isnan(data.high[:, 0])
    wiggle = 1e-3 * torch.sin(torch.arange(len(data), dtype=torch.float32))[:, None]
    data.high[labelled] = (1.2 * data.low - 0.5 + wiggle)[labelled]
    split = high_fidelity_split(data, seed=0, fractions=(0.6, 0.2, 0.2))
    config = TransferConfig(
        seeds=1, pretrain_epochs=2, finetune_max_epochs=2, batch_size=16, learning_rate=1e-3,
        pretrain_val_fraction=0.2, featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL,
        progress=False, delta_learning=True, joint_targets=True, finetune_batch_size=4,
        strategies=["inductive", "transductive"], baselines=False, workers=1,
    )  # fmt: skip
    runs, baselines = run_transfer(data, split, config, tmp_path)
    assert baselines is None
    transductive = runs[runs.strategy == "transductive"]
    assert (transductive["rmse"] < 0.01).all() and (transductive["val_rmse"] < 0.01).all()
    inductive = runs[runs.strategy == "inductive"]
    assert (inductive["rmse"] > 0.01).all() and np.isfinite(inductive["rmse"]).all()
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    mine = predictions[predictions.strategy == "transductive"]
    low = data.low[split["test"]].numpy()
    np.testing.assert_allclose(mine["homo_pred"], 1.2 * low[:, 0] - 0.5, atol=0.01)
    # the fine-tuned models are kept with their correction (chemgraph predict adds it back),
    # the low-fidelity labels named by default as MultiFidelityData.low_fidelity_columns
    for strategy in ("inductive", "transductive"):
        path = tmp_path / "checkpoints" / f"{strategy}_seed0" / "best.ckpt"
        delta = load_checkpoint(path).delta_learning
        assert delta.low_fidelity_columns == ["low_fidelity_homo", "low_fidelity_lumo"]
        assert (delta.low_fidelity_model is None) == (strategy == "transductive")
    np.testing.assert_allclose(delta.correction.weights, [[1.2, 0.0], [0.0, 1.2]], atol=0.01)
    np.testing.assert_allclose(delta.correction.intercept, [-0.5, -0.5], atol=0.01)


def test_label_curve_rows_and_plot(data, split, tmp_path):
    from chemgraph.transfer.run import label_curve

    config = TransferConfig(
        seeds=1, pretrain_epochs=1, finetune_max_epochs=1, batch_size=16,
        pretrain_val_fraction=0.2, featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL,
        progress=False, joint_targets=True, strategies=["high_fidelity_only", "transductive"],
        workers=1,
    )  # fmt: skip
    curve = label_curve(data, split, config, [6, 18], tmp_path, "eV")
    assert (tmp_path / "label_curve.png").stat().st_size > 0
    assert pd.read_csv(tmp_path / "label_curve.csv").shape == curve.shape
    homo = curve[curve.target == "homo"]
    assert list(homo["method"]) == ["GW", "Trans.", "best transductive baseline"] * 2
    assert list(homo["labels"]) == [6] * 3 + [18] * 3
    # the best baseline at n labels is the lowest baseline RMSE of that run
    baselines = pd.read_csv(tmp_path / "labels_6" / "baselines.csv")
    best = baselines[(baselines.target == "homo") & (baselines.setting != "inductive")]["rmse"]
    assert homo["rmse_mean"].iloc[2] == pytest.approx(best.min())
    assert homo["rmse_std"].isna().all()  # one seed: no spread
    assert len(pd.read_csv(tmp_path / "labels_6" / "runs.csv")) == 2 * 2
    # one pretraining serves both counts
    assert (tmp_path / "labels_6" / "curves" / "transductive_seed0_pretrain.png").exists()
    assert not (tmp_path / "labels_18" / "curves" / "transductive_seed0_pretrain.png").exists()
    with pytest.raises(ValueError, match="label counts must be in 2..18"):
        label_curve(data, split, config, [19], tmp_path / "bad")


def test_model_selection_ranks_on_validation_and_keeps_the_simpler_within_one_se():
    """Every strategy's seed ensemble and every baseline by validation RMSE; the recommended
    one is the simplest within one bootstrap standard error of the best; the test RMSE plays
    no part."""
    from chemgraph.transfer.chains import Chain
    from chemgraph.transfer.report import model_selection

    rng = np.random.default_rng(0)
    n_val = 40
    high = rng.normal(size=(2 + n_val + 2, 1))
    data = MultiFidelityData([None] * len(high), np.arange(len(high)), high + 1, high, ["y"])
    val = np.arange(2, 2 + n_val)
    split = {"train": np.array([0, 1]), "val": val, "test": np.array([42, 43])}
    chains = [Chain("transductive", seed, (0,), ("y",), False) for seed in (0, 1)]
    noise, other = rng.normal(size=(2, n_val, 1))
    network_error = 0.5 * noise  # the seeds' mean; each seed off by a further +-0.3

    def run():
        return {
            seed: (high[42:], high[42:] + 9.0, {"validation": high[val] + network_error + shift})
            for seed, shift in ((0, 0.3), (1, -0.3))
        }

    def baselines(line_error: np.ndarray):
        rows = pd.DataFrame(
            [
                dict(baseline="line", key="linear", setting="transductive", target="y", rmse=0.1),
                dict(baseline="mean", key="mean", setting="both", target="y", rmse=1.4),
            ]
        )
        predictions = {
            "linear": {"val": high[val] + line_error},
            "mean": {"val": np.full((n_val, 1), 5.0)},
        }
        return rows, predictions

    # the line's validation errors as large as the network's, 5% more: within one standard
    # error of the difference (a few dozen molecules cannot tell them apart): the simpler line
    line_error = 0.5 * other * 1.05 * np.sqrt(np.mean(noise**2) / np.mean(other**2))
    selection = model_selection(chains, run(), data, split, *baselines(line_error))
    assert list(selection["key"]) == ["transductive", "linear", "mean"]  # by validation RMSE
    assert selection["val_rmse"][1] == pytest.approx(1.05 * selection["val_rmse"][0])
    assert selection["rmse"][0] == pytest.approx(9.0)  # the test RMSE: reported, not used
    assert (
        selection["val_se"][0] == 0.0 and selection["val_se"][1] > 0.05 * selection["val_rmse"][0]
    )
    assert list(selection.loc[selection["recommended"], "key"]) == ["linear"]
    # a line twice as far off: beyond one standard error, the best (the network) wins
    selection = model_selection(chains, run(), data, split, *baselines(2 * line_error))
    assert list(selection.loc[selection["recommended"], "key"]) == ["transductive"]
    assert selection.loc[0, "model"] == "Trans., mean of 2 seeds" and selection["seeds"][0] == 2


def test_model_selection_never_recommends_a_network_behind_the_best_baseline():
    """The transductive network is within one standard error of the best (inductive) network,
    and simpler, but its validation RMSE is above the line's: the best network is recommended,
    not it; the line, 5% behind the best network with errors in step with it (a small standard
    error), is not within one standard error."""
    from chemgraph.transfer.chains import Chain
    from chemgraph.transfer.report import model_selection

    rng = np.random.default_rng(3)
    n_val = 40
    high = rng.normal(size=(2 + n_val + 2, 1))
    data = MultiFidelityData([None] * len(high), np.arange(len(high)), high + 1, high, ["y"])
    val = np.arange(2, 2 + n_val)
    split = {"train": np.array([0, 1]), "val": val, "test": np.array([42, 43])}
    chains = [Chain(strategy, 0, (0,), ("y",), False) for strategy in ("inductive", "transductive")]
    inductive, transductive = rng.normal(size=(2, n_val, 1))
    transductive *= 1.08 * np.sqrt(np.mean(inductive**2) / np.mean(transductive**2))
    results = {
        i: (high[42:], high[42:], {"validation": high[val] + error})
        for i, error in enumerate((inductive, transductive))
    }
    rows = pd.DataFrame(
        [dict(baseline="line", key="linear", setting="transductive", target="y", rmse=0.1)]
    )
    line = {"linear": {"val": high[val] + 1.05 * inductive}}
    alone = model_selection(chains, results, data, split, None, None)
    assert list(alone.loc[alone["recommended"], "key"]) == ["transductive"]  # the simpler one
    selection = model_selection(chains, results, data, split, rows, line)
    assert list(selection["key"]) == ["inductive", "linear", "transductive"]
    by_key = selection.set_index("key")
    assert (
        by_key.loc["transductive", "val_rmse"] - by_key.loc["inductive", "val_rmse"]
        <= (by_key.loc["transductive", "val_se"])
    )  # close to the best, yet behind the line
    assert (
        by_key.loc["linear", "val_rmse"] - by_key.loc["inductive", "val_rmse"]
        > (by_key.loc["linear", "val_se"])
    )
    assert list(selection.loc[selection["recommended"], "key"]) == ["inductive"]


def test_the_run_says_its_plan_first_and_each_chain_as_it_ends(data, split, tmp_path, caplog):
    """Before any training: the chains, processes, epoch bounds and a time bound; then a plain
    line per finished chain (what a log file of a long run shows)."""
    config = TransferConfig(
        seeds=1, pretrain_epochs=2, finetune_max_epochs=2, batch_size=16, learning_rate=1e-3,
        pretrain_val_fraction=0.2, featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL,
        progress=False, workers=1,
    )  # fmt: skip
    with caplog.at_level("INFO", logger="chemgraph"):
        run_transfer(data, split, config, tmp_path)
    plan = [m for m in caplog.messages if m.startswith("6 chains in this process")]
    done = [m for m in caplog.messages if m.startswith("chain ")]
    assert len(plan) == 1 and caplog.messages.index(plan[0]) < caplog.messages.index(done[0])
    assert "(3 strategies x 1 seeds x 2 models); at most 2 pretraining and 2 fine-tuning" in plan[0]
    assert "minutes on this machine if no phase stopped early" in plan[0]
    assert [m.split(" done")[0] for m in done] == [f"chain {k} of 6" for k in range(1, 7)]


def test_pretraining_stops_early_on_its_held_out_molecules(data, split, tmp_path):
    """The default protocol: pretraining epochs are a bound, not a count (the paper's fixed
    count in test_tiny_end_to_end_run)."""
    config = TransferConfig(
        seeds=1, strategies=["transductive"], pretrain_epochs=40, early_stopping_patience=1,
        finetune_max_epochs=1, batch_size=16, learning_rate=0.5, pretrain_val_fraction=0.2,
        featurizer=FEATURIZER.to_dict(), model_options=TINY_MODEL, progress=False, workers=1,
    )  # fmt: skip
    assert config.pretrain_early_stopping
    runs, _ = run_transfer(data, split, config, tmp_path)
    assert (runs["pretrain_epochs"] < 40).all()
    assert not list(tmp_path.glob(".*_pretrain-*"))  # its scratch checkpoint is gone
