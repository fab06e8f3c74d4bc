import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import mol_to_graph
from chemgraph.models import MODELS, build_model, get_model_spec
from chemgraph.models.registry import PropertyModel


def test_unknown_model_names_the_registered_ones():
    with pytest.raises(ValueError, match="unknown model 'esb'; available: esa, nsa"):
        get_model_spec("esb")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_builds_from_its_featurizer_and_predicts_one_value_per_graph(name):
    spec = get_model_spec(name)
    preset = get_preset(spec.default_featurizer)
    assert preset.atom.dtype == spec.feature_dtype
    config = {**spec.input_options(preset), "num_outputs": 2}
    model = build_model(name, config).eval()
    graphs = [mol_to_graph(mol_from_smiles(s), preset) for s in ("CCO", "[Na+]", "c1ccccc1")]
    graphs = spec.transform_graphs(model.config, graphs)
    batch = spec.batch_builder(model.config)(dgl.batch(graphs))
    with torch.no_grad():
        out = model(batch)
    assert out.shape == (3, 2)
    assert torch.isfinite(out).all()
    # the configuration round-trips: same class, same fields
    assert build_model(name, model.config.to_dict()).config == model.config


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_keeps_the_contract_forward_is_head_of_embed(name):
    spec = get_model_spec(name)
    preset = get_preset(spec.default_featurizer)
    model = build_model(name, {**spec.input_options(preset), "num_outputs": 3}).eval()
    assert isinstance(model, PropertyModel)
    graphs = [mol_to_graph(mol_from_smiles(s), preset) for s in ("CC(=O)O", "C", "c1ccncc1")]
    batch = spec.batch_builder(model.config)(dgl.batch(spec.transform_graphs(model.config, graphs)))
    with torch.no_grad():
        embedding = model.embed(batch)
        assert embedding.ndim == 2 and embedding.shape[0] == 3 and embedding.dtype == torch.float32
        torch.testing.assert_close(model(batch), model.head(embedding))
    # the head is the only part fine-tuning replaces: no parameter outside embed's path
    head = {id(p) for p in model.head.parameters()}
    assert head and len(head) < len(list(model.parameters()))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_config_checks_user_options_the_same_way(name):
    config_class = get_model_spec(name).config_class
    with pytest.raises(ValueError, match=r"unknown model_options \['bogus'\]; valid: \["):
        config_class.check_options({"bogus": 1})
    with pytest.raises(ValueError, match="hidden_dim must be a positive integer, got 0"):
        config_class.check_options({"hidden_dim": 0})
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        config_class.check_options({"dropout": 1.5})
    for fixed in config_class.FIXED:  # set by the featurizer, never by the user
        with pytest.raises(ValueError, match="unknown model_options"):
            config_class.check_options({fixed: config_class.FIXED[fixed]})
    config_class.check_options({})
