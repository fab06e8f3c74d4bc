"""Shared fixtures: molecules -> DGL graphs with the canonical preset."""

from __future__ import annotations

from pathlib import Path

import pytest

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
