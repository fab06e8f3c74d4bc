"""The chains of a transfer run trained side by side in worker processes (:func:`run_chains`),
one torch thread each, with the same results as one after another at the same thread count.

The processes are :class:`chemgraph._processes.WorkerProcess` (``spawn``; Ctrl-C ignored in
them, they die with the parent, plain-pickle pipes, the worker's traceback as the cause of an
error raised here), the same helper as the library's worker pool.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import numpy as np
import torch

from chemgraph._interrupts import interrupts_raise
from chemgraph._processes import WorkerProcess, raise_remote, receive, serve, worker_pool
from chemgraph.data.multi_fidelity import MultiFidelityData
from chemgraph.train.inference import predict_graphs
from chemgraph.transfer.chains import (
    Chain,
    build_module,
    pretraining_pool,
    train_chain,
)
from chemgraph.transfer.config import TransferConfig

__all__ = ["available_cpus", "run_chains"]

log = logging.getLogger(__name__)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_chains(
    chains: list[Chain],
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    out: Path,
    pretrained_cache: dict | None,
    unlabelled: np.ndarray | None,
    finished: Callable[[int, tuple[np.ndarray, np.ndarray, dict[str, Any]]], None],
    resume: bool = False,
) -> None:
    """Train every chain (:func:`chemgraph.transfer.chains.train_chain`) and call
    ``finished(index, result)`` as each completes: in this process, one after another, with
    ``config.workers`` 1 (or 1 CPU or 1 chain), else in ``min(workers, CPUs, chains)`` worker
    processes (``spawn``, one torch thread each) that take the next chain as they finish one.

    Every chain seeds itself, so its result does not depend on where or after which chain it
    runs. ``resume``: each chain continues from the state an interrupted run of the same
    settings kept in ``out`` (:func:`~chemgraph.transfer.chains.train_chain`).
    ``pretrained_cache``: as :func:`chemgraph.transfer.run.run_transfer`'s; a worker is sent
    the cached pretrained model of its chain and sends back the one it pretrained.

    Raises:
        Exception: a chain's error, with a note naming the chain (from a worker: the worker's
            traceback as its cause).
        RuntimeError: a worker process died (its exit code).
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM while worker processes train
            (main thread only). On any error the workers are killed at once (they die with
            this process too: :func:`~chemgraph._interrupts.die_with_parent`).
    """
    workers = max(1, min(config.workers, available_cpus(), len(chains)))
    log.info("%s", _plan(chains, data, split, config, workers))
    if workers <= 1:
        for index, chain in enumerate(chains):
            try:
                result = train_chain(
                    data, split, config, chain, out, pretrained_cache, unlabelled, resume=resume
                )
            except Exception as error:
                error.add_note(f"while training {chain.label}")
                raise
            finished(index, result)
        return
    context = multiprocessing.get_context("spawn")
    level = logging.getLogger("chemgraph").getEffectiveLevel()
    pending = deque(enumerate(chains))
    with interrupts_raise(), worker_pool() as pool:
        pool += [_ChainWorker(context, level) for _ in range(workers)]
        for worker in pool:  # after every start: the workers import in parallel
            worker.send((data, split, config, out, unlabelled, resume))
        while True:
            for worker in pool:
                if worker.index is None and pending:
                    pretraining = {chains[w.index].key for w in pool if w.index is not None}
                    taken = _next_chain(pending, pretraining, pretrained_cache)
                    if taken is None:  # every pending chain waits for a pretraining
                        break
                    index, chain = taken
                    cached = None if pretrained_cache is None else pretrained_cache.get(chain.key)
                    worker.assign(index, chain, cached, pretrained_cache is not None)
            busy = [w for w in pool if w.index is not None]
            if not busy:
                break
            wait([w.connection for w in busy] + [w.process.sentinel for w in busy])
            for worker in busy:
                message = worker.receive()
                chain = chains[worker.index]
                if message is None:
                    if worker.process.is_alive():
                        continue
                    raise RuntimeError(
                        f"the worker training {chain.label} died "
                        f"(exit code {worker.process.exitcode})"
                    )
                kind, answer = message
                if kind == "error":
                    raise_remote(answer, f"in the worker process training {chain.label}")
                result, pretrained = answer
                if pretrained is not None:
                    pretrained_cache[chain.key] = pretrained
                index, worker.index = worker.index, None
                finished(index, result)


def _next_chain(
    pending: deque[tuple[int, Chain]], pretraining: set, pretrained_cache: dict | None
) -> tuple[int, Chain] | None:
    """The next chain to train, taken from ``pending``: the first whose pretrained model is
    not being made by a busy worker (``pretraining``: their chains' keys), so that a chain
    sharing it (``label_augmentation`` and ``transductive``) waits for the cache rather than
    pretraining it again (which takes longer than the wait); None when every pending chain
    waits (the worker stays idle until a chain finishes). Without a cache the first pending.
    The order changes no result: every chain seeds itself."""
    if pretrained_cache is None:
        return pending.popleft()
    for position, (index, chain) in enumerate(pending):
        if chain.key not in pretraining or chain.key in pretrained_cache:
            del pending[position]
            return index, chain
    return None


def _plan(
    chains: list[Chain],
    data: MultiFidelityData,
    split: dict[str, np.ndarray],
    config: TransferConfig,
    workers: int,
) -> str:
    """What :func:`run_chains` is about to do, said before any training: the chains, the
    processes, the epoch bounds and a bound of the time. The time is measured, not guessed: a
    forward pass over a batch of training molecules on one thread (as each worker trains),
    times 3 for a training step, times the molecules and epochs of every phase if none stopped
    early, over the processes; early stopping usually ends each phase far sooner."""
    first = chains[0]
    sample = [data.graphs[i] for i in split["train"][: config.batch_size]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        module = build_module(
            config, list(first.names), data.high[split["train"]][:, list(first.columns)], 1e-3
        )
        started = time.perf_counter()
        predict_graphs(module, sample, module.batch_builder(), config.batch_size)
        per_molecule = 3 * (time.perf_counter() - started) / max(1, len(sample))
    except Exception:  # noqa: BLE001 - the chain that trains on them reports it, named
        per_molecule = None
    finally:
        torch.set_num_threads(threads)
    pretrainings = {c.key: c for c in chains}.values()  # label_augmentation: transductive's
    pools = sum(
        len(pretraining_pool(data, split, c.strategy, list(c.columns))) for c in pretrainings
    )
    steps = pools * config.pretrain_epochs
    steps += len(chains) * len(split["train"]) * config.finetune_max_epochs
    processes = (
        "in this process"
        if workers == 1
        else f"in {workers} worker processes, one torch thread each"
    )
    return (
        f"{len(chains)} chains {processes} "
        f"({len(config.strategies)} strategies x {config.seeds} seeds x "
        f"{len(chains) // (len(config.strategies) * config.seeds)} models); at most "
        f"{config.pretrain_epochs} pretraining and {config.finetune_max_epochs} fine-tuning "
        f"epochs each"
        + (
            ""
            if per_molecule is None
            else f": about {per_molecule * steps / workers / 60:.0f} minutes on this machine if "
            "no phase stopped early"
            + (", which early stopping usually prevents" if config.pretrain_early_stopping else "")
        )
    )


class _ChainWorker(WorkerProcess):
    """One worker process of :func:`run_chains` and the index of the chain it trains."""

    def __init__(self, context: Any, level: int) -> None:
        super().__init__(context, _chain_worker, level)
        self.index: int | None = None

    def assign(self, index: int, chain: Chain, cached: Any, keep_pretrained: bool) -> None:
        self.index = index
        self.send((chain, cached, keep_pretrained))


def _chain_worker(connection: Any, level: int) -> None:
    """A worker process of :func:`run_chains`: receive ``(data, split, config, out,
    unlabelled, resume)`` once, then train the chains it is sent
    (:func:`chemgraph._processes.serve`), answering each with ``(result, pretrained cache
    entry or None)``; its log lines are prefixed with the chain."""
    torch.set_num_threads(1)
    from chemgraph.train.trainer import quiet_third_party_warnings

    quiet_third_party_warnings()
    logger = logging.getLogger("chemgraph")
    logger.setLevel(level)
    handler = logging.StreamHandler(sys.stdout)
    logger.addHandler(handler)
    try:
        data, split, config, out, unlabelled, resume = receive(connection)
    except EOFError:
        return

    def train(task: tuple[Chain, Any, bool]) -> tuple[Any, Any]:
        chain, cached, keep_pretrained = task
        handler.setFormatter(logging.Formatter(f"[{chain.label}] %(message)s"))
        cache = ({} if cached is None else {chain.key: cached}) if keep_pretrained else None
        result = train_chain(
            data, split, config, chain, out, cache, unlabelled, progress_bars=False, resume=resume
        )
        return result, (cache.get(chain.key) if cache is not None else None)

    serve(connection, train, lambda task: f"in the worker training {task[0].label}")
