"""chemgraph.featurize.deepchem_adapter: DeepChem GraphData -> DGL graphs (skips without
deepchem, an optional extra)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph.chem import MoleculeParseError
from chemgraph.featurize.deepchem_adapter import DeepChemGraphFeaturizer
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES


def test_missing_deepchem_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepchem", None)
    with pytest.raises(ImportError, match=r'pip install "chemgraph\[deepchem\]"'):
        DeepChemGraphFeaturizer(object())
    with pytest.raises(ImportError, match=r'pip install "chemgraph\[deepchem\]"'):
        DeepChemGraphFeaturizer.from_name("MolGraphConvFeaturizer")


@pytest.fixture(scope="module")
def dc():
    return pytest.importorskip("deepchem")


def test_ethanol_matches_mol_graph_conv_featurizer(dc):
    featurizer = dc.feat.MolGraphConvFeaturizer(use_edges=True)
    adapter = DeepChemGraphFeaturizer(featurizer)
    mol = Chem.MolFromSmiles("CCO")
    graph = adapter.mol_to_graph(mol)
    # DeepChem's public API on the same Mol (no canonical re-ordering for Mol input).
    (expected,) = featurizer.featurize([mol])
    assert isinstance(expected, dc.feat.GraphData)

    assert adapter.name == "deepchem:MolGraphConvFeaturizer"
    assert (adapter.atom_dim, adapter.bond_dim) == (30, 11)
    assert graph.num_nodes() == 3 and graph.num_edges() == 4
    assert (
        graph.ndata[NODE_FEATURES].dtype == torch.float32
        and graph.edata[EDGE_FEATURES].dtype == torch.float32
    )
    np.testing.assert_array_equal(graph.ndata[NODE_FEATURES].numpy(), expected.node_features)
    np.testing.assert_array_equal(graph.edata[EDGE_FEATURES].numpy(), expected.edge_features)
    src, dst = (t.numpy() for t in graph.edges())
    np.testing.assert_array_equal(np.stack([src, dst]), expected.edge_index)
    # Both directions of each bond, bond k as edges 2k (u->v) and 2k+1 (v->u), like chemgraph.
    assert list(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    # By hand: the first 10 columns are the atom type one-hot C, N, O, F, P, S, Cl, Br, I, other.
    x = graph.ndata[NODE_FEATURES].numpy()
    assert x[0, :10].tolist() == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    assert x[2, :10].tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    d = adapter.to_dict()
    assert d["atom_dim"] == 30 and d["bond_dim"] == 11 and "use_edges=True" in d["featurizer"]


def test_no_edge_features_and_failures(dc):
    adapter = DeepChemGraphFeaturizer.from_name("MolGraphConvFeaturizer")  # use_edges=False
    graph = adapter(Chem.MolFromSmiles("c1ccccc1"))
    assert adapter.bond_dim == 0
    assert graph.num_edges() == 12 and tuple(graph.edata[EDGE_FEATURES].shape) == (12, 0)
    # MolGraphConvFeaturizer refuses one-atom molecules: reported, not a crash.
    with pytest.raises(MoleculeParseError, match="More than one atom"):
        adapter.mol_to_graph(Chem.MolFromSmiles("[Na+]"))
    with pytest.raises(TypeError, match="MolecularFeaturizer"):
        DeepChemGraphFeaturizer(object())
    with pytest.raises(ValueError, match="NoSuchFeaturizer"):
        DeepChemGraphFeaturizer.from_name("NoSuchFeaturizer")


def test_one_direction_edges_are_refused(dc):
    class OneWay(dc.feat.MolecularFeaturizer):
        def _featurize(self, datapoint, **kwargs):
            bonds = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in datapoint.GetBonds()]
            return dc.feat.GraphData(
                node_features=np.ones((datapoint.GetNumAtoms(), 2)),
                edge_index=np.asarray(bonds, dtype=np.int64).T.reshape(2, -1),
            )

    adapter = DeepChemGraphFeaturizer(OneWay())
    assert (adapter.atom_dim, adapter.bond_dim) == (2, 0)
    with pytest.raises(ValueError, match="both directions"):
        adapter.mol_to_graph(Chem.MolFromSmiles("CCO"))
    # A molecule without bonds has no edges at all: accepted.
    assert adapter.mol_to_graph(Chem.MolFromSmiles("[Na+]")).num_edges() == 0
