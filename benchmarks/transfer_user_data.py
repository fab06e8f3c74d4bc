"""``chemgraph transfer`` with its defaults on three real multi-fidelity tables (issue 43).

Prepares three tables of real labels from ``../shared/data`` (deterministic, fixed seeds), runs
``chemgraph transfer`` on each with nothing but ``-i``, ``-o``, ``--id-column`` and the label
columns (the point is the defaults), times it (wall clock, and the CPU time of the child
processes from ``resource.getrusage(RUSAGE_CHILDREN)``), and writes one markdown summary per
table: every row of the run's ``table.csv``, the model it recommends (``recommendation.json``,
``selection.csv``, ``recommended/``) and a check that ``chemgraph predict`` scores new molecules
with the recommended model (or the transductive seed-0 checkpoint when the recommendation is a
stacked network, which predict cannot load, or there is none).

=========  ===================================  =====================  ======================
name       source (``../shared/data/``)          low fidelity           high fidelity (kept)
=========  ===================================  =====================  ======================
freesolv   moleculenet/SAMPL.csv (642)           ``calc`` (kcal/mol)    ``expt``, seeded 60%
esol       moleculenet/delaney-processed.csv     ESOL-equation logS     measured logS, seeded
           (1,128)                                                      50%
xtb_dft    qm9/qm9pack_subset10k.csv.gz,         GFN2-xTB HOMO/LUMO     B3LYP HOMO/LUMO (eV),
           seeded 3,000                          (eV, ``chemgraph qc``) seeded 600
=========  ===================================  =====================  ======================

    python benchmarks/transfer_user_data.py --prepare-only          # tables (+ xTB, ~5 min)
    python benchmarks/transfer_user_data.py --datasets freesolv     # one table, its defaults
    python benchmarks/transfer_user_data.py --keep --timeout-minutes 30
    python benchmarks/transfer_user_data.py --datasets esol --seeds 1 --transfer-args "--workers 1"

Work folder ``--out`` (default ``runs/transfer_user_data``): ``<name>/table.csv`` (the prepared
table), ``<name>/run/`` (the transfer output), ``<name>/run.log``, ``<name>/predict_input.csv``
and ``predict_output*.csv``, ``<name>/summary.md``; ``summary.md`` (every table of this
invocation) and ``prepared.json`` (row counts, labelled counts, the xTB time and rejects).
The xTB labels are cached in ``xtb_dft/qc/`` (reused while its input is unchanged).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = Path("runs/transfer_user_data")
SEED = 0  # every seeded choice of this script
PREDICT_MOLECULES = 5

try:
    from chemgraph.units import HARTREE_TO_EV
except ImportError:  # an older chemgraph
    HARTREE_TO_EV = 27.211386245988


@dataclass
class Dataset:
    name: str
    source: str  # path under the data folder
    low: list[str]
    high: list[str]
    notes: dict = field(default_factory=dict)


DATASETS = {
    "freesolv": Dataset("freesolv", "moleculenet/SAMPL.csv", ["calc"], ["expt"]),
    "esol": Dataset(
        "esol",
        "moleculenet/delaney-processed.csv",
        ["esol_predicted_logs"],
        ["measured_logs"],
    ),
    "xtb_dft": Dataset(
        "xtb_dft",
        "qm9/qm9pack_subset10k.csv.gz",
        ["xtb_homo", "xtb_lumo"],
        ["dft_homo", "dft_lumo"],
    ),
}


def chemgraph_exe() -> str:
    """The ``chemgraph`` command of this Python's environment, else the one on PATH."""
    here = Path(sys.executable).with_name("chemgraph")
    if here.exists():
        return str(here)
    found = shutil.which("chemgraph")
    if found is None:
        raise SystemExit("the chemgraph command was not found (install chemgraph)")
    return found


def seeded_subset(n: int, keep: int, seed: int) -> np.ndarray:
    """Boolean mask of ``keep`` of ``n`` positions, drawn with ``seed``."""
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[:keep]] = True
    return mask


# ------------------------------------------------------------------------------- running


