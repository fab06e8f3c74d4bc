"""Graph shards on disk: many molecules' graphs in one compact, byte-reproducible file.

A shard holds the graphs of ``n`` molecules (graph ``i`` = molecule ``i`` of the shard) and
``rows`` (``int64 [n]``, the input record of each graph). :func:`load_shard` gives back the
per-molecule graphs with the node and edge data saved, bit for bit (same dtype, shape and
values), and the same edges, in the same order, with the same id type.

File layout (format 1; every number little-endian)::

    bytes 0-15    magic b"chemgraph shard\\n"
    bytes 16-23   uint64 H, the length of the header
    next H bytes  header: UTF-8 JSON (sorted keys), padded with spaces to a multiple of 8
    the rest      the arrays the header describes, each at a multiple of 8 bytes

Each array is described as ``{"dtype": numpy dtype string, "shape": [...], "offset": bytes
from the end of the header}``, so any language can read a shard without DGL. The header holds
``format``, ``idtype`` (``"int32"`` or ``"int64"``), the arrays ``rows``, ``num_nodes``,
``num_edges`` (per graph) and ``src``, ``dst`` (edge ends in edge-id order, as node numbers
within the edge's graph), and ``ndata``/``edata``: per key, ``{"dtype": torch dtype name,
"shape": [...]}`` and the arrays that encode the tensor:

- integers (``int8`` ... ``int64``, ``uint8``): ``values``, stored as the first of ``uint8``,
  ``int8``, ``int16``, ``int32``, ``int64`` that holds every value (category indices such as
  the ``ogb`` preset's take one byte). So are ``rows``, the counts and the edge ends.
- ``bool``: ``bits``, the values bit-packed (:func:`numpy.packbits`, little bit order).
- floats (``float16``/``32``/``64``), seen as ``[L, C]`` columns (``C`` the product of the
  trailing dimensions): ``binary`` lists the columns whose every value is exactly ``+0.0`` or
  ``1.0`` (the one-hot and flag columns of the ``canonical`` preset), stored bit-packed per
  row in ``bits`` (``uint8 [L, ceil(len(binary) / 8)]``); the other columns (atomic mass,
  coordinates, distances) are stored as they are, in ``values`` (``[L, C - len(binary)]``).

The bytes are a function of the graphs and rows only: saving equal inputs gives equal files, so
a shard's sha256 can key a cache. A shard is many times smaller than the ``dgl.save_graphs``
file that earlier chemgraph versions wrote (``benchmarks/README.md``, "Graph shard size").

Shards of that earlier format (``dgl.save_graphs`` of one batched graph with the labels
``row``, ``num_nodes``, ``num_edges``) still load: :func:`load_shard` recognises DGL's file
signature and reads them with :func:`dgl.load_graphs`.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from chemgraph._files import atomic_path
from chemgraph.graphs.arrays import GraphArrays

if TYPE_CHECKING:
    import dgl

__all__ = [
    "SHARD_FORMAT",
    "load_shard",
    "load_shard_batch",
    "save_shard",
    "save_shard_arrays",
    "select_graphs",
    "shard_rows",
]

SHARD_FORMAT = 1
"""Version of the file layout written by :func:`save_shard`."""

_MAGIC = b"chemgraph shard\n"
_LENGTH = struct.Struct("<Q")
_ALIGN = 8
# what files written by dgl.save_graphs (the shards of earlier chemgraph versions) start with
_DGL_MAGIC = struct.pack("<Q", 0xDD2E4FF046B4A13F)
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
_NARROW_INTS = tuple(np.dtype(name) for name in ("uint8", "int8", "int16", "int32", "int64"))


def save_shard(path: str | Path, graph: dgl.DGLGraph, rows: torch.Tensor) -> None:
    """Write a batched graph and the input rows of its molecules, atomically.

    Args:
        path: the shard file (``.bin``); written to :func:`atomic_path` first, then renamed.
        graph: a homogeneous batched graph of ``n`` molecules (e.g.
            :func:`chemgraph.graphs.mols_to_graphs` or :func:`dgl.batch`), on the CPU. Its node
            and edge data may be any tensors whose first dimension is the number of nodes
            (edges) and whose dtype is ``bool``, ``uint8``, ``int8`` ... ``int64`` or
            ``float16``/``32``/``64``.
        rows: ``[n]`` integers, the input record of each molecule (stored as ``int64``).

    Raises:
        ValueError: ``rows`` does not have one entry per graph, a heterograph, or node/edge
            data of another dtype (e.g. ``bfloat16``).
    """
    if not graph.is_homogeneous:
        raise ValueError(f"shards hold homogeneous graphs, got edge types {graph.canonical_etypes}")
    save_shard_arrays(path, GraphArrays.of_graph(graph), rows)


def save_shard_arrays(path: str | Path, arrays: GraphArrays, rows: torch.Tensor) -> None:
    """:func:`save_shard` of a batch given as its arrays (e.g.
    :func:`chemgraph.graphs.mols_to_graph_arrays`): the same bytes, without DGL.

    Raises:
        ValueError: ``rows`` does not have one entry per graph, or node/edge data of a dtype
            shards do not store.
    """
    if len(rows) != len(arrays.num_nodes):
        raise ValueError(f"{len(rows)} rows for {len(arrays.num_nodes)} graphs")
    blob = _Blob()
    num_nodes = arrays.num_nodes.numpy().astype(np.int64)
    num_edges = arrays.num_edges.numpy().astype(np.int64)
    src, dst = (t.numpy().astype(np.int64) for t in (arrays.src, arrays.dst))
    first_node = np.repeat(np.cumsum(num_nodes) - num_nodes, num_edges)
    header: dict[str, Any] = {
        "format": SHARD_FORMAT,
        "idtype": str(arrays.src.dtype).removeprefix("torch."),
        "rows": blob.add(_narrowest(torch.as_tensor(rows, dtype=torch.int64).numpy())),
        "num_nodes": blob.add(_narrowest(num_nodes)),
        "num_edges": blob.add(_narrowest(num_edges)),
        "src": blob.add(_narrowest(src - first_node)),
        "dst": blob.add(_narrowest(dst - first_node)),
        "ndata": {key: _encode(blob, key, arrays.ndata[key]) for key in sorted(arrays.ndata)},
        "edata": {key: _encode(blob, key, arrays.edata[key]) for key in sorted(arrays.edata)},
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % _ALIGN)
    temporary = atomic_path(path)
    with open(temporary, "wb") as handle:
        handle.write(_MAGIC + _LENGTH.pack(len(text)) + text)
        handle.writelines(blob.chunks)
    os.replace(temporary, path)


def load_shard(path: str | Path) -> tuple[list[dgl.DGLGraph], torch.Tensor]:
    """Read a shard written by :func:`save_shard` (or a ``dgl.save_graphs`` shard of earlier
    chemgraph versions, see the module docstring).

    Returns:
        ``(graphs, rows)``: one DGLGraph per molecule, in shard order, with the node and edge
        data saved (same dtypes and values), and ``int64 [n]`` their input rows.

    Raises:
        ValueError: see :func:`load_shard_batch`.
    """
    from chemgraph._dgl import dgl

    graph, rows = load_shard_batch(path)
    return dgl.unbatch(graph), rows


def load_shard_batch(path: str | Path) -> tuple[dgl.DGLGraph, torch.Tensor]:
    """Read a shard as one batched graph, without a DGLGraph per molecule (scoring a shard
    batch by batch with :func:`select_graphs` costs a fifth of unbatching and batching again).

    Returns:
        ``(graph, rows)``: the batched DGLGraph of the shard's ``n`` molecules (``batch_size``
        ``n``; ``batch_num_nodes``/``batch_num_edges`` set, so :func:`dgl.unbatch` gives the
        graphs of :func:`load_shard`), and ``int64 [n]`` their input rows.

    Raises:
        ValueError: a file that is no graph shard, a shard of a newer format than this
            chemgraph reads, or a truncated one (the message says to run ``chemgraph
            featurize`` again).
    """
    read = _read_shard(path)
    if read is None:
        return _load_dgl_shard(path)
    header, body = read
    try:
        return _decode_shard(header, body)
    except (KeyError, ValueError) as error:  # e.g. numpy: the file is shorter than its arrays
        raise _damaged(path, error) from None


def _read_shard(path: str | Path) -> tuple[dict[str, Any], memoryview] | None:
    """A chemgraph shard's header and the bytes of its arrays; None for a DGL-format shard.

    Raises:
        ValueError: as :func:`load_shard_batch`.
    """
    data = Path(path).read_bytes()
    if data[: len(_DGL_MAGIC)] == _DGL_MAGIC:
        return None
    if data[: len(_MAGIC)] != _MAGIC:
        raise ValueError(f"{path} is not a chemgraph graph shard")
    try:
        (length,) = _LENGTH.unpack_from(data, len(_MAGIC))
        start = len(_MAGIC) + _LENGTH.size
        header = json.loads(data[start : start + length])
        version = header["format"]
    except (struct.error, KeyError, ValueError) as error:
        raise _damaged(path, error) from None
    if version > SHARD_FORMAT:
        raise ValueError(
            f"{path} is a graph shard of format {version}; this chemgraph version reads formats "
            f"up to {SHARD_FORMAT}: upgrade chemgraph"
        )
    return header, memoryview(data)[start + length :]


def shard_rows(path: str | Path) -> np.ndarray:
    """The input rows of a shard (``int64 [n]``), after checking that the file holds every
    array its header describes; without DGL and without decoding the graphs.

    Raises:
        ValueError: as :func:`load_shard_batch` (no graph shard, a newer format, truncated).
    """
    read = _read_shard(path)
    if read is None:
        return _load_dgl_shard(path)[1].numpy()
    header, body = read
    try:
        entries = [header[key] for key in ("rows", "num_nodes", "num_edges", "src", "dst")]
        for spec in (*header["ndata"].values(), *header["edata"].values()):
            entries += [spec[key] for key in ("bits", "values") if key in spec]
        for entry in entries:
            size = int(np.prod(entry["shape"], dtype=np.int64)) * np.dtype(entry["dtype"]).itemsize
            if entry["offset"] + size > len(body):
                raise ValueError(f"{len(body)} bytes of arrays, the header needs more")
        return _array(body, header["rows"]).astype(np.int64)
    except (struct.error, KeyError, TypeError, ValueError) as error:
        raise _damaged(path, error) from None


def select_graphs(graph: dgl.DGLGraph, indices: np.ndarray | Sequence[int]) -> dgl.DGLGraph:
    """The molecules ``indices`` of a batched homogeneous graph, batched in that order.

    Equal to ``dgl.batch([dgl.unbatch(graph)[i] for i in indices])`` (same edges in the same
    order, same node and edge data, same id type), computed from the batched arrays with
    index arithmetic instead of one DGLGraph per molecule.

    Args:
        graph: a batched homogeneous DGLGraph (e.g. of :func:`load_shard_batch`).
        indices: ``int [k]`` molecules of ``graph``, any order, repeats allowed.

    Returns:
        A batched DGLGraph of ``k`` molecules.

    Raises:
        IndexError: an index outside ``[0, graph.batch_size)``.
    """
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and not (0 <= indices.min() and indices.max() < graph.batch_size):
        raise IndexError(f"molecule index out of range for a batch of {graph.batch_size}")
    num_nodes = graph.batch_num_nodes().numpy().astype(np.int64)
    num_edges = graph.batch_num_edges().numpy().astype(np.int64)
    node_ids, first_node = _ranges(num_nodes, indices)
    edge_ids, _ = _ranges(num_edges, indices)
    selected_nodes, selected_edges = num_nodes[indices], num_edges[indices]
    # node numbers move from the molecule's first node in ``graph`` to its first in the result
    shift = np.repeat(np.cumsum(selected_nodes) - selected_nodes - first_node, selected_edges)
    src, dst = (end.numpy()[edge_ids] + shift for end in graph.edges(order="eid"))
    nodes, edges = torch.from_numpy(node_ids), torch.from_numpy(edge_ids)
    return GraphArrays(
        num_nodes=torch.from_numpy(selected_nodes),
        num_edges=torch.from_numpy(selected_edges),
        src=torch.from_numpy(src).to(graph.idtype),
        dst=torch.from_numpy(dst).to(graph.idtype),
        ndata={key: value[nodes] for key, value in graph.ndata.items()},
        edata={key: value[edges] for key, value in graph.edata.items()},
    ).to_graph()


def _ranges(counts: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, starts)``: the ids of the items of groups ``indices`` (groups of ``counts``
    consecutive items), concatenated, and each selected group's first id."""
    starts = np.cumsum(counts) - counts
    selected = counts[indices]
    first = starts[indices]
    offsets = np.arange(int(selected.sum()), dtype=np.int64)
    offsets -= np.repeat(np.cumsum(selected) - selected, selected)
    return np.repeat(first, selected) + offsets, first


