"""ESA (``chemgraph train --model esa``) against Chemprop v2 (``chemprop train``), side by side.

Benchmark (not a test). Both tools run in this one script, one after the other, as
subprocesses with one thread each (``OMP_NUM_THREADS=1``), on the same molecules and the same
split: the HOMO–LUMO gap in eV (``HOMO_LUMO_gap_au`` × 27.211386245988) of the 10,000 QM9
molecules of ``../shared/data/qm9/qm9pack_subset10k.csv.gz``, chemgraph's seeded random
80/10/10 split (seed 0). chemgraph runs first; the rows it put in its validation and test
splits (``predictions.csv``) are written to a Chemprop ``--splits-file``, so both tools train,
validate and test on identical molecules. Test MAE, RMSE and R² are computed here, from each
tool's test predictions, with one function.

Two measurements:

``epoch``
    Time per training epoch: each tool runs for ``E1`` and ``E2`` epochs and the per-epoch time
    is ``(t(E2) - t(E1)) / (E2 - E1)``, so start-up, featurization and evaluation cancel.
``budget``
    Accuracy at an equal budget: Chemprop with its defaults (50 epochs) takes ``T`` seconds;
    chemgraph then gets ``max_time_minutes = T / 60`` (and, with ``--multipliers 1 3``, also 3T),
    all else at its defaults.

Chemprop lives in its own virtual environment (``--chemprop`` path to its ``chemprop``
executable; default ``benchmarks/.chemprop-venv/bin/chemprop``). Make one with::

    python -m venv benchmarks/.chemprop-venv
    benchmarks/.chemprop-venv/bin/pip install torch==2.13.0 chemprop==2.3.1

The script stops with a clear message when it is absent. Wall-clock times move with machine
load: run it on an idle machine and read the ratios, not the seconds.

Usage::

    python benchmarks/esa_vs_chemprop.py --mode epoch             # about 10 minutes on 2 cores
    python benchmarks/esa_vs_chemprop.py --mode budget --multipliers 1 3
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QM9 = REPO.parent / "shared" / "data" / "qm9" / "qm9pack_subset10k.csv.gz"
HARTREE_TO_EV = 27.211386245988
TARGET = "gap_ev"


def write_gap_table(source: Path, out: Path, limit: int | None) -> int:
    """``smiles,gap_ev`` of the first ``limit`` QM9 molecules; returns the row count."""
    with gzip.open(source, "rt", newline="") as lines, out.open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["smiles", TARGET])
        count = 0
        for row in csv.DictReader(lines):
            if limit is not None and count >= limit:
                break
            writer.writerow([row["SMILES"], float(row["HOMO_LUMO_gap_au"]) * HARTREE_TO_EV])
            count += 1
    return count


def single_thread_env() -> dict[str, str]:
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
    }


def timed(command: list[str], log: Path) -> float:
    """Run ``command`` (stdout and stderr to ``log``); its wall time in seconds."""
    start = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, env=single_thread_env()
        )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed ({done.returncode}); see {log}")
    return seconds


def run_chemgraph(data: Path, out: Path, max_epochs: int, max_minutes: float | None) -> float:
    if out.exists():
        shutil.rmtree(out)
    config = out.parent / f"{out.name}.yaml"
    config.write_text(f"max_time_minutes: {max_minutes}\n" if max_minutes is not None else "{}\n")
    command = [
        sys.executable, "-m", "chemgraph", "train", "--data", str(data),
        "--smiles-column", "smiles", "--target-columns", TARGET, "--task", "regression",
        "--model", "esa", "--split", "random", "--seed", "0", "--max-epochs", str(max_epochs),
        "--config", str(config), "--out", str(out), "--quiet",
    ]  # fmt: skip
    return timed(command, out.parent / f"{out.name}.log")


def run_chemprop(chemprop: Path, data: Path, splits: Path, out: Path, epochs: int | None) -> float:
    if out.exists():
        shutil.rmtree(out)
    command = [
        str(chemprop), "train", "--data-path", str(data), "-s", "smiles",
        "--target-columns", TARGET, "-t", "regression", "--splits-file", str(splits),
        "-o", str(out), "-n", "0", "--data-seed", "0", "--pytorch-seed", "0",
    ]  # fmt: skip
    if epochs is not None:
        command += ["--epochs", str(epochs)]
    return timed(command, out.parent / f"{out.name}.log")


def chemgraph_split(run: Path, num_rows: int) -> dict[str, list[int]]:
    """The train/val/test rows of a chemgraph run (train = every row not in val or test and
    not rejected)."""
    predictions = list(csv.DictReader((run / "predictions.csv").open()))
    rejected = {int(r["row"]) for r in csv.DictReader((run / "rejected.csv").open())}
    split = {
        name: sorted(int(p["row"]) for p in predictions if p["split"] == name)
        for name in ("val", "test")
    }
    held = set(split["val"]) | set(split["test"]) | rejected
    split["train"] = [row for row in range(num_rows) if row not in held]
    return split


def regression_scores(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    error = predicted - truth
    return {
        "mae": float(np.mean(np.abs(error))),
        "rmse": float(np.sqrt(np.mean(error**2))),
        "r2": float(1 - np.sum(error**2) / np.sum((truth - truth.mean()) ** 2)),
    }


def chemgraph_scores(run: Path) -> dict[str, float]:
    rows = [r for r in csv.DictReader((run / "predictions.csv").open()) if r["split"] == "test"]
    truth = np.array([float(r[TARGET]) for r in rows])
    return regression_scores(truth, np.array([float(r[f"{TARGET}_pred"]) for r in rows]))


def chemprop_scores(run: Path, data: Path, test_rows: list[int]) -> dict[str, float]:
    table = list(csv.DictReader(data.open()))
    predictions = list(csv.DictReader((run / "model_0" / "test_predictions.csv").open()))
    expected = [table[row]["smiles"] for row in test_rows]
    if [p["smiles"] for p in predictions] != expected:
        raise SystemExit(f"{run}: Chemprop's test molecules are not the split's test rows")
    truth = np.array([float(table[row][TARGET]) for row in test_rows])
    return regression_scores(truth, np.array([float(p[TARGET]) for p in predictions]))


def chemgraph_epochs(run: Path) -> int:
    return int(json.loads((run / "metrics.json").read_text())["epochs_trained"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("epoch", "budget", "both"), default="both")
    parser.add_argument("--molecules", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, nargs=2, default=(3, 8), metavar=("E1", "E2"))
    parser.add_argument("--multipliers", type=float, nargs="+", default=(1.0,))
    parser.add_argument(
        "--chemprop", type=Path, default=REPO / "benchmarks" / ".chemprop-venv" / "bin" / "chemprop"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "runs" / "benchmarks" / "esa_vs_chemprop"
    )
    args = parser.parse_args(argv)
    if not QM9.is_file():
        raise SystemExit(f"{QM9} is absent: this benchmark needs ../shared/data")
    if not args.chemprop.is_file():
        raise SystemExit(
            f"Chemprop is not installed at {args.chemprop}: make its environment with\n"
            "  python -m venv benchmarks/.chemprop-venv\n"
            "  benchmarks/.chemprop-venv/bin/pip install torch==2.13.0 chemprop==2.3.1\n"
            "or pass --chemprop PATH/TO/chemprop"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "qm9_gap.csv"
    num_rows = write_gap_table(QM9, data, args.molecules)
    splits = args.out / "splits.json"
    lines = [
        f"QM9 HOMO-LUMO gap (eV), {num_rows} molecules, chemgraph random 80/10/10 seed 0, 1 thread"
    ]

    first, second = args.epochs
    times: dict[str, dict[int, float]] = {"chemgraph": {}, "chemprop": {}}
    for epochs in (first, second) if args.mode in ("epoch", "both") else (first,):
        times["chemgraph"][epochs] = run_chemgraph(data, args.out / f"esa_{epochs}ep", epochs, None)
        if not splits.exists():
            split = chemgraph_split(args.out / f"esa_{epochs}ep", num_rows)
            splits.write_text(json.dumps([split]))
            sizes = ", ".join(f"{name} {len(rows)}" for name, rows in split.items())
            lines.append(f"split: {sizes}")
        if args.mode in ("epoch", "both"):
            times["chemprop"][epochs] = run_chemprop(
                args.chemprop, data, splits, args.out / f"chemprop_{epochs}ep", epochs
            )
    test_rows = json.loads(splits.read_text())[0]["test"]

    if args.mode in ("epoch", "both"):
        per_epoch = {tool: (t[second] - t[first]) / (second - first) for tool, t in times.items()}
        lines += [
            "",
            f"time per training epoch, from {first}- and {second}-epoch runs:",
            "| tool | s/epoch |",
            "|---|---|",
            f"| Chemprop v2 (defaults) | {per_epoch['chemprop']:.2f} |",
            f"| chemgraph ESA (defaults) | {per_epoch['chemgraph']:.2f} |",
            f"ratio ESA / Chemprop: {per_epoch['chemgraph'] / per_epoch['chemprop']:.2f}",
        ]

    if args.mode in ("budget", "both"):
        seconds = run_chemprop(args.chemprop, data, splits, args.out / "chemprop_defaults", None)
        rows = [
            (
                "Chemprop v2 defaults (50 epochs)",
                seconds,
                50,
                chemprop_scores(args.out / "chemprop_defaults", data, test_rows),
            )
        ]
        for multiplier in args.multipliers:
            run = args.out / f"esa_budget_x{multiplier:g}"
            used = run_chemgraph(data, run, 1000, seconds * multiplier / 60)
            rows.append(
                (
                    f"chemgraph ESA defaults, {multiplier:g}x Chemprop's time",
                    used,
                    chemgraph_epochs(run),
                    chemgraph_scores(run),
                )
            )
        lines += [
            "",
            "| run | wall s | epochs | test MAE (eV) | test RMSE | R² |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {wall:.0f} | {epochs} | {s['mae']:.3f} | {s['rmse']:.3f} | {s['r2']:.3f} |"
            for name, wall, epochs, s in rows
        ]
    report = "\n".join(lines)
    (args.out / "results.md").write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
