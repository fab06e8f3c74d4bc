"""chemgraph.models.label_augmentation: a property model whose readout also reads each
molecule's low-fidelity labels (Buterez et al. 2024, doi:10.1038/s41467-024-45566-8): its
output for a hand-built head, a molecule alone or in a padded batch, NaN values, and every
registered family wrapped the same way."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.graphs import mol_to_graph
from chemgraph.models import (
    MODELS,
    LabelAugmentation,
    augmented_batch_builder,
    build_model,
    get_model_spec,
    readout_width,
)

SMILES = ["CCO", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "c1ccccc1O", "O=C=O"]
TINY = {"hidden_dim": 16, "num_heads": 2, "num_seeds": 2, "layer_pattern": "MSP"}


def _esa(num_outputs: int = 1) -> tuple[torch.nn.Module, object, list]:
    spec = get_model_spec("esa")
    preset = spec.featurizer("canonical")
    torch.manual_seed(0)
    model = build_model("esa", {**TINY, **spec.input_options(preset), "num_outputs": num_outputs})
    graphs = [mol_to_graph(mol_from_smiles(s), preset) for s in SMILES]
    return model, spec.collate(model.config, preset), graphs


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def test_with_a_zero_weight_graph_part_the_output_is_the_head_of_the_standardised_value():
    model, build, graphs = _esa()
    width = readout_width(model)
    augmented = LabelAugmentation(model, 1, [1.0], [2.0], hidden_dim=1).eval()
    with torch.no_grad():  # h = (low - 1) / 2; output = 3·GELU(h) + 0.5
        augmented.head[0].weight.zero_()
        augmented.head[0].weight[0, width] = 1.0
        augmented.head[0].bias.zero_()
        augmented.head[2].weight.fill_(3.0)
        augmented.head[2].bias.fill_(0.5)
    low = torch.tensor([[3.0], [1.0], [-1.0], [float("nan")]])
    batch = augmented_batch_builder(build)(dgl.batch(graphs), low)
    with torch.no_grad():
        out = augmented(batch)[:, 0].tolist()
    expected = [3 * _gelu(1.0) + 0.5, 0.5, 3 * _gelu(-1.0) + 0.5]
    np.testing.assert_allclose(out[:3], expected, rtol=1e-6)  # 3.0240342, 0.5, 0.0240342
    assert math.isnan(out[3])  # no value: no guess
    # the graph enters through zero weights only: another molecule, the same value, same output
    with torch.no_grad():
        swapped = augmented(augmented_batch_builder(build)(dgl.batch(graphs[::-1]), low))
    np.testing.assert_allclose(swapped[:3, 0].tolist(), expected, rtol=1e-6)
    assert augmented.embed(batch).shape == (4, width + 1)


def test_a_molecule_alone_and_in_a_padded_batch_gets_the_same_output():
    model, build, graphs = _esa(num_outputs=2)
    augmented = LabelAugmentation(model, 2, [0.5, -1.0], [1.5, 0.0]).eval()  # std 0 read as 1
    low = torch.tensor([[0.1, 2.0], [1.2, -0.3], [float("nan"), 1.0], [-2.0, 0.0]])
    builder = augmented_batch_builder(build)
    with torch.no_grad():
        together = augmented(builder(dgl.batch(graphs), low))
        alone = torch.cat([augmented(builder(dgl.batch([g]), low[i : i + 1])) for i, g in
                           enumerate(graphs)])  # fmt: skip
    assert torch.isnan(together[2]).all() and torch.isfinite(together[[0, 1, 3]]).all()
    torch.testing.assert_close(together, alone, equal_nan=True, atol=1e-5, rtol=1e-5)
    # the low-fidelity value changes the output: it is read
    with torch.no_grad():
        moved = augmented(builder(dgl.batch(graphs), low + 1.0))
    assert not torch.allclose(moved[0], together[0])


def test_a_nan_value_passes_no_gradient_and_no_nan_to_the_weights():
    model, build, graphs = _esa()
    augmented = LabelAugmentation(model, 1, [0.0], [1.0])
    low = torch.tensor([[0.5], [float("nan")], [1.0], [2.0]])
    out = augmented(augmented_batch_builder(build)(dgl.batch(graphs), low))
    present = ~torch.isnan(out)
    torch.where(present, out, 0.0).sum().backward()
    grads = [p.grad for p in augmented.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_family_is_wrapped_the_same_way(name):
    spec = get_model_spec(name)
    featurizer = spec.featurizer()
    if spec.graph_kind != "bond":
        pytest.skip("radius graphs need 3D structures (esa-3d: tests/jobs/test_transfer*.py)")
    torch.manual_seed(0)
    model = build_model(name, {**spec.input_options(featurizer), "num_outputs": 3})
    width = readout_width(model)
    augmented = LabelAugmentation(model, 3, [0.0, 1.0], [1.0, 2.0]).eval()
    assert augmented.config is model.config and isinstance(model.head, torch.nn.Identity)
    graphs = [mol_to_graph(mol_from_smiles(s), featurizer) for s in SMILES]
    graphs = spec.transform_graphs(model.config, graphs)
    batch = augmented_batch_builder(spec.collate(model.config, featurizer))(
        dgl.batch(graphs), torch.zeros(len(graphs), 2)
    )
    with torch.no_grad():
        assert augmented.embed(batch).shape == (len(SMILES), width + 2)
        assert augmented(batch).shape == (len(SMILES), 3)
    assert readout_width(augmented) == width + 2
    assert all(name.startswith(("encoder.", "head.")) for name in augmented.state_dict())


def test_bad_standardisation_and_bad_values_are_refused():
    model, build, graphs = _esa()
    with pytest.raises(ValueError, match="S >= 1 values each"):
        LabelAugmentation(model, 1, [], [])
    model, build, graphs = _esa()
    with pytest.raises(ValueError, match="bad low-fidelity standardisation"):
        LabelAugmentation(model, 1, [0.0], [-1.0])
    with pytest.raises(ValueError, match=r"must be \[4, S\] for 4 molecules, got \[3, 1\]"):
        augmented_batch_builder(build)(dgl.batch(graphs), torch.zeros(3, 1))
