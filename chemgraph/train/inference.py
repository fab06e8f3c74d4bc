"""Inference: a trained module's predictions, or readouts, for a set of molecular graphs, and
the one loop that runs the shards of a library through them.

The one forward loop of ``chemgraph predict`` (:mod:`chemgraph.jobs.predict`), ``chemgraph
fingerprint`` (:mod:`chemgraph.jobs.fingerprint`), transfer learning's evaluation
(:mod:`chemgraph.transfer`) and the benchmarks; and :func:`run_shard_tasks`, which runs
one task per graph shard in this process, in worker processes, or as dask.distributed tasks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.context import BaseContext
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from chemgraph._dask import run_on_dask
from chemgraph._dgl import dgl
from chemgraph._processes import release_freed_memory
from chemgraph.graphs.shards import select_graphs
from chemgraph.models import get_model_spec, readout_width
from chemgraph.train.predictors import PropertyPredictorBase

__all__ = [
    "PADDED_SIZE_PER_MOLECULE",
    "embed_graphs",
    "embedding_width",
    "model_inputs",
    "predict_graphs",
    "run_shard_tasks",
]


def model_inputs(
    module: PropertyPredictorBase, graphs: dgl.DGLGraph
) -> tuple[dgl.DGLGraph | list[dgl.DGLGraph], Callable[[dgl.DGLGraph], Any]]:
    """What :func:`predict_graphs` and :func:`embed_graphs` take for ``module`` from a batched
    graph (a graph shard's, :func:`chemgraph.graphs.load_shard_batch`).

    Returns:
        ``(graphs, batch_builder)``: the batched graph as it is, or one graph per molecule
        after the model's graph transform (e.g. Graphormer's shortest paths,
        :meth:`chemgraph.models.ModelSpec.transform_graphs`); and the model's collate
        (:meth:`~chemgraph.train.predictors.PropertyPredictorBase.batch_builder`).
    """
    spec = get_model_spec(module.hparams.model)
    inputs = graphs
    if spec.graph_transform is not None:  # per molecule
        inputs = spec.transform_graphs(module.model.config, dgl.unbatch(graphs))
    return inputs, module.batch_builder()


def predict_graphs(
    module: PropertyPredictorBase,
    graphs: dgl.DGLGraph | Sequence[dgl.DGLGraph],
    batch_builder: Callable[..., Any],
    batch_size: int,
    low_fidelity: np.ndarray | None = None,
) -> np.ndarray:
    """Predictions of ``module`` for every molecule of ``graphs``, in order, on the module's
    device.

    Molecules are batched in order of size (atoms + bonds), so that a padded batch holds little
    padding (more molecules per second than batches in input order), at most ``batch_size``
    of them and at most :data:`PADDED_SIZE_PER_MOLECULE` ``× batch_size`` nodes + edges once
    padded (fewer molecules in a batch of large ones); the predictions come back in input
    order.

    Args:
        module: a trained model (put in eval mode here): a checkpoint's
            :class:`~chemgraph.train.predictors.PropertyPredictor`, or the
            :class:`~chemgraph.train.module.PropertyPredictionModule` that trained it.
        graphs: the molecules as one batched homogeneous DGLGraph (a graph shard's,
            :func:`chemgraph.graphs.load_shard_batch`; batches are cut from it with
            :func:`chemgraph.graphs.select_graphs`), or one graph per molecule (after the
            model's graph transform, :meth:`chemgraph.models.ModelSpec.transform_graphs`).
        batch_builder: the model's collate
            (:meth:`~chemgraph.train.predictors.PropertyPredictorBase.batch_builder`).
        batch_size: the most molecules per forward pass (at least 1).
        low_fidelity: ``float [N, S]``, the values of the module's
            :attr:`~chemgraph.train.predictors.PropertyPredictorBase.low_fidelity_inputs`
            (a label-augmented model; a NaN gives NaN predictions for that molecule alone);
            None for the others.

    Returns:
        ``float32 [N, T]``: target units for regression, probability of class 1 for
        classification.

    Raises:
        ValueError: a label-augmented model without ``low_fidelity``, ``low_fidelity`` for a
            model that reads none, or of another shape than ``[N, S]``.
    """
    width = len(module.hparams.target_columns)
    return _in_size_order(
        module, graphs, batch_builder, batch_size, width,
        lambda inputs: module.predict_step((inputs, None), 0), low_fidelity,
    )  # fmt: skip


def embed_graphs(
    module: PropertyPredictorBase,
    graphs: dgl.DGLGraph | Sequence[dgl.DGLGraph],
    batch_builder: Callable[..., Any],
    batch_size: int,
    low_fidelity: np.ndarray | None = None,
) -> np.ndarray:
    """The learned embedding of every molecule of ``graphs``, in order: the model's readout
    ``model.embed(batch)`` (:class:`chemgraph.models.PropertyModel`), whose ``model.head`` gives
    the module's outputs before the target scaler (regression) or the sigmoid
    (classification). Batched as :func:`predict_graphs` batches (the same arguments; a
    label-augmented model's readout ends with the standardised ``low_fidelity`` values).

    Returns:
        ``float32 [N, D]``, ``D`` = :func:`embedding_width` of the model.
    """
    return _in_size_order(
        module, graphs, batch_builder, batch_size, embedding_width(module), module.model.embed,
        low_fidelity,
    )  # fmt: skip


def embedding_width(module: PropertyPredictorBase) -> int:
    """``D``, the width of the model's readout (:func:`chemgraph.models.readout_width`).

    Raises:
        ValueError: a head without a linear layer.
    """
    return readout_width(module.model)


def _in_size_order(
    module: PropertyPredictorBase,
    graphs: dgl.DGLGraph | Sequence[dgl.DGLGraph],
    batch_builder: Callable[..., Any],
    batch_size: int,
    width: int,
    forward: Callable[[Any], torch.Tensor],
    low_fidelity: np.ndarray | None = None,
) -> np.ndarray:
    """``forward(batch)`` of every molecule, ``float32 [N, width]`` in input order, computed in
    batches of molecules of similar size; a label-augmented model's batches also get their
    molecules' rows of ``low_fidelity``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if isinstance(graphs, dgl.DGLGraph):
        sizes = (graphs.batch_num_nodes() + graphs.batch_num_edges()).numpy()
        take = functools.partial(select_graphs, graphs)
    else:
        sizes = np.array([g.num_nodes() + g.num_edges() for g in graphs], dtype=np.int64)
        take = lambda indices: dgl.batch([graphs[i] for i in indices])  # noqa: E731
    columns = module.low_fidelity_inputs
    if bool(columns) != (low_fidelity is not None):
        raise ValueError(
            f"a label-augmented model needs the low-fidelity values {columns} of every molecule"
            if columns
            else "low-fidelity values given for a model that reads none"
        )
    if low_fidelity is not None:
        low_fidelity = np.asarray(low_fidelity, dtype=np.float32)
        if low_fidelity.shape != (len(sizes), len(columns)):
            raise ValueError(
                f"low-fidelity values must be [{len(sizes)}, {len(columns)}] ({columns}), got "
                f"{list(low_fidelity.shape)}"
            )
    order = np.argsort(sizes, kind="stable")
    module.eval()
    device = next(module.parameters()).device
    computed = np.empty((len(order), width), np.float32)
    with torch.inference_mode():
        for indices in _size_batches(order, sizes[order], batch_size):
            extra = () if low_fidelity is None else (low_fidelity[indices],)
            inputs = batch_builder(take(indices), *extra).to(device)
            computed[indices] = forward(inputs).float().cpu().numpy()
    return computed


PADDED_SIZE_PER_MOLECULE = 64
"""A batch of :func:`predict_graphs` holds at most ``batch_size`` molecules and, padded to its
largest, at most ``batch_size × PADDED_SIZE_PER_MOLECULE`` nodes + edges: molecules up to this
size (HIV's median is 75) fill whole batches, larger ones come in smaller batches, so that the
tail of large molecules is not padded (attention: ``B·L²``) into a batch of ``batch_size``
(``benchmarks/README.md``, scoring a library)."""


def _size_batches(
    order: np.ndarray, sorted_sizes: np.ndarray, batch_size: int
) -> Iterator[np.ndarray]:
    """The batches of ``order`` (molecules sorted by size, ``sorted_sizes`` ascending): runs of
    at most ``batch_size`` molecules whose count times their largest size stays within
    ``batch_size × PADDED_SIZE_PER_MOLECULE`` (a larger molecule alone)."""
    budget = batch_size * PADDED_SIZE_PER_MOLECULE
    start = 0
    while start < len(order):
        counts = np.arange(1, min(batch_size, len(order) - start) + 1)
        fits = counts * sorted_sizes[start : start + len(counts)] <= budget  # True, then False
        stop = start + max(1, int(fits.sum()))
        yield order[start:stop]
        start = stop


# -- the shards of a library -------------------------------------------------------------------


def run_shard_tasks(
    task: Callable[[int], int],
    shards: Sequence[int],
    workers: int = 1,
    dask_scheduler: str | None = None,
    describe: Callable[[int], str | None] | None = None,
    context: BaseContext | None = None,
) -> Iterator[int]:
    """Run ``task(shard)`` for every shard and yield what each returns, as the shards finish.

    A task scores one graph shard and writes its part of the output itself (atomically, so a
    killed task leaves no part), so that runs are resumed by leaving out the shards whose part
    exists. After each task the process that ran it gives the memory the task freed back to
    the operating system (:func:`chemgraph._processes.release_freed_memory`), so that its
    memory stays that of one shard. The generator must be closed when it is not run to the end
    (``contextlib.closing``): closing stops the workers at once.

    Args:
        task: picklable (sent to the workers); returns the shard's number of records.
        shards: the shards to run.
        workers: in this process (1), or in that many worker processes of a torch
            :class:`~torch.utils.data.DataLoader` (each runs torch on one thread, which scales
            better on few cores than threads inside one forward pass; the loader stops them when
            the run ends, is interrupted or its parent dies). Not used with ``dask_scheduler``.
        context: how the worker processes start (a :mod:`multiprocessing` context); None:
            the DataLoader's default (``fork`` on Linux: a copy of this process, whose heap
            pages the worker then copies as it allocates into them, so that after a large
            library's featurization each worker's private memory grew with every shard it
            scored: ``benchmarks/README.md``, ``predict_memory.py``).
        dask_scheduler: the address of a dask.distributed scheduler (``tcp://host:8786``): each
            shard is then one task, run on one torch thread (:func:`chemgraph._dask.run_on_dask`:
            a task whose worker dies is run again by dask on another worker). The workers need
            the files the tasks read and write: a file system they share.
        describe: what a shard holds (its input rows), for the message of a shard whose dask
            workers all died.

    Raises:
        MissingDependencyError: ``dask_scheduler`` without dask.distributed installed.
        chemgraph._dask.WorkersDied: every dask worker that ran a shard died (likely memory;
            the shards done are kept).
        Exception: what a task raised.
    """
    if dask_scheduler is not None:
        calls = ((shard,) for shard in shards)
        yield from run_on_dask(
            functools.partial(_on_one_thread, task), calls, dask_scheduler, "score-shard",
            describe,
        )  # fmt: skip
        return
    loader = DataLoader(
        _Tasks(task, shards), batch_size=None, num_workers=workers if workers > 1 else 0,
        collate_fn=_as_is, multiprocessing_context=context if workers > 1 else None,
    )  # fmt: skip
    running = iter(loader)
    try:
        yield from running
    except BaseException:  # an error, an interrupt, or the generator closed early
        # Stop the workers now: a traceback holds the iterator, whose own clean-up would wait
        # until it is freed. (The method the DataLoader calls when it is done; torch has no
        # public one.)
        if hasattr(running, "_shutdown_workers"):
            running._shutdown_workers()
        raise


class _Tasks(Dataset):
    """Item ``i`` runs ``task(shards[i])``."""

    def __init__(self, task: Callable[[int], int], shards: Sequence[int]) -> None:
        self.task, self.shards = task, list(shards)

    def __len__(self) -> int:
        return len(self.shards)

    def __getitem__(self, index: int) -> int:
        return _released(self.task, self.shards[index])


def _as_is(records: int) -> int:
    return records


def _released(task: Callable[[int], int], shard: int) -> int:
    """``task(shard)``, then the memory it freed given back to the operating system
    (:func:`chemgraph._processes.release_freed_memory`), so that a worker's peak stays that
    of one shard however many it scores."""
    try:
        return task(shard)
    finally:
        release_freed_memory()


def _on_one_thread(task: Callable[[int], int], shard: int) -> int:
    """``task(shard)`` with torch on one thread, as in a local worker process (so that a shard
    gives the same bytes on a cluster as locally)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _released(task, shard)
    finally:
        torch.set_num_threads(threads)
