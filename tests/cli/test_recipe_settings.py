"""``chemgraph recipe run NAME --set key=value --max-time-minutes N``: command-line settings over
a partial --config over the profile it names, for every recipe; unknown keys refused with the
valid ones."""

from __future__ import annotations

import pytest

from chemgraph.cli import main
from chemgraph.errors import ConfigError
from chemgraph.recipes.reaction_outcome import ReactionOutcomeConfig
from chemgraph.recipes.registry import (
    RECIPES,
    check_setting_keys,
    get_recipe,
    recipe_profiles,
    recipe_settings,
    valid_setting_keys,
    with_overrides,
)
from chemgraph.train.config import parse_assignments, read_settings


def test_parse_assignments_reads_yaml_values_and_dotted_keys():
    assert parse_assignments(
        ["max_time_minutes=5", "learning_rate=1e-3", "weight_decay=1.0e-2", "progress=false",
         "valid=null", "max_test=", "train=../data/my reactions.csv.gz",
         "model_options.hidden_dim=64", "model_options.dropout=0.1", "strategies=[inductive]",
         "max_time_minutes=7"]
    ) == {
        "max_time_minutes": 7, "learning_rate": 0.001, "weight_decay": 0.01, "progress": False,
        "valid": None, "max_test": None, "train": "../data/my reactions.csv.gz",
        "model_options": {"hidden_dim": 64, "dropout": 0.1}, "strategies": ["inductive"],
    }  # fmt: skip
    for bad in ("max_epochs", "=3", "model_options.=3", "x=[1"):
        with pytest.raises(ConfigError, match="--set"):
            parse_assignments([bad])


@pytest.fixture
def received(monkeypatch):
    """Every recipe's run replaced by one that records its arguments."""
    calls = []
    for name in RECIPES:
        monkeypatch.setattr(
            get_recipe(name), "run", lambda config, seeds, out, name=name: calls.append(
                (name, config, seeds, out)
            )
        )  # fmt: skip
    return calls


def test_set_and_max_time_over_a_partial_cpu_config(tmp_path, received):
    partial = tmp_path / "mine.yaml"
    partial.write_text("profile: cpu\nbatch_size: 16\nmodel_options: {hidden_dim: 64}\n")
    argv = ["recipe", "run", "reaction_outcome", "--config", str(partial), "--max-time-minutes",
            "3", "--set", "model_options.num_heads=2", "--set", "max_test=50", "--set",
            "batch_size=8", "--out", str(tmp_path / "run")]  # fmt: skip
    assert main(argv) == 0
    ((name, config, seeds, out),) = received
    assert (name, seeds, out) == ("reaction_outcome", None, str(tmp_path / "run"))
    values = recipe_settings("reaction_outcome", config)
    cpu = read_settings(recipe_profiles("reaction_outcome")["cpu"])
    changed = {"batch_size": 8, "max_time_minutes": 3.0, "max_test": 50}
    assert {key: values[key] for key in changed} == changed  # --set wins over --config
    assert values["model_options"] == {**cpu["model_options"], "hidden_dim": 64, "num_heads": 2}
    # every other setting is cpu.yaml's, none reset by config.yaml
    assert {k: v for k, v in values.items() if k not in {*changed, "model_options"}} == {
        k: v for k, v in cpu.items() if k not in {*changed, "model_options"}
    }
    assert values["accelerator"] == "cpu" and values["max_steps"] is None
    assert values["valid"] is None and values["num_workers"] == 0
    assert values["train"] == "../shared/data/uspto/uspto_mit_valid.txt.gz"
    checked = ReactionOutcomeConfig.from_dict(values)
    assert (checked.max_time_minutes, checked.batch_size, checked.max_test) == (3.0, 8, 50)


def test_quiet_turns_off_the_progress_bars_of_recipes_that_have_them(tmp_path, received):
    out = str(tmp_path / "run")
    assert main(["recipe", "run", "reaction_centre", "--quiet", "--out", out]) == 0
    argv = ["recipe", "run", "reaction_centre", "--set", "progress=true", "--quiet", "--out", out]
    assert main(argv) == 0
    assert main(["recipe", "run", "reaction_centre", "--out", out]) == 0
    assert main(["recipe", "run", "dft_to_gw", "--quiet", "--out", out]) == 0  # no such setting
    progress = [recipe_settings(name, config).get("progress") for name, config, _, _ in received]
    assert progress == [False, False, None, None]  # None: the config's default (True)


def test_set_profile_without_a_config_file(received):
    argv = ["recipe", "run", "reaction_outcome", "--set", "profile=cpu", "--set", "seed=3"]
    assert main(argv) == 0
    ((_, config, _, out),) = received
    assert config == {"profile": "cpu", "seed": 3}
    assert out == "runs/reaction_outcome_cpu"  # the out of cpu.yaml
    values = recipe_settings("reaction_outcome", config)
    assert values == {**recipe_settings("reaction_outcome", {"profile": "cpu"}), "seed": 3}


