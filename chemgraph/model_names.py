"""The names and one-line descriptions of the registered model families, without torch.

:data:`chemgraph.models.MODELS` registers one :class:`~chemgraph.models.ModelSpec` per name
here, in this order, with this description; the ``chemgraph`` command builds ``train --model``
(its choices and help) from this module so that the parser never imports the models.
"""

from __future__ import annotations

__all__ = ["MODEL_DESCRIPTIONS"]

MODEL_DESCRIPTIONS: dict[str, str] = {
    "esa": "edge-set attention over bonds (Buterez et al. 2024)",
    "nsa": "node-set attention over atoms (Buterez et al. 2024)",
    "esa-3d": "edge-set attention over the radius graph of a 3D structure: atom types and "
    "Gaussian distances (Buterez et al. 2024)",
    "graphormer": "Transformer over atoms with degree, distance and path biases (Ying et al. 2021)",
    "grat": "graph-aware transformer: attention scaled and shifted per bond type and distance, "
    "<CLS> readout (Yoo et al. 2020)",
    "gmoe-gcn": "graph mixture of GCN experts, hop-1 and hop-2 (Wang et al. 2023)",
    "gmoe-gin": "graph mixture of GIN experts, hop-1 and hop-2 (Wang et al. 2023)",
    "gcn": "graph convolutional network, OGB baseline (GMoE with one expert)",
    "gin": "graph isomorphism network, OGB baseline (GMoE with one expert)",
}
