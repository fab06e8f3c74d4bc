"""Peak memory of ``chemgraph predict --workers 2`` against the library's size (issue 46).

For each ``--sizes`` (default 40,000, 200,000 and 1,000,000 records) the script writes a
``.smi`` library into ``--work`` and runs ``chemgraph predict --workers W`` on it as a
subprocess (``OMP_NUM_THREADS=1``; progress lines go to ``predicted-N.log``), sampling every
``--every`` seconds (default 0.2) the resident memory (RSS, :mod:`psutil`) of the command's main
process and of each of its workers: the featurizing workers, then the scoring workers. It
prints, per size, the wall time and the peak RSS of the main process, of the largest
featurizing worker and of the largest scoring worker, each with its ratio to the first size's;
``--timeline`` also writes every sample to ``timeline-N.csv``.

The library is deterministic and made from real molecules only: the SMILES of MoleculeNet HIV
(``moleculenet/HIV.csv`` of ``--data``, 41,127 records, 7 of which RDKit rejects: they stay,
as rejected records) in file order, then again as random SMILES of the same molecules
(``Chem.MolToRandomSmilesVect``, seed = the round), round after round until the size is
reached; so every record past the first 41,127 is a new string of a known molecule, and the
library's prefixes are the smaller libraries. Ids are ``m<row>``.

The model is a small ESA (hidden 16, 2 heads, pattern ``MSP``) trained for one epoch on ESOL
(``moleculenet/delaney-processed.csv``), so that its checkpoint holds training fingerprints and
predict computes the applicability domain, as a real screen does; the weights do not change
the memory. It is trained once into ``--work`` and reused.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/predict_memory.py --sizes 40000 200000
    OMP_NUM_THREADS=1 python benchmarks/predict_memory.py              # 40k, 200k, 1M
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
ESOL_TARGET = "measured log solubility in mols per litre"
MIB = 2**20


@dataclass
class Peaks:
    """One run: its records, wall seconds, and the peak RSS (MiB) of the main process, of the
    largest featurizing worker and of the largest scoring worker."""

    records: int
    wall: float
    main: float
    featurize_worker: float
    scoring_worker: float


def library(data: Path, size: int, path: Path) -> None:
    """Write the first ``size`` records of the deterministic library (module docstring)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    with open(data / "moleculenet" / "HIV.csv", newline="") as handle:
        smiles = [row["smiles"] for row in csv.DictReader(handle)]
    molecules = [Chem.MolFromSmiles(s) for s in smiles]
    written = 0
    with open(path, "w") as out:
        for round_ in range(size // len(smiles) + 1):
            for text, molecule in zip(smiles, molecules):
                if written == size:
                    return
                if round_ and molecule is not None:
                    text = Chem.MolToRandomSmilesVect(molecule, 1, randomSeed=round_)[0]
                out.write(f"{text} m{written}\n")
                written += 1


def small_model(data: Path, out: Path) -> Path:
    """A small ESA trained one epoch on ESOL (once; reused from ``out``)."""
    checkpoint = out / "best.ckpt"
    if checkpoint.exists():
        return checkpoint
    command = [
        sys.executable, "-m", "chemgraph", "train", "--quiet",
        "--input", str(data / "moleculenet" / "delaney-processed.csv"),
        "--target-columns", ESOL_TARGET, "--max-epochs", "1", "--output", str(out),
        "--overwrite", "--config", str(out.with_suffix(".yaml")),
    ]  # fmt: skip
    out.with_suffix(".yaml").write_text(
        "model: esa\nmodel_options:\n  hidden_dim: 16\n  num_heads: 2\n  layer_pattern: MSP\n"
    )
    subprocess.run(command, check=True, env=_environment())
    return checkpoint


def _environment() -> dict[str, str]:
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return environment


def measure(
    records: int, checkpoint: Path, library_path: Path, output: Path, workers: int,
    every: float, timeline: Path | None,
) -> Peaks:  # fmt: skip
    """Run ``chemgraph predict`` on ``library_path`` (``records`` records) and sample the RSS
    of its main process and of its workers.

    The workers are the descendants but the main process's own helpers (the forkserver and
    the resource tracker, ``multiprocessing`` children of the main process); they come in two
    generations whose lifetimes do not overlap, the featurizing workers and then the scoring
    workers."""
    command = [
        sys.executable, "-m", "chemgraph", "predict", "--checkpoint", str(checkpoint),
        "--input", str(library_path), "--output", str(output), "--workers", str(workers),
        "--overwrite",
    ]  # fmt: skip
    main_peak = 0
    workers_seen: dict[int, list[float]] = {}  # pid: [first second, last second, peak bytes]
    samples = []
    start = time.perf_counter()
    log = output.with_suffix(".log")
    with log.open("w") as handle:
        process = subprocess.Popen(
            command, stdout=handle, stderr=subprocess.STDOUT, env=_environment()
        )
        main = psutil.Process(process.pid)
        helpers: set[int] = set()
        while process.poll() is None:
            try:
                rss = main.memory_info().rss
                for child in main.children():
                    if child.pid not in helpers and "multiprocessing" in " ".join(child.cmdline()):
                        helpers.add(child.pid)
                children = [
                    (p.pid, p.memory_info().rss)
                    for p in main.children(recursive=True)
                    if p.pid not in helpers
                ]
            except psutil.Error:
                continue  # a process ended between listing and reading it
            now = time.perf_counter() - start
            main_peak = max(main_peak, rss)
            for pid, memory in children:
                seen = workers_seen.setdefault(pid, [now, now, 0])
                seen[1], seen[2] = now, max(seen[2], memory)
            if timeline is not None:
                samples.append((now, rss, children))
            time.sleep(every)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}); see {log}")
    if timeline is not None:
        with timeline.open("w") as handle:
            handle.write("seconds,main_mib,workers\n")
            for seconds, rss, children in samples:
                shown = " ".join(f"{pid}:{r / MIB:.0f}" for pid, r in children)
                handle.write(f"{seconds:.1f},{rss / MIB:.1f},{shown}\n")
    generations: list[list[list[float]]] = []
    for seen in sorted(workers_seen.values()):
        if not generations or seen[0] > max(s[1] for s in generations[-1]):
            generations.append([])
        generations[-1].append(seen)
    peaks = [max(s[2] for s in generation) / MIB for generation in generations]
    if len(peaks) != 2:
        raise SystemExit(f"expected featurizing then scoring workers, found {len(peaks)} groups")
    return Peaks(records, wall, main_peak / MIB, peaks[0], peaks[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path("runs/predict-memory"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[40_000, 200_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every", type=float, default=0.2)
    parser.add_argument("--timeline", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    checkpoint = small_model(args.data, args.work / "esa-small")
    results = []
    for size in args.sizes:
        library_path = args.work / f"library-{size}.smi"
        if not library_path.exists():
            library(args.data, size, library_path)
        timeline = args.work / f"timeline-{size}.csv" if args.timeline else None
        output = args.work / f"predicted-{size}.parquet"
        peaks = measure(size, checkpoint, library_path, output, args.workers, args.every, timeline)
        output.unlink()
        results.append(peaks)
        print(json.dumps(asdict(peaks)), flush=True)
    first = results[0]
    print(
        f"\n{'records':>10} {'wall s':>7} {'main MiB':>9} {'x':>5} {'featurize worker':>17} "
        f"{'x':>5} {'scoring worker':>15} {'x':>5}"
    )
    for r in results:
        print(
            f"{r.records:>10,} {r.wall:>7.0f} {r.main:>9.0f} {r.main / first.main:>5.2f} "
            f"{r.featurize_worker:>17.0f} {r.featurize_worker / first.featurize_worker:>5.2f} "
            f"{r.scoring_worker:>15.0f} {r.scoring_worker / first.scoring_worker:>5.2f}"
        )


if __name__ == "__main__":
    main()