def _damaged(path: str | Path, error: Exception) -> ValueError:
    return ValueError(
        f"{path} is truncated or damaged ({type(error).__name__}: {error}); run the chemgraph "
        "featurize command that wrote it again with --resume (it rebuilds damaged shards)"
    )


class _Blob:
    """The arrays of a shard, laid out one after the other at multiples of 8 bytes."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, array: np.ndarray) -> dict[str, Any]:
        """Append ``array`` (little-endian, C order); its header entry."""
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        entry = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": self.size}
        data = array.tobytes()
        self.chunks += [data, bytes(-len(data) % _ALIGN)]
        self.size += len(data) + len(self.chunks[-1])
        return entry


def _array(body: memoryview, entry: dict[str, Any]) -> np.ndarray:
    """The array of a header entry, read from the bytes after the header (a read-only view)."""
    count = int(np.prod(entry["shape"], dtype=np.int64))
    values = np.frombuffer(body, np.dtype(entry["dtype"]), count, entry["offset"])
    return values.reshape(entry["shape"])


def _narrowest(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` as the first of uint8, int8, int16, int32, int64 that holds them."""
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    fits = (d for d in _NARROW_INTS if np.iinfo(d).min <= low and high <= np.iinfo(d).max)
    return values.astype(next(fits))


