"""The qm9_gap recipe (`make demo-gap`): registered and listed, a tiny run end to end."""

from __future__ import annotations

import json

from chemgraph.cli import main
from chemgraph.recipes.registry import RECIPES, get_recipe, recipe_profiles

TINY = {"max_epochs": 1, "batch_size": 16, "model_options": {"hidden_dim": 16, "num_seeds": 4}}


def test_listed_with_its_description(capsys):
    assert RECIPES["qm9_gap"].module == "chemgraph.recipes.qm9_gap_demo"
    assert list(recipe_profiles("qm9_gap")) == ["config"]
    assert main(["recipe", "list"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"qm9_gap {get_recipe('qm9_gap').DESCRIPTION}" in out


def test_tiny_run_trains_on_qm9pack_gaps(tmp_path):
    metrics = get_recipe("qm9_gap").run(TINY, out=tmp_path, molecules=60)
    assert (
        (tmp_path / "qm9_gap.csv")
        .read_text()
        .startswith("qm9_index,smiles,homo_ev,lumo_ev,gap_ev\n")
    )
    assert json.loads((tmp_path / "metrics.json").read_text())["test"] == metrics["test"]
    assert metrics["epochs_trained"] == 1 and set(metrics["test"]) == {"rmse", "mae", "r2"}


def test_seeds_other_than_one_are_refused(tmp_path, capsys):
    assert main(["recipe", "run", "qm9_gap", "--seeds", "3", "--out", str(tmp_path)]) == 2
    assert "qm9_gap trains one model (the config's seed); got 3 seeds" in capsys.readouterr().err
