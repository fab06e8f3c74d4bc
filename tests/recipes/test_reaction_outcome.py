"""chemgraph.recipes.reaction_outcome and ``chemgraph react``: metrics, outputs, CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from chemgraph.cli import main
from chemgraph.recipes.reaction_outcome import (
    ReactionPrediction,
    _to_prediction,
    run,
    top_k_metrics,
)
from chemgraph.recipes.registry import get_recipe

LINES = (
    "[CH3:1][C:2](=[O:3])[Cl:4].[OH:5][CH2:6][CH3:7].c1ccncc1>>[CH3:1][C:2](=[O:3])[O:5][CH2:6]"
    "[CH3:7] 2-4;2-5",
    "[CH3:1][OH:2].[Na+:3]>>[CH3:1][O-:2].[Na+:3] 2-3",
)


def test_top_k_metrics_hand_computed():
    predictions = [
        ReactionPrediction(["CCO", "CC"], [-0.1, -0.2], False, 0),  # hit at rank 1
        ReactionPrediction(["C", "[Na+].C[O-]"], [-0.1, -0.3], False, 1),  # rank 2, any order
        ReactionPrediction([], [], True, 8),  # nothing valid
        ReactionPrediction(["N", "O", "S", "CCO"], [-1, -2, -3, -4], False, 0),  # rank 4
    ]
    targets = ["CCO", "C[O-].[Na+]", "CCO", "CCO"]
    metrics = top_k_metrics(predictions, targets)
    assert metrics["top_1"] == 25.0 and metrics["top_2"] == 50.0 and metrics["top_3"] == 50.0
    assert metrics["top_5"] == 75.0
    assert metrics["invalid_top1"] == 25.0
    assert metrics["invalid_beam"] == pytest.approx(100 * 9 / 17)


class _Hypothesis:
    def __init__(self, labels, bonds, score):
        self.labels, self.bonds, self.score = labels, bonds, score


def test_predictions_are_deduplicated_and_invalid_graphs_counted():
    tokens = ["<PAD>", "<UNK>", "<CLS>", "<REACTANT>", "<REAGENT>", "<PRODUCT>", "<G>", "<EOG>",
              "[CH3]", "[OH]", "[CH2]", "[C]"]  # fmt: skip

    class Vocabulary:
        pass

    vocabulary = Vocabulary()
    vocabulary.tokens = tokens
    hypotheses = [
        _Hypothesis([11], [], -0.1),  # bare carbon without hydrogens: valid SMILES "[C]"
        _Hypothesis([8, 10, 9], [(0, 1, 1), (1, 2, 1)], -0.2),  # CCO
        _Hypothesis([9, 10, 8], [(0, 1, 1), (1, 2, 1)], -0.3),  # OCC = CCO again: dropped
        _Hypothesis([8, 8], [(0, 1, 2)], -0.4),  # CH3=CH3: invalid valence
        _Hypothesis([1], [], -0.5),  # <UNK>: not an atom label
    ]
    prediction = _to_prediction(hypotheses, vocabulary, top_k=5)
    assert prediction.smiles == ["[C]", "CCO"]
    assert prediction.scores == [-0.1, -0.2]
    assert prediction.num_invalid == 2 and not prediction.top1_invalid


def test_recipe_run_and_react_cli(tmp_path, capsys):
    data = tmp_path / "reactions.txt"
    data.write_text("\n".join(LINES * 4) + "\n")
    module = get_recipe("reaction_outcome")
    assert "GRAT" in module.DESCRIPTION
    config = {
        "train": str(data), "test": str(data), "max_test": 2, "valid": None, "max_valid": None,
        "valid_fraction": 0.25, "max_epochs": 10,
        "model_options": {"hidden_dim": 16, "num_heads": 2, "encoder_layers": 1,
                          "decoder_layers": 1, "projection_dim": 8, "dropout": 0.0},
        "batch_size": 4, "max_steps": 4, "val_check_interval": 2, "warmup_steps": 2,
        "beam_width": 3, "top_k": 2, "eval_batch_size": 2, "accelerator": "cpu",
        "num_workers": 0, "progress": True,
    }  # fmt: skip
    metrics = run(config, out=tmp_path / "run")
    # validation inside an epoch prints the mean training loss since the last validation
    steps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert len(steps) == 2
    for line in steps:
        assert float(line.split("train_loss ")[1].split()[0]) > 0
    written = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert written["reactions"] == 2 and set(written) >= {"top_1", "top_5", "invalid_top1"}
    assert written == metrics
    predictions = pd.read_csv(tmp_path / "run" / "predictions.csv")
    assert predictions["target"].tolist() == ["CCOC(C)=O", "C[O-].[Na+]"]
    checkpoint = str(tmp_path / "run" / "best.ckpt")

    capsys.readouterr()
    assert main(["react", "CC(=O)Cl.OCC>c1ccncc1>", "--checkpoint", checkpoint,
                 "--top-k", "2", "--beam-width", "3"]) == 0  # fmt: skip
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    assert lines and all(line.split("\t")[0].isdigit() or "no valid" in line for line in lines)

    inputs = tmp_path / "inputs.txt"
    inputs.write_text("CC(=O)Cl.OCC>c1ccncc1>\nnot a reaction\n\nCO.[Na+]>>\n")
    output = tmp_path / "predictions.csv"
    assert main(["react", "--input", str(inputs), "--checkpoint", checkpoint, "--output",
                 str(output), "--beam-width", "3", "--top-k", "2"]) == 0  # fmt: skip
    table = pd.read_csv(output, keep_default_na=False)
    assert table["row"].tolist() == [0, 1, 3]
    assert table["reaction"].tolist() == ["CC(=O)Cl.OCC>c1ccncc1>", "not", "CO.[Na+]>>"]
    assert table["error"].tolist()[0] == "" and "separators" in table["error"].tolist()[1]
    assert "predicted 2 of 3 reactions" in capsys.readouterr().out
    assert main(["react", "--checkpoint", checkpoint]) == 2  # neither a reaction nor --input


def test_react_user_errors_are_one_line(tmp_path, capsys):
    not_a_checkpoint = tmp_path / "table.csv"
    not_a_checkpoint.write_text("smiles\nCCO\n")
    reaction = "CC(=O)Cl.OCC>c1ccncc1>"
    assert main(["react", reaction, "--checkpoint", str(not_a_checkpoint)]) == 2
    assert "not a readable PyTorch checkpoint" in capsys.readouterr().err
    assert main(["react", reaction, "--checkpoint", str(tmp_path / "missing.ckpt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    for option in ("--top-k", "--beam-width", "--batch-size"):
        assert main(["react", reaction, "--checkpoint", "x.ckpt", option, "0"]) == 2
        assert f"{option} must be at least 1, got 0" in capsys.readouterr().err
