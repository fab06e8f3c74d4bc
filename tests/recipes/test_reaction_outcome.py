"""The reaction_outcome recipe: its profiles, a tiny run end to end, then ``chemgraph react``
with the checkpoint it wrote."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import yaml

from chemgraph.cli import main
from chemgraph.reactions.predictions import NO_PRODUCT
from chemgraph.recipes.reaction_outcome import ReactionOutcomeConfig, default_config, run
from chemgraph.recipes.registry import get_recipe, recipe_profiles, recipe_settings

LINES = (
    "[CH3:1][C:2](=[O:3])[Cl:4].[OH:5][CH2:6][CH3:7].c1ccncc1>>[CH3:1][C:2](=[O:3])[O:5][CH2:6]"
    "[CH3:7] 2-4;2-5",
    "[CH3:1][OH:2].[Na+:3]>>[CH3:1][O-:2].[Na+:3] 2-3",
)


def test_recipe_run_and_react_cli(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO, logger="chemgraph")
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
    # the accuracy table says how many test reactions it scored
    assert any(
        message.startswith("top-k accuracy on 2 test reactions of ") and "top-1" in message
        for message in caplog.messages
    )
    # validation inside an epoch logs the mean training loss since the last validation
    steps = [message for message in caplog.messages if message.startswith("step ")]
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
    status = main(["react", "CC(=O)Cl.OCC>c1ccncc1>", "--decoder", "generate", "--checkpoint",
                   checkpoint, "--top-k", "2", "--beam-width", "3"])  # fmt: skip
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line]
    if status == 2:  # a tiny model may decode no valid product: a one-line error
        assert not lines and "no product predicted" in captured.err
    else:
        assert status == 0 and lines and all(line.split("\t")[0].isdigit() for line in lines)

    inputs = tmp_path / "inputs.txt"
    inputs.write_text("CC(=O)Cl.OCC>c1ccncc1>\nnot a reaction\n\nCO.[Na+]>>\n")
    output = tmp_path / "predictions.csv"
    status = main(["react", "--input", str(inputs), "--decoder", "generate", "--checkpoint",
                   checkpoint, "--output", str(output), "--beam-width", "3",
                   "--top-k", "2"])  # fmt: skip
    table = pd.read_csv(output, keep_default_na=False)
    assert table["row"].tolist() == [0, 1, 3]
    assert table["reaction"].tolist() == ["CC(=O)Cl.OCC>c1ccncc1>", "not", "CO.[Na+]>>"]
    decoded = "" if table["prediction_1"][0] else NO_PRODUCT  # a tiny model may decode none
    assert table["error"].tolist()[0] == decoded and "separators" in table["error"].tolist()[1]
    valid = int((table["prediction_1"] != "").sum())
    assert status == (0 if valid else 2)  # 2: no reaction of the file got a prediction
    assert (
        f"3 lines read: {valid} decoded (a valid product predicted), {2 - valid} without a "
        "valid product, 1 not read or encoded;"
    ) in capsys.readouterr().out
    # neither a reaction nor --input
    assert main(["react", "--decoder", "generate", "--checkpoint", checkpoint]) == 2


def test_profiles_are_complete_and_valid():
    profiles = recipe_profiles("reaction_outcome")
    assert list(profiles) == ["config", "cpu"]
    assert recipe_settings("reaction_outcome", None) == default_config()
    gpu = recipe_settings("reaction_outcome", None)
    cpu = recipe_settings("reaction_outcome", {"profile": "cpu"})
    # cpu.yaml sets every key of config.yaml: given as a --config, it is the cpu profile itself
    assert recipe_settings("reaction_outcome", profiles["cpu"]) == cpu
    assert set(gpu) <= set(cpu) and set(gpu["model_options"]) <= set(cpu["model_options"])
    for values in (gpu, cpu):
        ReactionOutcomeConfig.from_dict(values)


def test_a_partial_config_merges_over_the_profile_it_names(tmp_path):
    partial = tmp_path / "partial.yaml"
    partial.write_text("profile: cpu\nmax_time_minutes: 5\nmodel_options: {hidden_dim: 64}\n")
    values = recipe_settings("reaction_outcome", partial)
    cpu = recipe_settings("reaction_outcome", {"profile": "cpu"})
    assert values["max_time_minutes"] == 5 and values["model_options"]["hidden_dim"] == 64
    assert values["accelerator"] == "cpu" and values["batch_size"] == cpu["batch_size"]
    assert values["model_options"]["encoder_layers"] == cpu["model_options"]["encoder_layers"]
    assert "profile" not in values
    without = recipe_settings("reaction_outcome", {"max_time_minutes": 5})
    assert without["batch_size"] == default_config()["batch_size"]  # over config.yaml
    with pytest.raises(ValueError, match="unknown profile 'tpu'; available: config, cpu"):
        run({"profile": "tpu"}, out=tmp_path / "run")
    with pytest.raises(ValueError, match=r"unknown keys \['epochs'\]"):
        run({"epochs": 3}, out=tmp_path / "run")
    with pytest.raises(ValueError, match="trains one model"):
        run(None, seeds=2)


TINY = {
    "train": "reactions.txt", "test": "reactions.txt", "max_test": 2, "valid": None,
    "max_valid": None, "valid_fraction": 0.25, "max_epochs": 10, "max_time_minutes": None,
    "model_options": {"hidden_dim": 16, "num_heads": 2, "encoder_layers": 1,
                      "decoder_layers": 1, "projection_dim": 8, "dropout": 0.0},
    "batch_size": 4, "max_steps": 2, "val_check_interval": 2, "warmup_steps": 2,
    "beam_width": 3, "top_k": 2, "eval_batch_size": 2, "accelerator": "cpu",
    "num_workers": 0, "progress": False,
}  # fmt: skip


@pytest.mark.parametrize(
    "change, message",
    [
        ({"train": "../missing/uspto.txt.gz"},
         "train: ../missing/uspto.txt.gz does not exist (relative to the current folder {cwd})"),
        ({"valid": str(Path("/").resolve())}, "valid: {root} is a folder, not a file"),
        ({"test": "no_products.txt"},
         "test: no_products.txt holds no reaction with products to score (2 records rejected, "
         "2 as 'the products field is empty'); give a file of reactions with their products, "
         "or set test: null to train without scoring"),
        ({"max_steps": None, "max_epochs": 1, "val_check_interval": 5},
         "max_epochs 1 × 2 batches per epoch (at most 6 training reactions of reactions.txt "
         "less the valid_fraction held out, batch_size 4) = 2 steps end training before its "
         "first validation at step 5 (val_check_interval), so no checkpoint would be written; "
         "raise max_epochs to at least 3 or lower val_check_interval to at most 2"),
        ({"max_steps": 1},
         "max_steps 1 ends training before its first validation at step 2 "
         "(val_check_interval), so no checkpoint would be written; raise max_steps to at least "
         "2 or lower val_check_interval to at most 1"),
        ({"train": "one.txt"}, "too few usable reactions in one.txt (1)"),
    ],
)  # fmt: skip
def test_bad_inputs_are_refused_before_out_is_written(tmp_path, monkeypatch, capsys, change,
                                                      message):  # fmt: skip
    """Exit status 2 with one line naming the setting; no training, and no file left in --out
    (new or empty before), so the corrected run needs no --overwrite."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reactions.txt").write_text("\n".join(LINES * 4) + "\n")
    (tmp_path / "one.txt").write_text(LINES[1] + "\n")
    (tmp_path / "no_products.txt").write_text("CC(=O)Cl.OCC>c1ccncc1>\nCO.[Na+]>>\n")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({**TINY, **change}))
    (tmp_path / "empty").mkdir()
    for out in ("new", "empty"):
        argv = ["recipe", "run", "reaction_outcome", "--config", "tiny.yaml", "--out", out]
        assert main(argv) == 2
        expected = message.format(cwd=tmp_path, root=Path("/").resolve())
        assert capsys.readouterr().err == f"chemgraph recipe: error: {expected}\n"
    assert not (tmp_path / "new").exists()
    assert list((tmp_path / "empty").iterdir()) == []


def test_without_a_test_file_nothing_is_scored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reactions.txt").write_text("\n".join(LINES * 4) + "\n")
    assert run({**TINY, "test": None}, out=tmp_path / "run") == {}
    assert sorted(path.name for path in (tmp_path / "run").iterdir()) == [
        "best.ckpt", "config.yaml", "rejected.csv"
    ]  # fmt: skip
