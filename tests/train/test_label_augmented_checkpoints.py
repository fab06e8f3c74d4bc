"""A label-augmented property model (:class:`chemgraph.models.LabelAugmentation`) through
the train layer: its checkpoint read back by ``load_checkpoint`` predicts what the module
predicts, inference refuses to run it without its low-fidelity values, training batches carry
them, and fine-tuning copies a plain pretrained model into its encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.data import MoleculeDataset
from chemgraph.data.datamodule import collate_graphs
from chemgraph.graphs import mol_to_graph
from chemgraph.models import LabelAugmentation, LabelAugmentedBatch, get_model_spec
from chemgraph.train.checkpoint import load_checkpoint
from chemgraph.train.finetune import transfer_weights
from chemgraph.train.inference import model_inputs, predict_graphs
from chemgraph.train.module import build_property_module

SMILES = ["CCO", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "c1ccccc1O", "O=C=O", "CCN(CC)CC"]
AUGMENTATION = {"low_fidelity_columns": ["cheap"], "mean": [1.0], "std": [0.5], "hidden_dim": 8}


def _module(augmentation: dict | None = AUGMENTATION, seed: int = 0):
    torch.manual_seed(seed)
    featurizer = get_model_spec("esa").featurizer("canonical")
    return build_property_module(
        "esa", featurizer, ["fine"], "regression", torch.tensor([[1.0], [3.0], [2.0]]),
        {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2}, learning_rate=1e-3,
        weight_decay=0.0, lr_schedule="plateau", warmup_steps=0, lr_patience=1,
        label_augmentation=augmentation,
    ).eval()  # fmt: skip


def _graphs():
    preset = get_model_spec("esa").featurizer("canonical")
    return dgl.batch([mol_to_graph(mol_from_smiles(s), preset) for s in SMILES])


def test_the_checkpoint_round_trip_reproduces_the_predictions(tmp_path):
    module = _module()
    path = tmp_path / "best.ckpt"
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    predictor = load_checkpoint(path, kind="property")
    assert isinstance(predictor.model, LabelAugmentation)
    assert predictor.low_fidelity_inputs == ["cheap"] and module.low_fidelity_inputs == ["cheap"]
    assert predictor.hparams.label_augmentation == AUGMENTATION
    low = np.array([[0.5], [1.0], [np.nan], [2.5], [-1.0]], np.float32)
    graphs = _graphs()
    ours = predict_graphs(predictor, *model_inputs(predictor, graphs), 2, low)
    theirs = predict_graphs(module, *model_inputs(module, graphs), 3, low)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)  # other batches
    assert np.isnan(ours[2]).all() and np.isfinite(np.delete(ours, 2, axis=0)).all()
    # the values are read (the prediction moves with them), each with its own molecule
    moved = predict_graphs(predictor, *model_inputs(predictor, graphs), 2, low[::-1].copy())
    assert not np.allclose(moved[0], ours[0])
    molecule = dgl.unbatch(graphs)[3]  # given low[1] by the reversal
    alone = predict_graphs(predictor, *model_inputs(predictor, dgl.batch([molecule])), 1, low[1:2])
    np.testing.assert_allclose(moved[3], alone[0], rtol=1e-5, atol=1e-6)


def test_inference_refuses_a_label_augmented_model_without_its_values_and_the_reverse():
    module, plain, graphs = _module(), _module(None), _graphs()
    with pytest.raises(ValueError, match=r"label-augmented model needs the low-fidelity values "
                                         r"\['cheap'\]"):  # fmt: skip
        predict_graphs(module, *model_inputs(module, graphs), 2)
    with pytest.raises(ValueError, match="low-fidelity values given for a model that reads none"):
        predict_graphs(plain, *model_inputs(plain, graphs), 2, np.zeros((5, 1)))
    with pytest.raises(ValueError, match=r"must be \[5, 1\] \(\['cheap'\]\), got \[5, 2\]"):
        predict_graphs(module, *model_inputs(module, graphs), 2, np.zeros((5, 2)))


def test_training_batches_carry_each_molecules_values():
    module = _module()
    preset = get_model_spec("esa").featurizer("canonical")
    graphs = [mol_to_graph(mol_from_smiles(s), preset) for s in SMILES]
    low = torch.tensor([[0.5], [1.0], [1.5], [2.5], [-1.0]])
    dataset = MoleculeDataset(
        graphs, torch.arange(5.0).reshape(5, 1), np.arange(5), SMILES, ["fine"], inputs=low
    )
    subset = dataset.subset([3, 1])
    torch.testing.assert_close(subset.inputs, low[[3, 1]])
    batch, labels = collate_graphs([subset[0], subset[1]], module.batch_builder())
    assert isinstance(batch, LabelAugmentedBatch)
    torch.testing.assert_close(batch.low_fidelity, low[[3, 1]])
    torch.testing.assert_close(labels, torch.tensor([[3.0], [1.0]]))
    with torch.no_grad():  # the training forward is the prediction's, before the scaler
        scaled = module(batch)
    predicted = predict_graphs(module, [graphs[3], graphs[1]], module.batch_builder(), 2,
                               low[[3, 1]].numpy())  # fmt: skip
    np.testing.assert_allclose(
        module.scaler.inverse_transform(scaled).numpy(), predicted, rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match=r"inputs must have shape \[5, S\]"):
        MoleculeDataset(graphs, torch.zeros(5, 1), np.arange(5), SMILES, ["fine"],
                        inputs=torch.zeros(4, 1))  # fmt: skip


def test_fine_tuning_copies_a_plain_pretrained_model_into_the_encoder():
    pretrained, module = _module(None, seed=1), _module(seed=2)
    head = {k: v.clone() for k, v in module.model.head.state_dict().items()}
    transfer_weights(pretrained, module, freeze_encoder=True)
    ours = module.model.encoder.state_dict()
    theirs = {k: v for k, v in pretrained.model.state_dict().items() if not k.startswith("head.")}
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value)
    for name, value in head.items():  # the new head is left as built
        torch.testing.assert_close(module.model.head.state_dict()[name], value)
    trainable = {n for n, p in module.model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("head.") for n in trainable)
