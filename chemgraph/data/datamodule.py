"""Lightning DataModule over molecule datasets; the collate builds model batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from chemgraph._dgl import dgl

__all__ = ["MoleculeDataModule", "collate_graphs"]

BatchBuilder = Callable[[dgl.DGLGraph], Any]


def collate_graphs(
    items: Sequence[tuple[dgl.DGLGraph, torch.Tensor]], batch_builder: BatchBuilder
) -> tuple[Any, torch.Tensor]:
    """Collate ``(graph, labels)`` pairs: :func:`dgl.batch`, then ``batch_builder``.

    Args:
        items: pairs of a DGLGraph and its ``float32 [T]`` labels.
        batch_builder: turns the batched DGLGraph into the model's plain-tensor batch, e.g.
            :func:`chemgraph.batches.edge_set_batch` (passed in: the data layer does not
            depend on the model-facing layers).

    Returns:
        ``(model batch, float32 [B, T] labels)``.
    """
    graphs, labels = zip(*items)
    return batch_builder(dgl.batch(list(graphs))), torch.stack(list(labels))


class MoleculeDataModule(L.LightningDataModule):
    """Train/validation/test loaders over datasets of ``(graph, labels)`` items.

    Args:
        train, val, test: datasets (e.g. :class:`chemgraph.data.MoleculeDataset`); val/test may
            be None.
        batch_builder: see :func:`collate_graphs`.
        batch_size: graphs per batch (paper: 128).
        num_workers: DataLoader worker processes.
        seed: seed of the training-set shuffle.
    """

    def __init__(
        self,
        train: Dataset,
        val: Dataset | None,
        test: Dataset | None,
        batch_builder: BatchBuilder,
        batch_size: int = 128,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.train, self.val, self.test = train, val, test
        self.collate = partial(collate_graphs, batch_builder=batch_builder)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed

    def loader(self, dataset: Dataset, shuffle: bool = False) -> DataLoader:
        """A DataLoader over any dataset of ``(graph, labels)`` items, in this module's format."""
        generator = torch.Generator().manual_seed(self.seed) if shuffle else None
        return DataLoader(
            dataset,
            batch_size=self.batch_size,
            shuffle=shuffle,
            generator=generator,
            collate_fn=self.collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader(self.train, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self.loader(self.val)

    def test_dataloader(self) -> DataLoader:
        return self.loader(self.test)
