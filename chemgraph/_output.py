"""The rules every command that writes an output folder follows.

A new or empty folder only (:func:`check_output_folder`): ``chemgraph train``, ``chemgraph
recipe run``, ``chemgraph featurize``, ``chemgraph predict`` and the QM9 gap demo refuse a folder
that already holds files, so that a second run never silently replaces the results of a first;
the commands that can write over an earlier run offer ``--overwrite``.

Resumable runs (:func:`resumable_folder`): ``chemgraph featurize`` and ``chemgraph qc`` (their
output folder, recorded by ``manifest.json``) and ``chemgraph predict`` (``OUTPUT.partial/``,
recorded by ``run.json``) keep their state in a folder whose record says what the run is;
``--resume`` continues it only when the record matches the new run, and ``--overwrite`` removes
what the command wrote there (:func:`remove_outputs`), and nothing else, to start again.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["check_output_folder", "remove_outputs", "resumable_folder"]


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
    if overwrite or not folder.exists() or not any(folder.iterdir()):
        return
    hint = f", or pass {overwrite_option} to write over it" if overwrite_option else ""
    raise ValueError(f"{folder} exists and is not empty; choose a new {option}{hint}")


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
        restart: delete ``folder`` first, so the run starts again (only for a folder the
            command owns entirely, such as ``OUTPUT.partial``).
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
    if restart:
        shutil.rmtree(folder, ignore_errors=True)
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
