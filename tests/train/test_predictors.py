"""chemgraph.train.predictors: the plain predictor a checkpoint is read into is the Lightning
module that trained it, without Lightning: the same defaults for a hyper-parameter an older
checkpoint lacks, the same weights and the same outputs, bit for bit."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.graphs import mol_to_graph
from chemgraph.models import get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.inference import embed_graphs, model_inputs, predict_graphs
from chemgraph.train.module import PropertyPredictionModule, build_property_module
from chemgraph.train.predictors import HyperParameters, PropertyPredictor, ReactionPredictor
from chemgraph.train.reaction_module import ReactionModule

SMILES = ["CCO", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "c1ccccc1O", "O=C=O"]


@pytest.mark.parametrize(
    "predictor,module",
    [(PropertyPredictor, PropertyPredictionModule), (ReactionPredictor, ReactionModule)],
)
def test_a_hyper_parameter_the_checkpoint_lacks_defaults_as_in_training(predictor, module):
    ours = inspect.signature(predictor).parameters
    theirs = inspect.signature(module).parameters
    named = [name for name, p in ours.items() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert set(named) <= set(theirs)
    assert {n: ours[n].default for n in named} == {n: theirs[n].default for n in named}


def _module(task: str) -> PropertyPredictionModule:
    torch.manual_seed(0)
    featurizer = get_model_spec("esa").featurizer("canonical")
    labels = torch.tensor([[1.0, 20.0], [3.0, float("nan")], [2.0, 35.0]])
    if task == "classification":
        labels = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    return build_property_module(
        "esa", featurizer, ["a", "b"], task, labels,
        {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2},
        learning_rate=1e-3, weight_decay=0.0, lr_schedule="plateau", warmup_steps=0,
        lr_patience=1, standardize="basic", fragments="largest",
    ).eval()  # fmt: skip


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_the_predictor_of_a_checkpoint_predicts_what_its_module_predicts(task, tmp_path):
    module = _module(task)
    path = tmp_path / "best.ckpt"
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    predictor = load_checkpoint(path, kind="property")
    assert type(predictor) is PropertyPredictor
    assert predictor.preparation == module.preparation
    assert predictor.preparation.standardize == "basic"
    assert (predictor.task, predictor.hparams.target_columns) == (task, ["a", "b"])
    assert (predictor.scaler is None) == (task == "classification")
    preset = get_model_spec("esa").featurizer("canonical")
    graphs = dgl.batch([mol_to_graph(mol_from_smiles(s), preset) for s in SMILES])
    for run in (predict_graphs, embed_graphs):
        ours = run(predictor, *model_inputs(predictor, graphs), 3)
        theirs = run(module, *model_inputs(module, graphs), 3)
        assert ours.shape[0] == len(SMILES) and np.isfinite(ours).all()
        np.testing.assert_array_equal(ours, theirs)


def test_a_checkpoint_without_the_later_hyper_parameters_reads_as_training_reads_it(tmp_path):
    module = _module("regression")
    parameters = dict(module.hparams)
    for name in ("model", "standardize", "train_fingerprints", "lr_schedule", "max_minutes"):
        del parameters[name]  # hyper-parameters added after the first checkpoints
    path = tmp_path / "old.ckpt"
    torch.save({"hyper_parameters": parameters, "state_dict": module.state_dict()}, path)
    predictor = load_checkpoint(path)
    old_module = PropertyPredictionModule(**parameters)
    for name in ("model", "standardize", "train_fingerprints"):
        assert predictor.hparams[name] == old_module.hparams[name]
    assert predictor.hparams.model == "esa" and predictor.preparation.standardize == "none"
    assert "lr_schedule" not in predictor.hparams  # training settings are kept as stored


def test_hyper_parameters_read_as_attributes():
    values = HyperParameters(task="regression", scaler=None)
    assert values.task == "regression" and values.scaler is None and values["task"] == "regression"
    with pytest.raises(AttributeError, match="no hyper-parameter 'model'"):
        _ = values.model
