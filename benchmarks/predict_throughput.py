"""Scoring a library: ``chemgraph predict`` against Chemprop v2, from shards, a million molecules.

Three parts (``--part``):

``side-by-side`` (default): ``chemprop predict`` (Chemprop v2.3.1 in its own environment,
``--chemprop``; its default model, ``chemprop train`` defaults on ESOL) against ``chemgraph
predict`` (a default ESA, ``chemgraph train`` defaults on ESOL; and a 3-model ensemble,
``--ensemble 3``), on ``--cores`` threads each (default 1: ``OMP_NUM_THREADS=1``, ``--workers
1``; with 2, chemgraph runs ``--workers 2`` and Chemprop both its default ``-n 0``, one process
of 2 torch threads, and ``-n 2`` data-loader workers, the ratios taken against its faster), on
the first ``--molecules`` SMILES of MoleculeNet HIV written as a CSV: end to end from the
SMILES, and for chemgraph also from a ``chemgraph featurize`` folder of them (its featurization
not counted). Both tools predict with the applicability domain where they have one (chemgraph's
models store their training fingerprints). Chemprop stops at the first SMILES RDKit rejects, so
it is given the rows RDKit parses (chemgraph reads all and reports the others): molecules per
second count each tool's input rows. Rounds alternate the tools (``--repeats``, A B A B ...) so
that the load of a shared machine hits them alike; each run is a subprocess measured for wall
time, CPU time (``getrusage`` of the children) and peak memory of its process tree
(:class:`Measured`). Models are trained once into ``--work`` (training not timed; ``--epochs``
caps both tools' epochs: the speed of prediction does not depend on the weights).

``in-process``: on the same SMILES, in this process:

1. a default ESA (``chemgraph train``'s settings: hidden 64, 4 heads, ``SMMSPS``, readout
   ``seeds+sum``) is trained for one epoch on ESOL, so that its checkpoint holds the training
   fingerprints of a real run (the weights do not change the speed);
2. ``chemgraph featurize`` writes the library's graph shards (``--workers``);
3. each checkpoint (that ESA, and the 2-target fixture ESA of ``tests/fixtures/checkpoints``,
   hidden 8, no fingerprints) predicts the library end to end through
   :func:`chemgraph.jobs.predict.predict_table`: from the featurize folder (graph shards used
   as they are) in one process and in ``--workers`` scoring processes, and from the ``.smi``
   file (featurized first, then scored, ``--workers`` processes each); the script checks that
   all give the same predictions and similarities to the training set;
4. the parts of a prediction alone, on the same molecules, in this process: the model's
   forward passes (:func:`chemgraph.jobs.predict.predict_graphs` on each shard's batched
   graph, batches of 256 sorted by size) and the applicability domain (maximum Tanimoto
   similarity to the ESOL training molecules);
5. the Tanimoto similarity of random pairs of library molecules (all pairs of the first 2,000),
   which :data:`chemgraph.data.applicability.DEFAULT_SIMILARITY_THRESHOLD` is set against.

``screen``: ``chemgraph predict --workers`` of the first ``--screen`` MOSES training SMILES
(read from the molsets wheel, ``../wheels/molsets-0.3.1-py3-none-any.whl``, as a zip: nothing
installed) with ``--checkpoint`` (e.g. an ensemble folder), the library, output and
``summary.json`` (wall, CPU, peak memory, rows, rejected, in domain) in ``--work``. Resumable:
run the same command again after an interruption (it passes ``--resume``; the summary then
measures the resumed part only and says so).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/predict_throughput.py   # side by side
    python benchmarks/predict_throughput.py --cores 2   # side by side on 2 cores
    OMP_NUM_THREADS=2 nice -n 10 python benchmarks/predict_throughput.py --part in-process
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/predict_throughput.py --part screen \
        --screen 1000000 --checkpoint runs/esol-ensemble --workers 2 --work runs/moses-1m
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import psutil  # noqa: E402
import torch  # noqa: E402
from rdkit import Chem, RDLogger  # noqa: E402

import chemgraph  # noqa: E402, F401  (before torch use: OpenMP settings, DGL shim)
from chemgraph.chem import mols_from_smiles  # noqa: E402
from chemgraph.data.applicability import FINGERPRINT, TrainingFingerprints  # noqa: E402
from chemgraph.graphs import load_shard_batch  # noqa: E402
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library  # noqa: E402
from chemgraph.jobs.predict import predict_table  # noqa: E402
from chemgraph.jobs.train import train  # noqa: E402
from chemgraph.models import get_model_spec  # noqa: E402
from chemgraph.train.checkpoint import load_checkpoint  # noqa: E402
from chemgraph.train.config import TrainingConfig  # noqa: E402
from chemgraph.train.inference import predict_graphs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "checkpoints" / "esa.ckpt"
ESOL_TARGET = "measured log solubility in mols per litre"
CHEMGRAPH = Path(sys.executable).with_name("chemgraph")
MOSES_WHEEL = ROOT.parent / "wheels" / "molsets-0.3.1-py3-none-any.whl"
MOSES_TRAIN = "moses/dataset/data/train.csv.gz"


def timed(function, *args, **kwargs):
    """``(result, wall seconds)``."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def train_default_esa(data: Path, out: Path) -> Path:
    config = TrainingConfig(
        data=str(data / "moleculenet" / "delaney-processed.csv"),
        target_columns=[ESOL_TARGET],
        out=str(out),
        max_epochs=1,
        progress=False,
    )
    train(config, overwrite=True)
    return out / "best.ckpt"


