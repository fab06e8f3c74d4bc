"""The rules every command that writes an output folder follows.

A new or empty folder only (:func:`check_output_folder`): ``chemgraph train``, ``chemgraph
recipe run``, ``chemgraph featurize``, ``chemgraph predict`` and the QM9 gap demo refuse a folder
that already holds files, so that a second run never silently replaces the results of a first;
the commands that can write over an earlier run offer ``--overwrite``.

Resumable training (:func:`refuse_changed_settings`): ``chemgraph train``, ``chemgraph
transfer`` and the ``dft_to_gw`` recipe record their settings in the output folder, and
``--resume`` continues a run there only with the same ones.

Resumable runs (:func:`resumable_folder`): ``chemgraph featurize`` and ``chemgraph qc`` (their
output folder, recorded by ``manifest.json``) and ``chemgraph predict`` (``OUTPUT.partial/``,
recorded by ``run.json``) keep their state in a folder whose record says what the run is;
``--resume`` continues it only when the record matches the new run, and ``--overwrite`` removes
what the command wrote there (:func:`remove_outputs`), and nothing else, to start again.

One run per folder (:func:`claim_folder`, :func:`claimed_folder`): before it checks or writes
anything, a command (``train``, ``recipe run``, ``featurize``, ``qc``, ``transfer``; ``predict``
and ``fingerprint`` their ``OUTPUT.partial``) claims its output folder with a lock file,
:data:`LOCK_NAME`, created only if absent (``O_CREAT | O_EXCL``, atomic on local and NFS v3+
file systems) and holding the run's process id, host and command line; a second run on the same
folder is refused with who holds it, and the lock is removed when the run ends, however it ends
short of being killed (SIGKILL, the out-of-memory killer). A lock left by a killed process on
this host is taken over with a warning naming that run; one of another host is reported with
what to do.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import logging
import os
import shutil
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "LOCK_NAME",
    "FolderClaim",
    "check_output_folder",
    "claim_folder",
    "claimed_folder",
    "refuse_changed_settings",
    "remove_outputs",
    "resumable_folder",
]

log = logging.getLogger(__name__)

LOCK_NAME = ".chemgraph.lock"
"""The lock file of a claimed output folder (:func:`claim_folder`); not counted as a file of the
folder by :func:`check_output_folder`."""

_HELD: dict[Path, int] = {}
"""The folders this process has claimed -> how many claims of it are open (a job run by
another job or a recipe in the same folder claims it again)."""


class FolderClaim:
    """A claim on an output folder, from :func:`claim_folder`; :meth:`release` ends it."""

    def __init__(self, folder: Path, created: bool) -> None:
        self.folder, self.created = folder, created
        self.key = folder.resolve()
        self.pid = os.getpid()
        self.released = False

    def release(self) -> None:
        """Remove the lock (once; a claim made again in the same process leaves it to the first)
        and the folder when the claim created it and nothing was written there. Idempotent;
        does nothing in a forked child, whose parent holds the claim."""
        if self.released or os.getpid() != self.pid:
            return
        self.released = True
        _HELD[self.key] -= 1
        if _HELD[self.key] > 0:
            return
        del _HELD[self.key]
        lock = self.folder / LOCK_NAME
        if _lock_record(lock).get("pid") == self.pid:
            lock.unlink(missing_ok=True)
        if self.created:
            with contextlib.suppress(OSError):  # not empty: the run wrote there
                self.folder.rmdir()


def claim_folder(folder: str | Path, option: str) -> FolderClaim:
    """Claim ``folder`` for this run (created when absent), before anything is checked or
    written there: the lock file :data:`LOCK_NAME` is created only if absent and holds this
    process's id, host, start time and command line. Released by :meth:`FolderClaim.release`
    (or :func:`claimed_folder`), and at the latest when the interpreter exits.

    A lock whose process is gone (killed: SIGKILL, the out-of-memory killer, a scheduler's
    time limit), told by its process id on this host, is taken over with a warning that names
    that run; the folder's own rules then say what to do with what it left (``--resume``,
    ``--overwrite``). A lock of another host cannot be checked, and is never taken over.

    Args:
        folder: the output folder.
        option: the command-line option that names it, for the messages.

    Returns:
        The claim. Claiming a folder this process holds already is allowed (a job run by a
        recipe in the recipe's folder); the first claim's release removes the lock.

    Raises:
        ValueError: ``folder`` is a file; another run holds the folder (its process id, host,
            start and command are given, and what to do: wait, choose another folder, or
            delete the lock of a run on another host that is over); a lock that records no
            run (what to do).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not a folder; choose a new {option}")
    key = folder.resolve()
    if key in _HELD:
        _HELD[key] += 1
        return FolderClaim(folder, created=False)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / LOCK_NAME
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300] if sys.argv else "",
    }
    if not _create(lock, record):
        holder = _lock_record(lock)
        if not (_gone(holder) and _take_over(lock, holder) and _create(lock, record)):
            raise ValueError(_in_use(folder, lock, option))
        log.warning(
            "%s: took over the lock of a run that is no longer running (%s): it was stopped "
            "without removing it (killed?)", folder, _who(holder),
        )  # fmt: skip
    _HELD[key] = 1
    claim = FolderClaim(folder, created)
    atexit.register(claim.release)
    return claim


