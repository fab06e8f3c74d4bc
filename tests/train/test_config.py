import pandas as pd
import pytest
import torch

from chemgraph.cli import main
from chemgraph.errors import ConfigError
from chemgraph.models import ESAConfig
from chemgraph.reactions.translator_training import ReactionTrainingConfig
from chemgraph.train.config import (
    TrainingConfig,
    merge_settings,
    over_profile,
    read_settings,
)
from chemgraph.transfer.config import TransferConfig

REQUIRED = {"data": "x.csv", "target_columns": "a, b", "out": "run"}


def test_yaml_numbers_written_as_text_are_coerced(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1e-4\nmax_epochs: '3'\nsplit_fractions: [0.8, 0.1, 0.1]\n")
    config = TrainingConfig.from_yaml(path, **REQUIRED)
    assert config.learning_rate == 1e-4 and isinstance(config.learning_rate, float)
    assert config.max_epochs == 3
    assert config.target_columns == ["a", "b"]
    assert TrainingConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    "setting,message",
    [
        ({"max_epochs": 0}, "max_epochs must be at least 1"),
        ({"max_epochs": 2.5}, "max_epochs must be an integer"),
        ({"seed": -1}, "seed must be at least 0"),
        ({"learning_rate": "fast"}, "learning_rate must be a number"),
        ({"task": "regresion"}, "task must be one of"),
        ({"split": "time"}, "split must be one of"),
        ({"split_fractions": [0.5, 0.1, 0.1]}, "summing to 1"),
        ({"featurizer": "ogb"}, "ESA takes one-hot \\(float\\) features"),
        ({"featurizer": "morgan"}, "morgan"),
        ({"model_options": {"bogus": 1}}, r"unknown model_options \['bogus'\]"),
        ({"model_options": {"layer_pattern": "SMM"}}, "layer_pattern"),
        ({"model_options": {"hidden_dim": 30, "num_heads": 4}}, "not divisible"),
        ({"model_options": {"num_seeds": 0}}, "num_seeds must be a positive integer"),
        ({"model_options": {"norm": "batch"}}, "norm must be one of"),
        ({"model_options": {"dropout": 1.5}}, r"dropout must be in \[0, 1\)"),
        ({"target_columns": ""}, "target_columns must name columns"),
    ],
)
def test_bad_settings_are_rejected_before_any_work(setting, message):
    with pytest.raises(ValueError, match=message):
        TrainingConfig.from_dict({**REQUIRED, **setting})


def test_esa_config_rejects_non_string_pattern():
    with pytest.raises(ValueError, match="layer_pattern must be a string"):
        ESAConfig(in_features=4, layer_pattern=None)


def write(tmp_path, smiles, **columns):
    path = tmp_path / "data.csv"
    pd.DataFrame({"smiles": smiles, **columns}).to_csv(path, index=False)
    return str(path)


ACYCLIC = ["C", "CC", "CCC", "CCCC", "CCO", "CCN", "CCCl", "OCCO", "NCCN", "CC(C)C", "CCOC", "CS"]
RINGS = ["c1ccccc1", "C1CCCCC1", "c1ccncc1", "C1CCOC1"]


def test_empty_split_is_a_clear_error(tmp_path, capsys):
    data = write(tmp_path, ACYCLIC, y=range(len(ACYCLIC)))
    status = main(["train", "--data", data, "--target-columns", "y", "--split", "scaffold",
                   "--out", str(tmp_path / "run"), "--quiet"])  # fmt: skip
    assert status == 2
    assert "train and val splits are empty (train 0, val 0, test 12" in capsys.readouterr().err


def test_classification_labels_must_be_binary(tmp_path, capsys):
    smiles = ACYCLIC + RINGS
    data = write(tmp_path, smiles, y=[i % 3 for i in range(len(smiles))])
    status = main(["train", "--data", data, "--target-columns", "y", "--task", "classification",
                   "--out", str(tmp_path / "run"), "--quiet"])  # fmt: skip
    assert status == 2
    assert "values other than 0 and 1 (2)" in capsys.readouterr().err


