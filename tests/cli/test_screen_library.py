"""`chemgraph featurize` then `chemgraph predict --top`, and `chemgraph train --ensemble`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from rdkit import Chem

from chemgraph.cli import main
from chemgraph.data.applicability import DEFAULT_SIMILARITY_THRESHOLD, TrainingFingerprints

CHECKPOINT = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
SMILES = [
    "CCO", "CCCCCCCCO", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN", "c1ccncc1",
    "C1CCCCC1", "CC(=O)Nc1ccccc1", "c1ccc2ccccc2c1", "ClCCl", "CC#N", "OCCO", "CS(C)=O",
    "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "O=C=O", "CCCCl", "BrCCBr", "NCCN",
]  # fmt: skip


def test_featurize_a_library_then_score_its_shards_with_top(tmp_path, capsys):
    library = tmp_path / "library.smi"
    lines = [f"{smiles} mol{index}" for index, smiles in enumerate(SMILES)]
    lines.insert(7, "C1CC broken")
    library.write_text("\n".join(lines) + "\n")
    folder = tmp_path / "lib"
    featurize = ["featurize", str(library), "--output", str(folder), "--shard-size", "6"]
    assert main([*featurize, "--quiet"]) == 0
    hits = tmp_path / "hits.parquet"
    argv = ["predict", "--checkpoint", str(CHECKPOINT), "--input", str(folder),
            "--output", str(hits), "--top", "5"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "predicted 20 of 21 records; 1 could not be predicted" in out
    assert "applicability domain unknown (the checkpoint holds no training fingerprints)" in out
    assert f"top 5 written to {tmp_path / 'hits.top5.parquet'}" in out
    result = pd.read_parquet(hits)
    assert result["row"].tolist() == list(range(21))
    assert result["id"][7] == "broken" and result["error"][7].startswith("SMILES parse error")
    top = pd.read_parquet(tmp_path / "hits.top5.parquet")
    expected = result[result["error"].isna()].sort_values("logp_pred", ascending=False)[:5]
    assert top["row"].tolist() == expected["row"].tolist()
    np.testing.assert_array_equal(top["logp_pred"], expected["logp_pred"])
    # a second run into the same output is refused (exit status 2) and names the way out
    assert main(argv) == 2
    assert "exists; choose a new --output, or pass --overwrite" in capsys.readouterr().err
    # asking for more than were predicted writes them all and says so
    argv = ["predict", "--checkpoint", str(CHECKPOINT), "--input", str(folder),
            "--output", str(tmp_path / "all.parquet"), "--top", "50"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(only 20 molecules were predicted, so it holds them all)" in out
    assert len(pd.read_parquet(tmp_path / "all.top50.parquet")) == 20
    # --quiet: warnings and errors only, no summary
    assert main([*argv, "--overwrite", "--quiet"]) == 0
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith(NO_FINGERPRINTS) and printed.err.count("\n") == 2
    assert printed.err.splitlines()[1].startswith("warning: no training label range in")


def test_train_an_ensemble_and_predict_with_its_folder(tmp_path, capsys):
    data = tmp_path / "molecules.csv"
    pd.DataFrame({"smiles": SMILES, "logp": np.linspace(0, 2, len(SMILES))}).to_csv(
        data, index=False
    )
    settings = tmp_path / "small.yaml"
    settings.write_text(
        yaml.safe_dump(
            {"batch_size": 8, "model_options": {"hidden_dim": 8, "num_heads": 2, "num_seeds": 2}}
        )
    )
    out = tmp_path / "ensemble"
    argv = ["train", "--data", str(data), "--target-columns", "logp", "--max-epochs", "1",
            "--seed", "3", "--config", str(settings), "--out", str(out), "--ensemble", "2",
            "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("test split"))
    assert lines[header].split() == ["test", "split", "seed", "RMSE", "MAE", "R2"]
    assert [line.split()[:2] for line in lines[header + 1 : header + 4]] == [
        ["model-0", "3"], ["model-1", "4"], ["ensemble", "-"],
    ]  # fmt: skip
    for member, seed in ((0, 3), (1, 4)):
        assert yaml.safe_load((out / f"model-{member}" / "config.yaml").read_text())["seed"] == seed
        checkpoint = torch.load(out / f"model-{member}" / "best.ckpt", weights_only=True)
        stored = checkpoint["hyper_parameters"]["train_fingerprints"]
        assert stored["count"] == 16  # 80% of 20 molecules, all distinct
        training = TrainingFingerprints.from_dict(stored)
        assert len(training) == 16
    splits = [
        pd.read_csv(out / f"model-{member}" / "predictions.csv").sort_values("row")
        for member in (0, 1)
    ]  # one split (seed 3's) for both members, so their test metrics compare
    assert splits[0]["split"].tolist() == splits[1]["split"].tolist()
    assert (splits[0]["split"] == "test").sum() == 2
    # the ensemble's own results: the members' mean prediction, its spread, its metrics
    assert "ensemble (mean prediction of 2 models):" in printed
    mean = pd.read_csv(out / "predictions.csv").sort_values("row")
    members = np.stack([frame["logp_pred"].to_numpy() for frame in splits])
    np.testing.assert_allclose(mean["logp_pred"], members.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(
        mean["logp_std"], np.abs(members[0] - members[1]) / np.sqrt(2), rtol=1e-5
    )
    assert mean["split"].tolist() == splits[0]["split"].tolist()
    metrics = json.loads((out / "metrics.json").read_text())
    test = mean[mean["split"] == "test"]
    error = test["logp_pred"] - test["logp"]
    assert metrics["test"]["mae"] == pytest.approx(error.abs().mean(), rel=1e-5)
    assert metrics["test"]["rmse"] == pytest.approx(np.sqrt((error**2).mean()), rel=1e-5)
    assert metrics["ensemble_size"] == 2
    for member, scores in enumerate(metrics["members"]):
        alone = json.loads((out / f"model-{member}" / "metrics.json").read_text())
        assert scores["test"] == alone["test"]
        printed_rmse = float(lines[header + 1 + member].split()[2])
        assert printed_rmse == pytest.approx(alone["test"]["rmse"], abs=5e-5)
    assert float(lines[header + 3].split()[2]) == pytest.approx(metrics["test"]["rmse"], abs=5e-5)
    assert (out / "parity.png").is_file() and (out / "residuals.png").is_file()
    assert yaml.safe_load((out / "config.yaml").read_text())["seed"] == 3

    output = tmp_path / "predicted.csv"
    argv = ["predict", "--checkpoint", str(out), "--input", str(data), "--output", str(output)]
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = pd.read_csv(output)
    # the summary: the threshold calibrated on the training set, the predictions out of range
    threshold = training.similarity_threshold
    assert 0 < threshold < 1
    outside = int(result["logp_outside_training_range"].sum())
    assert (
        f"{int((~result['in_domain']).sum())} predicted outside the applicability domain "
        f"(max_similarity_to_train < {threshold:.3f})"
    ) in printed
    assert f"predictions outside the training labels' range: logp {outside}\n" in printed
    label_range = checkpoint["hyper_parameters"]["train_label_range"]  # the members' split's
    low, high = label_range["min"][0], label_range["max"][0]
    assert (
        result["logp_outside_training_range"].tolist()
        == ((result["logp_pred"] < low) | (result["logp_pred"] > high)).tolist()
    )
    assert result.columns.tolist() == [
        "row", "id", "input", "smiles", "logp_pred", "logp_std", "max_similarity_to_train",
        "in_domain", "logp_outside_training_range", "error",
    ]  # fmt: skip
    assert result["input"].tolist() == SMILES
    assert result["smiles"].tolist() == [Chem.CanonSmiles(s) for s in SMILES]
    assert (result["logp_std"] > 0).all()
    # with two different random splits, the union of their training sets covers every molecule
    # of the 20 but at most a few; each of those is a training molecule: similarity 1
    assert (result["max_similarity_to_train"] == 1.0).sum() >= 16
    assert result["in_domain"].sum() >= 16

    # a smaller ensemble written over it leaves no member of the larger one behind
    (out / "model-2").mkdir()
    (out / "model-2" / "best.ckpt").write_bytes(b"an earlier member")
    argv = ["train", "--config", str(out / "config.yaml"), "--ensemble", "2", "--overwrite",
            "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert sorted(p.name for p in out.glob("model-*")) == ["model-0", "model-1"]
    again = pd.read_csv(out / "predictions.csv").sort_values("row")
    np.testing.assert_allclose(again["logp_pred"], mean["logp_pred"], rtol=1e-5)


def test_help_states_the_default_similarity_threshold(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default: the threshold calibrated on the training set" in help_text
    assert f"{DEFAULT_SIMILARITY_THRESHOLD} for a checkpoint written before chemgraph" in help_text


NO_FINGERPRINTS = "warning: no training fingerprints in"


def _library(tmp_path: Path) -> Path:
    library = tmp_path / "library.csv"
    library.write_text("smiles\nCCO\nc1ccccc1\nC1CC\nCC(=O)O\n")
    return library


def _predict(library: Path, output: Path, *more: str) -> list[str]:
    return ["predict", "--checkpoint", str(CHECKPOINT), "--input", str(library),
            "--output", str(output), *more]  # fmt: skip


def test_predict_reports_user_errors_before_the_fingerprint_warning(tmp_path, capsys):
    library = _library(tmp_path)
    output = tmp_path / "scores.csv"
    output.write_text("my earlier results\n")
    assert main(_predict(library, output)) == 2
    assert capsys.readouterr().err == (
        f"chemgraph predict: error: {output} exists; choose a new --output, or pass "
        "--overwrite to write over it\n"
    )  # the error alone: no warning about the checkpoint before it
    missing = tmp_path / "missing.csv"
    assert main(_predict(missing, tmp_path / "new.csv")) == 2
    assert capsys.readouterr().err == f"chemgraph predict: error: input {missing} does not exist\n"
    assert main(_predict(library, tmp_path / "new.csv", "--top", "2", "--top-target", "x")) == 2
    err = capsys.readouterr().err
    assert err.startswith("chemgraph predict: error: top target 'x' is not one of the targets")
    assert NO_FINGERPRINTS not in err
    # a run that goes ahead warns, once
    assert main(_predict(library, output, "--overwrite", "--quiet")) == 0
    err = capsys.readouterr().err
    assert err.count(NO_FINGERPRINTS) == 1 and err.startswith(NO_FINGERPRINTS)


def test_predict_refuses_an_existing_top_file_unless_overwrite(tmp_path, capsys):
    library = _library(tmp_path)
    output = tmp_path / "scores.csv"
    top = tmp_path / "scores.top2.csv"
    top.write_text("my earlier hits\n")
    assert main(_predict(library, output, "--top", "2", "--quiet")) == 2
    assert capsys.readouterr().err == (
        f"chemgraph predict: error: {top} exists (the --top 2 file of {output}); choose a new "
        "--output, or pass --overwrite to write over it\n"
    )
    assert top.read_text() == "my earlier hits\n"  # untouched, and nothing else written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["library.csv", "scores.top2.csv"]
    assert main(_predict(library, output, "--top", "2", "--overwrite", "--quiet")) == 0
    assert pd.read_csv(top)["row"].tolist() != []  # replaced by the new top 2
    assert len(pd.read_csv(top)) == 2


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_error_is_null_for_predicted_rows(tmp_path, suffix):
    output = tmp_path / f"scores{suffix}"
    assert main(_predict(_library(tmp_path), output, "--quiet")) == 0
    result = pd.read_parquet(output) if suffix == ".parquet" else pd.read_csv(output)
    assert result["error"].isna().tolist() == [True, True, False, True]
    assert result["error"][2].startswith("SMILES parse error")
    assert result.loc[result["error"].isna(), "logp_pred"].notna().all()
    if suffix == ".parquet":  # a null, not an empty string
        assert pq.read_table(output)["error"].to_pylist()[:2] == [None, None]
    else:  # an empty cell
        assert output.read_text().splitlines()[1].endswith(",")


@pytest.mark.parametrize("command", ["predict", "fingerprint"])
@pytest.mark.parametrize("stage", ["featurize", "score"])
def test_an_interrupted_library_run_says_how_to_resume_and_exits_128_plus_the_signal(
    command, stage, tmp_path, monkeypatch, capsys
):
    """The job's interrupt carries the resume hint (its work folder) and main prints it: the
    command catches nothing itself."""
    import signal

    from chemgraph._interrupts import Interrupted
    from chemgraph.library import scoring

    def stopped(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    if stage == "featurize":  # the job's own featurization of a file
        monkeypatch.setattr(scoring, "featurize_library", stopped)
    else:
        monkeypatch.setattr(scoring.LibraryRun, "score", stopped)
    library = tmp_path / "lib.smi"
    library.write_text("CCO a\nc1ccccc1 b\n")
    output = tmp_path / "out.parquet"
    argv = [command, "--checkpoint", str(CHECKPOINT), "-i", str(library), "-o", str(output),
            "--quiet"]  # fmt: skip
    if stage == "score":
        folder = tmp_path / "lib"
        assert main(["featurize", "-i", str(library), "-o", str(folder), "--quiet"]) == 0
        argv[4] = str(folder)
    capsys.readouterr()
    assert main(argv) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.splitlines()[-1] == (  # after predict's warnings
        f"chemgraph {command}: stopped by SIGTERM; the finished shards are kept in "
        f"{output}.partial: run the same command with --resume to continue"
    )
    assert (tmp_path / "out.parquet.partial" / "run.json").exists()


def test_predict_says_nothing_was_predicted_rather_than_blame_the_fingerprints(tmp_path, capsys):
    library = tmp_path / "broken.csv"
    pd.DataFrame({"smiles": ["C1CC", "not a molecule"]}).to_csv(library, index=False)
    argv = ["predict", "--checkpoint", str(CHECKPOINT), "--input", str(library),
            "--output", str(tmp_path / "out.csv")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "predicted 0 of 2 records; 2 could not be predicted" in out
    assert "no applicability domain (no record was predicted)" in out
    assert "training fingerprints" not in out