def parts_alone(checkpoint: Path, folder: Path) -> tuple[float, float, int]:
    """Molecules per second of the forward passes alone and of the applicability domain alone,
    over every graph shard of ``folder``; and the number of training molecules."""
    module = load_checkpoint(checkpoint, kind="property")
    spec = get_model_spec(module.hparams.model)
    builder = spec.batch_builder(module.model.config)
    stored = module.hparams.get("train_fingerprints")
    fingerprints = TrainingFingerprints.from_dict(stored) if stored else None
    forward = similarity = 0.0
    count = 0
    for shard in sorted((folder / "graphs").glob("shard-*.bin")):
        graphs, _ = load_shard_batch(shard)
        features = pd.read_parquet(folder / "features" / f"{shard.stem}.parquet")
        forward += timed(predict_graphs, module, graphs, builder, 256)[1]
        bits = FINGERPRINT.featurize(mols_from_smiles(features["smiles"].tolist()))
        if fingerprints is not None:
            similarity += timed(fingerprints.max_similarity, bits)[1]
        count += graphs.batch_size
    domain = count / similarity if similarity else float("nan")
    return count / forward, domain, len(fingerprints) if fingerprints else 0


def random_pair_similarity(smiles: list[str]) -> np.ndarray:
    """Tanimoto similarity of every pair of ``smiles`` (upper triangle)."""
    mols = [m for m in mols_from_smiles(smiles) if not isinstance(m, Exception)]
    bits = torch.from_numpy(FINGERPRINT.featurize(mols).astype(np.float32))
    common = bits @ bits.T
    counts = bits.sum(dim=1)
    union = counts[:, None] + counts[None, :] - common
    similarity = (common / union.clamp(min=1)).numpy()
    return similarity[np.triu_indices(len(mols), k=1)]


# -- command-line runs, measured: wall, CPU and peak memory of the process tree ---------------


@dataclass(frozen=True)
class Measured:
    """One command's cost: wall seconds, CPU seconds (user + system of it and every process it
    waited for, ``getrusage(RUSAGE_CHILDREN)``), the peaks of the summed resident memory of its
    process tree (``tree_rss``: shared pages count once per process, so an upper bound) and of
    its summed proportional set size (``tree_pss``: a shared page split between its processes;
    what the tree takes from the machine), both sampled every 0.2 s, and the largest peak
    resident memory of any one process (``ru_maxrss``); in MiB."""

    wall: float
    cpu: float
    tree_rss: float
    tree_pss: float
    process_rss: float


