"""``chemgraph featurize``: bad records reported, workers/resume invariance, real values."""

import gzip
import json

import numpy as np
import pandas as pd
import pytest
import torch
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator

from chemgraph.cli import main
from chemgraph.graphs import load_shard
from chemgraph.recipes import featurize_library as library
from chemgraph.recipes.featurize_library import FeaturizeOptions, featurize_library

GOOD = ["CCO", "c1ccccc1", "CC(=O)[O-].[Na+]", "[Na+]", "C" * 500, "CCN", "OCCO", "C1CC1"]


@pytest.fixture()
def smi(tmp_path):
    """A .smi file with a blank line, invalid SMILES, a non-UTF-8 line, duplicate ids."""
    lines = [
        b"CCO ethanol",
        b"c1ccccc1 benzene",
        b"",  # blank line: row 2
        b"C1CC broken-ring",  # row 3
        b"CC(=O)[O-].[Na+] salt",
        b"[Na+] sodium",
        b"N(C)(C)(C)(C)C pentavalent",  # row 6
        b"C\xff\xfeC latin1",  # row 7: not UTF-8
        b"C" * 500 + b" long-chain",
        b"CCN dup",
        b"OCCO dup",
        b"C1CC1 cyclopropane",
    ]
    path = tmp_path / "library.smi"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


# no descriptors here: RDKit's Ipc alone takes ~30 s on the 500-atom chain
OPTIONS = FeaturizeOptions(fingerprints=("morgan:radius=2,size=256", "maccs"))


def read_features(out):
    return pd.concat(
        [pd.read_parquet(p) for p in sorted((out / "features").glob("*.parquet"))],
        ignore_index=True,
    )


def test_bad_records_are_reported_and_the_rest_featurized(smi, tmp_path):
    out = tmp_path / "out"
    manifest = featurize_library(smi, out, OPTIONS, shard_size=5, progress=False)
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == [2, 3, 6, 7]
    reasons = dict(zip(rejected["row"], rejected["reason"]))
    assert "empty" in reasons[2]
    assert "SMILES parse error" in reasons[3]
    assert "valence" in reasons[6]
    assert "UTF-8" in reasons[7]
    assert manifest["counts"] == {
        "read": 12,
        "featurized": 8,
        "rejected": 4,
        "rejected_by_reason": {"SMILES syntax": 1, "empty record": 1, "not UTF-8": 1, "valence": 1},
        "shards": 3,
    }
    features = read_features(out)
    assert features["row"].tolist() == [0, 1, 4, 5, 8, 9, 10, 11]
    assert features["id"].tolist()[-3:] == ["dup", "dup", "cyclopropane"]
    assert features["smiles"].tolist() == [Chem.CanonSmiles(s) for s in GOOD]
    # fingerprints are RDKit's own bits
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=256)
    for smiles, bits in zip(GOOD, features["morgan_r2_256"]):
        expected = generator.GetFingerprintAsNumPy(Chem.MolFromSmiles(smiles))
        assert np.array_equal(np.asarray(bits, dtype=np.uint8), expected)
    # graphs: one per featurized record, rows kept, the 500-atom chain included
    graphs, rows = [], []
    for path in sorted((out / "graphs").glob("*.bin")):
        shard_graphs, shard_rows = load_shard(path)
        graphs += shard_graphs
        rows += shard_rows.tolist()
    assert rows == features["row"].tolist()
    assert [g.num_nodes() for g in graphs] == [3, 6, 5, 1, 500, 3, 4, 3]
    assert graphs[4].num_edges() == 2 * 499


