"""The progress bar of a library job (``featurize``, ``qc``): records finished, out of the
input's records once a background thread has counted them."""

from __future__ import annotations

import threading
from pathlib import Path

from tqdm.auto import tqdm

from chemgraph.data.readers import iter_record_chunks

__all__ = ["LibraryProgress"]

_COUNT_CHUNK = 10_000  # records per chunk of the progress bar's count


class LibraryProgress:
    """The bar of a library job (``featurize``, ``qc``): records finished, out of the input's
    records once known.

    Args:
        input_path, smiles_column, id_column, label_columns: the input, whose records a daemon
            thread counts with :func:`~chemgraph.data.readers.iter_record_chunks` (the run's
            own reader, so blank and malformed records count as they do in the manifest) while
            the run goes on.
        show: draw the bar (on stderr); when False nothing is counted or drawn.
        description: the bar's label (the command).
    """

    def __init__(
        self,
        input_path: Path,
        smiles_column: str | None,
        id_column: str | None,
        label_columns: tuple[str, ...],
        show: bool,
        description: str,
    ) -> None:
        self.bar = tqdm(unit="mol", unit_scale=True, disable=not show, desc=description)
        self._total: int | None = None
        self._stop = threading.Event()
        if show:
            arguments = (input_path, smiles_column, id_column, label_columns)
            threading.Thread(target=self._count, args=arguments, daemon=True).start()

    def _count(
        self,
        input_path: Path,
        smiles_column: str | None,
        id_column: str | None,
        label_columns: tuple[str, ...],
    ) -> None:
        total = 0
        try:
            for chunk in iter_record_chunks(
                input_path, _COUNT_CHUNK, smiles_column, id_column, label_columns
            ):
                if self._stop.is_set():
                    return
                total += len(chunk)
        except (OSError, ValueError):  # the run's own reader raises it
            return
        self._total = total

    def advance(self, records: int) -> None:
        """``records`` more are finished (called in the main thread only)."""
        if self.bar.total is None and self._total is not None:
            self.bar.total = self._total
        self.bar.update(records)

    def close(self) -> None:
        self._stop.set()
        self.bar.close()
