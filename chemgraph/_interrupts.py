"""SIGINT (Ctrl-C) and SIGTERM (``kill PID``) as an exception, so that a long job stops its
worker processes and keeps its complete work instead of dying where it stands.

A bottom module: it imports nothing from chemgraph.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["Interrupted", "ctrl_c_enabled", "die_with_parent", "interrupts_raise"]


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a long job. A ``KeyboardInterrupt``, so ``except Exception``
    does not swallow it.

    Attributes:
        signum: ``signal.SIGINT`` or ``signal.SIGTERM``.
    """

    def __init__(self, signum: int, message: str | None = None) -> None:
        self.signum = signum
        super().__init__(message or f"stopped by {signal.Signals(signum).name}")


class ShardsInterrupted(Interrupted):
    """A library job that writes complete shards was stopped; ``resume`` continues it.

    Attributes:
        signum: ``signal.SIGINT`` or ``signal.SIGTERM``.
        output: the output folder, or None when the signal came before it was prepared.
        shards_done: complete shards in ``output``.
    """

    def __init__(self, signum: int, output: Path | None = None, shards_done: int = 0) -> None:
        self.output, self.shards_done = output, shards_done
        name = signal.Signals(signum).name
        if output is None:
            message = f"stopped by {name} before any output was written"
        else:
            message = (
                f"stopped by {name}; {shards_done} complete shard(s) kept in {output}; run the "
                "same command with --resume to continue"
            )
        super().__init__(signum, message)


@contextlib.contextmanager
def interrupts_raise(error: Callable[[int], BaseException] = Interrupted) -> Iterator[None]:
    """In the main thread, the first SIGINT or SIGTERM raises ``error(signum)`` (later ones
    are ignored while the job stops); elsewhere nothing changes. The previous handlers are
    restored on exit.

    Args:
        error: the exception to raise, from the signal number (default :class:`Interrupted`).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if not received:
            received.append(signum)
            raise error(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def ctrl_c_enabled() -> Iterator[None]:
    """In the main thread, Ctrl-C raises ``KeyboardInterrupt`` within the block even when the
    process inherited SIGINT ignored (a shell starts a background job, ``cmd &``, and some
    schedulers and scripts start their children so); the ignored disposition is restored on
    exit. Anywhere else, or with a handler already installed, nothing changes."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with_parent() -> None:
    """In a worker process: on Linux, have the kernel SIGKILL it when its parent dies (even by
    SIGKILL), so that no worker outlives the job; elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    prctl = getattr(ctypes.CDLL(None), "prctl", None)
    if prctl is None:
        return
    prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)
