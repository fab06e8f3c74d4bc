"""The rule every command that writes an output folder follows: a new or empty folder only.

``chemgraph train``, ``chemgraph recipe run``, ``chemgraph featurize`` and the QM9 gap demo
refuse a folder that already holds files, so that a second run never silently replaces the
results of a first; the commands that can write over an earlier run offer ``--overwrite``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["check_output_folder"]


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
