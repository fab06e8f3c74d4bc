"""File helpers, in one place: atomic writes, file digests, and the one opener of possibly
compressed files.

A bottom module: imports nothing of chemgraph, and every layer may import it. Everything
chemgraph writes that a later run reads (shards, feature tables, manifests, predictions,
checkpoints, downloads, caches) is written to :func:`atomic_path` and renamed into place with
``os.replace`` (:func:`replacing`), so a reader never sees half a file and a write that fails
leaves the earlier file whole.
"""

from __future__ import annotations

import bz2
import contextlib
import functools
import gzip
import hashlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "atomic_path",
    "file_digest",
    "open_compressed",
    "replacing",
    "write_parquet_atomically",
    "write_text_atomically",
]

_CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"


def atomic_path(path: str | os.PathLike[str]) -> Path:
    """A temporary name beside ``path`` (same folder, so ``os.replace`` is atomic), unique to
    this host and process: on a shared file system, dask workers on two machines may have the
    same process id (and dask may run a task twice when it loses sight of a worker)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{socket.gethostname()}-{os.getpid()}")


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield :func:`atomic_path` of ``path`` to be written; when the block ends, rename it to
    ``path`` (``os.replace``: atomic, on the same file system, never a copy), or, when the
    block raises (a full disk, an interrupt), remove it: ``path`` then keeps its earlier
    content whole."""
    temporary = atomic_path(path)
    try:
        yield temporary
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)


def write_text_atomically(text: str, path: str | os.PathLike[str]) -> None:
    """Write UTF-8 ``text`` to ``path`` through :func:`atomic_path`."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_parquet_atomically(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write an Arrow table to the Parquet file ``path`` through :func:`atomic_path`."""
    import pyarrow.parquet as pq

    with replacing(path) as temporary:
        pq.write_table(table, temporary)


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    """Hex digest (``"sha256"`` or ``"md5"``) of a file's bytes, read in 1 MiB blocks.

    Remembered per (path, size, modification time) in this process, so that checking a
    dataset's files on every read and keying its cache hashes each file once."""
    stat = os.stat(path)
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns, algorithm)


@functools.lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def open_compressed(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open ``path`` for binary reading, decompressing gzip or bzip2 by the file's first bytes
    (its magic number), whatever its name.

    Raises:
        FileNotFoundError, OSError: the file cannot be opened.
    """
    with open(path, "rb") as handle:
        magic = handle.read(3)
    if magic[:2] == GZIP_MAGIC:
        return gzip.open(path, "rb")
    if magic == BZIP2_MAGIC:
        return bz2.open(path, "rb")
    return open(path, "rb")