def _create(lock: Path, record: dict[str, Any]) -> bool:
    """Create ``lock`` holding ``record`` if there is none (``O_CREAT | O_EXCL``); whether it
    was created."""
    try:
        handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")
    return True


def _gone(record: dict[str, Any]) -> bool:
    """Whether the run of a lock's ``record`` is known to be over: its process, on this host,
    no longer runs (or is this process, which holds no claim of the folder)."""
    pid = record.get("pid")
    if not isinstance(pid, int) or record.get("host") != socket.gethostname():
        return False
    return pid == os.getpid() or not _running(pid)


def _take_over(lock: Path, stale: dict[str, Any]) -> bool:
    """Remove ``lock`` if it still holds ``stale`` (moved aside first, so that a lock another
    run created meanwhile is put back, not removed); whether it was removed."""
    aside = lock.with_name(f"{lock.name}.stale-{socket.gethostname()}-{os.getpid()}")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return True  # removed meanwhile
    if _lock_record(aside) != stale:  # a live run's lock, created meanwhile
        with contextlib.suppress(OSError):
            os.link(aside, lock)
        aside.unlink(missing_ok=True)
        return False
    aside.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def claimed_folder(folder: str | Path, option: str) -> Iterator[Path]:
    """:func:`claim_folder` for the block: the folder is released when the block ends, by an
    error or an interrupt too. Yields the folder."""
    claim = claim_folder(folder, option)
    try:
        yield Path(folder)
    finally:
        claim.release()


def _lock_record(lock: Path) -> dict[str, Any]:
    """What a lock file records; ``{}`` when it is absent, empty or unreadable (a run killed
    between creating and writing it)."""
    try:
        record = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _who(record: dict[str, Any]) -> str:
    """The run of a lock's ``record``, for a message."""
    return (
        f"process {record.get('pid')} on {record.get('host')}, started "
        f"{record.get('started')}: {record.get('command')!r}"
    )


def _in_use(folder: Path, lock: Path, option: str) -> str:
    """Why ``folder`` cannot be claimed: who holds its ``lock``, and what to do."""
    record = _lock_record(lock)
    if not isinstance(record.get("pid"), int):
        return (
            f"{folder} holds the lock file {lock} of another run, which says nothing of it; if "
            f"no other run writes to {folder}, delete {lock} and run again, else choose a new "
            f"{option}"
        )
    return (
        f"{folder} is in use by another run ({_who(record)}); two runs in one folder would "
        f"write over each other's files: wait for it to end or choose a new {option}. If that "
        f"run is over (a process on another host cannot be checked from here), delete {lock}"
    )