def test_predict_with_a_file_that_is_not_a_checkpoint(tmp_path, capsys):
    data = write(tmp_path, ["CCO"], y=[1.0])
    status = main(["predict", "--checkpoint", data, "--input", data,
                   "--output", str(tmp_path / "p.csv")])  # fmt: skip
    assert status == 2
    assert "not a readable PyTorch checkpoint" in capsys.readouterr().err


def test_predict_with_a_reaction_checkpoint_points_to_react(tmp_path, capsys):
    data = write(tmp_path, ["CCO"], y=[1.0])
    checkpoint = tmp_path / "reaction.ckpt"
    torch.save({"hyper_parameters": {"model_config": {}, "vocabulary": []}, "state_dict": {}},
               checkpoint)  # fmt: skip
    status = main(["predict", "--checkpoint", str(checkpoint), "--input", data,
                   "--output", str(tmp_path / "p.csv")])  # fmt: skip
    assert status == 2
    assert "use it with `chemgraph react`" in capsys.readouterr().err


def test_multi_task_with_a_target_absent_from_test(tmp_path):
    smiles = ACYCLIC + RINGS + ["CCCCC", "CCCCCC", "CCCCCCC", "c1ccccc1C"]
    sparse = [1.0, 2.0] + [None] * (len(smiles) - 2)
    data = write(tmp_path, smiles, a=[0.1 * i for i in range(len(smiles))], b=sparse)
    settings = tmp_path / "s.yaml"
    settings.write_text("batch_size: 8\nmodel_options: {hidden_dim: 16, num_heads: 2}\n")
    out = tmp_path / "run"
    status = main(["train", "--data", data, "--target-columns", "a,b", "--max-epochs", "1",
                   "--config", str(settings), "--out", str(out), "--quiet"])  # fmt: skip
    assert status == 0
    assert (out / "parity.png").stat().st_size > 0


def test_time_budget_setting():
    config = TrainingConfig.from_dict({**REQUIRED, "max_time_minutes": "6"})
    assert config.max_time_minutes == 6.0
    with pytest.raises(ValueError, match="max_time_minutes must be at least 0.1"):
        TrainingConfig.from_dict({**REQUIRED, "max_time_minutes": 0})


def test_train_with_sparse_attention_end_to_end(tmp_path):
    smiles = ACYCLIC + RINGS
    data = write(tmp_path, smiles, y=[0.1 * i for i in range(len(smiles))])
    settings = tmp_path / "s.yaml"
    settings.write_text(
        "batch_size: 8\nmodel_options: {hidden_dim: 16, num_heads: 2, attention: sparse}\n"
    )
    out = tmp_path / "run"
    status = main(["train", "--data", data, "--target-columns", "y", "--max-epochs", "1",
                   "--config", str(settings), "--out", str(out), "--quiet"])  # fmt: skip
    assert status == 0
    output = tmp_path / "p.csv"
    assert main(["predict", "--checkpoint", str(out / "best.ckpt"), "--input", data,
                 "--output", str(output), "--quiet"]) == 0  # fmt: skip
    assert pd.read_csv(output)["y_pred"].notna().all()


