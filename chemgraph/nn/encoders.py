"""Token encoders for integer-categorical features (the ``ogb`` preset).

References:
    W. Hu et al. (2020), "Open Graph Benchmark: Datasets for Machine Learning on Graphs",
    NeurIPS 2020, https://arxiv.org/abs/2005.00687 (``AtomEncoder``/``BondEncoder``).
    C. Ying et al. (2021), "Do Transformers Really Perform Badly for Graph Representation?",
    NeurIPS 2021, https://arxiv.org/abs/2106.05234.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["CategoricalEmbedding"]


class CategoricalEmbedding(nn.Module):
    """Sum of one learnable embedding per categorical column (OGB ``AtomEncoder`` /
    ``BondEncoder``, Hu et al. 2020; Graphormer's atom and edge encoders, Ying et al. 2021).

    ``out = Σ_c E_c[x[..., c]]`` with ``E_c`` of shape ``[vocabulary_sizes[c], dim]``
    (Xavier-uniform initialised, as OGB's encoders).

    Args:
        vocabulary_sizes: categories per column, e.g. ``OGBAtomFeaturizer().vocabulary_sizes``.
        dim: embedding width.

    Raises:
        ValueError: (forward) ``x`` has another number of columns, or a value outside its
            column's vocabulary.

    Shapes:
        - input: ``x: int64 [..., C]`` (``C = len(vocabulary_sizes)``).
        - output: ``float32 [..., dim]``.
    """

    def __init__(self, vocabulary_sizes: Sequence[int], dim: int) -> None:
        super().__init__()
        self.vocabulary_sizes = tuple(int(v) for v in vocabulary_sizes)
        self.tables = nn.ModuleList(nn.Embedding(size, dim) for size in self.vocabulary_sizes)
        for table in self.tables:
            nn.init.xavier_uniform_(table.weight)
        # One flat table would be one gather instead of C; offsets map column c to its rows.
        offsets = torch.tensor((0, *self.vocabulary_sizes[:-1])).cumsum(0)
        self.register_buffer("offsets", offsets, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != len(self.tables):
            raise ValueError(
                f"expected {len(self.tables)} categorical columns, got {x.shape[-1]}; the "
                "features come from another featurizer preset than the model was built for"
            )
        sizes = self.offsets.new_tensor(self.vocabulary_sizes)
        if bool(((x < 0) | (x >= sizes)).any()):
            raise ValueError(
                f"categorical feature outside the vocabulary sizes {self.vocabulary_sizes}"
            )
        weight = torch.cat([table.weight for table in self.tables])
        return nn.functional.embedding(x + self.offsets, weight).sum(dim=-2)
