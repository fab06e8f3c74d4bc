import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import mol_to_graph
from chemgraph.models import MODELS, build_model, get_model_spec


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
