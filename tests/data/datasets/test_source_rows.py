"""Rows that point at the right input: a card dataset's rows are its source file's rows, its
files are checked against the card on every read, and a damaged cache is rebuilt."""

from __future__ import annotations

import logging

import pandas as pd
import pytest
import torch

from chemgraph.data.datasets import get_dataset, read_data
from chemgraph.graph_keys import NODE_FEATURES
from chemgraph.jobs.train import _featurize
from chemgraph.train.config import TrainingConfig

from .conftest import FIXTURES

# BBBP-like: 15 records, 3 SMILES RDKit rejects (rows 1, 5 and 9), a bad label (row 12)
SMILES = [
    "CCO", "N(C)(C)(C)(C)C", "c1ccccc1", "CCN", "CCCO", "C1CC", "OCCO", "CC(=O)O", "CCCl",
    "c1ccc2ccccc2c1X", "CCOC", "CNC", "OC1CCCCC1", "CC(C)O", "c1ccncc1",
]  # fmt: skip
BAD_ROWS = [1, 5, 9]
BAD_LABEL = 12  # a label that is not a number: rejected when featurizing, not when parsing


@pytest.fixture()
def bbbp_root(tmp_path):
    root = tmp_path / "bbbp"
    root.mkdir()
    frame = pd.DataFrame(
        {
            "num": range(1, len(SMILES) + 1),
            "name": [f"m{i}" for i in range(len(SMILES))],
            "p_np": ["x" if i == BAD_LABEL else str(i % 2) for i in range(len(SMILES))],
            "smiles": SMILES,
        }
    )
    frame.to_csv(root / "BBBP.csv", index=False)
    return root


def test_a_card_dataset_keeps_the_source_row_and_lists_every_reject(bbbp_root, tmp_path):
    source = read_data("bbbp", bbbp_root)
    assert source.rejected["row"].tolist() == BAD_ROWS
    good = [i for i in range(len(SMILES)) if i not in BAD_ROWS]
    assert source.rows.tolist() == good
    config = TrainingConfig(
        data="bbbp", data_root=str(bbbp_root), target_columns=["p_np"], out=str(tmp_path / "o"),
        progress=False,
    )  # fmt: skip
    (tmp_path / "o").mkdir()
    dataset, _, _ = _featurize(config, tmp_path / "o")
    # every molecule's row names its own line of BBBP.csv
    assert [SMILES[row] for row in dataset.rows] == dataset.smiles
    rejected = pd.read_csv(tmp_path / "o" / "rejected.csv")
    assert rejected["row"].tolist() == [*BAD_ROWS, BAD_LABEL]
    assert rejected["input"].tolist() == [SMILES[row] for row in [*BAD_ROWS, BAD_LABEL]]
    # max_rows counts source rows: the first 6 lines hold 4 molecules and 2 rejects
    assert read_data("bbbp", bbbp_root).head(6).rows.tolist() == [0, 2, 3, 4]


def test_the_dataset_api_gives_source_rows_for_featurize_rejects(bbbp_root):
    dataset = get_dataset("bbbp", root=bbbp_root, download=False)
    graphs, rejected = dataset.featurize("canonical", cache=False)
    table = dataset.parse().table
    assert table["row"].to_numpy()[graphs.rows].tolist() == [
        i for i in range(len(SMILES)) if i not in [*BAD_ROWS, BAD_LABEL]
    ]
    assert sorted(rejected["row"].tolist()) == [*BAD_ROWS, BAD_LABEL]


def test_every_read_checks_the_checksum_and_the_row_count(bbbp_root, caplog):
    with caplog.at_level(logging.INFO, logger="chemgraph.data.datasets.base"):
        read_data("bbbp", bbbp_root)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("checksum differs" in w and "d07a38487aea" in w for w in warnings), warnings
    assert any(f"holds {len(SMILES)} records; the card's BBBP.csv holds 2050" in w
               for w in warnings), warnings  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="chemgraph.data.datasets.base"):
        get_dataset("esol", root=FIXTURES / "moleculenet", download=False).parse()
    messages = [r.getMessage() for r in caplog.records]
    assert any("delaney-processed.csv" in m and "checksum" in m for m in messages), messages


def _cache_folder(chemgraph_home):
    (folder,) = (chemgraph_home / "featurized" / "esol").iterdir()
    return folder


@pytest.mark.parametrize("damage", ["truncated", "missing", "foreign"])
def test_a_damaged_cache_is_detected_and_rebuilt(chemgraph_home, damage, caplog):
    load = lambda: get_dataset(  # noqa: E731
        "esol", root=FIXTURES / "moleculenet", download=False
    ).featurize("canonical")
    first, _ = load()
    folder = _cache_folder(chemgraph_home)
    (shard,) = folder.glob("shard_*.bin")
    if damage == "truncated":
        shard.write_bytes(shard.read_bytes()[:-40])
    elif damage == "missing":
        shard.unlink()
    else:  # a shard file of another cache
        (folder / "shard_00001.bin").write_bytes(shard.read_bytes())
    with caplog.at_level(logging.WARNING):
        again, _ = load()
    assert any(str(folder) in r.getMessage() and "damaged" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    assert again.smiles == first.smiles
    for a, b in zip(first.graphs, again.graphs):
        assert torch.equal(a.ndata[NODE_FEATURES], b.ndata[NODE_FEATURES])
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load()  # the rebuilt cache is read without a warning
    assert not [r for r in caplog.records if "damaged" in r.getMessage()]


def test_a_folder_with_several_copies_says_which_it_read(tmp_path, caplog):
    root = tmp_path / "qm9"
    root.mkdir()
    for folder in ("qm9_original", "qm9_deepchem"):
        for path in (FIXTURES / folder).iterdir():
            (root / path.name).write_bytes(path.read_bytes())
    with caplog.at_level(logging.WARNING):
        get_dataset("qm9", root=root, download=False).parse()
    (message,) = [r.getMessage() for r in caplog.records if "several copies" in r.getMessage()]
    assert "reading dsgdb9nsd.xyz.tar.bz2 (also there: qm9.csv)" in message


def test_a_missing_root_says_the_folder_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"the folder .*nowhere does not exist"):
        get_dataset("qm9", root=tmp_path / "nowhere").parse()  # download on, no checksum


def test_the_dataset_api_split_keeps_a_molecule_in_one_split(tmp_path, caplog):
    root = tmp_path / "bbbp"
    root.mkdir()
    smiles = [s for i, s in enumerate(SMILES) if i not in BAD_ROWS]  # 12 molecules
    smiles += ["OCC", "C(C)O", "c1ccccc1"]  # rows 12-14: molecules of rows 0, 0 and 1, again
    pd.DataFrame({"p_np": [i % 2 for i in range(15)], "smiles": smiles}).to_csv(
        root / "BBBP.csv", index=False
    )
    dataset = get_dataset("bbbp", root=root, download=False)
    for method in ("random", "scaffold"):
        for seed in range(5):
            split = dataset.split(method=method, seed=seed)
            where = {int(i): name for name, part in split.items() for i in part}
            assert where[0] == where[12] == where[13] and where[1] == where[14]
    assert any("2 molecules are given in more than one row" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_a_cached_read_checks_the_files_too(bbbp_root, caplog):
    get_dataset("bbbp", root=bbbp_root, download=False).featurize("canonical")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        get_dataset("bbbp", root=bbbp_root, download=False).featurize("canonical")  # cached
    assert any("checksum differs" in r.getMessage() for r in caplog.records)