def test_set_out_decides_the_output_folder(tmp_path, received):
    out = str(tmp_path / "from_set")
    assert main(["recipe", "run", "reaction_outcome", "--set", f"out={out}"]) == 0
    assert received[0][3] == out


def test_without_set_the_config_path_is_passed_through(tmp_path, received):
    partial = tmp_path / "mine.yaml"
    partial.write_text("profile: cpu\n")
    assert main(["recipe", "run", "reaction_outcome", "--config", str(partial)]) == 0
    assert received[0][1] == str(partial)


def test_set_works_for_every_recipe(tmp_path, received):
    runs = {
        "dft_to_gw": ["--set", "training.seeds=1", "--set", "data.source=embedded",
                      "--set", "training.finetune_max_minutes=2"],
        "qm9_gap": ["--set", "max_epochs=2", "--max-time-minutes", "1.5"],
        "reaction_outcome": ["--set", "profile=cpu", "--set", "top_k=3"],
        "reaction_centre": ["--set", "profile=full", "--set", "scorer_epochs=2"],
    }  # fmt: skip
    assert set(runs) == set(RECIPES)
    for name, flags in runs.items():
        assert main(["recipe", "run", name, *flags, "--out", str(tmp_path / name)]) == 0
    configs = {name: config for name, config, _, _ in received}
    gw = recipe_settings("dft_to_gw", configs["dft_to_gw"])
    assert gw["training"]["seeds"] == 1 and gw["training"]["finetune_max_minutes"] == 2
    assert gw["data"]["source"] == "embedded" and gw["training"]["pretrain_epochs"] == 150
    gap = recipe_settings("qm9_gap", configs["qm9_gap"])
    assert (gap["max_epochs"], gap["max_time_minutes"], gap["target_columns"]) == (
        2, 1.5, ["gap_ev"],
    )  # fmt: skip
    assert recipe_settings("reaction_outcome", configs["reaction_outcome"])["top_k"] == 3
    centre = recipe_settings("reaction_centre", configs["reaction_centre"])
    assert centre["scorer_epochs"] == 2 and centre["model_options"]["hidden_dim"] == 256


def test_unknown_keys_are_refused_with_the_valid_ones(tmp_path, capsys, received):
    out = ["--out", str(tmp_path / "run")]
    assert main(["recipe", "run", "reaction_outcome", "--set", "epochs=3", *out]) == 2
    valid = sorted({*ReactionOutcomeConfig.field_names(), "profile"})
    assert f"--set: unknown keys ['epochs']; valid keys: {valid}" in capsys.readouterr().err
    assert main(["recipe", "run", "dft_to_gw", "--set", "data.sourse=full", *out]) == 2
    assert (
        "--set: unknown keys ['data.sourse']; valid keys of data: "
        "['embedded', 'full', 'label_counts', 'source', 'split_seed']"
    ) in capsys.readouterr().err
    assert main(["recipe", "run", "dft_to_gw", "--set", "training.seedz=1", *out]) == 2
    assert "unknown keys ['training.seedz']; valid keys of training: [" in (capsys.readouterr().err)
    assert main(["recipe", "run", "dft_to_gw", "--max-time-minutes", "5", *out]) == 2
    assert (
        "--max-time-minutes: recipe dft_to_gw has no max_time_minutes setting; its wall-clock "
        "caps are per training phase: --set training.pretrain_max_minutes=N --set "
        "training.finetune_max_minutes=N"
    ) in capsys.readouterr().err
    assert main(["recipe", "run", "qm9_gap", "--set", "max_epochs", *out]) == 2
    assert "--set 'max_epochs': expected key=value" in capsys.readouterr().err
    assert received == []  # refused before the recipe ran


def test_keys_below_a_settings_field_are_left_to_its_class():
    assert valid_setting_keys("reaction_outcome", "model_options") is None
    assert valid_setting_keys("dft_to_gw", "training.featurizer") is None
    check_setting_keys("reaction_outcome", {"model_options": {"anything": 1}})
    check_setting_keys("dft_to_gw", {"profiles": {"embedded": {"batch_size": 8}}})
    with pytest.raises(ConfigError, match=r"unknown model_options \['anything'\]"):
        ReactionOutcomeConfig.from_dict(
            recipe_settings(
                "reaction_outcome",
                with_overrides("reaction_outcome", None, {"model_options": {"anything": 1}}),
            )
        )
    assert with_overrides("reaction_outcome", "x.yaml", {}) == "x.yaml"
