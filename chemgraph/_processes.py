"""Worker processes of a job: the one way chemgraph starts, feeds, hears from and stops them.

``chemgraph featurize``/``qc``/``predict`` (:mod:`chemgraph.library.workers`, a ``forkserver``
pool with heartbeats) and transfer learning (:mod:`chemgraph.transfer.pool`, ``spawn``
processes that train chains) both run tasks in worker processes that:

* ignore Ctrl-C (SIGINT is ignored and blocked: the parent receives it and stops them) and die
  with the parent, even when it is killed (:func:`chemgraph._interrupts.die_with_parent`);
* talk over a pipe in plain pickles (:func:`send`, :func:`receive`): ``Connection.send``
  would move every tensor into shared memory behind a file descriptor of its own (torch's
  reductions), thousands for a data set;
* answer each task with ``("done", result)`` or ``("error", (exception, traceback text))``
  (:func:`serve`); the parent raises the exception with the worker's traceback as its cause
  (:func:`raise_remote`);
* are killed at once when the parent stops on an error or an interrupt, and sent ``None``
  (stop) otherwise (:func:`worker_pool`).

A process that handles one shard after another gives the memory each freed back to the
operating system with :func:`release_freed_memory`: the scoring tasks of ``predict`` and
``fingerprint`` (:func:`chemgraph.train.inference.run_shard_tasks`) and the main process
writing their output (:meth:`chemgraph.library.scoring.LibraryRun.tables`).

A bottom module: it imports nothing from chemgraph but :mod:`chemgraph._interrupts`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from chemgraph._interrupts import die_with_parent

__all__ = [
    "RemoteTraceback",
    "WorkerProcess",
    "raise_remote",
    "receive",
    "release_freed_memory",
    "send",
    "serve",
    "worker_pool",
]


def release_freed_memory() -> None:
    """Give the memory this process has freed back to the operating system, so that a process
    that runs one task after another stays at the resident size of one task: pyarrow's memory
    pool (mimalloc or jemalloc keep freed pages for reuse: ``MemoryPool.release_unused``) when
    pyarrow is loaded, and glibc's heaps (``malloc_trim(0)``, which also returns the free pages
    inside a heap, not only at its top; nothing where the C library has no ``malloc_trim``).
    Without it each scoring worker of ``chemgraph predict --workers 2`` grew from 836 MiB at
    40,000 molecules to 980 MiB at 200,000 (``benchmarks/README.md``, ``predict_memory.py``)."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None elsewhere (macOS, musl, Windows)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # no such symbol; no C library by that name
        return None


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (shown as its cause)."""

    def __str__(self) -> str:
        return self.args[0]


def send(connection: Any, message: Any) -> None:
    """Send ``message`` over ``connection`` as one plain pickle."""
    connection.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(connection: Any) -> Any:
    """The next message of ``connection``.

    Raises:
        EOFError: the other end closed the pipe.
    """
    return pickle.loads(connection.recv_bytes())


def serve(connection: Any, run: Callable[[Any], Any], where: Callable[[Any], str]) -> None:
    """The loop of a worker process: run each task received on ``connection`` until ``None``
    or EOF, answering ``("done", run(task))`` or, when it raises, ``("error", (exception,
    "<where(task)>:\\n<traceback>"))``; an exception that cannot be pickled is sent as a
    ``RuntimeError`` naming its type and message."""
    while True:
        try:
            task = receive(connection)
        except EOFError:
            return
        if task is None:
            return
        try:
            result = run(task)
        except Exception as error:  # noqa: BLE001 - sent to the parent, which raises it
            detail = f"{where(task)}:\n{traceback.format_exc()}"
            try:
                pickle.dumps(error)
            except Exception:  # noqa: BLE001 - an exception that cannot cross processes
                error = RuntimeError(f"{type(error).__name__}: {error}")
            send(connection, ("error", (error, detail)))
        else:
            send(connection, ("done", result))


def raise_remote(payload: tuple[BaseException, str], note: str | None = None) -> None:
    """Raise the exception of a worker's ``("error", payload)`` answer, its traceback as the
    cause (:class:`RemoteTraceback`) and ``note`` added to it."""
    error, detail = payload
    if note is not None:
        error.add_note(note)
    raise error from RemoteTraceback(detail)


def _worker_entry(target: Callable[..., None], connection: Any, *args: Any) -> None:
    """What a worker process runs: SIGINT ignored and blocked (Ctrl-C reaches the parent, which
    stops the workers; blocked too, because RDKit installs its own SIGINT handler around long
    searches), death with the parent, then ``target(connection, *args)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    die_with_parent()
    target(connection, *args)


class WorkerProcess:
    """One worker process and the parent's end of its pipe.

    Args:
        context: the multiprocessing context (``forkserver`` or ``spawn``; never plain
            ``fork`` of a parent that may run threads).
        target: a module-level function, run in the worker as ``target(connection, *args)``
            (typically a loop around :func:`serve`).
        args: more arguments of ``target`` (picklable, or shared memory of ``context``).
    """

    def __init__(self, context: Any, target: Callable[..., None], *args: Any) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_worker_entry, args=(target, child, *args), daemon=True
        )
        self.process.start()
        child.close()

    def send(self, message: Any) -> None:
        """Send ``message`` to the worker (:func:`send`)."""
        send(self.connection, message)

    def receive(self) -> tuple[str, Any] | None:
        """The worker's next answer, if one is waiting; None also when its pipe is closed or
        reset (it died)."""
        try:
            return receive(self.connection) if self.connection.poll() else None
        except (EOFError, OSError):
            return None

    def kill(self) -> None:
        """Stop the worker at once (SIGKILL) and close the pipe."""
        self.process.kill()
        self.process.join()
        self.connection.close()

    def close(self) -> None:
        """Tell the worker to stop (``None``), wait for it and close the pipe."""
        self.send(None)
        self.process.join()
        self.connection.close()


@contextlib.contextmanager
def worker_pool() -> Iterator[list[WorkerProcess]]:
    """A list for the caller's :class:`WorkerProcess` objects: on leaving normally each is
    closed; on an error, an interrupt or an abandoned generator (``GeneratorExit``) each is
    killed at once and the exception goes on."""
    pool: list[WorkerProcess] = []
    try:
        yield pool
    except BaseException:
        for worker in pool:
            worker.kill()
        raise
    for worker in pool:
        worker.close()