def _binary_columns(columns: np.ndarray) -> np.ndarray:
    """``bool [C]``: the columns of float ``[L, C]`` whose every value is +0.0 or 1.0 (bit for
    bit: -0.0 and NaN are not)."""
    bits = np.ascontiguousarray(columns).view(f"u{columns.itemsize}")
    zero, one = np.array([0.0, 1.0], dtype=columns.dtype).view(bits.dtype)
    return ((bits == zero) | (bits == one)).all(axis=0)


def _encode(blob: _Blob, key: str, tensor: torch.Tensor) -> dict[str, Any]:
    """The header entry of one node/edge data tensor; its arrays are appended to ``blob``."""
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in _DTYPES:
        raise ValueError(f"graph data {key!r} has dtype {tensor.dtype}; shards store {_DTYPES}")
    array = tensor.detach().cpu().numpy()
    spec: dict[str, Any] = {"dtype": dtype, "shape": list(array.shape)}
    if array.dtype == np.bool_:
        spec["bits"] = blob.add(np.packbits(array.reshape(-1), bitorder="little"))
    elif array.dtype.kind in "iu":
        spec["values"] = blob.add(_narrowest(array.reshape(-1)))
    else:
        columns = array.reshape(array.shape[0], int(np.prod(array.shape[1:], dtype=np.int64)))
        binary = _binary_columns(columns)
        spec["binary"] = np.flatnonzero(binary).tolist()
        ones = (columns == 1).compress(binary, axis=1)  # compress: faster than [:, binary]
        spec["bits"] = blob.add(np.packbits(ones, axis=1, bitorder="little"))
        spec["values"] = blob.add(columns.compress(~binary, axis=1))
    return spec