def run_timed(cmd: list[str], log: Path | None = None, timeout_s: float | None = None) -> dict:
    """Run ``cmd`` in its own process group; wall and child CPU seconds, rc, timed_out.

    Output goes to ``log`` (and to this terminal) when given. Past ``timeout_s`` the whole
    process group is stopped (SIGTERM, then SIGKILL after 30 s).
    """
    print("$ " + shlex.join(cmd), flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    handle = log.open("w") if log else None
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE if handle else None,
        stderr=subprocess.STDOUT if handle else None,
        text=True,
        errors="replace",
        start_new_session=True,
        env=env,
    )

    def tee() -> None:
        for line in proc.stdout:
            handle.write(line)
            handle.flush()
            sys.stdout.write(line)
            sys.stdout.flush()

    reader = threading.Thread(target=tee, daemon=True) if handle else None
    if reader:
        reader.start()
    group_cpu: dict[int, float] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_group_cpu, args=(proc.pid, group_cpu, stop))
    sampler.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        print(f"stopping the run after {timeout_s / 60:.0f} min (process group {proc.pid})")
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        raise
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    if reader:
        reader.join(timeout=10)
        handle.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "rc": proc.returncode,
        "wall_s": wall,
        "cpu_s": cpu,
        "group_cpu_s": sum(group_cpu.values()) if group_cpu else None,
        "timed_out": timed_out,
    }


