"""``chemgraph featurize`` graph shards (byte-identical runs, the molecules' graphs) and its
progress bar (records, counted as the workers finish them, out of the input's records)."""

import sys

import pytest
import torch
from tqdm.auto import tqdm

from chemgraph._dgl import dgl
from chemgraph.chem import mols_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import load_shard, mols_to_graphs
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library
from chemgraph.library import progress

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C[C@H](N)C(=O)O", "C/C=C/Cl", "OCC(=O)O"]


@pytest.fixture()
def smi(tmp_path):
    """60 records: 57 molecules, a blank line (row 10) and two invalid SMILES (rows 20, 30)."""
    lines = [f"{SMILES[i % len(SMILES)]} m{i}" for i in range(60)]
    lines[10], lines[20], lines[30] = "", "C1CC broken", "N(C)(C)(C)(C)C pentavalent"
    path = tmp_path / "lib.smi"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "options",
    [FeaturizeOptions(graphs="canonical", conformers=1), FeaturizeOptions(graphs="ogb")],
    ids=["canonical with conformers", "ogb"],
)
def test_two_identical_runs_write_identical_bytes(smi, tmp_path, options):
    first, second = tmp_path / "first", tmp_path / "second"
    featurize_library(smi, first, options, shard_size=25, progress=False)
    featurize_library(smi, second, options, shard_size=25, workers=2, progress=False)
    shards = sorted(p.name for p in (first / "graphs").iterdir())
    assert shards == ["shard-00000.bin", "shard-00001.bin", "shard-00002.bin"]
    for name in shards:
        assert (first / "graphs" / name).read_bytes() == (second / "graphs" / name).read_bytes()
    # and they hold the molecules' graphs
    graphs, rows = zip(*(load_shard(first / "graphs" / name) for name in shards))
    graphs, rows = [g for part in graphs for g in part], torch.cat(rows)
    assert rows.tolist() == [r for r in range(60) if r not in (10, 20, 30)]
    if options.conformers:
        assert [g.num_nodes() for g in graphs[:2]] == [9, 13]  # explicit hydrogens
        return  # the positions are checked in tests/jobs/test_featurize.py
    mols = mols_from_smiles([SMILES[r % len(SMILES)] for r in rows.tolist()])
    for loaded, expected in zip(graphs, dgl.unbatch(mols_to_graphs(mols, get_preset("ogb")))):
        assert all(torch.equal(x, y) for x, y in zip(loaded.edges(), expected.edges()))
        assert torch.equal(loaded.ndata["x"], expected.ndata["x"])
        assert torch.equal(loaded.edata["e"], expected.edata["e"])


class RecordingBar(tqdm):
    """tqdm that keeps every ``update`` and whether it was shown."""

    bars: list["RecordingBar"] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.shown = not self.disable  # close() sets disable
        self.updates: list[int] = []
        RecordingBar.bars.append(self)

    def update(self, n=1):
        self.updates.append(n)
        return super().update(n)


@pytest.fixture()
def bars(monkeypatch):
    RecordingBar.bars = []
    monkeypatch.setattr(progress, "tqdm", RecordingBar)
    return RecordingBar.bars


def test_progress_counts_records_as_the_worker_finishes_them(
    smi, tmp_path, bars, monkeypatch, capsys
):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    options = FeaturizeOptions(conformers=1)  # ~20 ms a record: the bar moves within the shard
    manifest = featurize_library(smi, tmp_path / "out", options, shard_size=100)
    (bar,) = bars
    assert bar.shown and "60.0/60.0" in capsys.readouterr().err
    assert bar.total == 60 == manifest["counts"]["read"] + manifest["counts"]["blank"]
    assert sum(bar.updates) == bar.n == 60  # every record once, rejected and blank ones too
    assert len(bar.updates) > 1 and max(bar.updates) < 60  # not only when the shard finished


def test_resumed_shards_count_and_a_log_file_gets_no_bar(smi, tmp_path, bars, capsys):
    featurize_library(smi, tmp_path / "out", FeaturizeOptions(), shard_size=25, progress=False)
    (tmp_path / "out" / "parts" / "shard-00002.json").unlink()
    featurize_library(smi, tmp_path / "out", FeaturizeOptions(), shard_size=25, resume=True)
    # stderr is no terminal here: plain lines instead (tests/cli/test_progress_lines.py)
    assert [bar.shown for bar in bars] == [False, False]
    assert sum(bars[1].updates) == 60  # the resumed shards too
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("damage", ["truncated graphs", "missing features", "foreign graphs"])
def test_resume_rebuilds_a_damaged_shard_of_a_finished_run(smi, tmp_path, damage):
    options = FeaturizeOptions(fingerprints=("maccs",), graphs="canonical")
    out = tmp_path / "out"
    featurize_library(smi, out, options, shard_size=20, progress=False)
    expected = {p.name: p.read_bytes() for p in sorted((out / "graphs").iterdir())}
    graphs = out / "graphs" / "shard-00001.bin"
    if damage == "truncated graphs":
        graphs.write_bytes(graphs.read_bytes()[:-16])
    elif damage == "missing features":
        (out / "features" / "shard-00001.parquet").unlink()
    else:  # another shard's graphs under this shard's name
        graphs.write_bytes((out / "graphs" / "shard-00000.bin").read_bytes())
    featurize_library(smi, out, options, shard_size=20, progress=False, resume=True)
    assert {p.name: p.read_bytes() for p in sorted((out / "graphs").iterdir())} == expected
    assert (out / "features" / "shard-00001.parquet").is_file()


@pytest.mark.parametrize("conformers", [0, 1])
def test_a_shard_without_survivors_is_an_empty_shard_and_the_run_goes_on(tmp_path, conformers):
    path = tmp_path / "lib.smi"
    path.write_text("CCO a\nCCN b\nC1CC c\n\nCCCO e\n")  # shard 1 (rows 2, 3): nothing survives
    options = FeaturizeOptions(fingerprints=("maccs",), graphs="canonical", conformers=conformers)
    out = tmp_path / "out"
    manifest = featurize_library(path, out, options, shard_size=2, progress=False)
    assert manifest["counts"]["featurized"] == 3
    graphs, rows = load_shard(out / "graphs" / "shard-00001.bin")
    assert graphs == [] and rows.tolist() == []
    assert [r.tolist() for r in (load_shard(out / "graphs" / "shard-00002.bin")[1],)] == [[4]]
    rejected = (out / "rejected.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in rejected[1:]] == ["2"]  # row 3 is blank: not a reject
    assert manifest["counts"]["blank"] == 1
    featurize_library(path, out, options, shard_size=2, progress=False, resume=True)


def test_more_workers_than_shards_says_why_they_are_idle(tmp_path, capsys):
    path = tmp_path / "lib.smi"
    path.write_text("CCO a\nCCN b\nCCCO c\n")
    options = FeaturizeOptions(fingerprints=("maccs",), graphs=None)
    featurize_library(path, tmp_path / "out", options, workers=2, progress=False)
    assert "note: 2 workers but the input made 1 shard(s) of up to 5000 records" in (
        capsys.readouterr().err
    )
