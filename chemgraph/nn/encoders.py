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

__all__ = ["CategoricalEmbedding", "flat_categorical_indices"]


def flat_categorical_indices(x: torch.Tensor, vocabulary_sizes: Sequence[int]) -> torch.Tensor:
    """Rows of the columns' embedding tables stacked into one: ``x[..., c] + Σ_{c' < c} V_c'``.

    One gather of the stacked table replaces one gather per column
    (:attr:`CategoricalEmbedding.weight`).

    Args:
        x: ``int64 [..., C]`` categorical features.
        vocabulary_sizes: the ``C`` column sizes ``V_c``.

    Returns:
        ``int64 [..., C]`` row indices in ``[0, Σ V_c)``.

    Raises:
        ValueError: ``x`` has another number of columns, or a value outside its column's
            vocabulary.
    """
    if x.shape[-1] != len(vocabulary_sizes):
        raise ValueError(
            f"expected {len(vocabulary_sizes)} categorical columns, got {x.shape[-1]}; the "
            "features come from another featurizer preset than the model was built for"
        )
    sizes = torch.tensor(vocabulary_sizes, device=x.device)
    if bool(((x < 0) | (x >= sizes)).any()):
        raise ValueError(
            f"categorical feature outside the vocabulary sizes {tuple(vocabulary_sizes)}"
        )
    return x + (sizes.cumsum(0) - sizes)


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

    @property
    def weight(self) -> torch.Tensor:
        """The columns' tables stacked, ``float32 [Σ V_c, dim]`` (rows of
        :func:`flat_categorical_indices`)."""
        return torch.cat([table.weight for table in self.tables])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        indices = flat_categorical_indices(x, self.vocabulary_sizes)
        # a bag of C rows per item: no [..., C, dim] intermediate
        flat = nn.functional.embedding_bag(
            indices.reshape(-1, x.shape[-1]), self.weight, mode="sum"
        )
        return flat.reshape(*x.shape[:-1], flat.shape[-1])