def sample_group_cpu(sid: int, seen: dict[int, float], stop: threading.Event) -> None:
    """Every second, the CPU seconds of each live process of session ``sid`` (Linux /proc).

    ``RUSAGE_CHILDREN`` counts a grandchild (a worker process) only when the child reaped it;
    this sum of the last value seen per process counts workers too, but misses each process's
    last second.
    """
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    while True:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2 :].split()
            if int(fields[3]) == sid:  # the session id (field 6 of stat)
                seen[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / tick
        if stop.wait(1.0):
            return


# ----------------------------------------------------------------------------- preparing


def prepare_freesolv(data: Path, ds: Dataset) -> pd.DataFrame:
    raw = pd.read_csv(data / ds.source)
    table = pd.DataFrame(
        {
            "id": [f"freesolv_{i:03d}" for i in range(len(raw))],
            "smiles": raw["smiles"].str.strip(),
            "calc": raw["calc"],
            "expt": raw["expt"],
        }
    )
    keep = seeded_subset(len(table), round(0.6 * len(table)), SEED)
    table.loc[~keep, "expt"] = np.nan
    return table


def prepare_esol(data: Path, ds: Dataset) -> pd.DataFrame:
    raw = pd.read_csv(data / ds.source)
    table = pd.DataFrame(
        {
            "id": [f"esol_{i:04d}" for i in range(len(raw))],
            "name": raw["Compound ID"],
            "smiles": raw["smiles"].str.strip(),
            "esol_predicted_logs": raw["ESOL predicted log solubility in mols per litre"],
            "measured_logs": raw["measured log solubility in mols per litre"],
        }
    )
    keep = seeded_subset(len(table), round(0.5 * len(table)), SEED)
    table.loc[~keep, "measured_logs"] = np.nan
    return table


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_qc(folder: Path, qc_input: Path, workers: int) -> dict:
    """``chemgraph qc`` on ``qc_input`` into ``folder/qc``, reused while its input is the same."""
    qc_out = folder / "qc"
    timing_file = folder / "qc_timing.json"
    manifest_file = qc_out / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.exists() else None
    same_input = manifest is not None and manifest.get("input_sha256") == sha256(qc_input)
    if same_input and manifest.get("status") == "complete" and timing_file.exists():
        timing = json.loads(timing_file.read_text())
        timing["cached"] = True
        print(f"xTB labels: reusing {qc_out} (computed in {timing['wall_s']:.0f} s)")
        return timing
    cmd = [chemgraph_exe(), "qc", "-i", str(qc_input), "-o", str(qc_out)]
    cmd += ["--id-column", "id", "--workers", str(workers)]
    if same_input:
        cmd.append("--resume")  # an interrupted run of this input
    elif qc_out.exists():
        cmd.append("--overwrite")
    timing = run_timed(cmd + ["--quiet"], log=folder / "qc.log")
    if timing["rc"] != 0:
        raise SystemExit(f"chemgraph qc failed (exit {timing['rc']}); see {folder / 'qc.log'}")
    timing.update(workers=workers, resumed=same_input, cached=False)
    timing_file.write_text(json.dumps(timing, indent=2) + "\n")
    return timing


def prepare_xtb_dft(
    data: Path, ds: Dataset, folder: Path, molecules: int, labelled: int, workers: int
) -> pd.DataFrame:
    raw = pd.read_csv(data / ds.source, usecols=["Index", "SMILES", "HOMO_au", "LUMO_au"])
    sample = raw.iloc[np.sort(np.random.default_rng(SEED).permutation(len(raw))[:molecules])]
    sample = pd.DataFrame(
        {
            "id": [f"qm9_{i:06d}" for i in sample["Index"]],
            "smiles": sample["SMILES"].str.strip(),
            "dft_homo": sample["HOMO_au"] * HARTREE_TO_EV,
            "dft_lumo": sample["LUMO_au"] * HARTREE_TO_EV,
        }
    ).reset_index(drop=True)
    qc_input = folder / "qc_input.csv"
    text = sample[["id", "smiles"]].to_csv(index=False)
    if not qc_input.exists() or qc_input.read_text() != text:
        qc_input.write_text(text)
    timing = run_qc(folder, qc_input, workers)
    labels = pd.read_csv(folder / "qc" / "labels.csv", dtype={"id": str})
    rejected = pd.read_csv(folder / "qc" / "rejected.csv", dtype={"id": str})
    xtb = labels[["id", "homo_ev", "lumo_ev"]].rename(
        columns={"homo_ev": "xtb_homo", "lumo_ev": "xtb_lumo"}
    )
    table = sample.merge(xtb, on="id", how="inner")  # qc's rejects are left out
    table = table[["id", "smiles", "xtb_homo", "xtb_lumo", "dft_homo", "dft_lumo"]]
    keep = seeded_subset(len(table), min(labelled, len(table)), SEED + 1)
    table.loc[~keep, ["dft_homo", "dft_lumo"]] = np.nan
    ds.notes.update(
        sampled=len(sample),
        qc_rejected=len(rejected),
        qc_reject_reasons=(
            rejected["reason"].str.split(" (", regex=False).str[0].value_counts().to_dict()
        ),
        qc_wall_s=round(timing["wall_s"], 1),
        qc_cpu_s=round(timing["cpu_s"], 1),
        qc_group_cpu_s=round(timing.get("group_cpu_s") or 0, 1),
        qc_workers=timing.get("workers"),
        qc_cached=timing.get("cached", False),
    )
    return table


def prepare(name: str, args: argparse.Namespace) -> Path:
    ds = DATASETS[name]
    folder = args.out / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "table.csv"
    info_path = folder / "prepared.json"
    if args.keep and path.exists() and info_path.exists():
        print(f"{name}: keeping the prepared {path}")
        ds.notes.update(json.loads(info_path.read_text()).get("notes", {}))
        return path
    if name == "freesolv":
        table = prepare_freesolv(args.data_dir, ds)
    elif name == "esol":
        table = prepare_esol(args.data_dir, ds)
    else:
        table = prepare_xtb_dft(
            args.data_dir, ds, folder, args.qm9_molecules, args.qm9_labelled, args.qc_workers
        )
    table.to_csv(path, index=False)
    info = {
        "dataset": name,
        "source": f"../shared/data/{ds.source}",
        "rows": len(table),
        "low_fidelity": ds.low,
        "high_fidelity": ds.high,
        "high_fidelity_labelled": int(table[ds.high].notna().all(axis=1).sum()),
        "notes": ds.notes,
    }
    info_path.write_text(json.dumps(info, indent=2) + "\n")
    print(f"{name}: {info['rows']} rows, {info['high_fidelity_labelled']} with high fidelity")
    return path


# ------------------------------------------------------------------------------- summary


def markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = ["" if pd.isna(v) else str(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def recommendation(run: Path) -> tuple[dict, list[str]]:
    """The run's recommendation per target (empty when this version makes none), as text."""
    rec_file = run / "recommendation.json"
    rec = json.loads(rec_file.read_text()) if rec_file.exists() else {}
    lines = []
    if rec:
        lines.append("| target | recommended | kind | validation RMSE | test RMSE | checkpoint |")
        lines.append("|---|---|---|---|---|---|")
        for target, r in rec.items():
            ckpt = r.get("checkpoint")
            where = os.path.relpath(ckpt, run) if ckpt else "none (a stacked network)"
            lines.append(
                f"| {target} | {r.get('model')} | {r.get('kind')} | "
                f"{r.get('validation_rmse', float('nan')):.3f} | "
                f"{r.get('test_rmse', float('nan')):.3f} | {where} |"
            )
        return rec, lines
    table = pd.read_csv(run / "table.csv")
    if "recommended" in table.columns:  # another layout of the same information
        chosen = table[table["recommended"].astype(str).str.lower() == "true"]
        lines.append(markdown(chosen))
        return {t: {"model": m} for t, m in zip(chosen["target"], chosen["method"])}, lines
    if (run / "recommended").is_dir():
        found = sorted(p.name for p in (run / "recommended").iterdir())
        lines.append("recommended/ holds: " + ", ".join(found))
        return {
            t: {"checkpoint": str(run / "recommended" / t), "kind": "network"} for t in found
        }, lines
    return {}, ["no recommendation in this version"]


def check_predict(name: str, table_path: Path, run: Path, rec: dict, folder: Path) -> list[str]:
    """``chemgraph predict`` on a few molecules of the table without high-fidelity labels."""
    ds = DATASETS[name]
    table = pd.read_csv(table_path, dtype={"id": str})
    unlabelled = table[table[ds.high].isna().all(axis=1)]
    new = unlabelled.head(PREDICT_MOLECULES)[["id", "smiles", *ds.low]]
    new_path = folder / "predict_input.csv"
    new.to_csv(new_path, index=False)
    lines = [
        f"`chemgraph predict` on {len(new)} molecules of the table without high-fidelity labels "
        f"(their low-fidelity columns given, as a transductive Δ-learning or label-augmented "
        f"checkpoint needs):",
        "",
    ]
    targets = ds.high
    checks: list[tuple[str, Path, bool]] = []  # (target, checkpoint, recommended?)
    for target in targets:
        r = rec.get(target, {})
        ckpt = r.get("checkpoint")
        if ckpt and Path(ckpt).exists():  # a network's seeds or a baseline's checkpoint
            checks.append((target, Path(ckpt), True))
            continue
        seed0 = sorted((run / "checkpoints").glob("transductive_seed0*"))
        seed0 = [
            p for p in seed0 if p.name in (f"transductive_seed0_{target}", "transductive_seed0")
        ]
        if seed0:
            checks.append((target, seed0[0], False))
        else:
            lines.append(f"- {target}: no checkpoint to check (no transductive seed-0 checkpoint)")
    done: dict[Path, Path] = {}
    for i, (target, ckpt, recommended) in enumerate(checks):
        why = (
            "the recommended model"
            if recommended
            else (
                "the transductive seed-0 checkpoint ("
                + ("the recommendation is stacked" if rec.get(target) else "no recommendation")
                + ")"
            )
        )
        if ckpt not in done:
            out = folder / f"predict_output_{i}.csv"
            cmd = [chemgraph_exe(), "predict", "--checkpoint", str(ckpt), "-i", str(new_path)]
            cmd += ["-o", str(out), "--overwrite", "--quiet"]
            res = run_timed(cmd, log=folder / f"predict_{i}.log")
            if res["rc"] != 0:
                lines.append(f"- {target}, {why}: **predict failed** (exit {res['rc']})")
                continue
            done[ckpt] = out
        out = done[ckpt]
        pred = pd.read_csv(out, dtype={"id": str})
        col = f"{target}_pred"
        ok = col in pred.columns and pred[col].notna().all() and pred["error"].isna().all()
        line = (
            f"- {target}, {why} (`{os.path.relpath(ckpt, folder)}`): "
            f"{'ok' if ok else '**not ok**'}, {int(pred[col].notna().sum()) if col in pred else 0}"
            f"/{len(pred)} predicted"
        )
        own = run / "predictions_recommended.csv"
        if recommended and ok and own.exists():
            mine = pd.read_csv(own, dtype={"id": str}).set_index("id")
            if col in mine.columns:
                diff = np.abs(pred.set_index("id")[col] - mine.loc[pred["id"], col]).max()
                line += (
                    f"; largest difference from the run's predictions_recommended.csv {diff:.2g}"
                )
        lines.append(line)
    return lines


def summarise(
    name: str, table_path: Path, run: Path, timing: dict, args: argparse.Namespace
) -> str:
    ds = DATASETS[name]
    info = json.loads((args.out / name / "prepared.json").read_text())
    parts = [
        f"## {name}: {info['source']}",
        "",
        f"{info['rows']} molecules, {info['high_fidelity_labelled']} with high-fidelity labels; "
        f"low fidelity {', '.join(ds.low)}, high fidelity {', '.join(ds.high)}. "
        f"Wall {timing['wall_s']:.0f} s, CPU {timing['cpu_s']:.0f} s (RUSAGE_CHILDREN: the "
        f"reaped processes), {timing['group_cpu_s'] or 0:.0f} s (every process of the run, "
        f"sampled each second), "
        f"exit {timing['rc']}"
        + (", **stopped at the time limit**" if timing["timed_out"] else "")
        + f"; `{timing['cmd']}`.",
        "",
    ]
    table_csv = run / "table.csv"
    if timing["rc"] != 0 or not table_csv.exists():
        parts.append(f"No table: the run did not finish (see {args.out / name / 'run.log'}).")
        return "\n".join(parts) + "\n"
    table = pd.read_csv(table_csv)
    cols = [c for c in ("target", "strategy", "setting", "method", "test RMSE") if c in table]
    parts += [markdown(table[cols]), "", "Recommendation (model selection on validation):", ""]
    rec, lines = recommendation(run)
    parts += lines + [""]
    parts += check_predict(name, table_path, run, rec, args.out / name)
    return "\n".join(parts) + "\n"


def run_transfer(name: str, table_path: Path, args: argparse.Namespace) -> str:
    ds = DATASETS[name]
    folder = args.out / name
    run = folder / "run"
    if run.exists():
        shutil.rmtree(run)
    cmd = [chemgraph_exe(), "transfer", "-i", str(table_path), "-o", str(run), "--id-column", "id"]
    cmd += ["--low-fidelity-columns", ",".join(ds.low)]
    cmd += ["--high-fidelity-columns", ",".join(ds.high)]
    if args.seeds is not None:
        cmd += ["--seeds", str(args.seeds)]
    cmd += shlex.split(args.transfer_args or "")
    timeout = args.timeout_minutes * 60 if args.timeout_minutes else None
    timing = run_timed(cmd, log=folder / "run.log", timeout_s=timeout)
    timing["cmd"] = shlex.join(["chemgraph", *cmd[1:]])
    (folder / "timing.json").write_text(json.dumps(timing, indent=2) + "\n")
    text = summarise(name, table_path, run, timing, args)
    (folder / "summary.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="work folder")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--keep", action="store_true", help="reuse the prepared tables")
    parser.add_argument("--prepare-only", action="store_true", help="stop before training")
    parser.add_argument(
        "--seeds", type=int, default=None, help="passed to transfer when given (default: none)"
    )
    parser.add_argument(
        "--transfer-args", default=None, help='more transfer options, one string: "--workers 1"'
    )
    parser.add_argument(
        "--timeout-minutes", type=float, default=0, help="stop a run after this (0: no limit)"
    )
    parser.add_argument("--qm9-molecules", type=int, default=3000)
    parser.add_argument("--qm9-labelled", type=int, default=600)
    parser.add_argument("--qc-workers", type=int, default=2)
    args = parser.parse_args(argv)

    missing = [n for n in args.datasets if not (args.data_dir / DATASETS[n].source).exists()]
    if missing:
        print(f"skipped: {args.data_dir} lacks the data of {', '.join(missing)} (../shared/data)")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    tables = {name: prepare(name, args) for name in args.datasets}
    prepared = {
        name: json.loads((args.out / name / "prepared.json").read_text()) for name in tables
    }
    (args.out / "prepared.json").write_text(json.dumps(prepared, indent=2) + "\n")
    for name, info in prepared.items():
        print(
            f"{name}: {info['rows']} rows, {info['high_fidelity_labelled']} labelled,",
            info["notes"],
        )
    if args.prepare_only:
        return 0
    texts = []
    for name, path in tables.items():
        texts.append(run_transfer(name, path, args))
        print("\n" + texts[-1], flush=True)
        (args.out / "summary.md").write_text("\n".join(texts))
    print(f"summary: {args.out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
