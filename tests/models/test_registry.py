import pytest
import torch
from fixtures.tiny_models import example_graphs

from chemgraph._dgl import dgl
from chemgraph.featurize import FeaturizerPreset, GaussianBasis, RadiusGraphFeaturizer
from chemgraph.graph_keys import EDGE_FEATURES
from chemgraph.models import MODELS, build_model, get_model_spec
from chemgraph.models.registry import PropertyModel


def test_unknown_model_names_the_registered_ones():
    with pytest.raises(ValueError, match="unknown model 'esb'; available: esa, nsa"):
        get_model_spec("esb")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_builds_from_its_featurizer_and_predicts_one_value_per_graph(name):
    spec = get_model_spec(name)
    featurizer = spec.featurizer()
    graphs = example_graphs(name, ["CCO", "[Na+]", "c1ccccc1"])
    assert graphs[0].ndata["x"].dtype == spec.feature_dtype
    config = {**spec.input_options(featurizer), "num_outputs": 2}
    model = build_model(name, config).eval()
    graphs = spec.transform_graphs(model.config, graphs)
    batch = spec.collate(model.config, featurizer)(dgl.batch(graphs))
    with torch.no_grad():
        out = model(batch)
    assert out.shape == (3, 2)
    assert torch.isfinite(out).all()
    # the configuration round-trips: same class, same fields
    assert build_model(name, model.config.to_dict()).config == model.config


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_keeps_the_contract_forward_is_head_of_embed(name):
    spec = get_model_spec(name)
    featurizer = spec.featurizer()
    model = build_model(name, {**spec.input_options(featurizer), "num_outputs": 3}).eval()
    assert isinstance(model, PropertyModel)
    graphs = example_graphs(name, ["CC(=O)O", "C", "c1ccncc1"])
    collate = spec.collate(model.config, featurizer)
    batch = collate(dgl.batch(spec.transform_graphs(model.config, graphs)))
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


def test_featurizers_follow_the_graph_kind():
    assert isinstance(get_model_spec("esa").featurizer(), FeaturizerPreset)
    assert get_model_spec("gin").featurizer({"name": "ogb"}).name == "ogb"
    radius = get_model_spec("esa-3d").featurizer({"cutoff": 2.0, "atomic_numbers": [1, 6]})
    assert radius == RadiusGraphFeaturizer(cutoff=2.0, atomic_numbers=(1, 6))
    assert get_model_spec("esa-3d").featurizer(radius.to_dict()) == radius
    with pytest.raises(ValueError, match="reads radius graphs of 3D structures"):
        get_model_spec("esa-3d").featurizer("canonical")
    with pytest.raises(ValueError, match="reads bond graphs: give a featurizer preset"):
        get_model_spec("esa").featurizer({"cutoff": 2.0})


def test_esa_3d_collate_expands_the_distances_of_the_featurizer_per_batch():
    spec = get_model_spec("esa-3d")
    featurizer = spec.featurizer({"cutoff": 2.0, "num_basis": 8})
    graphs = example_graphs("esa-3d", ["CCO", "O"])  # no edge features stored
    assert EDGE_FEATURES not in graphs[0].edata
    model = build_model("esa-3d", {**spec.input_options(featurizer), "num_outputs": 1})
    assert model.config.in_features == 2 * 6 + 8  # one-hot of H, C, N, O, F, other; K = 8
    batched = dgl.batch(graphs)
    batch = spec.collate(model.config, featurizer)(batched)
    # the token of every edge, in edge order, ends with its distance in the 8 Gaussians of
    # the 2 Å basis
    expected = GaussianBasis(8, 2.0)(batched.edata["distance"])
    tokens = batch.x[batch.pad_mask]
    assert tokens.shape == (batched.num_edges(), 20)
    torch.testing.assert_close(tokens[:, 12:], expected)


def test_train_refuses_a_radius_graph_model_with_what_to_do():
    from chemgraph.errors import ConfigError
    from chemgraph.train.config import TrainingConfig

    with pytest.raises(ConfigError, match="reads radius graphs of 3D structures; chemgraph train"):
        TrainingConfig(data="t.csv", target_columns=["y"], out="o", model="esa-3d")
