"""SizeBucketBatchSampler: every item once per epoch, similar sizes per batch, reproducible;
used only for families whose batches pad."""

from __future__ import annotations

import torch
from torch.utils.data import BatchSampler

from chemgraph._dgl import dgl
from chemgraph.data.datamodule import MoleculeDataModule, SizeBucketBatchSampler
from chemgraph.models import MODELS


def _sizes(n: int = 1000) -> list[int]:
    return torch.randint(3, 60, (n,), generator=torch.Generator().manual_seed(1)).tolist()


def test_each_item_once_per_epoch_and_len_is_the_number_of_batches():
    sizes = _sizes(1000)
    sampler = SizeBucketBatchSampler(sizes, batch_size=32, seed=0, pool_batches=8)
    for _ in range(3):
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for batch in batches for i in batch) == list(range(1000))
        assert all(1 <= len(batch) <= 32 for batch in batches)


def test_batches_hold_similar_sizes():
    """Within each batch the size spread is far below that of a plain shuffled batch."""
    sizes = torch.tensor(_sizes(4096))
    bucketed = SizeBucketBatchSampler(sizes.tolist(), batch_size=64, seed=0, pool_batches=16)
    plain = SizeBucketBatchSampler(sizes.tolist(), batch_size=64, seed=0, pool_batches=1)

    def mean_spread(sampler):
        spreads = [float(sizes[b].max() - sizes[b].min()) for b in sampler]
        return sum(spreads) / len(spreads)

    # 16 batches per sorted pool of 1,024 sizes in [3, 59]: each batch spans ~57/16 ≈ 3.6
    assert mean_spread(bucketed) < 6
    assert mean_spread(plain) > 45


def test_reproducible_from_the_seed_and_new_order_each_epoch():
    sizes = _sizes(500)
    first = SizeBucketBatchSampler(sizes, 16, seed=3)
    second = SizeBucketBatchSampler(sizes, 16, seed=3)
    epoch0, epoch1 = list(first), list(first)
    assert epoch0 == list(second) and epoch1 == list(second)
    assert epoch0 != epoch1


def test_only_families_with_padded_batches_draw_training_batches_by_size():
    """Disjoint-union batches (GCN, GIN, GMoE) have no padding to save and BatchNorm layers whose
    statistics batches of one size would skew: they get plain shuffled batches."""
    assert {name for name, spec in MODELS.items() if not spec.padded_batches} == {
        "gcn", "gin", "gmoe-gcn", "gmoe-gin"
    }  # fmt: skip

    class Graphs(list):  # a dataset of (graph, labels) items with their ``graphs``
        pass

    graphs = [dgl.graph(([0], [1]), num_nodes=n) for n in range(2, 12)]
    train = Graphs((graph, torch.zeros(1)) for graph in graphs)
    train.graphs = graphs
    for size_buckets, sampler_type in ((True, SizeBucketBatchSampler), (False, BatchSampler)):
        module = MoleculeDataModule(train, None, None, lambda g: g, 4, size_buckets=size_buckets)
        assert type(module.train_dataloader().batch_sampler) is sampler_type
