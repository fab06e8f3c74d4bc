"""What users of the field expect: train reads SDF, predefined splits (a split column or a split
file, checked for overlap and leakage), config.yaml that repeats a run from any folder."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from rdkit import Chem

from chemgraph.cli import main
from chemgraph.data import read_split_file
from chemgraph.data.datasets import read_data
from chemgraph.errors import ConfigError
from chemgraph.jobs.train import _featurize, _predefined_parts, _split
from chemgraph.train.config import TrainingConfig

SMILES = [
    "CCO", "CCCO", "CCCCO", "CC(C)O", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN",
    "CCCN", "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)C", "CCOCC", "ClCCl", "CCCl", "OCCO",
    "NCCN", "CS(C)=O",
]  # fmt: skip


def _sdf(path, smiles, values):
    writer = Chem.SDWriter(str(path))
    for index, (text, value) in enumerate(zip(smiles, values)):
        mol = Chem.MolFromSmiles(text)
        mol.SetProp("_Name", f"m{index}")
        mol.SetProp("logS", str(value))
        writer.write(mol)
    writer.close()
    with open(path, "a") as handle:  # a record RDKit cannot read, as the last one
        handle.write("broken\n\n\n  1  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n")


def test_train_reads_an_sdf_with_sd_properties_as_targets(tmp_path):
    _sdf(tmp_path / "mols.sdf", SMILES, [0.5 * i for i in range(len(SMILES))])
    source = read_data(tmp_path / "mols.sdf")
    assert source.rows.tolist() == list(range(20))
    assert source.rejected["row"].tolist() == [20]
    config = TrainingConfig(data=str(tmp_path / "mols.sdf"), target_columns=["logS"],
                            out=str(tmp_path / "o"), progress=False)  # fmt: skip
    (tmp_path / "o").mkdir()
    dataset, _, _ = _featurize(config, tmp_path / "o")
    assert dataset.labels[:, 0].tolist() == [0.5 * i for i in range(20)]
    assert [Chem.CanonSmiles(s) for s in dataset.smiles] == [Chem.CanonSmiles(s) for s in SMILES]
    assert pd.read_csv(tmp_path / "o" / "rejected.csv")["row"].tolist() == [20]


def _table(tmp_path, split):
    frame = pd.DataFrame({"smiles": SMILES, "y": np.arange(20.0), "fold": split})
    frame.to_csv(tmp_path / "t.csv", index=False)
    return tmp_path / "t.csv"


def _parts(config, tmp_path):
    (tmp_path / "o").mkdir(exist_ok=True)
    dataset, _, source = _featurize(config, tmp_path / "o")
    parts, duplicates = _split(config, dataset, _predefined_parts(config, source, dataset))
    return {name: part.rows.tolist() for name, part in parts.items()}, duplicates


def test_a_split_column_is_used_as_given(tmp_path):
    names = ["train"] * 14 + ["val", "valid", "VAL"] + ["test", " test", ""]
    data = _table(tmp_path, names)
    config = TrainingConfig(data=str(data), target_columns=["y"], out=str(tmp_path / "o"),
                            split_column="fold", task="regression")  # fmt: skip
    assert config.split == "predefined"
    parts, duplicates = _parts(config, tmp_path)
    assert parts == {"train": list(range(14)), "val": [14, 15, 16], "test": [17, 18]}
    assert duplicates.across_splits == 0
    bad = _table(tmp_path, ["train"] * 19 + ["holdout"])
    config = TrainingConfig(data=str(bad), target_columns=["y"], out=str(tmp_path / "o"),
                            split_column="fold", task="regression")  # fmt: skip
    with pytest.raises(ValueError, match="'holdout' \\(item 19\\)"):
        _parts(config, tmp_path)


def test_a_split_file_is_checked_for_overlap_and_leakage(tmp_path):
    smiles = [*SMILES[:18], "OCC", "CCCO"]  # rows 18, 19: rows 0 and 1 written otherwise
    frame = pd.DataFrame({"smiles": smiles, "y": np.arange(20.0)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    split = tmp_path / "split.json"
    split.write_text(json.dumps([{"train": "0-15", "val": [16, 17], "test": [18, 19]}]))
    config = TrainingConfig(
        data=str(tmp_path / "t.csv"), target_columns=["y"], out=str(tmp_path / "o"),
        split_file=str(split), task="regression",
    )  # fmt: skip
    parts, duplicates = _parts(config, tmp_path)
    assert parts == {"train": list(range(16)), "val": [16, 17], "test": [18, 19]}
    assert duplicates.across_splits == 2  # ethanol and propanol are in train and in test
    assert "LEAKAGE: 2" in str(duplicates)
    split.write_text(json.dumps({"train": [0, 1, 2], "test": [2, 3]}))
    with pytest.raises(ValueError, match="row 2 is in split 'test' and in another split"):
        read_split_file(split, 20)
    split.write_text(json.dumps({"train": [0, 25]}))
    with pytest.raises(ValueError, match="names row 25, but the data has 20 rows"):
        read_split_file(split, 20)
    with pytest.raises(ConfigError, match="not both"):
        TrainingConfig(data="t.csv", target_columns=["y"], out="o", split_file="s.json",
                       split_column="fold")  # fmt: skip


def test_config_yaml_repeats_the_run_from_another_folder(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    frame = pd.DataFrame({"smiles": SMILES, "y": np.arange(20.0)})
    frame.to_csv(work / "t.csv", index=False)
    (work / "small.yaml").write_text(yaml.safe_dump(
        {"batch_size": 8, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}
    ))  # fmt: skip
    monkeypatch.chdir(work)
    argv = ["train", "--data", "t.csv", "--target-columns", "y", "--max-epochs", "1",
            "--config", "small.yaml", "--out", "run", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    recorded = yaml.safe_load((work / "run" / "config.yaml").read_text())
    assert recorded["data"] == str(work / "t.csv") and recorded["out"] == str(work / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["train", "--config", str(work / "run" / "config.yaml"), "--out", "again",
                 "--quiet"]) == 0  # fmt: skip
    first = json.loads((work / "run" / "metrics.json").read_text())
    again = json.loads((elsewhere / "again" / "metrics.json").read_text())
    assert again["test"] == pytest.approx(first["test"])
