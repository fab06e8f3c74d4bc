"""Inference imports no Lightning: ``chemgraph predict``, ``fingerprint`` and ``react``, and the
modules their worker processes import, run without ``lightning`` or ``torchmetrics`` (which
Lightning imports, and which imports ``transformers`` when it is installed: seconds of CPU
time in every process). Checked in a fresh interpreter, after importing the job modules and
after a small run of each command's job in it (:mod:`chemgraph.train.predictors`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import chemgraph

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# scikit-learn too: training's metrics, plots and baselines use it, and it imports scipy.stats
# (about 1.5 CPU s of every chemgraph predict before it was imported only where used)
TRAINING_ONLY = ("lightning", "pytorch_lightning", "torchmetrics", "transformers", "sklearn")

SCRIPT = r"""
import json
import sys
from pathlib import Path

fixtures, work = Path(sys.argv[1]), Path(sys.argv[2])
training_only = sys.argv[3].split(",")


def loaded():
    return sorted(name for name in training_only if name in sys.modules)


import chemgraph.jobs.fingerprint
import chemgraph.jobs.predict
import chemgraph.jobs.react
import chemgraph.library.output  # the featurize workers: the shard function's module
import chemgraph.library.workers  # the featurize workers: the forkserver's preload
import chemgraph.reactions.translator_prediction  # react --decoder generate, reaction_outcome

report = {"after_import": loaded()}
from chemgraph.jobs.fingerprint import fingerprint_table
from chemgraph.jobs.predict import predict_table
from chemgraph.jobs.react import ReactOptions, react, react_file

library = work / "library.smi"
library.write_text("CCO ethanol\nc1ccccc1O phenol\nC1CC unclosed\nCC(=O)Nc1ccccc1 acetanilide\n")
checkpoints = fixtures / "checkpoints"
summary = predict_table(checkpoints / "esa.ckpt", library, work / "p.parquet", progress=False)
report["predicted"] = [summary.records, summary.predicted]
embedded = fingerprint_table(checkpoints / "gin.ckpt", library, work / "e.parquet", progress=False)
report["embedded"] = [embedded.records, embedded.embedded]
report["centre"] = len(react("CC(=O)Cl.OCC>c1ccncc1>").smiles)
generate = ReactOptions(
    decoder="generate", checkpoint=checkpoints / "reaction_grat_test_fixture.ckpt", top_k=2,
    beam_width=2,
)
table, _ = react_file(fixtures / "reactions" / "uspto_mit_tiny.txt", work / "r.csv", generate)
report["generated_rows"] = len(table)
report["after_run"] = loaded()
print(json.dumps(report))
"""


def test_predict_fingerprint_and_react_import_no_lightning(tmp_path):
    environment = dict(os.environ, PYTHONPATH=str(Path(chemgraph.__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(FIXTURES), str(tmp_path), ",".join(TRAINING_ONLY)],
        capture_output=True, text=True, env=environment, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["after_import"] == []
    assert report["after_run"] == []
    # the runs did their work: 4 records (one that does not parse), 3 scored; 8 reactions
    assert report["predicted"] == [4, 3] and report["embedded"] == [4, 3]
    assert report["centre"] >= 1 and report["generated_rows"] == 8
