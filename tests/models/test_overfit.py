"""Every registered model family learns: a tiny model overfits a few dozen molecules.

Plain full-batch Adam on the model's public forward, fed as ``chemgraph train`` feeds it (the
registry's featurizer preset, graph transform and batch builder). The target is RDKit's Crippen
logP, standardised, so predicting a constant scores a mean squared error of 1 and any value
well below 1 is learnt. The molecules are told apart by every family (no two are equal for a
mean readout over atoms of the ``ogb`` features: cyclopropane and cyclohexane, for one, would
not be).
"""

from __future__ import annotations

import pytest
import torch
from fixtures.tiny_models import example_graphs, overfit_losses, tiny_config
from rdkit.Chem import Crippen

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.models import MODELS, build_model, get_model_spec

SMILES = [
    "C", "CC", "CCO", "CCCO", "CC(C)O", "CCN", "CC(=O)O", "CCCl", "c1ccccc1", "Cc1ccccc1",
    "Oc1ccccc1", "Nc1ccccc1", "c1ccncc1", "C1CCCCC1", "C1CCOC1", "CC(=O)OC", "CCOCC", "CC#N",
    "O=C=O", "ClC(Cl)Cl", "CCCCCC", "CCCCCCCC", "OCC(O)CO", "CC(C)(C)O", "c1ccc2ccccc2c1",
    "O=C(O)c1ccccc1", "CN(C)C=O", "CS(C)=O", "FC(F)(F)c1ccccc1", "CC(=O)Nc1ccccc1",
    "[Na+].[Cl-]",
]  # fmt: skip
LEARNING_RATE = 3e-3
MAX_STEPS = 150
# Training MSE (standardised logP) each family must go below within MAX_STEPS steps. Measured
# with this file's settings over seeds 0-9 (torch 2.13, CPU): the first loss is 0.5-2.3; the
# bounds were reached after
#   esa 22-39 steps, nsa 23-33, graphormer 40-64, grat 21-36, gcn 19-32, gin 8-18 (bound 0.05;
#   the lowest loss within 100 steps was at most 0.009 for every seed of these six);
#   gmoe-gcn 28-41, gmoe-gin 17-40 (bound 0.15; the gate's training noise keeps their loss
#   jittering, its lowest value within 100 steps was 0.03-0.06).
#   esa-3d (radius graphs of seeded ETKDG+MMFF conformers, the default 5 Å featurizer) 24-42
#   steps over seeds 0-5 (bound 0.05, first loss 0.95-1.10, lowest loss within 100 steps at
#   most 0.0043; seeds 6-9 not run: the shared machine was too slow).
# MAX_STEPS is more than twice the slowest seed; the bounds are 5 times (GMoE: 2.5 times) the
# worst lowest loss. A family missing here fails: measure it the same way and add it.
BOUNDS = {
    "esa": 0.05,
    "nsa": 0.05,
    "esa-3d": 0.05,
    "graphormer": 0.05,
    "grat": 0.05,
    "gcn": 0.05,
    "gin": 0.05,
    "gmoe-gcn": 0.15,
    "gmoe-gin": 0.15,
}
SEED = 0


@pytest.fixture(scope="module")
def targets() -> torch.Tensor:
    """``float32 [M, 1]`` standardised Crippen logP of :data:`SMILES`."""
    logp = torch.tensor([Crippen.MolLogP(mol_from_smiles(s)) for s in SMILES])
    return ((logp - logp.mean()) / logp.std()).unsqueeze(1)


def tiny_model_and_batch(name: str):
    """A seeded tiny model of family ``name`` and its batch of :data:`SMILES`."""
    spec = get_model_spec(name)
    torch.manual_seed(SEED)
    model = build_model(name, tiny_config(name))
    graphs = spec.transform_graphs(model.config, example_graphs(name, SMILES))
    return model, spec.collate(model.config, spec.featurizer())(dgl.batch(graphs))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_tiny_model_overfits_a_few_dozen_molecules(name, targets):
    bound = BOUNDS[name]
    model, batch = tiny_model_and_batch(name)
    losses = overfit_losses(model, batch, targets, LEARNING_RATE, bound, MAX_STEPS)
    assert losses[0] > 0.3, f"{name} starts at {losses[0]:.3f}: the target is not learnt"
    assert losses[-1] < bound, (
        f"{name}: training MSE {losses[-1]:.4f} after {MAX_STEPS} steps (lowest "
        f"{min(losses):.4f}), bound {bound}"
    )
