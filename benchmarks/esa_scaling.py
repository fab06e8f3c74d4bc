"""Peak memory and forward+backward time of ESA/NSA against graph size, dense vs sparse attention.

Graphs (one per size, a single graph per batch):

* ``rgg``: random geometric graph, points uniform in the unit cube, the ``size / 2`` closest
  pairs joined (both directions), ``size / degree`` nodes (mean degree ``--degree``, default 10);
  random node (76) and edge (15) features, the widths of the ``canonical`` preset.
* ``peptide``: a real molecule, the peptide of the 20 amino acids repeated
  (``rdkit.Chem.MolFromSequence``, heavy atoms), featurised with the ``canonical`` preset
  (``chemgraph.graphs.mol_to_graph``); about 2.07 directed bonds per atom.

``size`` is the number of directed edges (both directions of every bond); the ESA tokens are
these edges (``L`` ≈ size), the NSA tokens the nodes. A molecule-scale row times a batch of
``--molecules`` QM9 molecules (``qm9pack``) with the default :class:`ESAConfig`.

Each (graph, set type, attention) runs in its own subprocess with an address-space limit
(``RLIMIT_AS``, ``--memory-limit-gib``, default 20 GiB of this 24 GB machine, lowered to what
is free), so an out-of-memory ends that run only; a size is skipped once a smaller one failed.
Memory: the process's peak resident set (``VmHWM`` from ``/proc/self/status``, reset through
``/proc/self/clear_refs`` once the graph, batch and model are built) minus its resident set at
that moment, i.e. the memory the forward+backward steps added on top of inputs and weights
(masks and pair lists are built inside the forward, so they are counted). Time: median of
``--repeats`` forward+backward steps after one warm-up step (one step when the warm-up took
over 30 s), fp32.

    nice -n 10 python benchmarks/esa_scaling.py          # full run: about 40 min on 2 cores
    python benchmarks/esa_scaling.py --sizes 1000,10000 --kinds rgg --molecules 0   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from chemgraph._dgl import dgl
from chemgraph.graph_keys import EDGE_FEATURES, NODE_FEATURES

SIZES = (1_000, 10_000, 30_000, 100_000, 300_000)
AMINO_ACIDS = "GASPVTCLINDQKEMHFRYW"
NODE_WIDTH, EDGE_WIDTH = 76, 15  # feature widths of the canonical preset


def random_geometric_graph(num_edges: int, degree: float, seed: int = 0) -> dgl.DGLGraph:
    """``num_edges`` directed edges (the ``num_edges / 2`` closest pairs) on random 3D points."""
    generator = torch.Generator().manual_seed(seed)
    num_nodes = max(2, round(num_edges / degree))
    points = torch.rand(num_nodes, 3, generator=generator)
    # a radius with about twice the needed pairs in expectation, then the closest pairs
    radius = (3 * 2 * degree / (4 * torch.pi * num_nodes)) ** (1 / 3)
    rows, cols, dists = [], [], []
    for start in range(0, num_nodes, 2048):
        d = torch.cdist(points[start : start + 2048], points)
        i, j = torch.nonzero(d < radius, as_tuple=True)
        upper = j > i + start
        rows.append(i[upper] + start), cols.append(j[upper]), dists.append(d[i[upper], j[upper]])
    rows, cols, dists = torch.cat(rows), torch.cat(cols), torch.cat(dists)
    keep = torch.argsort(dists)[: num_edges // 2]
    src, dst = torch.cat([rows[keep], cols[keep]]), torch.cat([cols[keep], rows[keep]])
    graph = dgl.graph((src, dst), num_nodes=num_nodes)
    graph.ndata[NODE_FEATURES] = torch.randn(num_nodes, NODE_WIDTH, generator=generator)
    half = torch.randn(len(keep), EDGE_WIDTH, generator=generator)
    graph.edata[EDGE_FEATURES] = torch.cat([half, half])
    return graph


def peptide_graph(num_edges: int) -> dgl.DGLGraph:
    """The canonical-preset graph of a peptide with about ``num_edges`` directed bonds."""
    from rdkit import Chem

    from chemgraph.featurize import get_preset
    from chemgraph.graphs import mol_to_graph

    per_residue = Chem.MolFromSequence(AMINO_ACIDS).GetNumBonds() * 2 / len(AMINO_ACIDS)
    residues = max(1, round(num_edges / per_residue))
    sequence = (AMINO_ACIDS * (residues // len(AMINO_ACIDS) + 1))[:residues]
    return mol_to_graph(Chem.MolFromSequence(sequence), get_preset("canonical"))


def qm9_graph(num_molecules: int) -> dgl.DGLGraph:
    """A batch of ``num_molecules`` QM9 molecules (canonical preset)."""
    from chemgraph.chem import mol_from_smiles
    from chemgraph.data.qm9pack import load_qm9pack
    from chemgraph.featurize import get_preset
    from chemgraph.graphs import mol_to_graph

    smiles = load_qm9pack(num_molecules, seed=0)["smiles"]
    return dgl.batch([mol_to_graph(mol_from_smiles(s), get_preset("canonical")) for s in smiles])


def _memory_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def run_child(spec: dict) -> dict:
    """One measurement (in a subprocess): build batch and model, time steps, peak memory."""
    limit = int(spec["memory_limit_gib"] * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:  # if the kernel must kill something, let it be this run
        Path("/proc/self/oom_score_adj").write_text("1000")
    except OSError:
        pass
    from chemgraph.batches import batch_builder, edge_pairs, node_pairs
    from chemgraph.models import ESA, ESAConfig

    graph = dgl.batch(dgl.load_graphs(spec["graph"])[0])
    batch = batch_builder(spec["set_type"])(graph, dense_mask=False)
    if spec["set_type"] == "edge":
        pairs = edge_pairs(batch.src, batch.dst, batch.pad_mask).shape[1]
    else:
        pairs = node_pairs(batch.edge_index, batch.pad_mask).shape[1]
    torch.manual_seed(0)
    config = ESAConfig(
        in_features=batch.x.shape[-1],
        set_type=spec["set_type"],
        attention=spec["attention"],
        **spec["model"],
    )
    model = ESA(config).train()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set (VmHWM)
    baseline = _memory_kib("VmRSS")
    times = []
    while len(times) < 1 + (spec["repeats"] if not times or times[0] < 30 else 1):
        start = time.perf_counter()
        model(batch).sum().backward()
        model.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    return {
        "tokens": batch.pad_mask.shape[1],
        "batch": batch.batch_size,
        "pairs": pairs,
        "seconds": statistics.median(times[1:]),
        "step_mib": (_memory_kib("VmHWM") - baseline) / 1024,
    }


def measure(spec: dict, timeout: float) -> dict:
    """Run :func:`run_child` in a subprocess; failures become a status."""
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    command = [sys.executable, __file__, "--child", json.dumps(spec)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout ({timeout:.0f} s)"}
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        return {"status": "ok", **json.loads(lines[-1])}
    if done.returncode < 0:
        return {"status": f"killed (signal {-done.returncode})"}
    if "memory" in done.stderr.lower():
        return {"status": "OOM"}
    return {"status": "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:60]}


def memory_available_gib() -> float:
    with open("/proc/meminfo") as meminfo:
        line = next(line for line in meminfo if line.startswith("MemAvailable:"))
    return int(line.split()[1]) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="directed edges")
    parser.add_argument("--kinds", default="rgg,peptide")
    parser.add_argument("--set-types", default="edge,node")
    parser.add_argument("--attention", default="dense,sparse")
    parser.add_argument("--degree", type=float, default=10.0, help="mean degree of the rgg")
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--layer-pattern", default="MMMMPS")
    parser.add_argument("--molecules", type=int, default=128, help="QM9 batch; 0 = skip")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--memory-limit-gib", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return 0

    limit = min(args.memory_limit_gib, memory_available_gib() - 1.0)
    model = dict(
        hidden_dim=args.hidden_dim,
        num_heads=args.num_heads,
        layer_pattern=args.layer_pattern,
        num_seeds=8,
    )
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, memory limit "
        f"{limit:.1f} GiB (RLIMIT_AS), scaling model: hidden {args.hidden_dim}, "
        f"{args.num_heads} heads, pattern {args.layer_pattern}; fp32 forward+backward"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cases = []
        if args.molecules:
            path = f"{folder}/qm9.bin"
            dgl.save_graphs(path, dgl.unbatch(qm9_graph(args.molecules)))
            cases.append(("qm9 batch", args.molecules, path, {}))
        builders = {
            "rgg": lambda n: random_geometric_graph(n, args.degree),
            "peptide": peptide_graph,
        }
        for kind in args.kinds.split(","):
            for size in sizes:
                start = time.perf_counter()
                path = f"{folder}/{kind}_{size}.bin"
                dgl.save_graphs(path, [builders[kind](size)])
                print(f"built {kind} {size} in {time.perf_counter() - start:.0f} s", flush=True)
                cases.append((kind, size, path, model))
        for set_type in args.set_types.split(","):
            for attention in args.attention.split(","):
                failed = set()
                for kind, size, path, options in cases:
                    spec = dict(graph=path, set_type=set_type, attention=attention,
                                model=options, repeats=args.repeats * (1 + 4 * (not options)),
                                memory_limit_gib=limit)  # fmt: skip
                    if kind in failed:
                        result = {"status": "skipped (smaller size failed)"}
                    else:
                        result = measure(spec, args.timeout)
                    if result["status"] != "ok":
                        failed.add(kind)
                    rows.append(dict(kind=kind, size=size, set_type=set_type, attention=attention,
                                     **result))  # fmt: skip
                    print_row(rows[-1], header=len(rows) == 1)
    print_summary(rows)
    return 0


def print_row(row: dict, header: bool) -> None:
    if header:
        print(f"\n{'graph':<10}{'size':>8}{'set':>6}{'attention':>10}{'tokens L':>10}"
              f"{'pairs P':>11}{'fwd+bwd s':>11}{'peak MiB':>10}  status")  # fmt: skip
    ok = row["status"] == "ok"
    numbers = (f"{row['tokens']:>10}{row['pairs']:>11}{row['seconds']:>11.3f}"
               f"{row['step_mib']:>10.0f}" if ok else f"{'':>42}")  # fmt: skip
    print(f"{row['kind']:<10}{row['size']:>8}{row['set_type']:>6}{row['attention']:>10}"
          f"{numbers}  {row['status']}", flush=True)  # fmt: skip


def print_summary(rows: list[dict]) -> None:
    """One line: the largest size each path completed, and the molecule-scale time ratio."""
    parts = []
    for set_type, model in (("edge", "ESA"), ("node", "NSA")):
        for attention in ("dense", "sparse"):
            for kind in ("rgg", "peptide"):
                done = [r for r in rows if (r["set_type"], r["attention"], r["kind"])
                        == (set_type, attention, kind) and r["status"] == "ok"]  # fmt: skip
                if done:
                    top = max(done, key=lambda r: r["size"])
                    parts.append(f"{model} {attention} {kind} ≤{top['size']:,} edges "
                                 f"({top['step_mib'] / 1024:.1f} GiB)")  # fmt: skip
        qm9 = {r["attention"]: r for r in rows if r["kind"] == "qm9 batch"
               and r["set_type"] == set_type and r["status"] == "ok"}  # fmt: skip
        if {"dense", "sparse"} <= set(qm9):
            ratio = qm9["sparse"]["seconds"] / qm9["dense"]["seconds"]
            parts.append(f"{model} molecule-scale sparse/dense time {ratio:.2f}x")
    print("\nRESULT: " + "; ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
