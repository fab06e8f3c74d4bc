"""Lightning DataModule over molecule datasets; the collate builds model batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from chemgraph._dgl import dgl

__all__ = ["MoleculeDataModule", "SeededShuffleSampler", "SizeBucketBatchSampler", "collate_graphs"]

BatchBuilder = Callable[[dgl.DGLGraph], Any]


def collate_graphs(
    items: Sequence[tuple[Any, torch.Tensor]], batch_builder: BatchBuilder
) -> tuple[Any, torch.Tensor]:
    """Collate ``(graph, labels)`` pairs: :func:`dgl.batch`, then ``batch_builder``.

    Args:
        items: pairs of a DGLGraph and its ``float32 [T]`` labels; or of ``(DGLGraph, float32
            [S] inputs)`` and the labels (a :class:`chemgraph.data.MoleculeDataset` with
            ``inputs``), every item alike.
        batch_builder: turns the batched DGLGraph (and, with inputs, their ``float32 [B, S]``
            stack as a second argument) into the model's plain-tensor batch, e.g.
            :func:`chemgraph.batches.edge_set_batch` (passed in: the data layer does not
            depend on the model-facing layers).

    Returns:
        ``(model batch, float32 [B, T] labels)``.
    """
    molecules, labels = zip(*items)
    if isinstance(molecules[0], tuple):  # molecules with inputs besides their graphs
        graphs, inputs = zip(*molecules)
        batch = batch_builder(dgl.batch(list(graphs)), torch.stack(list(inputs)))
    else:
        batch = batch_builder(dgl.batch(list(molecules)))
    return batch, torch.stack(list(labels))


class SizeBucketBatchSampler(Sampler[list[int]]):
    """Shuffled batches of similar-sized graphs, so little of each padded batch is padding.

    Every epoch: shuffle all indices, cut them into pools of ``pool_batches × batch_size``,
    sort each pool by size, cut the sorted pools into batches, shuffle the batches. Each batch
    is thus a random draw among graphs of about one size, and the order of batches is random
    (the "bucketing" of sequence models), so batches hold less padding and an epoch takes less
    time (measured in ``benchmarks/README.md``, "Where an ESA epoch goes").

    Args:
        sizes: a size per item (e.g. atoms + bonds of each graph).
        batch_size: items per batch (the last batch of a pool may be smaller).
        seed: seeds epoch ``k``'s shuffle with ``seed + k``; epochs count the iterations of
            this sampler, unless Lightning sets the epoch (:meth:`set_epoch`), so a run is
            reproducible, and a run resumed from a checkpoint draws the batches of the
            uninterrupted run.
        pool_batches: batches per sorted pool; 1 = plain shuffled batches.

    Raises:
        ValueError: ``batch_size`` or ``pool_batches`` below 1.
    """

    def __init__(
        self, sizes: Sequence[int], batch_size: int, seed: int = 0, pool_batches: int = 32
    ) -> None:
        if batch_size < 1 or pool_batches < 1:
            raise ValueError(
                f"batch_size and pool_batches must be >= 1, got {batch_size}, {pool_batches}"
            )
        self.sizes = torch.as_tensor(list(sizes), dtype=torch.int64)
        self.batch_size = batch_size
        self.seed = seed
        self.pool_batches = pool_batches
        self.epoch = 0

    def __len__(self) -> int:
        pool = self.batch_size * self.pool_batches
        full, rest = divmod(len(self.sizes), pool)
        return full * self.pool_batches + -(-rest // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Draw epoch ``epoch``'s batches next."""
        self.epoch = epoch

    @property
    def sampler(self) -> SizeBucketBatchSampler:
        """Itself: Lightning sets the epoch (``set_epoch``) of a batch sampler's ``sampler`` at
        the start of every training epoch."""
        return self

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.sizes), generator=generator)
        pool = self.batch_size * self.pool_batches
        batches = []
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            chunk = chunk[torch.argsort(self.sizes[chunk], stable=True)]
            batches += [
                chunk[i : i + self.batch_size].tolist()
                for i in range(0, len(chunk), self.batch_size)
            ]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]


class SeededShuffleSampler(Sampler[int]):
    """Every index once per epoch, in epoch ``k``'s random order seeded with ``seed + k``: a run
    is reproducible, and a run resumed from a checkpoint draws the order of the uninterrupted
    run (Lightning sets the epoch, :meth:`set_epoch`; outside Lightning epochs count the
    iterations).

    Args:
        size: the number of items.
        seed: the seed of epoch 0.
    """

    def __init__(self, size: int, seed: int = 0) -> None:
        self.size, self.seed, self.epoch = size, seed, 0

    def __len__(self) -> int:
        return self.size

    def set_epoch(self, epoch: int) -> None:
        """Draw epoch ``epoch``'s order next."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        return iter(torch.randperm(self.size, generator=generator).tolist())


class MoleculeDataModule(L.LightningDataModule):
    """Train/validation/test loaders over datasets of ``(graph, labels)`` items.

    Args:
        train, val, test: datasets (e.g. :class:`chemgraph.data.MoleculeDataset`); val/test may
            be None.
        batch_builder: see :func:`collate_graphs`.
        batch_size: graphs per batch.
        num_workers: DataLoader worker processes.
        seed: seed of the training-set shuffle.
        size_buckets: draw training batches by size (for batch builders that pad).

    With ``size_buckets``, training batches are drawn by :class:`SizeBucketBatchSampler`
    (graphs of about one size per batch) when the training set has ``graphs``
    (:class:`chemgraph.data.MoleculeDataset`) and the run is on one process; otherwise they are
    plain shuffled batches (:class:`SeededShuffleSampler`; under distributed training a plain
    shuffle, which Lightning shards). On one process each epoch's batches depend on the seed
    and the epoch alone, so a fit resumed from its last checkpoint trains as the uninterrupted
    one.
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
        size_buckets: bool = True,
    ) -> None:
        super().__init__()
        self.train, self.val, self.test = train, val, test
        self.size_buckets = size_buckets
        self.collate = partial(collate_graphs, batch_builder=batch_builder)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed

    def loader(self, dataset: Dataset, shuffle: bool = False) -> DataLoader:
        """A DataLoader over any dataset of ``(graph, labels)`` items, in this module's format."""
        generator = torch.Generator().manual_seed(self.seed) if shuffle else None
        return self._data_loader(
            dataset, batch_size=self.batch_size, shuffle=shuffle, generator=generator
        )

    def _data_loader(self, dataset: Dataset, **sampling: Any) -> DataLoader:
        return DataLoader(
            dataset,
            collate_fn=self.collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
            **sampling,
        )

    def train_dataloader(self) -> DataLoader:
        graphs = getattr(self.train, "graphs", None)
        trainer = self.trainer
        if trainer is not None and trainer.world_size > 1:  # Lightning shards a plain shuffle
            return self.loader(self.train, shuffle=True)
        if graphs is None or not self.size_buckets:
            sampler = SeededShuffleSampler(len(self.train), self.seed)
            return self._data_loader(self.train, batch_size=self.batch_size, sampler=sampler)
        sizes = [graph.num_nodes() + graph.num_edges() for graph in graphs]
        sampler = SizeBucketBatchSampler(sizes, self.batch_size, self.seed)
        return self._data_loader(self.train, batch_sampler=sampler)

    def val_dataloader(self) -> DataLoader:
        return self.loader(self.val)

    def test_dataloader(self) -> DataLoader:
        return self.loader(self.test)
