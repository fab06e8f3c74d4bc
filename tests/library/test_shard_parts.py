"""The pieces of a shard that featurize and qc share (chemgraph.library): the records loop and
its rejected rows, the shard's parts on disk, the run's counts and the summary lines."""

from __future__ import annotations

import json
import os

from chemgraph.chem import MoleculeParseError
from chemgraph.data.readers import Record
from chemgraph.library.output import (
    ShardSummary,
    concatenate_rejected,
    finish_shard,
    shard_counts,
    summary_lines,
)
from chemgraph.library.records import Steps, parse_record, process_records, reason_kind

MOLBLOCK = "no-atoms-title  \n  RDKit\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n"


def test_process_records_keeps_the_good_ones_and_says_why_for_the_others():
    records = [
        Record(0, "ethanol", "CCO"),
        Record(1, "ring", "C1CC"),
        Record(2, "skipped", "CCN"),
        Record(3, "boom", "CCCl"),
        Record(4, "4", "", "blank"),
        Record(5, "sdf", MOLBLOCK, "molblock"),
    ]
    seen = []

    def compute(record, steps):
        steps("parse")
        seen.append((steps.position, record.row))
        if record.id == "boom":
            steps("fingerprints")
            raise RuntimeError("no fingerprint")
        return parse_record(record).GetNumAtoms()

    steps = Steps(None)
    done, rejected = process_records(records, compute, steps, {2: "timeout: parse (over 1 s)"})
    assert [(record.row, atoms) for record, atoms in done] == [(0, 3)]
    assert [row[:3] for row in rejected] == [
        (1, "ring", "C1CC"),
        (2, "skipped", "CCN"),
        (3, "boom", "CCCl"),
        (4, "4", ""),  # a row for the blank record too (finish_shard counts it as blank only)
        (5, "sdf", "no-atoms-title"),  # an SDF record's title line, stripped
    ]
    reasons = [row[3] for row in rejected]
    assert reasons[0].startswith("SMILES parse error: unclosed ring")
    assert reasons[1] == "timeout: parse (over 1 s)"  # skipped: never computed
    assert reasons[2] == "fingerprints failed: RuntimeError: no fingerprint"
    assert reasons[3] == "blank record"
    assert reasons[4] == "empty record (no atoms)"
    assert [row for _, row in seen] == [0, 1, 3, 4, 5]  # not the skipped one
    assert [position for position, _ in seen] == [0, 1, 3, 4, 5]
    assert steps.position == -1  # the shard-level phases follow


def test_a_moleculeparseerror_reason_is_kept_as_given():
    def compute(record, steps):
        raise MoleculeParseError("open shell (1 radical electron(s), 9 electrons)")

    _, rejected = process_records([Record(7, "r", "C[CH2]")], compute, Steps(None), {})
    assert rejected == [(7, "r", "C[CH2]", "open shell (1 radical electron(s), 9 electrons)")]


def test_finish_shard_writes_the_rejected_part_then_the_counts(tmp_path):
    (tmp_path / "parts").mkdir()
    records = [Record(0, "a", "CCO"), Record(1, "1", "", "blank"), Record(2, "b", "C1CC")]
    done, rejected = process_records(records, lambda r, s: parse_record(r), Steps(None), {})
    summary = finish_shard(tmp_path, 3, records, len(done), rejected, reason_kind)
    # the blank record counted once, as blank: read == featurized + rejected
    assert summary == ShardSummary(
        shard=3, read=2, blank=1, featurized=1, rejected={"SMILES syntax": 1}
    )
    assert (tmp_path / "parts" / "shard-00003.csv").read_text() == (
        "1,1,,blank record\n2,b,C1CC,SMILES parse error: unclosed ring for input: 'C1CC'\n"
    )  # the part has every record's row (predict's output); rejected.csv has no blank row
    concatenate_rejected(tmp_path, [3])
    assert (tmp_path / "rejected.csv").read_text() == (
        "row,id,input,reason\n2,b,C1CC,SMILES parse error: unclosed ring for input: 'C1CC'\n"
    )
    written = json.loads((tmp_path / "parts" / "shard-00003.json").read_text())
    assert ShardSummary(**written) == summary


def test_counts_and_summary_lines_of_two_shards():
    shards = [
        ShardSummary(0, read=4, blank=1, featurized=3, rejected={"valence": 1}),
        ShardSummary(1, read=1500, blank=0, featurized=1499, rejected={"valence": 1}),
    ]
    counts = shard_counts(shards, "labelled")
    assert counts == {
        "read": 1504,
        "blank": 1,
        "labelled": 1502,
        "rejected": 2,
        "rejected_by_reason": {"valence": 2},
        "shards": 2,
    }
    assert counts["read"] == counts["labelled"] + counts["rejected"]
    assert summary_lines(counts, "labelled") == [
        "read             1,504",
        "blank                1",
        "labelled         1,502",
        "rejected             2",
        "  valence                            2",
    ]


_CTRL_C_WHILE_THE_FORKSERVER_STARTS = """
import multiprocessing.forkserver, os, signal, sys
from pathlib import Path
from chemgraph.data.readers import Record
from chemgraph.library import workers
from chemgraph.library.records import FeaturizeOptions

workers.worker_context()  # spawns the forkserver, which then preloads torch and RDKit (seconds)
os.kill(multiprocessing.forkserver._forkserver._forkserver_pid, signal.SIGINT)
out = Path(sys.argv[1])
for folder in ("graphs", "features", "parts"):
    (out / folder).mkdir(parents=True)
options = FeaturizeOptions(graphs=None, fingerprints=("maccs",))
shards = iter([(0, [Record(0, "ethanol", "CCO")])])
(summary,) = workers.run_local(shards, options, out, 1, None, print, lambda n: None)
print(summary.featurized)
"""


def test_a_ctrl_c_reaching_the_starting_forkserver_prints_nothing_and_stops_nothing(tmp_path):
    """A Ctrl-C reaches the whole process group, the forkserver and workers too: they start with
    SIGINT ignored, whenever it comes (here while the server preloads), so no traceback of
    theirs reaches the terminal and the parent alone decides to stop."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_THE_FORKSERVER_STARTS, str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert "KeyboardInterrupt" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "1"
