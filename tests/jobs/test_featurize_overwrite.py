"""``chemgraph featurize --overwrite``: an earlier run's files replaced by the new run's, every
other file of the folder left; refused with ``--resume``; without it, a folder of another run
or of other files refused as before."""

from __future__ import annotations

import json

import pytest

from chemgraph.cli import main
from chemgraph.errors import ConfigError
from chemgraph.jobs.featurize import OUTPUTS, FeaturizeOptions, featurize_library


@pytest.fixture()
def library(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("CCO a\nc1ccccc1 b\nCCN c\nC1CC broken\nOCCO d\n")
    return path


def _files(folder):
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_overwrite_replaces_an_earlier_run_and_leaves_other_files(library, tmp_path, capsys):
    out = tmp_path / "out"
    first = ["featurize", "-i", str(library), "-o", str(out), "--shard-size", "2", "--quiet"]
    assert main(first) == 0
    assert (out / "parts" / "shard-00002.json").exists()  # three shards of 2, 2 and 1
    (out / "notes.txt").write_text("mine")
    (out / "mine").mkdir()
    (out / "mine" / "graphs.csv").write_text("also mine")
    capsys.readouterr()
    second = ["featurize", str(library), "--output", str(out), "--shard-size", "5",
              "--fingerprint", "maccs", "--quiet"]  # fmt: skip
    assert main(second) == 2  # another run is there
    assert capsys.readouterr().err == (
        f"chemgraph featurize: error: {out} holds an earlier run; pass --resume to continue "
        "it, or pass --overwrite to start again\n"
    )
    assert (out / "parts" / "shard-00002.json").exists()  # a refusal touches nothing
    with pytest.raises(SystemExit):
        main([*second, "--overwrite", "--resume"])
    assert "argument --resume: not allowed with argument --overwrite" in capsys.readouterr().err
    assert main([*second, "--overwrite"]) == 0
    fresh = tmp_path / "fresh"
    assert main([*second[:3], str(fresh), *second[4:]]) == 0
    kept = {"notes.txt": b"mine", "mine/graphs.csv": b"also mine"}
    assert _files(out) == {**_files(fresh), **kept}  # the earlier run's shards 1 and 2 gone
    assert json.loads((out / "manifest.json").read_text())["shard_size"] == 5


def test_a_folder_of_other_files_needs_overwrite_which_leaves_them(library, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README").write_text("mine")
    options = FeaturizeOptions(graphs=None, fingerprints=("maccs",))
    with pytest.raises(ValueError, match="exists and is not empty; choose a new --output, or "
                       "pass --overwrite to write over it"):  # fmt: skip
        featurize_library(library, out, options, progress=False)
    assert [p.name for p in out.iterdir()] == ["README"]
    manifest = featurize_library(library, out, options, progress=False, overwrite=True)
    assert manifest["counts"]["featurized"] == 4
    assert sorted(p.name for p in out.iterdir()) == sorted(["README", *OUTPUTS])


def test_resume_with_overwrite_is_refused_before_anything_is_written(library, tmp_path):
    with pytest.raises(ConfigError, match="--resume continues the run .* give one of them"):
        featurize_library(
            library, tmp_path / "out", FeaturizeOptions(), resume=True, overwrite=True
        )
    assert not (tmp_path / "out").exists()
