"""Fine-tuning a property checkpoint (``chemgraph train --init-from CKPT [--freeze-encoder]``):
the weights copied, the head new, a frozen encoder unchanged by training, and a checkpoint that
does not fit the run refused with what differs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from chemgraph.errors import ConfigError
from chemgraph.jobs.train import train
from chemgraph.models import get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.config import TrainingConfig
from chemgraph.train.finetune import checkpoint_settings, transfer_weights
from chemgraph.train.module import PropertyPredictionModule

CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
SMILES = [
    "CCO", "CCCO", "CCCCO", "CC(C)O", "c1ccccc1", "Cc1ccccc1", "Oc1ccccc1", "CC(=O)O", "CCN",
    "CCCN", "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)C", "CCOCC", "ClCCl", "CCCl", "OCCO",
    "NCCN", "CS(C)=O",
]  # fmt: skip


def _table(tmp_path: Path) -> Path:
    frame = pd.DataFrame({"smiles": SMILES, "y": np.linspace(-1.0, 2.0, len(SMILES))})
    frame.to_csv(tmp_path / "t.csv", index=False)
    return tmp_path / "t.csv"


def _config(tmp_path: Path, family: str = "gcn", **settings) -> TrainingConfig:
    values = dict(
        data=str(_table(tmp_path)), target_columns=["y"], out=str(tmp_path / "run"),
        init_from=str(CHECKPOINTS / f"{family}.ckpt"), progress=False, max_epochs=2,
        batch_size=8, accelerator="cpu",
    )  # fmt: skip
    return TrainingConfig.from_dict({**values, **settings})


def _new_module(config: TrainingConfig) -> PropertyPredictionModule:
    """A module as ``chemgraph train`` builds it for ``config`` (one target, fresh weights)."""
    from chemgraph.featurize import get_preset

    spec = get_model_spec(config.model)
    model_config = {
        **config.model_options,
        **spec.input_options(get_preset(config.featurizer)),
        "num_outputs": 1,
    }
    return PropertyPredictionModule(
        model_config=model_config, task="regression", target_columns=["y"],
        featurizer=get_preset(config.featurizer).to_dict(), model=config.model,
    )  # fmt: skip


@pytest.mark.parametrize("family", ["esa", "gcn", "graphormer"])
def test_settings_come_from_the_checkpoint_and_every_weight_but_the_head_is_copied(
    tmp_path, family
):
    config = _config(tmp_path, family)
    stored = torch.load(CHECKPOINTS / f"{family}.ckpt", weights_only=True)
    assert config.model == family
    assert config.featurizer == stored["hyper_parameters"]["featurizer"]["name"]
    expected_sha = hashlib.sha256((CHECKPOINTS / f"{family}.ckpt").read_bytes()).hexdigest()
    assert config.init_from_sha256 == expected_sha
    torch.manual_seed(123)
    module = _new_module(config)
    # the model the options rebuild is the checkpoint's (same config apart from the outputs)
    pretrained = load_checkpoint(CHECKPOINTS / f"{family}.ckpt", kind="property")
    theirs = {**vars(pretrained.model.config), "num_outputs": 1}
    assert vars(module.model.config) == theirs
    head_before = {k: v.clone() for k, v in module.state_dict().items() if "model.head." in k}
    transfer_weights(pretrained, module, freeze_encoder=False)
    copied = 0
    for name, value in module.state_dict().items():
        if name.startswith("model.head."):
            torch.testing.assert_close(value, head_before[name], rtol=0, atol=0)
        else:
            torch.testing.assert_close(value, stored["state_dict"][name], rtol=0, atol=0)
            copied += 1
    assert copied > 0
    assert head_before  # the head is there and new: one output, the checkpoint had two
    assert pretrained.model.head.state_dict().keys() == module.model.head.state_dict().keys()


def test_a_frozen_encoder_does_not_change_in_a_fit_while_the_head_does(tmp_path):
    config = _config(tmp_path, "gcn", freeze_encoder=True, learning_rate=1e-2)
    metrics = train(config)
    stored = torch.load(CHECKPOINTS / "gcn.ckpt", weights_only=True)["state_dict"]
    tuned = load_checkpoint(tmp_path / "run" / "best.ckpt", kind="property")
    parameters = dict(tuned.named_parameters())
    encoder = [n for n in parameters if not n.startswith("model.head.")]
    head = [n for n in parameters if n.startswith("model.head.")]
    assert encoder and head
    for name in encoder:
        torch.testing.assert_close(parameters[name].detach(), stored[name], rtol=0, atol=0)
    assert tuned.hparams["model_config"]["num_outputs"] == 1  # the checkpoint had 2 targets
    assert metrics["init_from"] == {
        "path": str((CHECKPOINTS / "gcn.ckpt").resolve()),
        "sha256": config.init_from_sha256,
        "freeze_encoder": True,
    }
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["init_from"]["sha256"] == (
        config.init_from_sha256
    )
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["init_from"] == str((CHECKPOINTS / "gcn.ckpt").resolve())
    assert recorded["init_from_sha256"] == config.init_from_sha256
    again = TrainingConfig.from_yaml(tmp_path / "run" / "config.yaml")  # repeats the run
    assert (again.model, again.model_options) == (config.model, config.model_options)


def test_unfrozen_fine_tuning_moves_the_encoder(tmp_path):
    config = _config(tmp_path, "gcn", learning_rate=1e-2)
    train(config)
    stored = torch.load(CHECKPOINTS / "gcn.ckpt", weights_only=True)["state_dict"]
    tuned = load_checkpoint(tmp_path / "run" / "best.ckpt", kind="property")
    moved = [
        name
        for name, value in tuned.named_parameters()
        if not name.startswith("model.head.") and not torch.equal(value.detach(), stored[name])
    ]
    assert moved


def test_a_frozen_head_only_fit_changes_the_head():
    """One optimiser step on a frozen module: the head's parameters move, the encoder's not."""
    pretrained = load_checkpoint(CHECKPOINTS / "gin.ckpt", kind="property")
    module = load_checkpoint(CHECKPOINTS / "gin.ckpt", kind="property")
    torch.manual_seed(0)
    for parameter in module.model.head.parameters():
        torch.nn.init.normal_(parameter)
    transfer_weights(pretrained, module, freeze_encoder=True)
    before = {n: p.detach().clone() for n, p in module.named_parameters()}
    trainable = [p for p in module.parameters() if p.requires_grad]
    optimiser = torch.optim.SGD(trainable, lr=0.1)
    from chemgraph._dgl import dgl
    from chemgraph.chem import mol_from_smiles
    from chemgraph.featurize import get_preset
    from chemgraph.graphs import mol_to_graph

    spec = get_model_spec("gin")
    preset = get_preset(pretrained.hparams["featurizer"]["name"])
    graphs = [mol_to_graph(mol_from_smiles(s), preset) for s in SMILES[:6]]
    batch = spec.batch_builder(module.model.config)(dgl.batch(graphs))
    module.train()
    loss = module(batch).pow(2).mean()
    loss.backward()
    optimiser.step()
    for name, parameter in module.named_parameters():
        if name.startswith("model.head."):
            assert not torch.equal(parameter.detach(), before[name]), name
        else:
            assert parameter.grad is None
            torch.testing.assert_close(parameter.detach(), before[name], rtol=0, atol=0)


def test_a_setting_that_contradicts_the_checkpoint_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"model 'gcn' \(the checkpoint's: 'esa'\)"):
        _config(tmp_path, "esa", model="gcn")
    with pytest.raises(ConfigError, match=r"featurizer 'canonical' \(the checkpoint's: 'ogb'\)"):
        _config(tmp_path, "gcn", featurizer="canonical")
    with pytest.raises(ConfigError, match=r"model option hidden_dim=64 \(the checkpoint's: 8\)"):
        _config(tmp_path, "esa", model_options={"hidden_dim": 64})
    settings = checkpoint_settings(CHECKPOINTS / "esa.ckpt")  # the same values are accepted
    same = _config(tmp_path, "esa", model="esa", model_options={"hidden_dim": 8})
    assert same.model_options == settings.model_options
    with pytest.raises(ConfigError, match="reaction-outcome .* checkpoint"):
        _config(tmp_path, "reaction_grat_test_fixture")
    with pytest.raises(ConfigError, match="does not exist"):
        _config(tmp_path, "missing")
    with pytest.raises(ConfigError, match="has changed since the run was recorded"):
        _config(tmp_path, "esa", init_from_sha256="0" * 64)
    with pytest.raises(ConfigError, match="freeze_encoder needs init_from"):
        _config(tmp_path, "esa", init_from=None, freeze_encoder=True)


def test_the_checkpoint_options_are_not_overridden_by_training_defaults(tmp_path):
    """ESA's training default ``readout: seeds+sum`` would rebuild another model than the
    checkpoint's (its readout is the configuration's default, the paper's)."""
    config = _config(tmp_path, "esa")
    assert "readout" not in config.model_options
    fresh = TrainingConfig.from_dict({"data": "t.csv", "target_columns": ["y"], "out": "o"})
    assert fresh.model == "esa" and fresh.model_options["readout"] == "seeds+sum"


