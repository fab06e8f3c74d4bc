"""`chemgraph featurize` then `chemgraph predict --top`, and `chemgraph train --ensemble`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
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
    assert "predicted 20 of 21 records; 1 could not be featurized" in out
    assert "applicability domain unknown (the checkpoint holds no training fingerprints)" in out
    assert f"top 5 written to {tmp_path / 'hits.top5.parquet'}" in out
    result = pd.read_parquet(hits)
    assert result["row"].tolist() == list(range(21))
    assert result["id"][7] == "broken" and result["error"][7].startswith("SMILES parse error")
    top = pd.read_parquet(tmp_path / "hits.top5.parquet")
    expected = result[result["error"] == ""].sort_values("logp_pred", ascending=False)[:5]
    assert top["row"].tolist() == expected["row"].tolist()
    np.testing.assert_array_equal(top["logp_pred"], expected["logp_pred"])
    # a second run into the same output is refused (exit status 2) and names the way out
    assert main(argv) == 2
    assert "exists; choose a new --output, or pass --overwrite" in capsys.readouterr().err


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
    assert "model-0 (seed 3):" in printed and "model-1 (seed 4):" in printed
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

    output = tmp_path / "predicted.csv"
    argv = ["predict", "--checkpoint", str(out), "--input", str(data), "--output", str(output),
            "--quiet"]  # fmt: skip
    assert main(argv) == 0
    result = pd.read_csv(output)
    assert result.columns.tolist() == [
        "row", "id", "smiles", "logp_pred", "logp_std", "max_similarity_to_train", "in_domain",
        "error",
    ]  # fmt: skip
    assert result["smiles"].tolist() == [Chem.CanonSmiles(s) for s in SMILES]
    assert (result["logp_std"] > 0).all()
    # with two different random splits, the union of their training sets covers every molecule
    # of the 20 but at most a few; each of those is a training molecule: similarity 1
    assert (result["max_similarity_to_train"] == 1.0).sum() >= 16
    assert result["in_domain"].sum() >= 16


def test_help_states_the_default_similarity_threshold(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"rarely reach (default: {DEFAULT_SIMILARITY_THRESHOLD})" in help_text
