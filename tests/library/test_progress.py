"""The progress of a library job when stderr is not a terminal: plain lines at most every
interval, with the records done, the total, the rate, the elapsed and the time left (a fake
clock, so that nothing depends on the machine's speed)."""

from __future__ import annotations

import logging
import sys
import threading

import pytest

from chemgraph.library import progress
from chemgraph.library.progress import LibraryProgress, input_records, progress_line


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def log_file(monkeypatch, caplog):
    """stderr is a log file (no terminal); the INFO lines of the progress are recorded."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    caplog.set_level(logging.INFO, logger=progress.__name__)
    return caplog


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == progress.__name__]


def test_a_line_at_most_every_interval_with_rate_elapsed_and_time_left(log_file):
    clock = FakeClock()
    bar = LibraryProgress("predict", True, total=1_000, interval=30, clock=clock)
    clock.now += 10
    bar.advance(100)  # 10 s: within the interval, no line
    clock.now += 20
    bar.advance(200)  # 30 s: 300 records, 10 records/s, 700 left = 70 s
    clock.now += 29
    bar.advance(290)  # 29 s after the last line: none
    clock.now += 31
    bar.advance(10)  # 90 s: 600 records, 6.67 records/s, 400 left = 60 s
    bar.close()
    assert _lines(log_file) == [
        "predict: 300 of 1,000 records (30%), 10 records/s, elapsed 00:30, left 01:10",
        "predict: 600 of 1,000 records (60%), 7 records/s, elapsed 01:30, left 01:00",
    ]
    assert bar.bar.disable  # no bar drawn in a log file


def test_records_of_an_earlier_run_count_but_not_in_the_rate(log_file):
    clock = FakeClock()
    bar = LibraryProgress("featurize", True, total=2_000, interval=0, clock=clock)
    bar.advance(1_500, resumed=True)  # kept from the interrupted run: no line
    clock.now += 50
    bar.advance(100)
    bar.close()
    assert _lines(log_file) == [
        "featurize: 1,600 of 2,000 records (80%), 2 records/s, elapsed 00:50, left 03:20"
    ]


def test_without_a_total_the_line_has_no_time_left_and_no_progress_logs_nothing(log_file):
    clock = FakeClock()
    bar = LibraryProgress("qc", True, interval=0, clock=clock)
    clock.now += 4
    bar.advance(6)
    hidden = LibraryProgress("qc", False, total=6, interval=0, clock=clock)
    hidden.advance(6)
    assert _lines(log_file) == ["qc: 6 records, 2 records/s, elapsed 00:04"]


def test_the_line_of_an_hour_long_run():
    line = progress_line("featurize", 120_000, 1_000_000, 4_000.0, 30.0)
    assert line == (
        "featurize: 120,000 of 1,000,000 records (12%), 30 records/s, elapsed 1:06:40, left 8:08:53"
    )


def test_the_input_is_counted_by_the_runs_reader(tmp_path):
    library = tmp_path / "library.smi"
    library.write_text("CCO a\n\nc1ccccc1 b\nC1CC c\n")  # a blank record counts as in the rows
    assert input_records(library, None, None, (), threading.Event()) == 4
    stopped = threading.Event()
    stopped.set()
    assert input_records(library, None, None, (), stopped) is None
