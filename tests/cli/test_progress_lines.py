"""Issue 46: ``featurize``, ``predict`` and ``qc`` with their output captured (no terminal, as
under ``nohup``, SLURM or CI) print plain progress lines with the records done, not silence.

The interval between lines is set to 0 (every progress is a line), so that nothing depends on
how fast the machine is; the counts in the lines are those of the run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from chemgraph.cli import main
from chemgraph.library import progress

CHECKPOINT = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "esa.ckpt"
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C[C@H](N)C(=O)O", "OCC(=O)O", "CC#N"]
LINE = re.compile(
    r"^(?P<command>\w+): (?P<done>[\d,]+)(?: of (?P<total>[\d,]+))? records"
    r"(?: \(\d+%\))?, [\d,]+ records/s, elapsed [\d:]+(?:, left [\d:]+)?$"
)


@pytest.fixture()
def log_file(monkeypatch):
    """stderr is no terminal and every progress is a line."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0, raising=False)  # (absent before #46)


def _library(tmp_path: Path, records: int) -> Path:
    """``records`` .smi lines; line 3 is blank and line 5 an invalid SMILES (both count)."""
    lines = [f"{SMILES[i % len(SMILES)]} m{i}" for i in range(records)]
    lines[3], lines[5] = "", "C1CC broken"
    path = tmp_path / "library.smi"
    path.write_text("\n".join(lines) + "\n")
    return path


def _progress(out: str, command: str) -> list[tuple[int, int | None]]:
    """``(done, total)`` of each of ``command``'s progress lines in ``out``."""
    found = []
    for line in out.splitlines():
        match = LINE.match(line)
        if match and match["command"] == command:
            total = match["total"]
            found.append((int(match["done"].replace(",", "")),
                          None if total is None else int(total.replace(",", ""))))  # fmt: skip
    return found


def _check_counts(lines: list[tuple[int, int | None]], records: int) -> None:
    """The lines count up to every record, and a total, once counted, is the input's."""
    assert lines, "no progress line"
    done = [d for d, _ in lines]
    assert done == sorted(done) and done[-1] == records
    assert {t for _, t in lines} <= {None, records}


def test_featurize_prints_progress_lines_in_a_log_file(tmp_path, log_file, capsys):
    library = _library(tmp_path, 30)
    argv = ["featurize", str(library), "--output", str(tmp_path / "out"), "--shard-size", "10"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    _check_counts(_progress(captured.out, "featurize"), 30)
    assert "\r" not in captured.out + captured.err  # no bar


def test_predict_prints_lines_of_featurizing_then_of_scoring(tmp_path, log_file, capsys):
    library = _library(tmp_path, 9)
    output = tmp_path / "scores.csv"
    argv = ["predict", "--checkpoint", str(CHECKPOINT), "--input", str(library),
            "--output", str(output), "--shard-size", "4"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    _check_counts(_progress(out, "featurize"), 9)
    # scoring: one line per shard of 4, 4 and 1 records, out of the 9 the manifest counts
    assert _progress(out, "predict") == [(4, 9), (8, 9), (9, 9)]
    assert out.index("featurize: ") < out.index("predict: ") < out.index("predicted 7 of 9")
    assert len(pd.read_csv(output)) == 9


def test_qc_prints_progress_lines_in_a_log_file(tmp_path, log_file, capsys):
    pytest.importorskip("tblite")
    library = _library(tmp_path, 6)
    argv = ["qc", str(library), "--output", str(tmp_path / "out"), "--conformers", "1",
            "--shard-size", "3"]  # fmt: skip
    assert main(argv) == 0
    _check_counts(_progress(capsys.readouterr().out, "qc"), 6)


def test_quiet_prints_no_progress_line(tmp_path, log_file, capsys):
    library = _library(tmp_path, 9)
    argv = ["featurize", str(library), "--output", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    assert _progress(capsys.readouterr().out, "featurize") == []