def check_output_folder(
    folder: str | Path,
    option: str,
    overwrite: bool = False,
    overwrite_option: str | None = None,
) -> None:
    """Refuse to write into ``folder`` if it already holds files, unless ``overwrite``.

    Args:
        folder: the output folder; it need not exist.
        option: the command-line option that names it (``"--out"``, ``"--output"``), for the
            message.
        overwrite: allow a non-empty folder (the command then replaces the files it writes and
            leaves the others).
        overwrite_option: the option that sets ``overwrite`` (``"--overwrite"``), suggested in
            the message; None for a command that has none.

    Raises:
        ValueError: ``folder`` is a file, or exists with files in it and ``overwrite`` is
            False; the message names the folder and what to do.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not a folder; choose a new {option}")
    if overwrite or not folder.exists() or not _files_in(folder):
        return
    hint = f", or pass {overwrite_option} to write over it" if overwrite_option else ""
    raise ValueError(f"{folder} exists and is not empty; choose a new {option}{hint}")


def _files_in(folder: Path) -> bool:
    """Whether ``folder`` holds anything but its lock (:data:`LOCK_NAME`)."""
    return any(path.name != LOCK_NAME for path in folder.iterdir())


def remove_outputs(folder: str | Path, names: Sequence[str]) -> list[str]:
    """Remove what a command wrote in ``folder``: the files and folders ``names`` (a folder with
    everything in it) and the temporary files that writes of theirs left
    (:func:`chemgraph._files.atomic_path`: ``.NAME.tmp-*``); every other file is left as it is.
    A symbolic link is removed, never followed.

    Args:
        folder: the output folder; it need not exist.
        names: the names, directly in ``folder``, of what the command writes.

    Returns:
        The names removed, in the order of ``names``.
    """
    folder = Path(folder)
    removed = []
    for name in names:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    for name in names:
        for temporary in folder.glob(f".{name}.tmp-*"):
            temporary.unlink()
    return removed


def resumable_folder(
    folder: str | Path,
    record: str,
    identity: Mapping[str, Any],
    *,
    resume: bool,
    option: str,
    restart_option: str | None = None,
    restart: bool = False,
    overwrite: Sequence[str] | None = None,
) -> bool:
    """Open the state folder of a resumable run: a new one, or the earlier run to resume.

    ``folder/record`` (JSON) describes the run that owns the folder; the caller writes it.
    A run is continued only with ``resume`` and only when every key of ``identity`` has the
    same value in the record (the input's hash, the options, ...); the temporary files of
    writes that were killed (:func:`chemgraph._files.atomic_path`) are then removed.

    Args:
        folder: the state folder; created when new.
        record: the file name of the run's record in ``folder`` (``"manifest.json"``).
        identity: what must match to resume.
        resume: continue a run found in ``folder``.
        option: the command-line option that names the output, for the messages.
        restart_option: the option that starts again (``"--overwrite"``), suggested in the
            messages; None for a command that has none.
        restart: empty ``folder`` first (all but its lock, :data:`LOCK_NAME`), so the run
            starts again (only for a folder the command owns entirely, such as
            ``OUTPUT.partial``).
        overwrite: start again in a folder that the command shares with other files: the
            names of what it writes there (its record among them), removed first
            (:func:`remove_outputs`); the other files are left and do not refuse the run.
            None: a folder with other files is refused.

    Returns:
        True when an earlier run is resumed, False for a new one.

    Raises:
        ValueError: ``resume`` with ``restart`` or ``overwrite``; a run is there but
            ``resume`` is not set; the run there differs (the differing keys are named); the
            folder holds other files (:func:`check_output_folder`) and ``overwrite`` is None.
    """
    folder = Path(folder)
    if resume and (restart or overwrite is not None):
        raise ValueError(
            f"{restart_option or 'restarting'} and --resume exclude each other: start the run "
            "again or continue it"
        )
    if restart and folder.is_dir():
        remove_outputs(folder, [path.name for path in folder.iterdir() if path.name != LOCK_NAME])
    if overwrite is not None:
        remove_outputs(folder, overwrite)
    again = (
        f", or pass {restart_option} to start again"
        if restart_option
        else f", or choose a new {option}"
    )
    path = folder / record
    if path.exists():
        if not resume:
            raise ValueError(f"{folder} holds an earlier run; pass --resume to continue it{again}")
        previous = json.loads(path.read_text())
        changed = _differences(previous, identity)
        if changed:
            raise ValueError(
                f"cannot resume the run in {folder}: this run differs from it in "
                f"{'; '.join(changed)}{again}"
            )
        for temporary in folder.rglob(".*.tmp-*"):  # left by a write that was killed
            temporary.unlink()
        return True
    check_output_folder(
        folder, option, overwrite=overwrite is not None, overwrite_option=restart_option
    )
    folder.mkdir(parents=True, exist_ok=True)
    return False


def refuse_changed_settings(
    out: Path, recorded: str, now: Mapping[str, Any], ignored: Sequence[str] = ()
) -> None:
    """Refuse to resume the run in ``out`` with settings other than its own.

    Args:
        out: the output folder of the interrupted run.
        recorded: the file in ``out`` (YAML) that holds its settings (``config.yaml``).
        now: the settings of the run to resume, as that file would record them (a nested
            mapping is compared key by key: ``training.seeds``).
        ignored: dotted keys that may change without changing the results (the number of
            worker processes).

    Raises:
        ValueError: the settings differ: ``"--resume: the settings differ from those of the
            interrupted run in OUT (seed, training.seeds); resume with the same ones, or start
            again with --overwrite"``.
    """
    import yaml

    before = yaml.safe_load((out / recorded).read_text())
    now = yaml.safe_load(yaml.safe_dump(dict(now), sort_keys=False))  # tuples as lists
    changed = [key for key in _changed_keys(before, now) if key not in ignored]
    if changed:
        raise ValueError(
            f"--resume: the settings differ from those of the interrupted run in {out} "
            f"({', '.join(changed)}); resume with the same ones, or start again with --overwrite"
        )


def _changed_keys(before: Any, now: Any, prefix: str = "") -> list[str]:
    """The sorted dotted keys whose values differ between two nested mappings."""
    if not (isinstance(before, Mapping) and isinstance(now, Mapping)):
        return [] if before == now else [prefix.rstrip(".")]
    return [
        changed
        for key in sorted(before.keys() | now.keys(), key=str)
        for changed in _changed_keys(before.get(key), now.get(key), f"{prefix}{key}.")
    ]


def _differences(previous: Mapping[str, Any], identity: Mapping[str, Any]) -> list[str]:
    """What of ``identity`` differs from ``previous``, for a message: a setting as ``name
    (earlier run → this run)`` (each differing option of a dict of options as
    ``options.name (…)``); a file's hash (a ``*_sha256`` key) as ``the input file's content
    (sha256)``; a key the earlier run did not record (another command's run, or an
    earlier chemgraph version's) as ``name (not recorded by the earlier run)``."""
    changed = []
    for key, value in identity.items():
        before = previous.get(key)
        if before == value:
            continue
        if key.endswith("_sha256"):
            changed.append(
                f"the {key.removesuffix('_sha256').replace('_', ' ')}'s content (sha256)"
            )
        elif key not in previous:
            changed.append(f"{key} (not recorded by the earlier run)")
        elif isinstance(before, Mapping) and isinstance(value, Mapping):
            changed += [
                f"{key}.{name} ({before.get(name)!r} → {value.get(name)!r})"
                for name in sorted({*before, *value}, key=str)
                if before.get(name) != value.get(name)
            ]
        else:
            changed.append(f"{key} ({before!r} → {value!r})")
    return changed
