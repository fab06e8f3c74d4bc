"""Shared fixtures: molecules -> DGL graphs with the canonical preset; an untrained GRAT
reaction checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize import get_preset
from chemgraph.graphs import mol_to_graph

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def canonical():
    return get_preset("canonical")


@pytest.fixture(scope="session")
def graph_of(canonical):
    def build(smiles: str, preset=None):
        return mol_to_graph(mol_from_smiles(smiles), preset or canonical)

    return build


@pytest.fixture(scope="session")
def untrained_checkpoint(tmp_path_factory) -> str:
    """A GRAT reaction checkpoint, random weights, whose vocabulary holds only the special
    tokens: it reads any reaction (atoms become <UNK>) and never decodes a valid product."""
    from chemgraph.batches.reaction import TokenVocabulary
    from chemgraph.train.reaction_module import ReactionModule

    torch.manual_seed(0)
    vocabulary = TokenVocabulary([]).tokens
    options = {"vocab_size": len(vocabulary), "hidden_dim": 16, "num_heads": 2,
               "encoder_layers": 1, "decoder_layers": 1, "projection_dim": 8,
               "dropout": 0.0}  # fmt: skip
    module = ReactionModule(model_config=options, vocabulary=vocabulary)
    path = tmp_path_factory.mktemp("untrained") / "untrained.ckpt"
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    return str(path)
