"""Science that must not be silently wrong: duplicates across splits, a target without training
labels, target values whose squares overflow float32 or that are typing errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from rdkit import Chem

from chemgraph.chem import MoleculePreparation
from chemgraph.cli import main
from chemgraph.data import duplicate_groups, featurize_table, find_duplicates, random_split
from chemgraph.data.labels import label_outliers
from chemgraph.data.splits import scaffold_split
from chemgraph.featurize import get_preset
from chemgraph.jobs.train import _split
from chemgraph.train.config import TrainingConfig
from chemgraph.train.metrics import format_metrics
from chemgraph.train.scaler import TargetScaler

# 20 molecules, each given twice: once as written, once as another SMILES of it
MOLECULES = [
    "CCO", "CCCO", "CCCCO", "CC(C)O", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN",
    "CCCN", "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)C", "CCOCC", "ClCCl", "CCCl", "OCCO",
    "NCCN", "CS(C)=O",
]  # fmt: skip


def _other_smiles(smiles: str) -> str:
    mol = Chem.MolFromSmiles(smiles)
    return Chem.MolToSmiles(mol, canonical=False, rootedAtAtom=mol.GetNumAtoms() - 1)


def _twice() -> pd.DataFrame:
    smiles = MOLECULES + [_other_smiles(s) for s in MOLECULES]
    return pd.DataFrame({"smiles": smiles, "y": np.arange(len(smiles), dtype=float)})


def _canonical(smiles):
    return {Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in smiles}


def test_duplicate_groups_are_the_molecule_the_model_sees():
    groups = duplicate_groups(["CCO", "OCC", "C(O)C", "CC(=O)[O-].[Na+]", "CC(=O)[O-]", "X"])
    assert groups.tolist() == [0, 0, 0, 1, 2, 3]
    largest = duplicate_groups(
        ["CC(=O)[O-].[Na+]", "CC(=O)[O-]"], MoleculePreparation(fragments="largest")
    )
    assert largest.tolist() == [0, 0]
    found = find_duplicates(groups, rows=np.array([10, 11, 12, 13, 14, 15]))
    assert (found.molecules, found.rows, found.examples) == (1, 3, [[10, 11, 12]])


def test_grouped_random_split_equals_the_plain_one_without_duplicates():
    for seed in range(3):
        plain = random_split(50, (0.8, 0.1, 0.1), seed)
        singletons = random_split(50, (0.8, 0.1, 0.1), seed, groups=np.arange(50))
        assert all(np.array_equal(a, b) for a, b in zip(plain, singletons))
        pairs = random_split(50, (0.8, 0.1, 0.1), seed, groups=np.arange(50) // 2)
        where = {i: k for k, part in enumerate(pairs) for i in part}
        assert sorted(where) == list(range(50))
        assert all(where[2 * i] == where[2 * i + 1] for i in range(25))


@pytest.mark.parametrize("split,fractions", [("random", (0.6, 0.2, 0.2)),
                                             ("scaffold", (0.8, 0.1, 0.1))])  # fmt: skip
def test_a_molecule_given_twice_stays_in_one_split_and_is_reported(split, fractions):
    table = _twice()
    dataset, _ = featurize_table(table, "smiles", ["y"], get_preset("canonical"), progress=False)
    config = TrainingConfig(
        data="x.csv", target_columns=["y"], out="unused", split=split, task="regression",
        split_fractions=fractions,
    )  # fmt: skip
    parts, duplicates = _split(config, dataset)
    train, val, test = (_canonical(parts[name].smiles) for name in ("train", "val", "test"))
    assert not train & test and not train & val and not val & test
    assert sum(len(p) for p in parts.values()) == 40
    assert (duplicates.molecules, duplicates.rows, duplicates.differing_labels) == (20, 40, 20)
    assert duplicates.to_dict()["examples"][0] == [0, 20]


def test_scaffold_split_keeps_a_salt_with_its_parent_under_largest():
    # a pyridinium salt: its scaffold (benzene.pyridinium) is not its parent's (benzene)
    smiles = ["CCCCc1ccccc1C(=O)[O-].c1cc[nH+]cc1", "CCCCc1ccccc1C(=O)[O-]", "CCO"]
    groups = duplicate_groups(smiles, MoleculePreparation(fragments="largest"))
    assert groups.tolist() == [0, 0, 1]

    def where(parts):
        return {i: k for k, part in enumerate(parts) for i in part}

    plain = where(scaffold_split(smiles, (0.34, 0.33, 0.33)))
    assert plain[0] != plain[1]  # without groups the salt and its parent are split apart
    grouped = where(scaffold_split(smiles, (0.34, 0.33, 0.33), groups=groups))
    assert grouped[0] == grouped[1]


def test_a_target_without_training_labels_is_refused():
    table = pd.DataFrame({"smiles": MOLECULES, "a": np.arange(20.0), "b": np.nan})
    table.loc[[3, 7], "b"] = [1.0, 2.0]
    dataset, _ = featurize_table(table, "smiles", ["a", "b"], get_preset("canonical"),
                                 progress=False)  # fmt: skip
    config = TrainingConfig(
        data="x.csv", target_columns=["a", "b"], out="unused", task="regression", seed=0
    )
    train = random_split(20, config.split_fractions, 0)[0]
    if set(train) & {3, 7}:  # make sure neither labelled row is a training row
        table.loc[[3, 7], "b"] = np.nan
        outside = [i for i in range(20) if i not in set(train)][:2]
        table.loc[outside, "b"] = [1.0, 2.0]
        dataset, _ = featurize_table(table, "smiles", ["a", "b"], get_preset("canonical"),
                                     progress=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"'b' \(2 labelled rows, none of them in training\)"):
        _split(config, dataset)


def test_the_target_scaler_fits_values_whose_squares_overflow_float32():
    labels = torch.tensor([[1e20], [3e20], [2e20]], dtype=torch.float32)
    scaler = TargetScaler.fit(labels)
    assert scaler.mean[0] == pytest.approx(2e20, rel=1e-6)
    assert scaler.std[0] == pytest.approx(np.std([1e20, 3e20, 2e20]), rel=1e-6)
    back = scaler.inverse_transform(scaler.transform(labels))
    assert torch.allclose(back, labels, rtol=1e-5)


def test_a_training_on_huge_targets_finishes_and_writes_its_results(tmp_path):
    smiles = MOLECULES
    table = pd.DataFrame({"smiles": smiles, "y": [1e20 * (1 + i) for i in range(len(smiles))]})
    table.to_csv(tmp_path / "t.csv", index=False)
    settings = tmp_path / "small.yaml"
    settings.write_text(yaml.safe_dump(
        {"batch_size": 8, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}
    ))  # fmt: skip
    out = tmp_path / "run"
    argv = ["train", "--data", str(tmp_path / "t.csv"), "--target-columns", "y", "--max-epochs",
            "1", "--config", str(settings), "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["rmse"] is not None and np.isfinite(metrics["test"]["rmse"])
    assert metrics["duplicates"]["molecules"] == 0


def test_a_mistyped_label_is_named_and_a_wide_column_is_not():
    # logS-like values with one typed exponent: median -2; absolute deviations 1, 0, 1, 0.5,
    # 0.5, 0, 2, 1e20, so MAD 0.75 and the robust z of the 1e20 (row 9) is (1e20 + 2) / 1.11195
    values = np.array([[-1.0], [-2.0], [-3.0], [-2.5], [-1.5], [-2.0], [-4.0], [1e20], [np.nan]])
    rows = np.array([0, 1, 2, 3, 4, 5, 6, 9, 10])
    smiles = [f"C{'C' * i}O" for i in range(9)]
    messages = label_outliers(values, ["logS"], rows, smiles)
    assert messages == [
        f"target 'logS': row 9 ({smiles[7]}) has 1e+20, {(1e20 + 2) / (1.4826 * 0.75):.3g} robust "
        "standard deviations from the median -2"
    ]
    # log-normal assay values over four decades, as IC50 in nM: nothing reported
    ic50 = np.array([[1.0], [10.0], [100.0], [1000.0], [1000.0], [2000.0], [10_000.0]])
    assert label_outliers(ic50, ["ic50"], np.arange(7), smiles[:7]) == []
    # most labels equal (MAD 0): the mean absolute deviation is the scale
    flat = np.array([[0.0]] * 3000 + [[1.0], [1e9]])
    assert len(label_outliers(flat, ["y"], np.arange(3002), ["C"] * 3002)) == 1


def test_metrics_that_overflow_the_column_print_in_scientific_notation():
    metrics = {
        "val": {"rmse": 3.540875814613087e18, "mae": 0.5, "r2": -2.354e36},
        "test": {"rmse": 1.25, "mae": float("nan"), "r2": 0.9},
    }
    assert format_metrics(metrics).splitlines() == [
        "split       RMSE       MAE        R2",
        "val     3.54e+18    0.5000 -2.35e+36",
        "test      1.2500       n/a    0.9000",
    ]


def test_train_warns_of_a_mistyped_label_with_its_source_row(caplog):
    table = pd.DataFrame({"smiles": ["Xx", *MOLECULES], "y": [0.0, *np.linspace(-3, 1, 20)]})
    table.loc[6, "y"] = 1e20  # source row 6 is the dataset's sixth molecule (row 0 is rejected)
    dataset, _ = featurize_table(table, "smiles", ["y"], get_preset("canonical"), progress=False)
    config = TrainingConfig(data="x.csv", target_columns=["y"], out="unused", task="regression")
    with caplog.at_level("WARNING", logger="chemgraph.jobs.train"):
        _split(config, dataset)
    outliers = [r.getMessage() for r in caplog.records if "robust standard" in r.getMessage()]
    assert len(outliers) == 1
    assert outliers[0].startswith(f"target 'y': row 6 ({MOLECULES[5]}) has 1e+20")
