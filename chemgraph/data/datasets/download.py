"""Downloads and local copies: ``CHEMGRAPH_HOME``, checksums, atomic writes, compressed files.

Downloads are written to a temporary file beside the target, checked against the card's
checksum and only then renamed into place, so the cache never holds a half or a wrong file
(``docs/architecture.md``, "Files, caches, downloads"). A checksum mismatch deletes the
temporary file and raises :class:`ChecksumError`.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from chemgraph._files import file_digest, open_compressed
from chemgraph.data.datasets.card import SourceFile
from chemgraph.errors import DatasetError

__all__ = [
    "ChecksumError",
    "chemgraph_home",
    "fetch",
    "open_binary",
    "open_text",
    "verify",
]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


class ChecksumError(DatasetError, OSError):
    """A file's checksum differs from its card's."""


def chemgraph_home() -> Path:
    """``$CHEMGRAPH_HOME``, default ``~/.cache/chemgraph`` (downloads and featurised shards)."""
    return Path(os.environ.get("CHEMGRAPH_HOME") or Path.home() / ".cache" / "chemgraph")


def verify(path: Path, spec: SourceFile) -> bool | None:
    """Compare a file with its card: ``True`` (match), ``False`` (mismatch), ``None`` (no
    checksum on the card). SHA-256 is used when the card has one, else MD5."""
    for algorithm in ("sha256", "md5"):
        expected = getattr(spec, algorithm)
        if expected:
            return file_digest(path, algorithm) == expected.lower()
    return None


def _urlopen_to(url: str, fh: IO[bytes]) -> None:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (card URLs)
        shutil.copyfileobj(response, fh, _CHUNK)


def fetch(
    spec: SourceFile,
    folder: Path,
    *,
    allow_unverified: bool = False,
    opener: Callable[[str, IO[bytes]], None] | None = None,
) -> Path:
    """Download ``spec.url`` into ``folder / spec.name``: temp file, checksum, rename.

    Args:
        spec: the card's file entry (URL and checksum).
        folder: destination folder (created).
        allow_unverified: accept a file whose card has no checksum (its SHA-256 is logged so
            it can be pinned); without it such a download is refused.
        opener: ``opener(url, fh)`` writes the URL's bytes to ``fh`` (default: urllib; tests
            pass a fake). ``file://`` URLs work with the default.

    Returns:
        The verified file.

    Raises:
        ValueError: the card gives no URL, or no checksum and ``allow_unverified`` is off.
        ChecksumError: the downloaded bytes do not match the card (nothing is left behind).
        OSError: the download failed (nothing is left behind).
    """
    if not spec.url:
        raise ValueError(f"{spec.name}: the card gives no download URL; place the file yourself")
    if not (spec.sha256 or spec.md5) and not allow_unverified:
        raise ValueError(
            f"{spec.name}: the card has no checksum, so the download cannot be verified; "
            "pass allow_unverified=True (CLI: --allow-unverified) or bring a local copy (--root)"
        )
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(
            f"{folder} is not a folder: give the folder that holds {spec.name} (--root)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / spec.name
    temporary = folder / f".{spec.name}.part-{os.getpid()}"
    try:
        with open(temporary, "wb") as fh:
            try:
                (opener or _urlopen_to)(spec.url, fh)
            except OSError as error:  # urllib.error.URLError is an OSError
                reason = getattr(error, "reason", None) or error
                raise OSError(
                    f"{spec.name} is not in {folder} and downloading it from {spec.url} failed "
                    f"({reason}); copy the file into that folder, or give the folder that "
                    "holds it (--root, root=...)"
                ) from error
        result = verify(temporary, spec)
        if result is False:
            expected = spec.sha256 or spec.md5
            actual = file_digest(temporary, "sha256" if spec.sha256 else "md5")
            raise ChecksumError(
                f"{spec.name} from {spec.url}: checksum {actual} differs from the card's "
                f"{expected}; the file was deleted (retry, or report a changed upstream file)"
            )
        if result is None:
            logger.warning(
                "%s: no checksum on the card; downloaded sha256 %s",
                spec.name,
                file_digest(temporary),
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    logger.info("downloaded %s (%d bytes) to %s", spec.url, target.stat().st_size, target)
    return target


def open_binary(path: str | os.PathLike[str], member: str | None = None) -> IO[bytes]:
    """Open a data file for reading bytes, decompressing by content, not by name.

    gzip, bzip2 and plain files are streamed; a tar archive (``.tar``, ``.tar.gz``,
    ``.tar.bz2``) or zip archive yields ``member`` (a file name or path suffix), or its only
    file when ``member`` is ``None``.

    Raises:
        FileNotFoundError: no such file. ValueError: an archive member is missing or ambiguous
            (the members are listed).
    """
    path = Path(path)
    if zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        names = [n for n in archive.namelist() if not n.endswith("/")]
        return archive.open(_pick_member(path, names, member))
    if _is_tar(path):
        return _tar_member(path, member)
    return open_compressed(path)


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError, tarfile.TarError):
        return False


def _tar_member(path: Path, member: str | None) -> IO[bytes]:
    archive = tarfile.open(path, "r:*")
    names = [m.name for m in archive.getmembers() if m.isfile()]
    extracted = archive.extractfile(_pick_member(path, names, member))
    assert extracted is not None  # a regular file member always extracts
    return extracted


def _pick_member(path: Path, names: list[str], member: str | None) -> str:
    if member is None:
        if len(names) != 1:
            raise ValueError(f"{path}: archive holds {len(names)} files, name one: {names[:10]}")
        return names[0]
    matches = [n for n in names if n == member or n.endswith("/" + member)]
    if len(matches) != 1:
        raise ValueError(f"{path}: expected one member {member!r}; archive holds {names[:10]}")
    return matches[0]


def open_text(path: str | os.PathLike[str], member: str | None = None) -> io.TextIOWrapper:
    """:func:`open_binary` as UTF-8 text with universal newlines (CRLF, CR and LF); a leading
    byte-order mark (Excel's "CSV UTF-8") is dropped."""
    return io.TextIOWrapper(open_binary(path, member), encoding="utf-8-sig", newline=None)