def measured(command: list[str], log: Path, environment: dict[str, str] | None = None) -> Measured:
    """Run ``command`` (stdout and stderr to ``log``) and measure it; raises on failure.

    Descendants left when the command exits (a forkserver) are adopted and waited for, so
    their CPU time counts (:func:`_adopt_orphans`). ``ru_maxrss`` of the children is the
    largest of all the children this process ever waited for, so :attr:`Measured.process_rss`
    is only that of this command when it is the largest so far: read
    :attr:`Measured.tree_rss` and :attr:`Measured.tree_pss`."""
    _adopt_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    peak = peak_pss = 0
    with log.open("w") as handle:
        process = subprocess.Popen(
            command, stdout=handle, stderr=subprocess.STDOUT, env=environment
        )
        parent = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                memory = [p.memory_full_info() for p in [parent, *parent.children(recursive=True)]]
                peak = max(peak, sum(m.rss for m in memory))
                peak_pss = max(peak_pss, sum(m.pss for m in memory))
            except psutil.Error:
                pass  # a process ended between listing and reading it
            time.sleep(0.2)
    _reap_orphans()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}); see {log}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Measured(wall, cpu, peak / 2**20, peak_pss / 2**20, after.ru_maxrss / 2**10)


def _adopt_orphans() -> None:
    """Linux: make this process the child subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``,
    prctl(2)). A multiprocessing forkserver (``chemgraph featurize``'s workers are forked by one)
    outlives the command that started it by a moment and would then be reparented to init, its
    CPU time and its workers' lost to ``getrusage(RUSAGE_CHILDREN)``; adopted here, it is waited
    for by :func:`_reap_orphans` and counted."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # 36 = PR_SET_CHILD_SUBREAPER


def _reap_orphans(seconds: float = 60.0) -> None:
    """Wait for the adopted descendants (every child left once the command has exited)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


def threads(count: int) -> dict[str, str]:
    """The environment of a run on ``count`` threads (OpenMP, MKL and torch's intra-op pool)."""
    return {**os.environ, "OMP_NUM_THREADS": str(count), "MKL_NUM_THREADS": str(count)}


def one_thread() -> dict[str, str]:
    """The environment of a one-thread run."""
    return threads(1)


# -- 1. side by side with Chemprop v2 ------------------------------------------------------


def train_chemprop(chemprop: Path, data: Path, out: Path, epochs: int | None) -> Path:
    """``chemprop train`` with its defaults (random split, seed 0) on ESOL; its model file."""
    model = out / "model_0" / "best.pt"
    if model.exists():
        return model
    command = [
        str(chemprop), "train", "--data-path", str(data / "moleculenet" / "delaney-processed.csv"),
        "-s", "smiles", "--target-columns", ESOL_TARGET, "-o", str(out), "-n", "0",
    ]  # fmt: skip
    if epochs is not None:
        command += ["--epochs", str(epochs)]
    out.mkdir(parents=True, exist_ok=True)
    measured(command, out.parent / f"{out.name}.log", one_thread())
    found = sorted(out.rglob("best*.pt"))
    if not found:
        raise SystemExit(f"chemprop train wrote no best*.pt under {out}")
    return found[0]


def train_chemgraph(data: Path, out: Path, epochs: int | None, ensemble: int | None) -> Path:
    """``chemgraph train`` with its defaults (ESA, random split, seed 0) on ESOL; the run
    folder (a checkpoint or an ensemble folder, as ``--checkpoint`` takes it)."""
    if (out / "metrics.json").exists():
        return out
    command = [
        str(CHEMGRAPH), "train", "--quiet", "--data",
        str(data / "moleculenet" / "delaney-processed.csv"), "--target-columns", ESOL_TARGET,
        "--out", str(out), "--overwrite",
    ]  # fmt: skip
    if epochs is not None:
        command += ["--max-epochs", str(epochs)]
    if ensemble is not None:
        command += ["--ensemble", str(ensemble)]
    out.parent.mkdir(parents=True, exist_ok=True)
    measured(command, out.parent / f"{out.name}.log", one_thread())
    return out


