"""Tests for chemgraph.data.table: reading tables, featurising rows, reporting rejects."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from chemgraph.chem import MoleculePreparation
from chemgraph.data.table import (
    MoleculeDataset,
    featurize_table,
    read_table,
    write_rejected,
)
from chemgraph.featurize import get_preset
from chemgraph.graph_keys import NODE_FEATURES

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def preset():
    return get_preset("canonical")


# --------------------------------------------------------------------------- read_table


def test_read_csv_crlf(tmp_path):
    path = tmp_path / "crlf.csv"
    path.write_bytes(b"name,smiles,y\r\nNA,CCO,1.5\r\nsodium,[Na+],-2\r\n")
    df = read_table(path)
    assert list(df.columns) == ["name", "smiles", "y"]
    assert df["smiles"].tolist() == ["CCO", "[Na+]"]
    assert df["name"].tolist() == ["NA", "sodium"]  # "NA" is text, not a missing value
    assert df["y"].tolist() == [1.5, -2.0]


def test_read_csv_blank_line_after_every_row(tmp_path):
    # HIV.csv's line endings: "\r\n\n"
    path = tmp_path / "HIV.csv"
    path.write_bytes(b"smiles,activity,HIV_active\r\n\nCCO,CI,0\r\n\nc1ccccc1,CM,1\r\n\n")
    df = read_table(path)
    assert df.shape == (2, 3)
    assert df["smiles"].tolist() == ["CCO", "c1ccccc1"]
    assert df["HIV_active"].tolist() == [0, 1]


def test_read_csv_gz(tmp_path):
    path = tmp_path / "tox.csv.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"NR-AR,NR-AhR,smiles\n0,,CCO\n,1,CCN\n")
    df = read_table(path)
    assert df["smiles"].tolist() == ["CCO", "CCN"]
    assert df["NR-AR"].iloc[0] == 0.0 and math.isnan(df["NR-AR"].iloc[1])
    assert math.isnan(df["NR-AhR"].iloc[0]) and df["NR-AhR"].iloc[1] == 1.0


def test_read_tsv(tmp_path):
    path = tmp_path / "docking.tsv"
    path.write_text("inchikey\tsmiles\tABL1\nAAA\tCC(=O)O\t-7.1\nBBB\tc1ccncc1\t\n")
    df = read_table(path)
    assert df["smiles"].tolist() == ["CC(=O)O", "c1ccncc1"]
    assert df["ABL1"].iloc[0] == pytest.approx(-7.1)
    assert math.isnan(df["ABL1"].iloc[1])


def test_read_parquet(tmp_path):
    path = tmp_path / "table.parquet"
    pd.DataFrame({"smiles": ["CCO", "C1CCCCC1"], "y": [0.25, 3.0]}).to_parquet(path)
    df = read_table(path)
    assert df["smiles"].tolist() == ["CCO", "C1CCCCC1"]
    assert df["y"].tolist() == [0.25, 3.0]


def test_read_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.csv"):
        read_table(tmp_path / "nothere.csv")
    xlsx = tmp_path / "table.xlsx"
    xlsx.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"table\.xlsx.*unsupported"):
        read_table(xlsx)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.csv"):
        read_table(empty)
    header_only = tmp_path / "header.csv"
    header_only.write_text("smiles,y\n")
    with pytest.raises(ValueError, match=r"header\.csv.*no data rows"):
        read_table(header_only)


# --------------------------------------------------------------------------- featurize_table


def _write(tmp_path: Path, name: str, text: str) -> pd.DataFrame:
    path = tmp_path / name
    path.write_text(text)
    return read_table(path)


def test_featurize_rejects_exactly_the_invalid_smiles(tmp_path, preset):
    df = _write(
        tmp_path,
        "mols.csv",
        "smiles,y\n"
        "CCO ,1.0\n"  # trailing space, as in ESOL
        "c1ccccc1,2.0\n"
        "C1CC,3.0\n"  # unclosed ring
        "[Na+],4.0\n"  # single atom, no bonds
        "CN(C)(C)(C)C,5.0\n"  # pentavalent nitrogen
        "CC(=O)O,6.0\n",
    )
    dataset, rejected = featurize_table(df, "smiles", ["y"], preset, progress=False)
    assert list(rejected.columns) == ["row", "id", "input", "reason"]
    assert rejected["row"].tolist() == [2, 4]
    assert rejected["input"].tolist() == ["C1CC", "CN(C)(C)(C)C"]
    assert all(isinstance(r, str) and r for r in rejected["reason"])
    assert "SMILES parse error" in rejected["reason"].iloc[0]
    assert "valence" in rejected["reason"].iloc[1].lower()

    assert len(dataset) == 4
    assert dataset.rows.dtype == np.int64
    assert dataset.rows.tolist() == [0, 1, 3, 5]
    assert dataset.smiles == ["CCO", "c1ccccc1", "[Na+]", "CC(=O)O"]
    assert dataset.target_columns == ["y"]
    assert dataset.labels.dtype == torch.float32
    assert dataset.labels.tolist() == [[1.0], [2.0], [4.0], [6.0]]

    graph, label = dataset[0]
    assert graph.num_nodes() == 3 and graph.num_edges() == 4  # C-C-O, both directions
    assert graph.ndata[NODE_FEATURES].shape == (3, len(preset.atom))
    assert label.tolist() == [1.0]
    sodium, _ = dataset[2]
    assert sodium.num_nodes() == 1 and sodium.num_edges() == 0


def test_featurize_non_numeric_target(tmp_path, preset):
    df = _write(tmp_path, "bad_target.csv", "smiles,logS\nCCO,-0.5\nCCN,abc\nCCC,1e-1\n")
    dataset, rejected = featurize_table(df, "smiles", ["logS"], preset, progress=False)
    assert rejected["row"].tolist() == [1]
    reason = rejected["reason"].iloc[0]
    assert "logS" in reason and "abc" in reason
    assert dataset.rows.tolist() == [0, 2]
    assert dataset.labels[:, 0].tolist() == pytest.approx([-0.5, 0.1])


def test_featurize_rejects_labels_beyond_float32(tmp_path, preset):
    df = _write(tmp_path, "huge.csv", "smiles,y\nCCO,1e39\nCCN,-inf\nCCC,3e38\n")
    dataset, rejected = featurize_table(df, "smiles", ["y"], preset, progress=False)
    assert rejected["row"].tolist() == [0, 1]
    assert all("not a finite float32 number" in r for r in rejected["reason"])
    assert dataset.labels.tolist() == [[pytest.approx(3e38)]]


def test_featurize_missing_labels(tmp_path, preset):
    df = _write(
        tmp_path,
        "multi.csv",
        "A,B,smiles\n"
        "1,0,CCO\n"
        ",,CCN\n"  # all targets missing
        "1,,CCC\n"  # partially missing: kept with NaN
        "nan,NA,CCCC\n",  # missing tokens
    )
    dataset, rejected = featurize_table(df, "smiles", ["A", "B"], preset, progress=False)
    assert rejected["row"].tolist() == [1, 3]
    assert rejected["reason"].tolist() == ["all targets missing: A, B"] * 2
    assert dataset.rows.tolist() == [0, 2]
    assert dataset.labels[0].tolist() == [1.0, 0.0]
    assert dataset.labels[1, 0].item() == 1.0 and math.isnan(dataset.labels[1, 1].item())

    kept, rejected = featurize_table(
        df, "smiles", ["A", "B"], preset, require_labels=False, progress=False
    )
    assert len(rejected) == 0
    assert kept.rows.tolist() == [0, 1, 2, 3]
    assert torch.isnan(kept.labels[1]).all() and torch.isnan(kept.labels[3]).all()


def test_featurize_empty_smiles_and_no_targets(preset):
    df = pd.DataFrame({"smiles": ["CCO", "", "   ", None, "O"]})
    dataset, rejected = featurize_table(df, "smiles", [], preset, progress=False)
    assert rejected["row"].tolist() == [1, 2, 3]
    assert all("empty" in r for r in rejected["reason"])
    assert dataset.labels.shape == (2, 0)
    assert dataset.rows.tolist() == [0, 4]


def test_featurize_largest_fragment(preset):
    df = pd.DataFrame({"smiles": ["CC(=O)[O-].[Na+]"], "y": [1.0]})
    keep, _ = featurize_table(df, "smiles", ["y"], preset, progress=False)
    largest, _ = featurize_table(
        df, "smiles", ["y"], preset, MoleculePreparation(fragments="largest"), progress=False
    )
    assert keep[0][0].num_nodes() == 5
    assert largest[0][0].num_nodes() == 4
    assert largest.smiles == ["CC(=O)[O-].[Na+]"]  # the input as given


def test_featurize_missing_column_message(preset):
    df = pd.DataFrame({"smiles": ["CCO"], "p_np": [1]})
    with pytest.raises(ValueError) as info:
        featurize_table(df, "SMILES", ["p_np", "label"], preset, progress=False)
    message = str(info.value)
    assert "'SMILES'" in message and "'label'" in message
    assert "available columns: 'smiles', 'p_np'" in message


def test_subset_and_write_rejected(tmp_path, preset):
    df = pd.DataFrame({"smiles": ["C", "CC", "C1CC", "CCC"], "y": [0.0, 1.0, 2.0, 3.0]})
    dataset, rejected = featurize_table(df, "smiles", ["y"], preset, progress=False)
    part = dataset.subset(np.array([2, 0]))
    assert isinstance(part, MoleculeDataset)
    assert part.rows.tolist() == [3, 0]
    assert part.smiles == ["CCC", "C"]
    assert part.labels.tolist() == [[3.0], [0.0]]
    assert [g.num_nodes() for g in part.graphs] == [3, 1]

    out = tmp_path / "out" / "rejected.csv"
    write_rejected(rejected, out)
    back = pd.read_csv(out)
    assert back.columns.tolist() == ["row", "id", "input", "reason"]
    assert back["row"].tolist() == [2] and back["id"].tolist() == [2]
    assert back["input"].tolist() == ["C1CC"]

    empty_out = tmp_path / "none.csv"
    write_rejected(rejected.iloc[0:0], empty_out)
    assert empty_out.read_text() == "row,id,input,reason\n"


# --------------------------------------------------------------------------- real data


@pytest.mark.shared_data
def test_bbbp_rejects_eleven(preset):
    path = SHARED_DATA / "moleculenet" / "BBBP.csv"
    if not path.exists():
        pytest.skip(f"{path} not present")
    df = read_table(path)
    assert len(df) == 2050
    dataset, rejected = featurize_table(df, "smiles", ["p_np"], preset, progress=False)
    assert len(rejected) == 11
    assert len(dataset) == 2039
    assert set(rejected["row"]).isdisjoint(dataset.rows.tolist())
    assert all(rejected["reason"].str.len() > 0)
    assert dataset.labels.shape == (2039, 1)
    assert set(dataset.labels[:, 0].tolist()) == {0.0, 1.0}


def test_appended_rejects_keep_their_columns(tmp_path):
    """The reaction recipes add their test rejects below the training ones: every field must
    stay under its own header (a 4-field row under a 5-column header shifted them left)."""
    path = tmp_path / "rejected.csv"
    train = pd.DataFrame({"row": [3], "input": ["C1CC>>"], "reason": ["unclosed ring"],
                          "file": ["train.txt"]})  # fmt: skip
    test = pd.DataFrame(
        {"row": [7], "input": ["X>>"], "reason": ["bad atom"], "file": ["test.txt"]}
    )
    write_rejected(train, path)
    write_rejected(test, path, append=True)
    back = pd.read_csv(path)
    assert back.columns.tolist() == ["row", "id", "input", "reason", "file"]
    assert back.to_dict("list") == {
        "row": [3, 7], "id": [3, 7], "input": ["C1CC>>", "X>>"],
        "reason": ["unclosed ring", "bad atom"], "file": ["train.txt", "test.txt"],
    }  # fmt: skip
