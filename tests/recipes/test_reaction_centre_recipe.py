"""Recipe reaction_centre: its profiles are complete and valid, and a tiny run writes its
outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chemgraph.errors import ConfigError
from chemgraph.reactions.reaction_centre import load_reaction_centre_model
from chemgraph.recipes import reaction_centre
from chemgraph.recipes.registry import recipe_profiles, recipe_settings

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "reactions" / "uspto_mit_tiny.txt"


@pytest.mark.parametrize("profile", ["config", "full"])
def test_profiles_are_complete(profile):
    values = recipe_settings("reaction_centre", {"profile": profile})
    config = reaction_centre.ReactionCentreRecipeConfig.from_dict(values)
    assert config.seed == 0 and config.top_k == 5
    assert set(recipe_profiles("reaction_centre")) == {"config", "full"}


def test_tiny_run_writes_metrics(tmp_path):
    # the last 3 training lines repeat 3 of the first 5 reactions: held out of both networks
    # by position, a tiny model still gets some of them right, so calibration can be fitted
    lines = TINY.read_text().splitlines()
    train = tmp_path / "train.txt"
    train.write_text("\n".join(lines + lines[:3]) + "\n")
    settings = {
        "train": str(train), "test": str(TINY), "max_test": None, "out": str(tmp_path / "run"),
        "scorer_epochs": 60, "ranker_epochs": 1, "progress": False, "learning_rate": 3e-3,
        "warmup_steps": 5, "batch_size": 4, "ranker_reactions": 5, "calibration_reactions": 3,
        "model_options": {"hidden_dim": 32, "num_heads": 4, "num_layers": 2, "pair_hidden": 32,
                          "ranker_hidden": 8, "ranker_heads": 2, "ranker_layers": 1},
    }  # fmt: skip
    metrics = reaction_centre.run(settings)
    written = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert written["reactions"] == 8 and written["invalid_outputs"] == 0
    assert set(written) >= {"top_1", "top_5", "top1_auroc", "top1_ece", "reactions_per_second"}
    model = load_reaction_centre_model(tmp_path / "run" / "model.pt")
    assert model.settings["ranker_reactions"] == 5
    assert model.settings["calibration"]["reactions"] == 3
    assert metrics["train_seconds"] > 0
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {
        "model.pt", "scorer.pt", "metrics.json", "predictions.csv", "config.yaml"
    }  # fmt: skip


def test_missing_data_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        reaction_centre.run({"train": str(tmp_path / "absent.txt"), "out": str(tmp_path / "o")})
    assert not (tmp_path / "o").exists()
