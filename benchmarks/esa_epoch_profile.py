"""Where one ESA training epoch goes on the CPU: batching, batch building, forward, backward, step.

Benchmark (not a test). Featurizes the first ``--molecules`` molecules of
``../shared/data/qm9/qm9pack_subset10k.csv.gz`` (canonical preset), then runs one training
epoch by hand, one thread, timing each part of every step: ``dgl.batch`` of the graphs, the
model's batch builder (padding, masks), forward, backward, and gradient clipping + AdamW step.
Batches come from :class:`chemgraph.data.datamodule.SizeBucketBatchSampler` (``--pool-batches
1`` = plain shuffled batches). Model options are the ESA defaults unless given as JSON::

    python benchmarks/esa_epoch_profile.py                                   # the defaults
    python benchmarks/esa_epoch_profile.py --pool-batches 1 \\
        --options '{"hidden_dim": 128, "num_heads": 8, "num_seeds": 32, "readout": "seeds"}'
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from chemgraph._dgl import dgl
from chemgraph.data import featurize_table
from chemgraph.data.datamodule import SizeBucketBatchSampler
from chemgraph.featurize import get_preset
from chemgraph.models import get_model_spec
from chemgraph.units import HARTREE_TO_EV

QM9 = Path(__file__).resolve().parents[2] / "shared" / "data" / "qm9" / "qm9pack_subset10k.csv.gz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--molecules", type=int, default=8000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--pool-batches", type=int, default=32)
    parser.add_argument("--options", default="{}", help="ESAConfig fields as JSON")
    args = parser.parse_args(argv)
    if not QM9.is_file():
        raise SystemExit(f"{QM9} is absent: this benchmark needs ../shared/data")
    torch.set_num_threads(1)
    with gzip.open(QM9, "rt") as lines:
        table = pd.read_csv(lines, nrows=args.molecules)
    table["gap_ev"] = table["HOMO_LUMO_gap_au"] * HARTREE_TO_EV
    preset = get_preset("canonical")
    dataset, _ = featurize_table(table, "SMILES", ["gap_ev"], preset, progress=False)
    spec = get_model_spec("esa")
    torch.manual_seed(0)
    options = {**spec.input_options(preset), "num_outputs": 1, **json.loads(args.options)}
    model = spec.model_class(spec.config_class(**options))
    build = spec.batch_builder(model.config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    sizes = [graph.num_nodes() + graph.num_edges() for graph in dataset.graphs]
    sampler = SizeBucketBatchSampler(sizes, args.batch_size, seed=0, pool_batches=args.pool_batches)
    parts = dict.fromkeys(("dgl.batch", "batch builder", "forward", "backward", "step"), 0.0)
    lengths, start = [], time.perf_counter()
    for index in sampler:
        t0 = time.perf_counter()
        graph = dgl.batch([dataset.graphs[i] for i in index])
        t1 = time.perf_counter()
        batch = build(graph)
        t2 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(batch), dataset.labels[index])
        t3 = time.perf_counter()
        optimizer.zero_grad()
        loss.backward()
        t4 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        t5 = time.perf_counter()
        for name, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            parts[name] += seconds
        lengths.append(batch.x.shape[1])
    total = time.perf_counter() - start
    real = sum(graph.num_edges() for graph in dataset.graphs) / len(dataset)
    print(
        f"{len(dataset)} molecules, batch {args.batch_size}, pool {args.pool_batches} batches, "
        f"{sum(p.numel() for p in model.parameters()):,} parameters, options {args.options}"
    )
    print(f"padded set length {sum(lengths) / len(lengths):.1f} on average ({real:.1f} real)")
    print("| part | s | share |\n|---|---|---|")
    for name, seconds in parts.items():
        print(f"| {name} | {seconds:.2f} | {100 * seconds / total:.0f}% |")
    print(f"| epoch | {total:.2f} | 100% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
