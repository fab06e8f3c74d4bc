"""chemgraph._processes, the one helper for worker processes (the library's pool and the
transfer chains' pool): answers and errors over a plain-pickle pipe, the worker's traceback as
the cause, Ctrl-C ignored in the worker, every worker killed when the parent stops on an
error."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import wait

import pytest

from chemgraph._processes import (
    RemoteTraceback,
    WorkerProcess,
    raise_remote,
    receive,
    send,
    serve,
    worker_pool,
)


def test_serve_answers_each_task_and_sends_errors_with_their_traceback():
    class Unpicklable(Exception):  # a local class: pickle cannot find it by name
        pass

    def run(task):
        if task == "bad":
            raise ValueError("bad task")
        if task == "unpicklable":
            raise Unpicklable("lost")
        return task * 2

    parent, child = multiprocessing.Pipe()
    worker = threading.Thread(target=serve, args=(child, run, lambda t: f"in the test on {t!r}"))
    worker.start()
    for task in (3, "bad", "unpicklable", None):  # None: stop
        send(parent, task)
    answers = [receive(parent) for _ in range(3)]
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert answers[0] == ("done", 6)
    kind, payload = answers[1]
    assert kind == "error" and isinstance(payload[0], ValueError)
    assert payload[1].startswith("in the test on 'bad':\nTraceback")
    with pytest.raises(ValueError, match="bad task") as raised:
        raise_remote(payload, "while testing")
    assert raised.value.__notes__ == ["while testing"]
    assert isinstance(raised.value.__cause__, RemoteTraceback)
    assert 'raise ValueError("bad task")' in str(raised.value.__cause__)
    kind, (error, _) = answers[2]
    assert kind == "error" and type(error) is RuntimeError
    assert str(error) == "Unpicklable: lost"


def test_serve_stops_at_end_of_file():
    parent, child = multiprocessing.Pipe()
    parent.close()
    serve(child, abs, repr)  # returns instead of raising EOFError


class _Worker:
    def __init__(self):
        self.calls = []

    def kill(self):
        self.calls.append("kill")

    def close(self):
        self.calls.append("close")


def test_worker_pool_closes_each_worker_or_kills_them_all_on_an_error():
    with worker_pool() as pool:
        pool += [_Worker(), _Worker()]
    assert [w.calls for w in pool] == [["close"], ["close"]]
    with pytest.raises(KeyboardInterrupt), worker_pool() as pool:
        pool += [_Worker(), _Worker()]
        raise KeyboardInterrupt
    assert [w.calls for w in pool] == [["kill"], ["kill"]]


def _answer(worker: WorkerProcess):
    wait([worker.connection, worker.process.sentinel], timeout=60)
    return worker.receive()


def test_a_worker_process_ignores_ctrl_c_answers_and_is_killed():
    context = multiprocessing.get_context("spawn")
    worker = WorkerProcess(context, serve, abs, repr)  # run = abs, where = repr
    try:
        worker.send(-3)
        assert _answer(worker) == ("done", 3)
        os.kill(worker.process.pid, signal.SIGINT)  # the parent's Ctrl-C reaches it too
        worker.send("x")
        kind, (error, detail) = _answer(worker)
        assert kind == "error" and isinstance(error, TypeError)
        assert detail.startswith("'x':\nTraceback")
        assert worker.process.is_alive()
    finally:
        worker.kill()
    assert worker.process.exitcode == -signal.SIGKILL
    assert worker.receive() is None  # a closed pipe reads as no answer


def test_a_worker_process_stops_when_closed():
    worker = WorkerProcess(multiprocessing.get_context("spawn"), serve, abs, repr)
    worker.close()
    assert worker.process.exitcode == 0