def test_the_command_refuses_a_contradicting_model_in_one_line(tmp_path, capsys):
    from chemgraph.cli import main

    code = main([
        "train", "--data", str(_table(tmp_path)), "--target-columns", "y",
        "--init-from", str(CHECKPOINTS / "gcn.ckpt"), "--model", "esa",
        "--out", str(tmp_path / "run"), "--quiet",
    ])  # fmt: skip
    error = capsys.readouterr().err.strip()
    assert code != 0
    assert len(error.splitlines()) == 1
    assert "model 'esa' (the checkpoint's: 'gcn')" in error
    assert not (tmp_path / "run").exists()


def test_config_yaml_repeats_a_fine_tuning_run(tmp_path):
    """Reading the checkpoint (for the settings, as often as the configuration is built) draws
    no random numbers, so the repeated run trains the same weights."""
    state = torch.get_rng_state()
    checkpoint_settings(CHECKPOINTS / "gcn.ckpt")
    assert torch.equal(torch.get_rng_state(), state)
    first = train(_config(tmp_path, "gcn"))  # task None: decided from the labels, then recorded
    from chemgraph.cli import main

    assert main(["train", "--config", str(tmp_path / "run" / "config.yaml"), "--out",
                 str(tmp_path / "again"), "--quiet"]) == 0  # fmt: skip
    again = json.loads((tmp_path / "again" / "metrics.json").read_text())
    assert again["test"] == pytest.approx(first["test"], rel=1e-6)
    assert again["init_from"] == first["init_from"]


