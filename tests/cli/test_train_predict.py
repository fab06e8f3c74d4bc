"""`chemgraph train` and `chemgraph predict` end to end on a small fixture."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from rdkit import Chem

from chemgraph.cli import main
from chemgraph.jobs.train import OUTPUT_FILES

VALID = [
    "CCO",
    "CCCO",
    "CCCCO",
    "CC(C)O",
    "c1ccccc1",
    "Cc1ccccc1",
    "Oc1ccccc1",
    "CC(=O)O",
    "CCN",
    "CCCN",
    "c1ccncc1",
    "C1CCCCC1",
    "C1CCOC1",
    "CC(=O)C",
    "CCOCC",
    "ClCCl",
    "CC(=O)[O-].[Na+]",
    "[Na+].[Cl-]",
    "C",
    "O",
    "N",
    "CCCl",
    "BrCCBr",
    "c1ccc2ccccc2c1",
    "CC#N",
    "C=CC=C",
    "OCCO",
    "NCCN",
    "CS(C)=O",
    "CCS",
]
INVALID = {5: "C1CC", 17: "N(C)(C)(C)(C)C"}  # unclosed ring; pentavalent nitrogen


@pytest.fixture()
def table(tmp_path):
    smiles = list(VALID)
    for row, bad in sorted(INVALID.items()):
        smiles.insert(row, bad)
    frame = pd.DataFrame(
        {
            "smiles": smiles,
            "logp": [0.1 * i for i in range(len(smiles))],
            "active": [i % 2 for i in range(len(smiles))],
        }
    )
    path = tmp_path / "molecules.csv"
    frame.to_csv(path, index=False)
    settings = tmp_path / "small.yaml"
    settings.write_text(
        yaml.safe_dump(
            {"batch_size": 8, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}
        )
    )
    return path, settings


@pytest.mark.parametrize(
    "task,target,metric_names,model",
    [
        ("regression", "logp", {"rmse", "mae", "r2"}, "esa"),
        (
            "classification",
            "active",
            {"roc_auc", "pr_auc", "mcc", "balanced_accuracy", "accuracy"},
            "nsa",
        ),
    ],
)
def test_train_then_predict(tmp_path, table, task, target, metric_names, model):
    data, settings = table
    out = tmp_path / "run"
    status = main(
        [
            "train",
            "--data",
            str(data),
            "--smiles-column",
            "smiles",
            "--target-columns",
            target,
            "--task",
            task,
            "--model",
            model,
            "--split",
            "random",
            "--seed",
            "1",
            "--max-epochs",
            "2",
            "--out",
            str(out),
            "--config",
            str(settings),
            "--quiet",
        ]
    )
    assert status == 0
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["row"].tolist() == sorted(INVALID)
    assert rejected["input"].tolist() == [INVALID[r] for r in sorted(INVALID)]
    assert rejected["reason"].str.len().min() > 0
    assert "valence" in rejected["reason"].iloc[1].lower()

    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["test"]) == metric_names and set(metrics["val"]) == metric_names
    predictions = pd.read_csv(out / "predictions.csv")
    assert set(predictions["split"]) == {"val", "test"}
    assert len(predictions) == 6  # 10% + 10% of 30 valid molecules
    # the mean predictor: the training molecules' mean label for every molecule (the valid
    # rows of the table that are neither validation nor test rows trained)
    labels = pd.read_csv(data).drop(index=list(INVALID))
    train_mean = labels.drop(index=predictions["row"])[target].mean()
    test = predictions[predictions["split"] == "test"][target]
    if task == "regression":
        rmse = float(np.sqrt(np.mean((test - train_mean) ** 2)))
        assert metrics["mean_predictor"]["test"]["rmse"] == pytest.approx(rmse, rel=1e-5)
    else:  # one probability for every molecule: no ranking
        assert metrics["mean_predictor"]["test"]["roc_auc"] in (0.5, None)
    for name in ["best.ckpt", "learning_curve.png", "config.yaml"]:
        assert (out / name).stat().st_size > 0
    assert (out / "parity.png").exists() == (task == "regression")

    checkpoint = torch.load(out / "best.ckpt", weights_only=True)
    assert checkpoint["hyper_parameters"]["featurizer"]["name"] == "canonical"

    output = tmp_path / "predictions.csv"
    status = main(
        [
            "predict",
            "--checkpoint",
            str(out / "best.ckpt"),
            "--input",
            str(data),
            "--output",
            str(output),
            "--quiet",
        ]
    )
    assert status == 0
    result = pd.read_csv(output)
    source = pd.read_csv(data)
    assert result["row"].tolist() == list(range(len(source)))
    canonical = [
        "" if row in INVALID else Chem.CanonSmiles(s) for row, s in enumerate(source["smiles"])
    ]
    assert result["smiles"].fillna("").tolist() == canonical
    failed = result["error"].notna()
    assert failed[failed].index.tolist() == sorted(INVALID)
    predicted = result[f"{target}_pred"]
    assert predicted[~failed].notna().all() and predicted[failed].isna().all()
    if task == "classification":
        assert predicted[~failed].between(0, 1).all()
    # the prediction of a valid row equals the one made at training time
    held_out = predictions.iloc[0]
    assert predicted[int(held_out["row"])] == pytest.approx(held_out[f"{target}_pred"], abs=1e-5)


def test_missing_column_is_a_clear_error(tmp_path, table, capsys):
    data, _ = table
    status = main(
        [
            "train",
            "--data",
            str(data),
            "--target-columns",
            "solubility",
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    assert status == 2
    error = capsys.readouterr().err
    assert "solubility" in error and "logp" in error


def test_python_dash_m_is_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "chemgraph", "train", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and "--target-columns" in result.stdout


def _train_args(data, settings, out, *extra):
    return ["train", "--data", str(data), "--target-columns", "logp", "--max-epochs", "1",
            "--config", str(settings), "--out", str(out), "--quiet", *extra]  # fmt: skip


def test_train_refuses_a_non_empty_out_unless_overwrite(tmp_path, table, capsys):
    data, settings = table
    out = tmp_path / "run"
    assert main(_train_args(data, settings, out)) == 0
    metrics = (out / "metrics.json").read_text()
    capsys.readouterr()
    assert main(_train_args(data, settings, out)) == 2
    assert f"{out} exists and is not empty; choose a new --output, or pass --overwrite" in (
        capsys.readouterr().err
    )
    # re-running the written config.yaml (its out is this folder) is refused the same way
    rerun = ["train", "--config", str(out / "config.yaml"), "--quiet"]
    assert main(rerun) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "metrics.json").read_text() == metrics  # nothing was touched
    (out / "notes.txt").write_text("mine")
    assert main([*rerun, "--overwrite"]) == 0
    assert json.loads((out / "metrics.json").read_text())["test"].keys() == {"rmse", "mae", "r2"}
    assert (out / "notes.txt").read_text() == "mine"  # files train does not write are left


def test_binary_target_without_task_trains_a_classifier(tmp_path, table, capsys):
    data, settings = table
    out = tmp_path / "run"
    # without --quiet, which hides notes
    argv = ["train", "--data", str(data), "--target-columns", "active", "--max-epochs", "1",
            "--config", str(settings), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert (
        "note: target 'active' holds only 0 and 1, so this is a classification task "
        "(pass --task regression" in capsys.readouterr().out
    )
    assert json.loads((out / "metrics.json").read_text())["test"].keys() == {
        "roc_auc", "pr_auc", "mcc", "balanced_accuracy", "accuracy"
    }  # fmt: skip
    assert yaml.safe_load((out / "config.yaml").read_text())["task"] == "classification"
    assert not (out / "parity.png").exists()


def test_predict_writes_one_row_per_input_line_blank_lines_included(tmp_path, capsys):
    checkpoint = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    table = tmp_path / "new.csv"
    table.write_text("smiles,name\nCCO,ethanol\n\nCC O,spaced\nc1ccccc1,benzene\n")
    output = tmp_path / "predicted.csv"
    assert main(["predict", "--checkpoint", str(checkpoint), "--input", str(table),
                 "--output", str(output), "--id-column", "name"]) == 0  # fmt: skip
    result = pd.read_csv(output, keep_default_na=False)
    assert result["id"].tolist() == ["ethanol", "1", "spaced", "benzene"]
    errors = result["error"].tolist()
    assert errors[0] == "" and errors[3] == ""
    assert errors[1] == "blank record"
    assert errors[2].startswith("SMILES holds whitespace")
    assert "predicted 2 of 4 records" in capsys.readouterr().out


def test_predict_keeps_every_records_input_and_rejects_dummy_atoms(tmp_path, capsys):
    """A bad record keeps its row and its input as written, with the reason in error; a
    dummy atom ``*`` (an attachment point) is such a record, not a molecule to predict."""
    checkpoint = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    library = Path(__file__).parents[1] / "fixtures" / "predict" / "bad_records.csv"
    output = tmp_path / "predicted.csv"
    assert main(["predict", "--checkpoint", str(checkpoint), "--input", str(library),
                 "--output", str(output), "--id-column", "name"]) == 0  # fmt: skip
    assert "predicted 2 of 5 records; 3 could not be predicted" in capsys.readouterr().out
    result = pd.read_csv(output, keep_default_na=False)
    assert result.columns.tolist()[:4] == ["row", "id", "input", "smiles"]
    assert result["input"].tolist() == pd.read_csv(library)["smiles"].tolist()
    assert result["input"].tolist() == ["CCO", "C1CC", "*C", "N(C)(C)(C)(C)C", "OCC"]
    assert result["smiles"].tolist() == ["CCO", "", "", "", "CCO"]  # canonical
    errors = result["error"].tolist()
    assert errors[0] == errors[4] == ""
    assert errors[1] == "SMILES parse error: unclosed ring for input: 'C1CC'"
    assert errors[2] == (
        "dummy atom '*' (attachment point) at atom 0; not a complete molecule: replace it with "
        "the atom or group it stands for"
    )
    assert errors[3].startswith("Explicit valence for atom # 0 N, 5")
    assert float(result["logp_pred"][0]) == pytest.approx(float(result["logp_pred"][4]), abs=1e-5)
    assert result["logp_pred"][1:4].tolist() == ["", "", ""]


def test_predict_quiet_prints_only_warnings():
    """--quiet: no summary on stdout; the warnings that the checkpoint holds no training
    fingerprints and no training label range still reach stderr."""
    checkpoint = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    library = Path(__file__).parents[1] / "fixtures" / "predict" / "bad_records.csv"
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "predicted.csv"
        result = subprocess.run(
            [sys.executable, "-m", "chemgraph", "predict", "--checkpoint", str(checkpoint),
             "--input", str(library), "--output", str(output), "--quiet"],
            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("warning: no training fingerprints in ")
        assert result.stderr.splitlines()[1].startswith("warning: no training label range in ")
        assert result.stderr.count("\n") == 2
        assert len(pd.read_csv(output)) == 5


def test_two_devices_write_what_one_device_writes(tmp_path, table):
    """``--devices 2``: DDP over two CPU processes (gloo), run as a command; the outputs, each
    written once, and the metrics of the whole validation and test splits, as with one."""
    data, _ = table
    settings = tmp_path / "ddp.yaml"
    settings.write_text(
        yaml.safe_dump(
            {"batch_size": 4, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}
        )
    )
    args = ["train", "--data", str(data), "--target-columns", "logp", "--max-epochs", "3",
            "--config", str(settings)]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "one"), "--quiet"]) == 0
    out = tmp_path / "two"
    result = subprocess.run(
        [sys.executable, "-m", "chemgraph", *args, "--out", str(out), "--devices", "2"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    classification_plots = {"roc_curve.png", "pr_curve.png", "confusion_matrix.png"}
    assert sorted(p.name for p in out.iterdir()) == sorted(set(OUTPUT_FILES) - classification_plots)
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())
    two = json.loads((out / "metrics.json").read_text())
    assert {k: sorted(v) if isinstance(v, dict) else v for k, v in two.items()} == {
        k: sorted(v) if isinstance(v, dict) else v for k, v in one.items()
    }  # the same keys, and epochs_trained 3 in both
    assert len(pd.read_csv(out / "predictions.csv")) == 6  # every validation and test molecule
    assert yaml.safe_load((out / "config.yaml").read_text())["devices"] == 2
    # 24 training molecules: 12 per process, 3 steps of 4; a line after steps 1 and 2
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("epoch ")] == [
        f"epoch {epoch:3d}{step}" for epoch in range(3) for step in (" step 1/3", " step 2/3", "")
    ]
    losses = [float(re.search(r"^epoch +\d+: train_loss (\S+)", line)[1])
              for line in lines if re.match(r"epoch +\d+: ", line)]  # fmt: skip
    assert losses[-1] < losses[0]
    assert sum(line.startswith("outputs written to") for line in lines) == 1


def test_predict_without_failures_and_a_bad_top(tmp_path, capsys):
    checkpoint = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
    table = tmp_path / "new.csv"
    table.write_text("smiles\nCCO\nc1ccccc1\n")
    output = tmp_path / "predicted.csv"
    argv = ["predict", "--checkpoint", str(checkpoint), "--input", str(table),
            "--output", str(output)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "predicted 2 of 2 records; 0 could not be predicted; " in out
    assert "error column" not in out  # no row has an error to see
    # the option as the user typed it, refused before anything is written
    assert main([*argv, "--overwrite", "--top", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "chemgraph predict: error: --top must be at least 1, got 0\n"
    for option, value, message in [
        ("--batch-size", "-5", "--batch-size must be at least 1, got -5"),
        ("--workers", "0", "--workers must be at least 1, got 0"),
        ("--shard-size", "0", "--shard-size must be at least 1, got 0"),
        ("--similarity-threshold", "5", "--similarity-threshold is a Tanimoto similarity in "
         "[0, 1], got 5.0"),
    ]:  # fmt: skip
        assert main([*argv, "--output", str(tmp_path / "x.csv"), option, value]) == 2
        assert capsys.readouterr().err == f"chemgraph predict: error: {message}\n"
    assert not (tmp_path / "x.csv.partial").exists()  # nothing in the way of the next run
    # a blank line is a record: the summary says that row counts it, and how pandas agrees
    table.write_text("smiles\nCCO\n\nc1ccccc1\n")
    assert main([*argv, "--overwrite"]) == 0
    assert (
        "predicted 2 of 3 records; 0 could not be predicted; 1 blank records, no molecule: each "
        "has its row (error 'blank record'), so that the row column follows the file's records "
        "(as pandas.read_csv(..., skip_blank_lines=False) numbers them);" in capsys.readouterr().out
    )
    assert pd.read_csv(output)["row"].tolist() == [0, 1, 2]
    assert pd.read_csv(table, skip_blank_lines=False)["smiles"].isna().tolist() == [
        False, True, False
    ]  # fmt: skip


def test_predict_prepares_molecules_as_training_did(tmp_path):
    """Train with --standardize basic --fragments largest: predict repeats that preparation
    from the checkpoint, so every held-out molecule gets the prediction training gave it, and
    a salt gets its parent's prediction."""
    smiles = [s for s in VALID if s not in ("[Na+].[Cl-]",)]
    salts = {"CC(=O)[O-].[Na+]": "CC(=O)O", "Cc1ccccc1.Cl": "Cc1ccccc1", "CCN.Cl": "CCN"}
    smiles += [s for s in salts if s not in smiles]
    data = tmp_path / "molecules.csv"
    pd.DataFrame({"smiles": smiles, "y": [0.1 * i for i in range(len(smiles))]}).to_csv(
        data, index=False
    )
    out = tmp_path / "run"
    settings = tmp_path / "small.yaml"
    settings.write_text(
        yaml.safe_dump(
            {"batch_size": 8, "model_options": {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}}
        )
    )
    status = main(
        ["train", "--data", str(data), "--target-columns", "y", "--standardize", "basic",
         "--fragments", "largest", "--max-epochs", "2", "--seed", "3", "--out", str(out),
         "--config", str(settings), "--quiet"]
    )  # fmt: skip
    assert status == 0
    hyper = torch.load(out / "best.ckpt", weights_only=True)["hyper_parameters"]
    assert (hyper["standardize"], hyper["fragments"]) == ("basic", "largest")
    query = tmp_path / "query.smi"
    query.write_text("".join(f"{s}\n" for s in smiles + list(salts.values())))
    output = tmp_path / "predicted.csv"
    assert main(["predict", "--checkpoint", str(out), "--input", str(query),
                 "--output", str(output), "--quiet"]) == 0  # fmt: skip
    predicted = pd.read_csv(output)
    assert predicted["error"].isna().all()
    held_out = pd.read_csv(out / "predictions.csv")
    for _, row in held_out.iterrows():
        assert predicted["y_pred"][int(row["row"])] == pytest.approx(row["y_pred"], abs=1e-5)
    by_smiles = dict(zip(predicted["smiles"], predicted["y_pred"]))
    for position, salt in enumerate(salts):  # the salt is featurized as its parent
        parent = predicted.iloc[len(smiles) + position]
        assert Chem.CanonSmiles(salts[salt]) == parent["smiles"]
        assert predicted.iloc[smiles.index(salt)]["smiles"] == parent["smiles"]
        assert by_smiles[parent["smiles"]] == pytest.approx(parent["y_pred"])
    # a featurize folder prepared otherwise is refused, with the command that fits
    folder = tmp_path / "lib"
    assert main(["featurize", str(query), "--output", str(folder), "--quiet"]) == 0
    with pytest.raises(ValueError, match="--standardize basic --fragments largest"):
        from chemgraph.jobs.predict import predict_table

        predict_table(out, folder, tmp_path / "refused.csv", progress=False)
    assert main(["featurize", str(query), "--output", str(tmp_path / "lib2"), "--standardize",
                 "basic", "--fragments", "largest", "--quiet"]) == 0  # fmt: skip
    from_folder = tmp_path / "from_folder.csv"
    assert main(["predict", "--checkpoint", str(out), "--input", str(tmp_path / "lib2"),
                 "--output", str(from_folder), "--quiet"]) == 0  # fmt: skip
    pd.testing.assert_series_equal(pd.read_csv(from_folder)["y_pred"], predicted["y_pred"])


