"""Graphormer vs ESA on FreeSolv, ESOL and BBBP; preprocessing time; memory on HIV.

Benchmark (not a test) for Ying et al. 2021 ("Do Transformers Really Perform Badly for
Graph Representation?", NeurIPS 2021), three parts:

1. Accuracy with the ESA benchmark's protocol (``benchmarks/moleculenet_esa.py``, Buterez et al.
   2024 SI 7): random 80/10/10 split per seed, AdamW lr 1e-4, batch 128, gradient clipping 0.5,
   early stopping 30 (FreeSolv 100), LR halved after 15 stale epochs, the same per-dataset epoch
   caps; R² and RMSE (FreeSolv, ESOL), MCC and ROC-AUC (BBBP). ``--models graphormer esa`` runs
   both; ESA's settings are moleculenet_esa.py's defaults.
2. Graphormer preprocessing time per 1,000 molecules (BBBP): SMILES -> graph (``ogb`` preset),
   the shortest-path cache (:func:`chemgraph.graphs.add_shortest_paths`, once per molecule),
   and the collate (:func:`chemgraph.batches.dense_graph_batch`, every epoch).
3. HIV: the reference Graphormer ran out of memory on HIV in Buterez et al. 2024. Here: the
   cache size of HIV's molecules (measured on a sample, scaled to 41,127), and the peak resident
   memory of a fresh process that featurizes the largest HIV molecules (up to 222 heavy atoms)
   and runs a few training steps of the default Graphormer (``GraphormerConfig()``) on batches
   of 128 of them. Target: well under 24 GB.

Usage::

    OMP_NUM_THREADS=2 python benchmarks/graphormer_vs_esa.py            # Graphormer, ~10 min
    python benchmarks/graphormer_vs_esa.py --models graphormer esa      # both (ESA ~35 min)
    python benchmarks/graphormer_vs_esa.py --datasets freesolv --seeds 0 --max-epochs 2  # smoke
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Before torch loads: OpenMP spin-waiting is very slow when another process holds a core.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("DGLBACKEND", "pytorch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import moleculenet_esa  # noqa: E402
from moleculenet_esa import DATASETS, METRIC_NAMES, fmt, markdown  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "moleculenet"
DEFAULT_OUT = REPO / "runs" / "benchmarks" / "graphormer_vs_esa"
HIV_MOLECULES = 41_127


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--datasets", nargs="+", default=["freesolv", "esol", "bbbp"], choices=list(DATASETS)
    )
    parser.add_argument(
        "--models", nargs="+", default=["graphormer"], choices=["graphormer", "esa"]
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--max-epochs", type=int, default=None, help="default: ESA's caps")
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--hiv-batch-size", type=int, default=128)
    parser.add_argument("--hiv-steps", type=int, default=3)
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-hiv", action="store_true")
    parser.add_argument("--hiv-worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_graphormer(args: argparse.Namespace, key: str, seed: int) -> dict:
    from chemgraph.jobs.train import train
    from chemgraph.train.config import TrainingConfig

    ds = DATASETS[key]
    config = TrainingConfig(
        data=str(args.data_dir / ds.file),
        target_columns=[ds.target],
        out=str(args.out / "graphormer" / key / f"seed{seed}"),
        smiles_column=ds.smiles,
        task=ds.task,
        model="graphormer",
        split="random",
        protocol="paper",
        seed=seed,
        max_epochs=args.max_epochs if args.max_epochs is not None else ds.max_epochs,
        batch_size=128,
        learning_rate=1e-4,
        gradient_clip=0.5,
        early_stopping_patience=ds.patience,
        lr_patience=15,
        model_options={
            "hidden_dim": args.hidden_dim,
            "num_heads": args.num_heads,
            "num_layers": args.num_layers,
        },
        progress=False,
    )
    start = time.perf_counter()
    metrics = train(config, overwrite=True)
    return {
        "epochs": int(metrics["epochs_trained"]),
        "wall_s": time.perf_counter() - start,
        **{f"test_{k}": v for k, v in metrics["test"].items()},
        **{f"val_{k}": v for k, v in metrics["val"].items()},
    }


def run_esa(args: argparse.Namespace, key: str, seed: int) -> dict:
    esa_args = moleculenet_esa.parse_args(
        ["--data-dir", str(args.data_dir), "--out", str(args.out / "esa")]
        + (["--max-epochs", str(args.max_epochs)] if args.max_epochs is not None else [])
    )
    run = moleculenet_esa.run_one(esa_args, key, seed)
    return {k: v for k, v in run.items() if k not in ("dataset", "seed")}


def accuracy(args: argparse.Namespace) -> tuple[str, str]:
    start = time.perf_counter()
    rows, gaps = [], []
    for key in args.datasets:
        ds = DATASETS[key]
        means = {}
        for model in args.models:
            runs = []
            for seed in args.seeds:
                run = (run_graphormer if model == "graphormer" else run_esa)(args, key, seed)
                runs.append(run)
                print(
                    f"[{time.perf_counter() - start:6.0f} s] {ds.name} {model} seed {seed}: "
                    f"test {METRIC_NAMES[ds.metric]} {run[f'test_{ds.metric}']:.3f}, "
                    f"{METRIC_NAMES[ds.secondary]} {run[f'test_{ds.secondary}']:.3f}, "
                    f"{run['epochs']} epochs, {run['wall_s']:.0f} s",
                    flush=True,
                )
            primary = [r[f"test_{ds.metric}"] for r in runs]
            means[model] = statistics.fmean(primary)
            rows.append(
                {
                    "dataset": ds.name,
                    "model": model,
                    METRIC_NAMES[ds.metric]: fmt(primary),
                    "secondary": f"{METRIC_NAMES[ds.secondary]} "
                    + fmt([r[f"test_{ds.secondary}"] for r in runs]),
                    "ESA paper": f"{ds.paper:.3f}",
                    "epochs": f"{statistics.fmean(r['epochs'] for r in runs):.0f}",
                    "wall/run (s)": f"{statistics.fmean(r['wall_s'] for r in runs):.0f}",
                }
            )
        gaps.append(
            f"{ds.name} {METRIC_NAMES[ds.metric]} "
            + ", ".join(f"{m} {v:.3f}" for m, v in means.items())
        )
    minutes = (time.perf_counter() - start) / 60
    return markdown(rows), "; ".join(gaps) + f" ({minutes:.1f} min)"


def preprocessing(args: argparse.Namespace, count: int = 1000) -> tuple[str, str]:
    from chemgraph._dgl import dgl
    from chemgraph.batches import dense_graph_batch
    from chemgraph.chem import mol_from_smiles
    from chemgraph.data import read_table
    from chemgraph.featurize import get_preset
    from chemgraph.graphs import add_shortest_paths, mol_to_graph

    preset = get_preset("ogb")
    smiles = read_table(args.data_dir / "BBBP.csv")["smiles"].tolist()
    mols = []
    for text in smiles:
        try:
            mols.append(mol_from_smiles(text))
        except ValueError:
            continue
        if len(mols) == count:
            break
    clock = time.process_time  # CPU time: robust to other jobs on the machine
    start = clock()
    graphs = [mol_to_graph(mol, preset) for mol in mols]
    featurize = clock() - start
    start = clock()
    cached = [add_shortest_paths(graph, 5) for graph in graphs]
    paths = clock() - start
    start = clock()
    for i in range(0, len(cached), 128):
        dense_graph_batch(dgl.batch(cached[i : i + 128]), 20, 5)
    collate = clock() - start
    scale = 1000 / len(mols)
    steps = {
        "RDKit molecule -> graph (ogb features)": featurize,
        "shortest-path cache (once per molecule)": paths,
        "dense batch collate (each epoch, batch 128)": collate,
    }
    rows = [
        {"step": step, "CPU ms per 1,000": f"{seconds * scale * 1e3:.0f}"}
        for step, seconds in steps.items()
    ]
    summary = f"Graphormer preprocessing {paths * scale * 1e3:.0f} CPU ms per 1,000 BBBP molecules"
    return markdown(rows), summary


def hiv_worker(args: argparse.Namespace) -> None:
    """In a fresh process: featurize the largest HIV molecules, train a few steps, print JSON."""
    import torch
    from rdkit import Chem

    from chemgraph._dgl import dgl
    from chemgraph.chem import mol_from_smiles
    from chemgraph.data import read_table
    from chemgraph.featurize import get_preset
    from chemgraph.graph_keys import PAIR, PATH, SPD
    from chemgraph.graphs import add_shortest_paths, mol_to_graph
    from chemgraph.models import build_model, get_model_spec
    from chemgraph.train import masked_loss

    smiles = read_table(args.data_dir / "HIV.csv")["smiles"].tolist()
    sizes = []
    for index, text in enumerate(smiles):
        mol = Chem.MolFromSmiles(text, sanitize=False)
        sizes.append((mol.GetNumHeavyAtoms() if mol is not None else 0, index))
    sizes.sort(reverse=True)
    preset = get_preset("ogb")
    spec = get_model_spec("graphormer")
    model = build_model("graphormer", spec.input_options(preset))  # the default configuration
    graphs = []
    for _, index in sizes:
        try:
            graphs.append(mol_to_graph(mol_from_smiles(smiles[index]), preset))
        except ValueError:
            continue
        if len(graphs) == args.hiv_batch_size * args.hiv_steps:
            break
    sample = [mol_to_graph(mol_from_smiles(s), preset) for s in smiles[::40][:1000]]
    start = time.process_time()
    cached_sample = spec.transform_graphs(model.config, sample)
    sample_seconds = time.process_time() - start
    cache_bytes = [
        sum(
            g.edges[PAIR].data[name].numel() * g.edges[PAIR].data[name].element_size()
            for name in (SPD, PATH)
        )
        + 2 * 4 * g.num_edges(PAIR)
        for g in cached_sample
    ]
    cached = [add_shortest_paths(g, model.config.multi_hop_max_distance) for g in graphs]
    builder = spec.batch_builder(model.config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step_seconds = []
    model.train()
    for step in range(args.hiv_steps):
        chunk = cached[step * args.hiv_batch_size : (step + 1) * args.hiv_batch_size]
        batch = builder(dgl.batch(chunk))
        start = time.process_time()
        loss = masked_loss(model(batch), torch.zeros(len(chunk), 1), "regression")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step_seconds.append(time.process_time() - start)
    print(
        json.dumps(
            {
                "largest_atoms": sizes[0][0],
                "atoms_in_batches": [int(g.num_nodes()) for g in (graphs[0], graphs[-1])],
                "steps": args.hiv_steps,
                "batch_size": args.hiv_batch_size,
                "step_s": step_seconds,
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "cache_bytes_mean": statistics.fmean(cache_bytes),
                "cache_ms_per_1000": 1e3 * sample_seconds * 1000 / len(sample),
                "config": model.config.to_dict(),
            }
        )
    )


def hiv(args: argparse.Namespace) -> tuple[str, str]:
    command = [sys.executable, __file__, "--hiv-worker", "--data-dir", str(args.data_dir),
               "--hiv-batch-size", str(args.hiv_batch_size),
               "--hiv-steps", str(args.hiv_steps)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    cache_gib = report["cache_bytes_mean"] * HIV_MOLECULES / 2**30
    config = report["config"]
    rows = [
        {"quantity": "largest HIV molecule (heavy atoms)", "value": str(report["largest_atoms"])},
        {"quantity": "atoms per molecule in the training batches",
         "value": "{} ... {}".format(*report["atoms_in_batches"])},
        {"quantity": "model", "value": f"Graphormer default: {config['num_layers']} layers, "
         f"hidden {config['hidden_dim']}, {config['num_heads']} heads"},
        {"quantity": f"training step, batch {report['batch_size']} (CPU s)",
         "value": ", ".join(f"{s:.1f}" for s in report["step_s"])},
        {"quantity": "peak RSS of the process (MiB)", "value": f"{report['peak_rss_mib']:.0f}"},
        {"quantity": "shortest-path cache, all 41,127 HIV molecules (GiB, from a 1,000 sample)",
         "value": f"{cache_gib:.2f}"},
        {"quantity": "shortest-path cache time per 1,000 HIV molecules (CPU ms)",
         "value": f"{report['cache_ms_per_1000']:.0f}"},
    ]  # fmt: skip
    fits = report["peak_rss_mib"] / 1024 + cache_gib < 24
    summary = (
        f"HIV: {report['steps']} steps on the largest molecules ({report['largest_atoms']} atoms) "
        f"peak RSS {report['peak_rss_mib'] / 1024:.1f} GiB + cache {cache_gib:.2f} GiB "
        f"({'fits' if fits else 'does NOT fit'} in 24 GB)"
    )
    return markdown(rows), summary


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # chemgraph logs progress
    args = parse_args(argv)
    if args.hiv_worker:
        hiv_worker(args)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    header = [
        "Graphormer vs ESA, ESA benchmark protocol (Buterez et al. 2024, SI 7): random 80/10/10, "
        "AdamW lr 1e-4, batch 128, grad clip 0.5, early stopping 30 (FreeSolv 100), LR halved "
        "after 15",
        f"Graphormer hidden {args.hidden_dim}, {args.num_heads} heads, {args.num_layers} layers "
        "(paper's Graphormer-slim: 12 layers, hidden 80) - CPU budget; epoch caps "
        + (
            str(args.max_epochs)
            if args.max_epochs is not None
            else ", ".join(f"{DATASETS[k].name} {DATASETS[k].max_epochs}" for k in args.datasets)
        ),
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{'CUDA' if torch.cuda.is_available() else 'CPU'}",
    ]
    print("\n".join(header), flush=True)
    sections, summaries = ["\n".join(header)], []
    parts = [preprocessing]
    if not args.skip_accuracy:
        parts.insert(0, accuracy)
    if not args.skip_hiv:
        parts.append(hiv)
    for part in parts:
        table, summary = part(args)
        print(f"\n{table}\n{summary}\n", flush=True)
        sections.append(table)
        summaries.append(summary)
    line = "graphormer_vs_esa: " + " | ".join(summaries)
    print(line, flush=True)
    (args.out / "results.md").write_text("\n\n".join([*sections, line]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
