"""Frontier-orbital labels for many molecules: parallel, resumable, failures reported.

The results file is a CSV that is only ever appended to, one row per molecule as soon as its
calculation ends (:data:`RESULT_COLUMNS`). A rerun with the same file skips every molecule that
already has a row, so an interrupted job resumes where it stopped. A molecule whose SCF does not
converge, whose G0W0 quasiparticle equation is not solved (pyscf would leave 0 eV), or whose
calculation raises, gets a row with ``status`` ``scf_not_converged``, ``qp_not_converged`` or
``error``, the message, and no energies; it is never silently dropped or given a label.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import logging
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chemgraph.qc.molecule import QCMolecule
from chemgraph.qc.pyscf_gw import (
    QPNotConvergedError,
    SCFNotConvergedError,
    dft_frontier_orbitals,
    gw_frontier_orbitals,
)
from chemgraph.qc.result import FrontierOrbitals
from chemgraph.qc.xtb import xtb_frontier_orbitals

__all__ = ["METHODS", "RESULT_COLUMNS", "STATUSES", "compute_frontier_orbitals", "read_results"]

logger = logging.getLogger(__name__)

METHODS: dict[str, Callable[..., FrontierOrbitals]] = {
    "gw": gw_frontier_orbitals,
    "dft": dft_frontier_orbitals,
    "xtb": xtb_frontier_orbitals,
}
RESULT_COLUMNS = (
    "molecule_id",
    "status",
    "homo_ev",
    "lumo_ev",
    "reference_homo_ev",
    "reference_lumo_ev",
    "method",
    "basis",
    "program",
    "seconds",
    "message",
)
STATUSES = ("ok", "scf_not_converged", "qp_not_converged", "error")
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _compute_row(method: str, molecule: QCMolecule, options: dict[str, Any]) -> dict[str, Any]:
    """One result row; exceptions become ``scf_not_converged`` / ``qp_not_converged`` /
    ``error`` rows without energies."""
    row: dict[str, Any] = dict.fromkeys(RESULT_COLUMNS, "")
    row["molecule_id"] = molecule.molecule_id
    try:
        result = METHODS[method](molecule, **options)
    except SCFNotConvergedError as error:
        row.update(status="scf_not_converged", message=str(error))
    except QPNotConvergedError as error:
        row.update(status="qp_not_converged", message=str(error))
    except Exception as error:  # a long job records the failure and goes on
        row.update(status="error", message=f"{type(error).__name__}: {error}")
    else:
        row.update(asdict(result), status="ok")
    return row


def _initialize_worker(threads: int) -> None:
    """Limit BLAS and OpenMP threads of this process (pyscf's libraries loaded first)."""
    from threadpoolctl import threadpool_limits

    with contextlib.suppress(ImportError):
        import pyscf.gw  # noqa: F401  (loads pyscf's OpenMP and BLAS libraries)
        from pyscf import lib

        lib.num_threads(threads)
    threadpool_limits(threads)


@contextlib.contextmanager
def _thread_environment(threads: int) -> Iterator[None]:
    """Thread-count variables inherited by worker processes started inside the block."""
    saved = {name: os.environ.get(name) for name in _THREAD_VARIABLES}
    os.environ.update(dict.fromkeys(_THREAD_VARIABLES, str(threads)))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def read_results(path: str | Path) -> list[dict[str, str]]:
    """Rows of a results file (empty list if it does not exist).

    A last row cut short by a killed job (wrong number of fields or unknown status) is skipped
    with a warning, so that its molecule is computed again on resume.
    """
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    with path.open(newline="") as handle:
        for line_number, row in enumerate(csv.DictReader(handle), start=2):
            if None in row or None in row.values() or row.get("status") not in STATUSES:
                logger.warning("%s line %d: incomplete row skipped", path, line_number)
                continue
            rows.append(row)
    return rows


def compute_frontier_orbitals(
    molecules: Iterable[QCMolecule],
    results_path: str | Path,
    method: str = "gw",
    workers: int = 1,
    threads_per_worker: int = 1,
    retry_failed: bool = False,
    progress: bool = False,
    **options: Any,
) -> dict[str, int]:
    """Compute HOMO/LUMO for every molecule, appending one row each to ``results_path``.

    Args:
        molecules: molecules with unique ``molecule_id``.
        results_path: CSV with :data:`RESULT_COLUMNS`; created with a header if absent,
            otherwise appended to. Molecules that already have a row are skipped.
        method: key of :data:`METHODS` (``"gw"`` G0W0 on Kohn-Sham DFT, ``"dft"``, ``"xtb"``).
        workers: worker processes (1 = run in this process).
        threads_per_worker: BLAS/OpenMP threads of each worker.
        retry_failed: compute again molecules whose earlier row is a failure (a new row is
            appended; the newest row of a molecule wins in :func:`read_results` users).
        progress: show a tqdm progress bar.
        **options: passed to the method function (``basis``, ``functional``, ``frozen_core``,
            ``max_cycle`` ...).

    Returns:
        Counts: ``requested``, ``skipped`` (already in the file), ``ok``, ``scf_not_converged``,
        ``qp_not_converged``, ``error`` (of this call).

    Raises:
        KeyError: unknown method. ValueError: duplicate molecule ids.
    """
    if method not in METHODS:
        raise KeyError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
    molecules = list(molecules)
    ids = [m.molecule_id for m in molecules]
    if len(set(ids)) != len(ids):
        raise ValueError("molecule ids must be unique")
    results_path = Path(results_path)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    done = {
        row["molecule_id"]
        for row in read_results(results_path)
        if row["status"] == "ok" or not retry_failed
    }
    todo = [m for m in molecules if m.molecule_id not in done]
    counts = dict.fromkeys(("requested", "skipped", *STATUSES), 0)
    counts.update(requested=len(molecules), skipped=len(molecules) - len(todo))
    logger.info("%d molecules, %d already in %s", len(molecules), counts["skipped"], results_path)
    new_file = not results_path.exists() or results_path.stat().st_size == 0
    with results_path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=RESULT_COLUMNS)
        if new_file:
            writer.writeheader()
        for row in _iter_rows(method, todo, workers, threads_per_worker, progress, options):
            writer.writerow(row)
            handle.flush()
            counts[row["status"]] += 1
            if row["status"] != "ok":
                logger.warning("%s: %s", row["molecule_id"], row["message"])
    return counts


def _iter_rows(
    method: str,
    molecules: list[QCMolecule],
    workers: int,
    threads: int,
    progress: bool,
    options: dict[str, Any],
) -> Iterator[dict[str, Any]]:
    from tqdm.auto import tqdm

    bar = tqdm(total=len(molecules), disable=not progress, unit="mol")
    if workers <= 1:
        _initialize_worker(threads)
        for molecule in molecules:
            yield _compute_row(method, molecule, options)
            bar.update()
        bar.close()
        return
    context = multiprocessing.get_context("spawn")
    with _thread_environment(threads):  # workers start here, at the first submit
        pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_initialize_worker, initargs=(threads,)
        )
        futures = [pool.submit(_compute_row, method, m, options) for m in molecules]
    with pool:
        for future in concurrent.futures.as_completed(futures):
            yield future.result()
            bar.update()
    bar.close()