def test_train_stopped_by_sigterm_resumes_with_resume_to_the_uninterrupted_model(tmp_path, table):
    """A scheduler's SIGTERM stops `chemgraph train` (exit 143, the message naming last.ckpt
    and --resume); the same command with --resume continues from last.ckpt and ends with the
    best.ckpt and metrics of the run that was never stopped (one torch thread). --resume with
    other settings, or on a folder without an interrupted run, is refused."""
    import signal
    import time

    data, settings = table
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}

    def command(out, *more):
        return [
            sys.executable, "-m", "chemgraph", "train", "-i", str(data), "--target-columns",
            "logp", "--model", "esa", "--seed", "1", "--max-epochs", "12", "-o", str(out),
            "--config", str(settings), "--quiet", *more,
        ]  # fmt: skip

    whole = tmp_path / "whole"
    subprocess.run(command(whole), check=True, env=environment, capture_output=True)
    stopped = tmp_path / "stopped"
    process = subprocess.Popen(command(stopped), env=environment, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (stopped / "last.ckpt").is_file() and process.poll() is None:
        assert time.monotonic() < deadline, "no last.ckpt within 5 minutes"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr
    assert "--resume to continue it" in stderr and str(stopped / "last.ckpt") in stderr
    epoch = torch.load(stopped / "last.ckpt", weights_only=True)["epoch"]
    assert epoch < 11 and not (stopped / "metrics.json").exists()
    refused = subprocess.run(
        command(stopped, "--resume", "--seed", "2"), env=environment, capture_output=True,
        text=True,
    )  # fmt: skip
    assert (
        refused.returncode == 2 and "settings differ" in refused.stderr and "seed" in refused.stderr
    )
    subprocess.run(command(stopped, "--resume"), check=True, env=environment, capture_output=True)
    best = [torch.load(folder / "best.ckpt", weights_only=True) for folder in (whole, stopped)]
    for name, tensor in best[0]["state_dict"].items():
        torch.testing.assert_close(best[1]["state_dict"][name], tensor, rtol=0, atol=0)
    metrics = [json.loads((folder / "metrics.json").read_text()) for folder in (whole, stopped)]
    assert metrics[1]["test"] == metrics[0]["test"]
    again = subprocess.run(
        command(stopped, "--resume"), env=environment, capture_output=True, text=True
    )
    assert again.returncode == 2 and "finished (metrics.json)" in again.stderr