def side_by_side(args: argparse.Namespace) -> None:
    """Chemprop and chemgraph predict the same library on ``--cores`` cores, alternating."""
    RDLogger.DisableLog("rdApp.*")
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    smiles = pd.read_csv(args.data / "moleculenet" / "HIV.csv")["smiles"].head(args.molecules)
    library = work / "library.csv"
    pd.DataFrame({"smiles": smiles}).to_csv(library, index=False)
    valid = smiles[[Chem.MolFromSmiles(s) is not None for s in smiles]]
    chemprop_library = work / "library_rdkit_valid.csv"
    pd.DataFrame({"smiles": valid}).to_csv(chemprop_library, index=False)
    print(f"library: {len(smiles):,} SMILES, {len(valid):,} that RDKit parses (Chemprop's input)")

    chemprop_model = train_chemprop(args.chemprop, args.data, work / "chemprop", args.epochs)
    single = train_chemgraph(args.data, work / "esa", args.epochs, None) / "best.ckpt"
    ensemble = train_chemgraph(args.data, work / "esa-ensemble", args.epochs, 3)
    folder = work / "featurized"
    if not (folder / "manifest.json").exists():
        measured(
            [str(CHEMGRAPH), "featurize", "--quiet", str(library), "--output", str(folder),
             "--workers", "1"],
            work / "featurize.log", one_thread(),
        )  # fmt: skip

    def predict_command(checkpoint: Path, source: Path, name: str) -> list[str]:
        return [
            str(CHEMGRAPH), "predict", "--quiet", "--checkpoint", str(checkpoint), "--input",
            str(source), "--output", str(work / f"{name}.parquet"), "--workers",
            str(args.cores), "--overwrite",
        ]  # fmt: skip

    def chemprop_command(loaders: int) -> list[str]:
        return [
            str(args.chemprop), "predict", "-i", str(chemprop_library), "-s", "smiles",
            "--model-paths", str(chemprop_model), "-o", str(work / "chemprop.csv"),
            "-n", str(loaders), "--accelerator", "cpu", "--devices", "1",
        ]  # fmt: skip

    # Chemprop's own default (-n 0: featurized in the main process) and, on more cores, its
    # data-loader workers, which a user would try
    runs = {"Chemprop v2.3.1 `chemprop predict` (from SMILES)": (chemprop_command(0), len(valid))}
    if args.cores > 1:
        runs[f"Chemprop v2.3.1 `chemprop predict -n {args.cores}` (from SMILES)"] = (
            chemprop_command(args.cores), len(valid),
        )  # fmt: skip
    runs |= {
        "chemgraph predict, default ESA (from SMILES)": (
            predict_command(single, library, "esa"), len(smiles)
        ),
        "chemgraph predict, default ESA (from the featurize folder)": (
            predict_command(single, folder, "esa-folder"), len(smiles)
        ),
        "chemgraph predict, 3 default ESAs (from SMILES)": (
            predict_command(ensemble, library, "ensemble"), len(smiles)
        ),
    }  # fmt: skip
    results: dict[str, list[Measured]] = {name: [] for name in runs}
    for repeat in range(args.repeats):
        for number, (name, (command, _)) in enumerate(runs.items()):
            cost = measured(command, work / f"run-{repeat}-{number}.log", threads(args.cores))
            results[name].append(cost)
            print(f"  round {repeat + 1}: {name}: {cost.wall:.1f} s wall, {cost.cpu:.1f} s CPU, "
                  f"{cost.tree_rss:,.0f} MiB")  # fmt: skip
    single_smiles = pd.read_parquet(work / "esa.parquet")
    single_folder = pd.read_parquet(work / "esa-folder.parquet")
    if not single_smiles.equals(single_folder):
        raise SystemExit("chemgraph from SMILES and from the featurize folder differ")

    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; {args.repeats} alternating rounds")
    print(f"| run ({args.cores} cores) | molecules | wall s | mol/s (wall; × Chemprop) | CPU s | "
          "mol/s (CPU; × Chemprop) | peak memory of the process tree (MiB) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    # the best round of each run; ratios against Chemprop's best row
    wall = {name: count / min(c.wall for c in results[name]) for name, (_, count) in runs.items()}
    cpu = {name: count / min(c.cpu for c in results[name]) for name, (_, count) in runs.items()}
    chemprop_wall = max(rate for name, rate in wall.items() if name.startswith("Chemprop"))
    chemprop_cpu = max(rate for name, rate in cpu.items() if name.startswith("Chemprop"))
    for name, (_, count) in runs.items():
        costs = results[name]
        print(f"| {name} | {count:,} | {' / '.join(f'{c.wall:.1f}' for c in costs)} | "
              f"{wall[name]:,.0f} ({wall[name] / chemprop_wall:.2f}×) | "
              f"{' / '.join(f'{c.cpu:.1f}' for c in costs)} | "
              f"{cpu[name]:,.0f} ({cpu[name] / chemprop_cpu:.2f}×) | "
              f"{max(c.tree_rss for c in costs):,.0f} |")  # fmt: skip


# -- 3. screening MOSES: the first N training SMILES, resumable -----------------------------


def moses_library(count: int, path: Path) -> None:
    """The first ``count`` MOSES training SMILES (read from the molsets wheel as a zip, no
    install) to a ``.smi`` file."""
    with zipfile.ZipFile(MOSES_WHEEL) as wheel, wheel.open(MOSES_TRAIN) as handle:
        lines = gzip.decompress(handle.read()).decode().splitlines()[1 : count + 1]
    if len(lines) < count:
        raise SystemExit(f"MOSES has {len(lines):,} training SMILES, fewer than {count:,}")
    path.write_text("".join(f"{line}\n" for line in lines))


def screen(args: argparse.Namespace) -> None:
    """``chemgraph predict`` of the first ``--screen`` MOSES SMILES with ``--checkpoint``,
    ``--workers`` workers, resumable: run the same command again after an interruption."""
    out = args.work
    out.mkdir(parents=True, exist_ok=True)
    library = out / f"moses-{args.screen}.smi"
    if not library.exists():
        moses_library(args.screen, library)
    output = out / f"moses-{args.screen}.parquet"
    if output.exists():
        raise SystemExit(f"{output} exists: the screen is complete (see {out / 'summary.json'})")
    resume = output.with_name(f"{output.name}.partial").exists()
    command = [
        str(CHEMGRAPH), "predict", "--quiet", "--checkpoint", str(args.checkpoint),
        "--input", str(library), "--output", str(output), "--workers", str(args.workers),
    ]  # fmt: skip
    if resume:
        command.append("--resume")
    print(" ".join(command), flush=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = os.getloadavg()[0]
    cost = measured(command, out / "predict.log", one_thread())
    table = pd.read_parquet(output, columns=["error", "in_domain"])
    summary = {
        "molecules": args.screen,
        "command": " ".join(command),
        "resumed": resume,
        "started": started,
        "load_average_at_start": load,
        **asdict(cost),
        "rows": len(table),
        "predicted": int(table["error"].isna().sum()),
        "rejected": int(table["error"].notna().sum()),
        "in_domain": int(table["in_domain"].sum()),
        "molecules_per_wall_second": args.screen / cost.wall,
        "molecules_per_cpu_second": args.screen / cost.cpu,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


# -- 2. in this process: from shards against from SMILES, and the parts alone ---------------


def in_process(args: argparse.Namespace) -> None:
    """Shards against SMILES through :func:`predict_table`, and the parts alone."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")

    smiles = pd.read_csv(args.data / "moleculenet" / "HIV.csv")["smiles"].head(args.molecules)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        library = scratch / "library.smi"
        library.write_text("".join(f"{s}\n" for s in smiles))
        checkpoint, seconds = timed(train_default_esa, args.data, scratch / "esa")
        print(f"default ESA trained 1 epoch on ESOL in {seconds:.0f} s")
        folder = scratch / "lib"
        manifest, seconds = timed(
            featurize_library, library, folder, FeaturizeOptions(), workers=args.workers,
            progress=False,
        )  # fmt: skip
        records = manifest["counts"]["read"] + manifest["counts"]["blank"]
        print(
            f"featurize {records:,} records ({manifest['counts']['featurized']:,} molecules), "
            f"{args.workers} workers: {seconds:.1f} s, {records / seconds:,.0f} mol/s"
        )
        rows = []
        for name, path in (
            ("default ESA (hidden 64)", checkpoint),
            ("fixture ESA (hidden 8)", FIXTURE),
        ):
            _, one_process = timed(
                predict_table, path, folder, scratch / "a.parquet", progress=False
            )  # fmt: skip
            _, shards = timed(
                predict_table, path, folder, scratch / "b.parquet", workers=args.workers,
                progress=False,
            )  # fmt: skip
            _, from_smiles = timed(
                predict_table, path, library, scratch / "c.parquet", workers=args.workers,
                progress=False,
            )  # fmt: skip
            tables = [pd.read_parquet(scratch / f"{x}.parquet") for x in "abc"]
            # the similarity too: from shards it is computed from the canonical SMILES
            # (canonical_smiles_fingerprints), from SMILES featurize stores the fingerprints
            columns = [c for c in tables[0].columns if c.endswith("_pred")]
            columns.append("max_similarity_to_train")
            difference = max(
                np.nanmax(np.abs(t[columns].to_numpy() - tables[0][columns].to_numpy()))
                for t in tables[1:]
            )
            forward, domain, training = parts_alone(path, folder)
            rows.append((name, records / one_process, records / shards, records / from_smiles,
                         from_smiles / shards, forward, domain, training, difference))  # fmt: skip
            for output in "abc":
                (scratch / f"{output}.parquet").unlink()
        similarity = random_pair_similarity(smiles.head(2_000).tolist())

    print()
    workers = args.workers
    print(f"| checkpoint | from shards, 1 process (mol/s) | from shards, {workers} workers | "
          f"from SMILES, {workers} workers | shards / SMILES | forward passes alone, 1 process "
          "| domain alone (mol/s; training molecules) | max difference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, one, shards, smiles_rate, ratio, forward, domain, training, difference in rows:
        domain_text = f"{domain:,.0f} ({training:,})" if training else "— (none stored)"
        print(f"| {name} | {one:,.0f} | {shards:,.0f} | {smiles_rate:,.0f} | {ratio:.2f}× | "
              f"{forward:,.0f} | {domain_text} | {difference:.1e} |")  # fmt: skip
    percentiles = np.percentile(similarity, [50, 90, 95, 99, 99.9])
    print(
        f"\nTanimoto of {len(similarity):,} random pairs (first 2,000 molecules): "
        + ", ".join(f"p{p:g} {v:.3f}" for p, v in zip([50, 90, 95, 99, 99.9], percentiles))
        + f"; share >= 0.3: {(similarity >= 0.3).mean():.2%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["side-by-side", "in-process", "screen"],
                        default="side-by-side")  # fmt: skip
    parser.add_argument("--molecules", type=int, default=20_000, help="HIV SMILES")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--workers", type=int, default=2, help="in-process and screen")
    parser.add_argument(
        "--chemprop", type=Path, default=ROOT.parent / "chemprop-venv" / "bin" / "chemprop"
    )
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs of both tools (default: each one's own)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=2, help="alternating rounds")
    parser.add_argument("--cores", type=int, default=1,
                        help="side by side: threads of each run (OMP_NUM_THREADS) and "
                        "chemgraph's --workers; Chemprop also runs with -n CORES")  # fmt: skip
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "benchmarks" / "predict",
                        help="side-by-side: models and outputs (kept; trained once); "
                        "screen: the library, output and summary.json")  # fmt: skip
    parser.add_argument("--screen", type=int, default=1_000_000, help="MOSES SMILES to screen")
    parser.add_argument("--checkpoint", type=Path, help="screen: checkpoint or ensemble folder")
    args = parser.parse_args()
    if args.part == "screen":
        if args.checkpoint is None:
            parser.error("--part screen needs --checkpoint")
        screen(args)
    elif args.part == "side-by-side":
        side_by_side(args)
    else:
        in_process(args)


if __name__ == "__main__":
    main()