def test_dataset_name_takes_targets_and_task_from_its_card(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file called "bbbp" here
    config = TrainingConfig.from_dict({"data": "bbbp", "out": "run"})
    assert config.target_columns == ["p_np"] and config.task == "classification"
    config = TrainingConfig.from_dict({"data": "esol", "out": "run", "target_columns": "x"})
    assert config.target_columns == ["x"] and config.task == "regression"
    with pytest.raises(ValueError, match="missing required settings: target_columns"):
        TrainingConfig.from_dict({"data": "x.csv", "out": "run"})


def test_unknown_data_name_lists_the_datasets(tmp_path, capsys):
    argv = ["train", "--data", "esoll", "--target-columns", "y", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert "neither a file nor a registered dataset" in capsys.readouterr().err


def test_train_on_a_dataset_name_from_a_local_copy(tmp_path, monkeypatch, capsys):
    """``--data esol --root DIR`` reads DIR's delaney-processed.csv (offline), even when the
    working folder holds a folder called ``esol``."""
    monkeypatch.setenv("CHEMGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "esol").mkdir()
    root = tmp_path / "copy"
    root.mkdir()
    smiles = ["CCO", "CCCO", "CCCCO", "c1ccccc1", "Cc1ccccc1", "CC(=O)O", "CCN", "CCCN",
              "CCOCC", "ClCCl", "CC(C)O", "OCCO"]  # fmt: skip
    header = (
        "Compound ID,ESOL predicted log solubility in mols per litre,Minimum Degree,"
        "Molecular Weight,Number of H-Bond Donors,Number of Rings,Number of Rotatable Bonds,"
        "Polar Surface Area,measured log solubility in mols per litre,smiles"
    )
    rows = [f"m{i},0.1,1,50.0,1,0,0,20.0,{-0.5 * i:.2f},{s} " for i, s in enumerate(smiles)]
    (root / "delaney-processed.csv").write_text("\n".join([header, *rows]) + "\n")
    argv = ["train", "--data", "esol", "--root", str(root), "--max-epochs", "1",
            "--out", "run"]  # fmt: skip
    assert main(argv) == 0
    assert "featurized 12 of 12 rows" in capsys.readouterr().out  # logged, printed by the CLI
    predictions = pd.read_csv(tmp_path / "run" / "predictions.csv")
    assert "measured log solubility in mols per litre_pred" in predictions.columns


@pytest.mark.parametrize("config_class", [TrainingConfig, TransferConfig, ReactionTrainingConfig])
def test_every_run_config_coerces_numbers_and_names_bad_ones_alike(config_class):
    required = {
        TrainingConfig: REQUIRED,
        TransferConfig: {},
        ReactionTrainingConfig: {"train": "t.txt", "out": "run"},
    }[config_class]
    config = config_class.from_dict({**required, "batch_size": "16", "learning_rate": "1e-3"})
    assert config.batch_size == 16 and config.learning_rate == 1e-3
    with pytest.raises(ConfigError, match=r"^batch_size must be an integer, got 2\.5$"):
        config_class.from_dict({**required, "batch_size": 2.5})
    with pytest.raises(ConfigError, match=r"^batch_size must be at least 1, got 0$"):
        config_class.from_dict({**required, "batch_size": 0})
    with pytest.raises(ConfigError, match=r"^learning_rate must be a number, got 'fast'$"):
        config_class.from_dict({**required, "learning_rate": "fast"})
    with pytest.raises(ConfigError, match=r"^x\.yaml: unknown keys \['epochs'\]; valid keys: \["):
        config_class.from_dict({**required, "epochs": 3}, source="x.yaml")
    assert config_class.from_dict(config.to_dict()) == config


def test_missing_required_settings_are_named():
    with pytest.raises(ConfigError, match=r"^missing required settings: train, out$"):
        ReactionTrainingConfig.from_dict({})


def test_yaml_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="expected a mapping of settings, got list"):
        TrainingConfig.from_yaml(path)


def test_merge_settings_merges_mappings_and_replaces_the_rest():
    base = {"a": 1, "block": {"x": 1, "y": [1, 2]}, "z": {"k": 1}}
    override = {"block": {"y": [3]}, "z": None, "new": {"k": 2}}
    merged = merge_settings(base, override)
    assert merged == {"a": 1, "block": {"x": 1, "y": [3]}, "z": None, "new": {"k": 2}}
    assert base == {"a": 1, "block": {"x": 1, "y": [1, 2]}, "z": {"k": 1}}  # unchanged
    merged["new"]["k"] = 5
    assert override["new"]["k"] == 2  # no shared mutable values


def test_a_partial_config_merges_over_the_profile_it_names(tmp_path):
    gpu, cpu = tmp_path / "config.yaml", tmp_path / "cpu.yaml"
    gpu.write_text("accelerator: gpu\nbatch_size: 128\nmodel_options: {hidden_dim: 128}\n")
    cpu.write_text("accelerator: cpu\nbatch_size: 32\nmodel_options: {hidden_dim: 96}\n")
    profiles = {"config": gpu, "cpu": cpu}
    partial = tmp_path / "partial.yaml"
    partial.write_text("profile: cpu\nbatch_size: 8\n")
    assert over_profile(partial, profiles, "config") == {
        "accelerator": "cpu", "batch_size": 8, "model_options": {"hidden_dim": 96}
    }  # fmt: skip
    assert over_profile({"batch_size": 8}, profiles, "config")["accelerator"] == "gpu"
    assert over_profile(None, profiles, "config") == read_settings(gpu)
    with pytest.raises(ConfigError, match="unknown profile 'tpu'; available: config, cpu"):
        over_profile({"profile": "tpu"}, profiles, "config")


def test_family_training_options_fill_model_options_and_yield_to_the_user():
    base = {"data": "x.csv", "target_columns": ["y"], "out": "o"}
    assert TrainingConfig.from_dict(base).model_options == {"readout": "seeds+sum"}
    paper = TrainingConfig.from_dict({**base, "model_options": {"readout": "seeds"}})
    assert paper.model_options == {"readout": "seeds"}
    assert TrainingConfig.from_dict({**base, "model": "gcn"}).model_options == {}


def test_a_family_s_training_settings_apply_under_the_default_protocol_only():
    base = {"data": "x.csv", "target_columns": ["y"], "out": "o", "model": "gcn"}
    default = TrainingConfig.from_dict(base)
    assert (default.batch_size, default.learning_rate) == (32, 1e-3)
    assert default.lr_schedule == "cosine"  # the rest from the default protocol
    assert TrainingConfig.from_dict({**base, "batch_size": 8}).batch_size == 8
    paper = TrainingConfig.from_dict({**base, "protocol": "paper"})
    assert (paper.batch_size, paper.learning_rate) == (128, 1e-4)
    for family in ("esa", "nsa"):  # chosen on validation metrics (benchmarks/esa_defaults.py)
        esa = TrainingConfig.from_dict({**base, "model": family})
        assert (esa.batch_size, esa.learning_rate) == (64, 5e-4)
        paper = TrainingConfig.from_dict({**base, "model": family, "protocol": "paper"})
        assert paper.batch_size == 128
    assert TrainingConfig.from_dict({**base, "model": "graphormer"}).batch_size == 128


def test_the_paper_protocol_lists_each_difference_from_the_paper():
    from chemgraph.train.config import paper_protocol_differences

    esa = paper_protocol_differences(
        TrainingConfig(data="t.csv", target_columns=["y"], out="o", protocol="paper")
    )
    assert any("8-bit AdamW" in d for d in esa)
    assert any(d.startswith("weight decay 0.01") for d in esa)
    assert any("readout 'seeds+sum'" in d and "'seeds'" in d for d in esa)
    gmoe = paper_protocol_differences(
        TrainingConfig(
            data="t.csv", target_columns=["y"], out="o", protocol="paper", model="gmoe-gcn"
        )  # fmt: skip
    )
    assert any("model option k 2" in d and "form is 1" in d for d in gmoe)
    assert any("model option norm 'layer'" in d for d in gmoe)
    assert any("batch size 128 and learning rate 0.0001 are the ESA paper's" in d for d in gmoe)
    own = paper_protocol_differences(
        TrainingConfig(
            data="t.csv",
            target_columns=["y"],
            out="o",
            protocol="paper",
            model_options={"readout": "seeds"},
        )  # fmt: skip
    )
    assert not any("readout" in d for d in own)  # the user's own choice is not a departure


@pytest.mark.parametrize(
    "text, where, why",
    [
        ("max_epochs: 5\ntarget_columns: [y, z\n", "line 3, column 1", "not valid YAML: expected"),
        ("max_epochs: 5\n  batch_size: 4\n", "line 2, column 13", "not valid YAML: mapping"),
        ("max_epochs: !!python/object/apply:os.system [ls]\n", "line 1, column 13",
         "could not determine a constructor for the tag"),
        ("seed: !custom 3\n", "line 1, column 7", "for the tag '!custom'"),
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    "command",
    [
        ["train"],
        ["transfer", "--data", "x.csv", "--low-fidelity-columns", "a",
         "--high-fidelity-columns", "b"],
        ["recipe", "run", "dft_to_gw"],
    ],
)  # fmt: skip
def test_a_config_yaml_that_yaml_refuses_is_one_line_naming_file_and_line(
    tmp_path, capsys, text, where, why, command
):
    config = tmp_path / "mine.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    assert main([*command, "--config", str(config), "-o", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error  # no traceback
    assert f"error: {config}, {where}: " in error and why in error
    assert not out.exists()