def test_descriptors_are_named_columns(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("CCO\n[Na+]\n")
    out = tmp_path / "out"
    featurize_library(path, out, FeaturizeOptions(descriptors="rdkit2d"), progress=False)
    features = read_features(out)
    assert features["MolWt"].tolist() == pytest.approx([46.069, 22.99], abs=1e-3)
    assert features["TPSA"].iloc[0] == pytest.approx(20.23)
    assert np.isnan(features["BCUT2D_MWHI"].iloc[1])  # undefined for a single atom


def test_output_identical_for_one_and_two_workers(smi, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    featurize_library(smi, one, OPTIONS, shard_size=4, workers=1, progress=False)
    featurize_library(smi, two, OPTIONS, shard_size=4, workers=2, progress=False)
    assert_same_run(one, two)


def assert_same_run(a, b):
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    for name in names:
        if name.startswith("graphs/"):  # dgl.save_graphs embeds memory addresses: compare tensors
            (ga, ra), (gb, rb) = load_shard(a / name), load_shard(b / name)
            assert torch.equal(ra, rb)
            for x, y in zip(ga, gb):
                assert [t.tolist() for t in x.edges()] == [t.tolist() for t in y.edges()]
                assert torch.equal(x.ndata["x"], y.ndata["x"])
                assert torch.equal(x.edata["e"], y.edata["e"])
        else:
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_resume_after_a_crash_equals_an_uninterrupted_run(smi, tmp_path, monkeypatch):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    featurize_library(smi, reference, OPTIONS, shard_size=3, progress=False)

    real = library.featurize_shard

    def crash_on_third(shard, records, options, output):
        if shard == 2:
            # half-written temporary file, as a kill -9 during a write would leave
            (crashed / "features" / ".shard-00002.parquet.tmp-1").write_bytes(b"partial")
            raise KeyboardInterrupt
        return real(shard, records, options, output)

    monkeypatch.setattr(library, "featurize_shard", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        featurize_library(smi, crashed, OPTIONS, shard_size=3, progress=False)
    assert json.loads((crashed / "manifest.json").read_text())["status"] == "running"
    monkeypatch.setattr(library, "featurize_shard", real)
    with pytest.raises(ValueError, match="--resume"):
        featurize_library(smi, crashed, OPTIONS, shard_size=3, progress=False)
    featurize_library(smi, crashed, OPTIONS, shard_size=3, resume=True, progress=False)
    (crashed / "features" / ".shard-00002.parquet.tmp-1").unlink()
    assert_same_run(reference, crashed)


def test_resume_refuses_other_options(smi, tmp_path):
    out = tmp_path / "out"
    featurize_library(smi, out, OPTIONS, shard_size=4, progress=False)
    other = FeaturizeOptions(fingerprints=("maccs",))
    with pytest.raises(ValueError, match="options differ"):
        featurize_library(smi, out, other, shard_size=4, resume=True, progress=False)


def test_tables_and_gzip(tmp_path):
    frame = pd.DataFrame({"compound": ["a", "b", "c"], "SMILES": ["CCO", "C1CC", "c1ccccc1"]})
    csv_gz = tmp_path / "lib.csv.gz"
    with gzip.open(csv_gz, "wt") as handle:
        frame.to_csv(handle, index=False)
    frame.to_parquet(tmp_path / "lib.parquet")
    frame.to_csv(tmp_path / "lib.tsv", sep="\t", index=False)
    outputs = []
    for name in ("lib.csv.gz", "lib.parquet", "lib.tsv"):
        out = tmp_path / name.replace(".", "_")
        options = FeaturizeOptions(id_column="compound")
        featurize_library(tmp_path / name, out, options, progress=False)
        outputs.append((read_features(out), pd.read_csv(out / "rejected.csv")))
    for features, rejected in outputs:
        assert features["id"].tolist() == ["a", "c"] and features["row"].tolist() == [0, 2]
        assert rejected["id"].tolist() == ["b"]


def test_sdf_records(tmp_path):
    ethanol = Chem.MolFromSmiles("CCO")  # 2D record: no coordinates at all
    ethanol.SetProp("_Name", "ethanol")
    block = Chem.MolToMolBlock(ethanol)
    corrupt = "broken\n  RDKit\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\nnonsense\nM  END\n"
    path = tmp_path / "lib.sdf"
    path.write_text(block + "$$$$\n" + corrupt + "$$$$\n" + block + "$$$$\n")
    out = tmp_path / "out"
    manifest = featurize_library(path, out, FeaturizeOptions(), progress=False)
    assert manifest["counts"]["featurized"] == 2
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == [1] and rejected["id"].tolist() == ["broken"]
    assert read_features(out)["smiles"].tolist() == ["CCO", "CCO"]


def test_conformers_give_positions_with_hydrogens(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("CCO\nC\n")
    out = tmp_path / "out"
    featurize_library(path, out, FeaturizeOptions(conformers=1), progress=False)
    graphs, _ = load_shard(out / "graphs" / "shard-00000.bin")
    assert [g.num_nodes() for g in graphs] == [9, 5]  # explicit hydrogens
    position = graphs[0].ndata["pos"]
    assert 1.45 < float((position[0] - position[1]).norm()) < 1.56  # C-C in Å
    # the feature table is computed on the molecule as read, with or without conformers
    plain = tmp_path / "plain"
    featurize_library(path, plain, FeaturizeOptions(fingerprints=("maccs",)), progress=False)
    with_3d = tmp_path / "with_3d"
    options = FeaturizeOptions(fingerprints=("maccs",), conformers=3)
    featurize_library(path, with_3d, options, progress=False)
    assert read_features(plain).equals(read_features(with_3d))


def test_a_bad_column_leaves_no_output_folder(tmp_path):
    path = tmp_path / "lib.csv"
    path.write_text("smiles\nCCO\n")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="no column 'SMILES'"):
        featurize_library(path, out, FeaturizeOptions(smiles_column="SMILES"), progress=False)
    assert not out.exists()
    featurize_library(path, out, FeaturizeOptions(), progress=False)


@pytest.mark.parametrize(
    "content,message", [(b"", "is empty"), (b"smiles,id\n", "holds no records")]
)
def test_empty_inputs_are_clear_errors(tmp_path, content, message, capsys):
    path = tmp_path / "lib.csv"
    path.write_bytes(content)
    status = main(["featurize", str(path), "--output", str(tmp_path / "out"), "--quiet"])
    assert status == 2
    assert message in capsys.readouterr().err


def test_cli_end_to_end(smi, tmp_path, capsys):
    out = tmp_path / "cli"
    status = main(["featurize", str(smi), "--output", str(out), "--fingerprint", "maccs",
                   "--shard-size", "5", "--quiet"])  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "featurized           8" in printed and "valence" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["options"]["fingerprints"] == ["maccs"]


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CC", "CCN(CC)CC", "OC(=O)CCC(=O)O"]
    path = tmp_path / "lib.smi"
    path.write_text("".join(f"{smiles[i % len(smiles)]} m{i}\n" for i in range(12_000)))
    command = [sys.executable, "-m", "chemgraph", "featurize", str(path), "--shard-size", "300",
               "--fingerprint", "morgan", "--quiet", "--output"]  # fmt: skip
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    subprocess.run([*command, str(reference)], check=True, capture_output=True)

    process = subprocess.Popen([*command, str(killed)], stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (killed / "parts" / "shard-00004.json").exists() and time.time() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (killed / "rejected.csv").exists()  # it really was interrupted
    subprocess.run([*command, str(killed), "--resume"], check=True, capture_output=True)
    for leftover in killed.rglob(".*.tmp-*"):
        leftover.unlink()  # a temporary file of the killed write; never read
    assert_same_run(reference, killed)


def test_dask_cluster_of_two_workers_equals_the_local_run(smi, tmp_path):
    distributed = pytest.importorskip("distributed")
    local, cluster_out = tmp_path / "local", tmp_path / "dask"
    featurize_library(smi, local, OPTIONS, shard_size=3, progress=False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        featurize_library(
            smi, cluster_out, OPTIONS, shard_size=3, dask_scheduler=cluster.scheduler_address,
            progress=False,
        )  # fmt: skip
    assert_same_run(local, cluster_out)
