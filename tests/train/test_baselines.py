"""Baselines of the transfer tables: Tanimoto kernel, linear correction, kernel ridge, and the
baselines of each setting on a split."""

from __future__ import annotations

import numpy as np
import pytest

from chemgraph.train.baselines import (
    BaselineModel,
    FingerprintKernelRidge,
    LinearCorrection,
    morgan_fingerprints,
    tanimoto_kernel,
    transfer_baselines,
)


def test_tanimoto_kernel_by_hand():
    a = np.array([[1, 1, 0, 0], [0, 0, 0, 0]], dtype=np.uint8)
    b = np.array([[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=np.uint8)
    expected = np.array([[1 / 3, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(tanimoto_kernel(a, b), expected)


def test_linear_correction_recovers_the_coefficients():
    rng = np.random.default_rng(0)
    low = rng.normal(size=(20, 2))
    high = np.c_[2.0 * low[:, 0] - 1.0, 0.5 * low[:, 0] + 3.0 * low[:, 1] + 0.25]
    high[3, 0] = np.nan  # skipped for that target only
    same = LinearCorrection.fit(low, high, same_column=True)
    assert same.weights[:, 0] == pytest.approx([2.0, 0.0])
    assert same.intercept[0] == pytest.approx(-1.0)
    assert same.weights[0, 1] == 0.0  # target 1 sees only low column 1
    every = LinearCorrection.fit(low, high, same_column=False)
    assert every.weights[:, 1] == pytest.approx([0.5, 3.0])
    assert every.intercept[1] == pytest.approx(0.25)
    np.testing.assert_allclose(every.predict(low[:2])[:, 1], high[:2, 1])
    # no molecule to correct (e.g. a table without unlabelled molecules): an empty answer
    assert every.predict(np.zeros((0, 2))).shape == (0, 2)
    assert same.predict([]).shape == (0, 2)
    with pytest.raises(ValueError, match="molecules for 3 coefficients"):
        LinearCorrection.fit(low[:2], high[:2], same_column=False)


def test_kernel_ridge_interpolates_and_falls_back_to_the_mean():
    fingerprints = np.eye(6, dtype=np.uint8)  # no two molecules share a bit
    labels = np.arange(6, dtype=np.float64)[:, None] + 10.0
    model = FingerprintKernelRidge.fit(fingerprints, labels, fingerprints, labels, (1e-6, 1.0))
    assert model.alphas == [1e-6]  # the validation RMSE picks the smaller ridge
    np.testing.assert_allclose(model.predict(fingerprints), labels, atol=1e-4)
    unseen = np.zeros((1, 6), dtype=np.uint8)  # similarity 0 to every training molecule
    assert model.predict(unseen)[0, 0] == pytest.approx(12.5)  # the training mean
    assert model.predict(np.zeros((0, 6), dtype=np.uint8)).shape == (0, 1)  # no molecule


def test_transfer_baselines_on_a_split():
    smiles = ["C", "CC", "CCC", "CCCC", "CO", "CCO", "CCCO", "CN", "CCN", "CCCN", "C=O", "CC=O"]
    fingerprints = morgan_fingerprints(smiles)
    assert fingerprints.shape == (12, 2048) and fingerprints.dtype == np.uint8
    rng = np.random.default_rng(1)
    low = rng.normal(size=(12, 1)) - 7.0
    high = 1.1 * low - 2.0  # an exact linear relation
    split = {"train": np.arange(0, 6), "val": np.arange(6, 9), "test": np.arange(9, 12)}
    out, _ = transfer_baselines(low, high, fingerprints, split, inductive_pool=np.arange(12))
    assert set(out) == {
        "mean", "kernel_ridge", "linear", "delta", "linear_all", "delta_all",
        "low_model_linear", "low_model_delta",
    }  # fmt: skip
    for part, index in (("val", slice(6, 9)), ("test", slice(9, 12))):
        np.testing.assert_allclose(out["linear"][part], high[index], atol=1e-10)
        np.testing.assert_allclose(out["delta"][part], high[index], atol=1e-6)  # zero residual
        # the mean predictor: the training molecules' mean, whatever the molecule
        np.testing.assert_allclose(out["mean"][part], np.full((3, 1), high[:6].mean()))
    assert all(v["val"].shape == v["test"].shape == (3, 1) for v in out.values())
    # molecules without high-fidelity labels predicted too: the same models, other molecules
    with_unlabelled, _ = transfer_baselines(
        low, high, fingerprints, split, np.arange(12), unlabelled=np.array([9, 10])
    )
    for key, values in with_unlabelled.items():
        np.testing.assert_allclose(values["unlabelled"][0], out[key]["test"][0])
    np.testing.assert_allclose(with_unlabelled["linear"]["unlabelled"], high[9:11], atol=1e-10)
    # no fingerprints: the mean and the linear corrections
    assert set(transfer_baselines(low, high, None, split)[0]) == {"mean", "linear", "linear_all"}


def test_kernel_ridge_matches_scikit_learn_and_round_trips():
    from sklearn.kernel_ridge import KernelRidge

    fingerprints = morgan_fingerprints(["C", "CC", "CCC", "CCO", "CCN", "c1ccccc1", "CC(=O)O"])
    labels = np.array([[1.0, 5.0], [2.0, np.nan], [3.0, 4.0], [2.5, 3.0], [0.5, 2.0],
                       [7.0, 1.0], [4.0, 0.0]])  # fmt: skip
    model = FingerprintKernelRidge.fit(fingerprints, labels, fingerprints, labels, (0.1,))
    new = morgan_fingerprints(["CCCC", "c1ccccc1O"])
    kernel = tanimoto_kernel(fingerprints, fingerprints)
    rows = ~np.isnan(labels[:, 1])  # target 1 is fitted on its 6 labelled molecules
    reference = KernelRidge(alpha=0.1, kernel="precomputed").fit(
        kernel[np.ix_(rows, rows)], labels[rows, 1] - labels[rows, 1].mean()
    )
    expected = reference.predict(tanimoto_kernel(new, fingerprints[rows])) + labels[rows, 1].mean()
    np.testing.assert_allclose(model.predict(new)[:, 1], expected, atol=1e-12)
    again = FingerprintKernelRidge.from_dict(model.to_dict())
    np.testing.assert_array_equal(again.predict(new), model.predict(new))
    np.testing.assert_array_equal(model.select([1]).predict(new)[:, 0], model.predict(new)[:, 1])


def test_every_baseline_model_predicts_what_the_table_reports():
    smiles = ["C", "CC", "CCC", "CCCC", "CO", "CCO", "CCCO", "CN", "CCN", "CCCN", "C=O", "CC=O",
              "c1ccccc1", "Cc1ccccc1"]  # fmt: skip
    fingerprints = morgan_fingerprints(smiles)
    rng = np.random.default_rng(2)
    low = rng.normal(size=(14, 2))
    high = np.c_[0.9 * low[:, 0] + 0.3 * low[:, 1], -low[:, 1] + 1.0] + rng.normal(0, 0.1, (14, 2))
    split = {"train": np.arange(0, 8), "val": np.arange(8, 11), "test": np.arange(11, 14)}
    predictions, models = transfer_baselines(low, high, fingerprints, split, np.arange(14))
    assert set(models) == set(predictions)
    test = split["test"]
    for key, model in models.items():
        # a model alone, as chemgraph predict gives it, after a round trip through its dict
        loaded = BaselineModel.from_dict(model.to_dict())
        given = low[test][:, loaded.reads]
        np.testing.assert_allclose(
            loaded.predict(fingerprints[test], given), predictions[key]["test"], atol=1e-12
        )
        for t in range(2):  # one target alone reads only the columns it needs
            one = loaded.select(t)
            assert one.reads == ([] if not model.reads else [t] if model.same_column else [0, 1])
            np.testing.assert_allclose(
                one.predict(fingerprints[test], low[test][:, one.reads])[:, 0],
                predictions[key]["test"][:, t], atol=1e-12,
            )  # fmt: skip
    assert models["mean"].reads == [] and not models["mean"].needs_fingerprints
    np.testing.assert_allclose(
        models["mean"].predict(None, np.zeros((3, 0))), np.repeat(high[:8].mean(0)[None], 3, 0)
    )
    assert models["linear_all"].reads == [0, 1] and not models["linear_all"].same_column
    assert models["low_model_delta"].reads == [] and models["low_model_delta"].needs_fingerprints
    with pytest.raises(ValueError, match="needs the molecules' fingerprints"):
        models["delta"].predict(None, low[test])
    with pytest.raises(ValueError, match="needs the low-fidelity values"):
        models["linear"].predict(fingerprints[test], None)
