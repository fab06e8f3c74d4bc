"""chemgraph.jobs.featurize (``chemgraph featurize``): bad records reported, workers/resume
invariance, real values."""

import gzip
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator

from chemgraph.cli import main
from chemgraph.graph_keys import POSITIONS
from chemgraph.graphs import load_shard
from chemgraph.jobs.featurize import FeaturizeInterrupted, FeaturizeOptions, featurize_library
from chemgraph.library import runner
from chemgraph.library import workers as featurize_workers

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


def test_a_table_smiles_with_whitespace_is_rejected_not_cut(tmp_path):
    table = tmp_path / "spaced.csv"
    table.write_text('smiles,name\nCC O,spaced\nCCO,ethanol\n"CC\nN",broken\n')
    out = tmp_path / "out"
    featurize_library(table, out, OPTIONS, progress=False)
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == [0, 2]
    assert all(r.startswith("SMILES holds whitespace") for r in rejected["reason"])
    assert read_features(out)["smiles"].tolist() == ["CCO"]


def test_bad_records_are_reported_and_the_rest_featurized(smi, tmp_path):
    out = tmp_path / "out"
    manifest = featurize_library(smi, out, OPTIONS, shard_size=5, progress=False)
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == [3, 6, 7]  # not the blank line 2: counted as blank only
    reasons = dict(zip(rejected["row"], rejected["reason"]))
    assert "SMILES parse error" in reasons[3]
    assert "valence" in reasons[6]
    assert "UTF-8" in reasons[7]
    assert manifest["counts"] == {
        "read": 11,
        "blank": 1,
        "featurized": 8,
        "rejected": 3,
        "rejected_by_reason": {"SMILES syntax": 1, "not UTF-8": 1, "valence": 1},
        "shards": 3,
        "duplicate_ids": {"records": 1, "ids": 1, "examples": [{"id": "dup", "rows": [9, 10]}]},
    }
    features = read_features(out)
    assert features["row"].tolist() == [0, 1, 4, 5, 8, 9, 10, 11]
    assert features["id"].tolist()[-3:] == ["dup", "dup", "cyclopropane"]
    assert features["smiles"].tolist() == [Chem.CanonSmiles(s) for s in GOOD]
    assert features["input"].tolist() == GOOD  # the records as written
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
    """The same files with the same bytes (graph shards included)."""
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_sigterm_stops_the_workers_and_resume_equals_an_uninterrupted_run(
    smi, tmp_path, monkeypatch
):
    reference, stopped = tmp_path / "reference", tmp_path / "stopped"
    featurize_library(smi, reference, OPTIONS, shard_size=3, progress=False)

    real = runner.iter_record_chunks  # the reader of the shards

    def sigterm_before_the_third_shard(path, chunk_size, *args):
        for index, chunk in enumerate(real(path, chunk_size, *args)):
            if chunk_size == 3 and index == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` would
            yield chunk

    monkeypatch.setattr(runner, "iter_record_chunks", sigterm_before_the_third_shard)
    with pytest.raises(FeaturizeInterrupted) as info:
        featurize_library(smi, stopped, OPTIONS, shard_size=3, progress=False)
    assert (info.value.signum, info.value.output, info.value.shards_done) == (
        signal.SIGTERM,
        stopped,
        2,
    )  # one worker: shards 0 and 1 were complete when shard 2 was read
    assert "--resume" in str(info.value)
    assert multiprocessing.active_children() == []  # the worker was killed and reaped
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers restored
    assert json.loads((stopped / "manifest.json").read_text())["status"] == "interrupted"
    assert not (stopped / "rejected.csv").exists()
    monkeypatch.setattr(runner, "iter_record_chunks", real)
    # half-written temporary file, as a kill during a write would leave
    (stopped / "features" / ".shard-00002.parquet.tmp-1").write_bytes(b"partial")
    with pytest.raises(ValueError, match="--resume"):
        featurize_library(smi, stopped, OPTIONS, shard_size=3, progress=False)
    featurize_library(smi, stopped, OPTIONS, shard_size=3, resume=True, progress=False)
    assert_same_run(reference, stopped)  # the temporary file was removed by the resume


def test_resume_refuses_other_options(smi, tmp_path):
    out = tmp_path / "out"
    featurize_library(smi, out, OPTIONS, shard_size=4, progress=False)
    other = FeaturizeOptions(fingerprints=("maccs",))
    with pytest.raises(ValueError, match=r"differs from it in options.fingerprints \("):
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


# counts line announces 2 atoms and 1 bond; the atom block is one line of nonsense
CORRUPT_MOLBLOCK = "broken\n  RDKit\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\nnonsense\nM  END\n"


def test_sdf_records(tmp_path):
    ethanol = Chem.MolFromSmiles("CCO")  # 2D record: no coordinates at all
    ethanol.SetProp("_Name", "ethanol")
    block = Chem.MolToMolBlock(ethanol)
    path = tmp_path / "lib.sdf"
    path.write_text(block + "$$$$\n" + CORRUPT_MOLBLOCK + "$$$$\n" + block + "$$$$\n")
    out = tmp_path / "out"
    manifest = featurize_library(path, out, FeaturizeOptions(), progress=False)
    assert manifest["counts"]["featurized"] == 2
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == [1] and rejected["id"].tolist() == ["broken"]
    assert rejected["input"].tolist() == ["broken"]  # the title line
    assert rejected["reason"].tolist() == [
        "SDF parse error: Atom line too short: 'nonsense' on line 5"
    ]  # RDKit's own message
    assert manifest["counts"]["rejected_by_reason"] == {"unreadable SDF record": 1}
    assert read_features(out)["smiles"].tolist() == ["CCO", "CCO"]


def test_sdf_terminators_with_trailing_blank_tab_or_cr_lose_no_record(tmp_path):
    blocks = [Chem.MolToMolBlock(Chem.MolFromSmiles(s)) for s in ("CCO", "CCN", "CCC")]
    path = tmp_path / "lib.sdf"
    path.write_bytes(
        (blocks[0] + "$$$$ \n" + blocks[1] + "$$$$\t\n" + blocks[2] + "$$$$\r\n").encode()
    )
    manifest = featurize_library(path, tmp_path / "out", FeaturizeOptions(), progress=False)
    assert manifest["counts"]["read"] == 3 and manifest["counts"]["featurized"] == 3
    assert read_features(tmp_path / "out")["smiles"].tolist() == ["CCO", "CCN", "CCC"]


def test_conformers_give_positions_with_hydrogens(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("CCO\nC\n")
    out = tmp_path / "out"
    featurize_library(path, out, FeaturizeOptions(conformers=1), progress=False)
    graphs, _ = load_shard(out / "graphs" / "shard-00000.bin")
    assert [g.num_nodes() for g in graphs] == [9, 5]  # explicit hydrogens
    position = graphs[0].ndata[POSITIONS]
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
    assert "blank                1" in printed
    assert "duplicate ids 1 (1 records reuse an earlier record's id), e.g. 'dup' (rows 9, 10)" in (
        printed
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["options"]["fingerprints"] == ["maccs"]


def test_the_command_and_its_workers_import_neither_dgl_nor_pandas(smi, tmp_path):
    """The command and its workers' forkserver imported DGL and pandas through chemgraph.data,
    chemgraph.graphs and ``pa.array``, about a CPU second per process that featurizing does not
    use. The workers' code (``featurize_shard``) runs here in the command's process."""
    out = str(tmp_path / "out")
    code = (
        "import sys\n"
        "from chemgraph.cli import main\n"
        "from chemgraph.jobs.featurize import FeaturizeOptions\n"
        "from chemgraph.library.output import featurize_shard\n"
        "from chemgraph.data.readers import iter_record_chunks\n"
        f"argv = ['featurize', {str(smi)!r}, '--output', {out!r}, '--fingerprint', 'maccs']\n"
        "assert main([*argv, '--quiet']) == 0\n"
        f"(records,) = iter_record_chunks({str(smi)!r}, 100)\n"
        f"featurize_shard(1, records, FeaturizeOptions(fingerprints=('maccs',)), {out!r})\n"
        "print([name for name in ('dgl', 'pandas') if name in sys.modules], file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "[]"


def test_workers_do_not_import_a_chemgraph_folder_in_the_working_directory(smi, tmp_path):
    """Run from a folder holding another chemgraph checkout, the forkserver (``python -c``,
    current folder first on its path) preloaded that checkout's code into every worker."""
    other = tmp_path / "other_checkout"
    (other / "chemgraph" / "library").mkdir(parents=True)
    (other / "chemgraph" / "__init__.py").write_text("")
    marker = other / "imported"
    for module in ("__init__", "workers"):  # the forkserver preloads library.workers
        (other / "chemgraph" / "library" / f"{module}.py").write_text(
            f"open({str(marker)!r}, 'w').close()\n"
        )
    out = str(tmp_path / "out")
    code = (
        "import sys\n"
        "sys.path.pop(0)  # this process imports the installed chemgraph\n"
        "from chemgraph.cli import main\n"
        f"sys.exit(main(['featurize', {str(smi)!r}, '--output', {out!r}, '--quiet']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=other,
        env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    import psutil

    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CC", "CCN(CC)CC", "OC(=O)CCC(=O)O"]
    path = tmp_path / "lib.smi"
    path.write_text("".join(f"{smiles[i % len(smiles)]} m{i}\n" for i in range(6_000)))
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    options = FeaturizeOptions(fingerprints=("morgan",))
    featurize_library(path, reference, options, shard_size=300, progress=False)

    command = [sys.executable, "-m", "chemgraph", "featurize", str(path), "--shard-size", "300",
               "--fingerprint", "morgan", "--quiet", "--output", str(killed)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (killed / "parts" / "shard-00004.json").exists() and time.time() < deadline:
        time.sleep(0.05)
    children = psutil.Process(process.pid).children(recursive=True)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    _, alive = psutil.wait_procs(children, timeout=120)
    assert alive == []  # the worker dies with its parent (PR_SET_PDEATHSIG)
    assert not (killed / "rejected.csv").exists()  # it really was interrupted
    featurize_library(path, killed, options, shard_size=300, resume=True, progress=False)
    assert_same_run(reference, killed)  # temporary files of killed writes were removed


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


# --- every record accounted for, in every format ---------------------------------------------

TABLE = [("a", "CCO"), ("b", "C1CC"), ("", ""), ("d", "c1ccccc1"), ("a", "CCN")]  # row 2 blank


def write_library(path):
    """TABLE in the format of ``path``'s name; returns the rows that are blank."""
    name = path.name.removesuffix(".gz")
    opener = gzip.open if path.name.endswith(".gz") else open
    if name.endswith(".parquet"):
        ids, smiles = zip(*TABLE)
        pd.DataFrame({"id": ids, "smiles": smiles}).to_parquet(path)
        return []  # a parquet row is never blank: an empty SMILES
    if name.endswith(".smi"):
        text = "".join(f"{s} {i}\n" if s else "\n" for i, s in TABLE)
    elif name.endswith(".sdf"):

        def block(identifier, smiles):
            mol = Chem.MolFromSmiles(smiles)
            if mol is None:  # the invalid SMILES becomes an unreadable record
                return CORRUPT_MOLBLOCK.replace("broken", identifier)
            return identifier + Chem.MolToMolBlock(mol) if smiles else ""

        text = "".join(block(i, s) + "$$$$\n" for i, s in TABLE)
    else:
        separator = "\t" if name.endswith(".tsv") else ","
        text = f"id{separator}smiles\n" + "".join(
            f"{i}{separator}{s}\n" if s else "\n" for i, s in TABLE
        )
    with opener(path, "wt") as handle:
        handle.write(text)
    return [2]


@pytest.mark.parametrize(
    "name",
    ["lib.smi", "lib.smi.gz", "lib.csv", "lib.csv.gz", "lib.tsv", "lib.tsv.gz", "lib.parquet",
     "lib.sdf", "lib.sdf.gz"],
)  # fmt: skip
def test_every_format_accounts_for_every_record(tmp_path, name):
    path = tmp_path / name
    blank = write_library(path)
    id_column = "id" if "csv" in name or "tsv" in name or "parquet" in name else None
    options = FeaturizeOptions(fingerprints=("maccs",), id_column=id_column)
    manifest = featurize_library(path, tmp_path / "out", options, shard_size=2, progress=False)
    counts = manifest["counts"]
    assert counts["read"] + counts["blank"] == 5
    assert counts["read"] == counts["featurized"] + counts["rejected"]  # a blank one once
    assert counts["blank"] == len(blank) and counts["featurized"] == 3
    features = read_features(tmp_path / "out")
    rejected = pd.read_csv(tmp_path / "out" / "rejected.csv", keep_default_na=False)
    rows = features["row"].tolist() + rejected["row"].tolist()
    assert sorted(rows + blank) == [0, 1, 2, 3, 4]
    assert features["row"].tolist() == [0, 3, 4]
    assert features["smiles"].tolist() == ["CCO", "c1ccccc1", "CCN"]
    reasons = dict(zip(rejected["row"], rejected["reason"]))
    assert (2 in reasons) == (not blank)  # a blank record is not a reject
    if not blank:
        assert reasons[2] == "empty SMILES"
    assert reasons[1].startswith("SDF parse error" if "sdf" in name else "SMILES parse error")
    # id "a" is used by rows 0 and 4
    assert counts["duplicate_ids"] == {
        "records": 1, "ids": 1, "examples": [{"id": "a", "rows": [0, 4]}]
    }  # fmt: skip


def test_csv_blank_line_is_counted_once_as_blank_and_keeps_its_row(tmp_path):
    text = "smiles,name\nCCO,ethanol\n\nCCN,ethylamine\n"
    path = tmp_path / "lib.csv"
    path.write_text(text)
    manifest = featurize_library(path, tmp_path / "out", FeaturizeOptions(), progress=False)
    rejected = pd.read_csv(tmp_path / "out" / "rejected.csv", dtype=str, keep_default_na=False)
    assert rejected.empty  # blank, not also rejected
    counts = manifest["counts"]
    assert (counts["read"], counts["blank"], counts["featurized"], counts["rejected"]) == (
        2, 1, 2, 0
    )  # fmt: skip
    line = text.split("\n")[1 + 2 - 1]  # row r is on line r + 2 (1-based; header = line 1)
    assert line == ""
    assert read_features(tmp_path / "out")["row"].tolist() == [0, 2]  # row 1 is the blank one


# --- one pathological record must not stall the run ----------------------------------------


@pytest.fixture()
def chain_library(tmp_path):
    """26 rows; row 13 is a 3,000-carbon chain (RDKit's descriptors on it take hours)."""
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "OC(=O)CCC(=O)O"]
    lines = [f"{smiles[i % 5]} m{i}" for i in range(25)]
    lines.insert(13, "C" * 3000 + " chain3000")
    path = tmp_path / "lib26.smi"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_record_over_the_time_limit_is_rejected_and_the_run_goes_on(
    chain_library, tmp_path, capsys
):
    options = FeaturizeOptions(descriptors="rdkit2d")
    start = time.monotonic()
    manifest = featurize_library(
        chain_library, tmp_path / "out", options, record_timeout=2, progress=False
    )
    # the record alone takes hours; the bound is far above any machine load, far below that
    assert time.monotonic() - start < 600
    rejected = pd.read_csv(tmp_path / "out" / "rejected.csv")
    assert rejected[["row", "id", "reason"]].to_dict("records") == [
        {"row": 13, "id": "chain3000", "reason": "timeout: descriptors (over 2 s)"}
    ]
    assert manifest["counts"]["featurized"] == 25
    assert manifest["counts"]["rejected_by_reason"] == {"timeout": 1}
    features = read_features(tmp_path / "out")
    assert features["row"].tolist() == [r for r in range(26) if r != 13]
    assert np.isfinite(features["MolWt"]).all()
    err = capsys.readouterr().err
    where = "shard 0, row 13 (id 'chain3000')"
    assert f"{where}: descriptors still running after 1 s (limit 2 s)" in err
    assert f"{where}: rejected, timeout: descriptors (over 2 s)" in err


def test_a_worker_that_dies_on_a_record_rejects_only_that_record(
    chain_library, tmp_path, monkeypatch
):
    import psutil

    # the worker is killed once the parent has read, in its heartbeat, that it is computing the
    # chain's descriptors (which take hours): not after a guessed delay, so on a busy machine too
    on_the_chain = threading.Event()
    state = featurize_workers._Worker.state

    def watched(worker):
        position, step, seconds = state(worker)
        if position >= 0 and worker.task.records[position].row == 13 and step == "descriptors":
            on_the_chain.set()
        return position, step, seconds

    monkeypatch.setattr(featurize_workers._Worker, "state", watched)

    def kill_the_worker():  # as the kernel's out-of-memory killer would
        on_the_chain.wait(timeout=600)  # (a test that fails, rather than one that hangs)
        workers = [p for p in psutil.Process().children(recursive=True)
                   if p.ppid() != os.getpid()]  # fmt: skip  # forkserver children
        workers[0].kill()

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    options = FeaturizeOptions(descriptors="rdkit2d")
    manifest = featurize_library(
        chain_library, tmp_path / "out", options, record_timeout=None, progress=False
    )
    killer.join()
    rejected = pd.read_csv(tmp_path / "out" / "rejected.csv")
    assert rejected[["row", "reason"]].to_dict("records") == [
        {"row": 13, "reason": "crash: descriptors (the worker was killed by SIGKILL)"}
    ]
    assert manifest["counts"]["rejected_by_reason"] == {"worker crash": 1}
    assert manifest["counts"]["featurized"] == 25


# --- SIGTERM and Ctrl-C ----------------------------------------------------------------------

INTERRUPT_SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CC", "CCN(CC)CC", "OCC(=O)O"]
INTERRUPT_OPTIONS = FeaturizeOptions(fingerprints=("maccs",), conformers=1)


@pytest.fixture(scope="module")
def interrupt_run(tmp_path_factory):
    """A library that takes a few seconds (conformers), and its uninterrupted output."""
    folder = tmp_path_factory.mktemp("interrupt")
    path = folder / "lib.smi"
    n = len(INTERRUPT_SMILES)
    path.write_text("".join(f"{INTERRUPT_SMILES[i % n]} m{i}\n" for i in range(300)))
    reference = folder / "reference"
    featurize_library(path, reference, INTERRUPT_OPTIONS, workers=2, shard_size=25, progress=False)
    return path, reference


@pytest.mark.parametrize("how", ["SIGTERM to the parent", "Ctrl-C (SIGINT to the group)"])
def test_interrupt_stops_every_process_and_resume_completes_the_run(interrupt_run, tmp_path, how):
    import psutil

    path, reference = interrupt_run
    out = tmp_path / "out"
    command = [sys.executable, "-m", "chemgraph", "featurize", str(path), "--output", str(out),
               "--fingerprint", "maccs", "--conformers", "1", "--shard-size", "25",
               "--workers", "2", "--quiet"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (out / "parts" / "shard-00000.json").exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    children = psutil.Process(process.pid).children(recursive=True)
    assert len(children) >= 2  # the workers (and multiprocessing's helpers)
    if how.startswith("SIGTERM"):
        os.kill(process.pid, signal.SIGTERM)
    else:
        os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    # no bound on the time it takes (machine load varies); that it stopped before finishing
    # is the last shard missing, below
    stdout, stderr = process.communicate(timeout=120)
    _, alive = psutil.wait_procs(children, timeout=120)
    assert alive == []
    signum = signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGINT
    assert process.returncode == 128 + signum
    assert stdout == "" and "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    (line,) = lines
    assert line.startswith(f"chemgraph featurize: stopped by {signal.Signals(signum).name};")
    assert line.endswith("run the same command with --resume to continue")
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert not (out / "parts" / "shard-00011.json").exists()  # it really was interrupted
    featurize_library(
        path, out, INTERRUPT_OPTIONS, workers=2, shard_size=25, resume=True, progress=False
    )
    assert_same_run(reference, out)
