"""DeepChem graph featurizers as chemgraph graph featurizers.

:class:`DeepChemGraphFeaturizer` wraps any DeepChem ``MolecularFeaturizer`` whose per-molecule
result is a ``deepchem.feat.GraphData`` (``MolGraphConvFeaturizer``, ``PagtnMolGraphFeaturizer``,
…) and turns that result into a :class:`dgl.DGLGraph` in chemgraph's layout:

- ``ndata["x"]``: ``float32 [N, atom_dim]`` = ``GraphData.node_features``;
- ``edata["e"]``: ``float32 [E, bond_dim]`` = ``GraphData.edge_features``, or
  ``float32 [E, 0]`` when the featurizer gives none (``MolGraphConvFeaturizer(use_edges=False)``);
- edges: ``GraphData.edge_index`` (``int64 [2, E]``, row 0 sources, row 1 targets), taken as
  they are, in DeepChem's order.

Edge directions: DeepChem's graph featurizers already list both directions of every edge.
``MolGraphConvFeaturizer`` gives bond ``k`` as edges ``2k`` (u -> v) and ``2k + 1`` (v -> u),
the same order as :func:`chemgraph.graphs.mol_to_graph` (checked in the tests on DeepChem
2.8.0); ``PagtnMolGraphFeaturizer``'s edges are atom pairs within its path length, self-loops
included, also listed both ways. :meth:`DeepChemGraphFeaturizer.mol_to_graph` checks this for
every molecule (the multiset of ``(u, v)`` equals that of ``(v, u)``) and raises otherwise,
because chemgraph's models assume symmetric graphs.

Atom order is the molecule's own: the RDKit ``Mol`` is handed to the featurizer's
``_featurize`` (the per-molecule method every ``MolecularFeaturizer`` implements), so DeepChem's
canonical re-ordering of SMILES input does not apply and node ``i`` is ``mol.GetAtomWithIdx(i)``.

deepchem is an optional extra (``pip install "chemgraph[deepchem]"``); it is imported only when
an adapter is built. Importing deepchem is slow (seconds) and chatty (it reports the optional
backends it cannot find); chemgraph does not hide that.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import numpy as np
import torch
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.chem.parse import MoleculeParseError, rdkit_log_capture
from chemgraph.errors import MissingDependencyError
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES

__all__ = ["DeepChemGraphFeaturizer"]

_INSTALL = 'pip install "chemgraph[deepchem]"'

# A small molecule with every kind of feature DeepChem's graph featurizers look at (aromatic
# ring, heteroatoms, single/double bonds), used once to learn the feature widths.
_PROBE_SMILES = "CC(=O)Nc1ccccc1"


def _import_deepchem() -> Any:
    try:
        import deepchem
    except ImportError as exc:
        raise MissingDependencyError(
            f"DeepChem featurizers need the deepchem package: {_INSTALL}"
        ) from exc
    return deepchem


class DeepChemGraphFeaturizer:
    """Adapter: a DeepChem ``MolecularFeaturizer`` returning ``GraphData`` -> DGL graphs.

    Args:
        featurizer: a DeepChem ``MolecularFeaturizer`` instance, e.g.
            ``deepchem.feat.MolGraphConvFeaturizer(use_edges=True)``.

    Attributes:
        featurizer: the wrapped DeepChem featurizer.
        name: ``"deepchem:<class name>"``, e.g. ``"deepchem:MolGraphConvFeaturizer"``.

    Raises:
        ImportError: deepchem is not installed (the message gives the pip command).
        TypeError: ``featurizer`` is not a DeepChem ``MolecularFeaturizer``.
    """

    def __init__(self, featurizer: Any) -> None:
        dc = _import_deepchem()
        if not isinstance(featurizer, dc.feat.MolecularFeaturizer):
            raise TypeError(
                "DeepChemGraphFeaturizer needs a deepchem.feat.MolecularFeaturizer instance, "
                f"got {type(featurizer).__name__}"
            )
        self.featurizer = featurizer
        self.name = f"deepchem:{type(featurizer).__name__}"
        self._graph_data_type = dc.feat.GraphData
        self._deepchem_version = getattr(dc, "__version__", "unknown")

    @classmethod
    def from_name(cls, class_name: str, **kwargs: Any) -> DeepChemGraphFeaturizer:
        """Build ``deepchem.feat.<class_name>(**kwargs)`` and wrap it, e.g.
        ``DeepChemGraphFeaturizer.from_name("MolGraphConvFeaturizer", use_edges=True)``.

        Raises:
            ImportError: deepchem is not installed.
            ValueError: ``deepchem.feat`` has no such class.
        """
        dc = _import_deepchem()
        try:
            featurizer_class = getattr(dc.feat, class_name)
        except AttributeError:
            raise ValueError(f"deepchem.feat has no featurizer called {class_name!r}") from None
        return cls(featurizer_class(**kwargs))

    def __repr__(self) -> str:
        return f"DeepChemGraphFeaturizer({self._featurizer_repr()})"

    def _featurizer_repr(self) -> str:
        try:
            return repr(self.featurizer)
        except Exception:  # some DeepChem featurizers' __repr__ fails (missing attributes)
            return type(self.featurizer).__name__

    # -- one molecule ---------------------------------------------------------------------------
    def graph_data(self, mol: Chem.Mol) -> Any:
        """DeepChem's ``GraphData`` for ``mol`` (atom order kept), RDKit logs silenced.

        Raises:
            MoleculeParseError: the featurizer fails for this molecule or returns something
                other than ``GraphData`` (``reason`` carries DeepChem's message, e.g.
                ``MolGraphConvFeaturizer``'s "More than one atom should be present in the
                molecule for this featurizer to work." for ``[Na+]``).
        """
        if mol is None:
            raise MoleculeParseError(f"{self.name}: no molecule (None)")
        with rdkit_log_capture():
            try:
                data = self.featurizer._featurize(mol)
            except Exception as exc:
                reason = str(exc).strip() or type(exc).__name__
                raise MoleculeParseError(
                    f"{self.name} failed: {reason}", Chem.MolToSmiles(mol)
                ) from exc
        if not isinstance(data, self._graph_data_type):
            raise MoleculeParseError(
                f"{self.name} returned {type(data).__name__}, not GraphData", Chem.MolToSmiles(mol)
            )
        return data

    def mol_to_graph(self, mol: Chem.Mol) -> dgl.DGLGraph:
        """Build the DGL graph of one molecule.

        Returns:
            A graph with ``N = GraphData.num_nodes`` nodes and ``E = GraphData.num_edges``
            edges: ``ndata["x"]`` ``float32 [N, atom_dim]``, ``edata["e"]`` ``float32 [E,
            bond_dim]`` (``bond_dim`` is 0 when the featurizer has no edge features).

        Raises:
            MoleculeParseError: the featurizer fails for ``mol`` (see :meth:`graph_data`).
            ValueError: the featurizer's edges are not symmetric.
        """
        data = self.graph_data(mol)
        nodes = np.asarray(data.node_features, dtype=np.float32)
        nodes = nodes.reshape(nodes.shape[0], -1)
        edge_index = np.asarray(data.edge_index, dtype=np.int64).reshape(2, -1)
        num_edges = edge_index.shape[1]
        if data.edge_features is None:
            edges = np.zeros((num_edges, 0), dtype=np.float32)
        else:
            edges = np.asarray(data.edge_features, dtype=np.float32).reshape(num_edges, -1)
        forward = Counter(zip(edge_index[0].tolist(), edge_index[1].tolist()))
        backward = Counter(zip(edge_index[1].tolist(), edge_index[0].tolist()))
        if forward != backward:
            raise ValueError(
                f"{self.name}: edge_index does not list both directions of every edge; "
                "chemgraph graphs need symmetric edges"
            )
        graph = dgl.graph(
            (torch.from_numpy(edge_index[0].copy()), torch.from_numpy(edge_index[1].copy())),
            num_nodes=nodes.shape[0],
        )
        graph.ndata[NODE_FEATURES] = torch.from_numpy(nodes)
        graph.edata[EDGE_FEATURES] = torch.from_numpy(edges)
        return graph

    __call__ = mol_to_graph

    # -- widths -------------------------------------------------------------------------------
    @functools.cached_property
    def _dims(self) -> tuple[int, int]:
        probe = Chem.MolFromSmiles(_PROBE_SMILES)
        data = self.graph_data(probe)
        atom_dim = int(np.asarray(data.node_features).reshape(probe.GetNumAtoms(), -1).shape[1])
        if data.edge_features is None:
            bond_dim = 0
        else:
            features = np.asarray(data.edge_features)
            bond_dim = int(features.reshape(features.shape[0], -1).shape[1])
        return atom_dim, bond_dim

    @property
    def atom_dim(self) -> int:
        """Width of ``ndata["x"]`` (learned once from a probe molecule, acetanilide)."""
        return self._dims[0]

    @property
    def bond_dim(self) -> int:
        """Width of ``edata["e"]``; 0 when the featurizer gives no edge features."""
        return self._dims[1]

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "featurizer" (DeepChem's repr with its parameters), "atom_dim",
        "bond_dim", "deepchem_version"}``, plain types for manifests and cache keys."""
        return {
            "name": self.name,
            "featurizer": self._featurizer_repr(),
            "atom_dim": self.atom_dim,
            "bond_dim": self.bond_dim,
            "deepchem_version": self._deepchem_version,
        }