def _decode(body: memoryview, spec: dict[str, Any]) -> torch.Tensor:
    """The tensor of a header entry written by :func:`_encode`."""
    dtype, shape = np.dtype(spec["dtype"]), spec["shape"]
    size = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        bits = _array(body, spec["bits"])
        array = np.unpackbits(bits, count=size, bitorder="little").astype(np.bool_)
    elif dtype.kind in "iu":
        array = _array(body, spec["values"]).astype(dtype)
    else:
        binary = np.zeros(int(np.prod(shape[1:], dtype=np.int64)), dtype=np.bool_)
        binary[spec["binary"]] = True
        array = np.empty((shape[0], binary.size), dtype=dtype)
        bits = _array(body, spec["bits"])
        ones = np.unpackbits(bits, axis=1, count=int(binary.sum()), bitorder="little")
        _set_columns(array, binary, ones)
        _set_columns(array, ~binary, _array(body, spec["values"]))
    return torch.from_numpy(array.reshape(shape))


def _set_columns(array: np.ndarray, columns: np.ndarray, values: np.ndarray) -> None:
    """``array[:, columns] = values`` (``columns``: ``bool [C]``), one slice per run of
    consecutive columns: a one-hot block is one run, and slices copy about ten times faster
    than a boolean column index."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], columns, [False]]).astype(np.int8)))
    taken = 0
    for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist()):
        array[:, start:stop] = values[:, taken : taken + stop - start]
        taken += stop - start


def _decode_shard(header: dict[str, Any], body: memoryview) -> tuple[dgl.DGLGraph, torch.Tensor]:
    rows = torch.from_numpy(_array(body, header["rows"]).astype(np.int64))
    num_nodes = _array(body, header["num_nodes"]).astype(np.int64)
    num_edges = _array(body, header["num_edges"]).astype(np.int64)
    first_node = np.repeat(np.cumsum(num_nodes) - num_nodes, num_edges)
    src, dst = (_array(body, header[end]) + first_node for end in ("src", "dst"))
    idtype = getattr(torch, header["idtype"])
    graph = GraphArrays(
        num_nodes=torch.from_numpy(num_nodes),
        num_edges=torch.from_numpy(num_edges),
        src=torch.from_numpy(src).to(idtype),
        dst=torch.from_numpy(dst).to(idtype),
        ndata={key: _decode(body, spec) for key, spec in header["ndata"].items()},
        edata={key: _decode(body, spec) for key, spec in header["edata"].items()},
    ).to_graph()
    return graph, rows


def _load_dgl_shard(path: str | Path) -> tuple[dgl.DGLGraph, torch.Tensor]:
    """A shard of earlier chemgraph versions: ``dgl.save_graphs`` of one batched graph with the
    labels ``row``, ``num_nodes`` and ``num_edges``."""
    from chemgraph._dgl import dgl

    (graph,), labels = dgl.load_graphs(str(path))
    graph.set_batch_num_nodes(labels["num_nodes"].to(graph.idtype))
    graph.set_batch_num_edges(labels["num_edges"].to(graph.idtype))
    return graph, labels["row"]
