"""Graph shards on disk: many molecules' graphs in one ``dgl.save_graphs`` file.

A shard holds one batched graph (graph ``i`` = molecule ``i`` of the shard) and, as DGL graph
labels, ``row`` (``int64 [n]``, the input record of each graph), ``num_nodes`` and
``num_edges`` (``int64 [n]``), from which :func:`load_shard` restores the per-molecule graphs.
Saving one batched graph instead of ``n`` small ones is what makes writing fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from chemgraph._dgl import dgl

__all__ = ["save_shard", "load_shard", "atomic_path"]


def atomic_path(path: str | Path) -> Path:
    """A temporary name beside ``path`` (same folder, so ``os.replace`` is atomic)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def save_shard(path: str | Path, graph: dgl.DGLGraph, rows: torch.Tensor) -> None:
    """Write a batched graph and the input rows of its molecules, atomically.

    Args:
        path: the shard file (``.bin``).
        graph: batched graph of ``n`` molecules (e.g. :func:`chemgraph.graphs.mols_to_graphs`).
        rows: ``int64 [n]`` input record of each molecule.

    Raises:
        ValueError: ``rows`` does not have one entry per graph.
    """
    if len(rows) != graph.batch_size:
        raise ValueError(f"{len(rows)} rows for {graph.batch_size} graphs")
    labels = {
        "row": torch.as_tensor(rows, dtype=torch.int64),
        "num_nodes": graph.batch_num_nodes().to(torch.int64),
        "num_edges": graph.batch_num_edges().to(torch.int64),
    }
    temporary = atomic_path(path)
    dgl.save_graphs(str(temporary), [graph], labels)
    os.replace(temporary, path)


def load_shard(path: str | Path) -> tuple[list[dgl.DGLGraph], torch.Tensor]:
    """Read a shard written by :func:`save_shard`.

    Returns:
        ``(graphs, rows)``: one DGLGraph per molecule, in shard order, and ``int64 [n]`` their
        input rows.
    """
    (graph,), labels = dgl.load_graphs(str(path))
    if len(labels["row"]) == 0:
        return [], labels["row"]
    graph.set_batch_num_nodes(labels["num_nodes"])
    graph.set_batch_num_edges(labels["num_edges"])
    return dgl.unbatch(graph), labels["row"]
