"""The readout of every model family: its width, and head(readout) is the prediction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.graphs import mol_to_graph
from chemgraph.train.ensemble import Ensemble
from chemgraph.train.inference import (
    PADDED_SIZE_PER_MOLECULE,
    _size_batches,
    embed_graphs,
    embedding_width,
    model_inputs,
    predict_graphs,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
FAMILIES = ["esa", "nsa", "gcn", "gin", "gmoe-gcn", "gmoe-gin", "graphormer", "grat"]
SMILES = ["CCO", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "c1ccccc1O", "[Na+].[Cl-]", "O=C=O"]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_readout_has_the_heads_width_and_the_head_of_it_is_the_prediction(family):
    model = Ensemble([FIXTURES / f"{family}.ckpt"], "cpu")
    module = model.modules[0]
    graphs = dgl.batch([mol_to_graph(mol_from_smiles(s), model.featurizer) for s in SMILES])
    inputs, builder = model_inputs(module, graphs)
    embeddings = embed_graphs(module, inputs, builder, batch_size=2)
    assert embeddings.dtype == np.float32
    assert embeddings.shape == (len(SMILES), embedding_width(module))
    predictions = predict_graphs(module, inputs, builder, batch_size=2)
    with torch.inference_mode():
        outputs = module.model.head(torch.from_numpy(embeddings)).float()
    if module.task == "classification":
        outputs = torch.sigmoid(outputs)
    elif module.scaler is not None:
        outputs = module.scaler.inverse_transform(outputs)
    np.testing.assert_allclose(outputs.numpy(), predictions, rtol=1e-5, atol=1e-5)
    # one molecule at a time (no padding) gives the rows of the padded batches
    alone = np.concatenate(
        [embed_graphs(module, *model_inputs(module, g), 1) for g in dgl.unbatch(graphs)]
    )
    np.testing.assert_allclose(alone, embeddings, rtol=1e-4, atol=1e-5)


def test_size_batches_fill_up_to_the_molecule_and_padded_size_limits():
    """Batches of molecules sorted by size: consecutive runs covering every molecule once, at
    most ``batch_size`` molecules and ``batch_size × PADDED_SIZE_PER_MOLECULE`` padded nodes +
    edges each, a molecule over that alone; small molecules fill whole batches."""
    sizes = np.array([10] * 7 + [70, 100, 150, 300, 600])
    order = np.arange(len(sizes))
    batches = [b.tolist() for b in _size_batches(order, sizes, 4)]
    budget = 4 * PADDED_SIZE_PER_MOLECULE  # 256
    assert batches == [[0, 1, 2, 3], [4, 5, 6], [7, 8], [9], [10], [11]]
    for batch in batches:
        assert len(batch) == 1 or len(batch) * sizes[batch].max() <= budget
    assert [b.tolist() for b in _size_batches(order[:3], sizes[:3], 4)] == [[0, 1, 2]]


def test_each_shard_task_gives_back_the_memory_it_freed(monkeypatch):
    """Issue 46: the process that scores shards one after another releases what each freed
    (glibc's heaps, pyarrow's pool) after every task, an error included, so that its memory
    stays that of one shard instead of growing with the library."""
    from chemgraph.train import inference

    events = []
    monkeypatch.setattr(inference, "release_freed_memory", lambda: events.append("released"))

    def task(shard: int) -> int:
        events.append(f"shard {shard}")
        if shard == 2:
            raise ValueError("a bad shard")
        return 10 * shard

    tasks = inference.run_shard_tasks(task, [0, 1, 2])
    assert [next(tasks), next(tasks)] == [0, 10]
    with pytest.raises(ValueError, match="a bad shard"):
        next(tasks)
    assert events == ["shard 0", "released", "shard 1", "released", "shard 2", "released"]