def test_a_run_folder_is_read_as_its_best_checkpoint(tmp_path):
    folder = tmp_path / "esa_run"
    folder.mkdir()
    (folder / "best.ckpt").write_bytes((CHECKPOINTS / "esa.ckpt").read_bytes())
    config = _config(tmp_path, "esa", init_from=str(folder))
    assert config.init_from == str(folder / "best.ckpt")
    assert config.init_from_sha256 == checkpoint_settings(CHECKPOINTS / "esa.ckpt").sha256
    (folder / "best.ckpt").unlink()
    with pytest.raises(ConfigError, match="is a folder without best.ckpt"):
        _config(tmp_path, "esa", init_from=str(folder))


def test_other_kinds_of_checkpoint_are_named_with_the_command_that_takes_them(tmp_path):
    from chemgraph._resources import model_path
    from chemgraph.models import get_model_spec
    from chemgraph.train.module import build_property_module

    with pytest.raises(ConfigError, match="reaction-centre model: use it with `chemgraph react"):
        _config(tmp_path, "esa", init_from=str(model_path()))
    spec = get_model_spec("esa-3d")
    module = build_property_module(
        "esa-3d", spec.featurizer(None), ["y"], "regression", torch.zeros(4, 1),
        {"hidden_dim": 8, "num_heads": 2, "layer_pattern": "MSP", "num_seeds": 2},
        learning_rate=1e-3, weight_decay=0.0, lr_schedule="plateau", warmup_steps=None,
        lr_patience=5,
    )  # fmt: skip
    path = tmp_path / "esa3d.ckpt"
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    with pytest.raises(ConfigError, match="holds the model 'esa-3d' of 3D structures"):
        _config(tmp_path, "esa", init_from=str(path))
