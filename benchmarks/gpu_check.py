"""Forward and backward of every model on CUDA in bf16, on real molecules.

Prints, per model, the mean step time (forward + backward + AdamW step) and the peak GPU
memory. Molecules: QM9 from qm9pack (offline) or ``--smiles-file`` (CSV with a ``smiles``
column). Run it when a GPU machine is available:

    python benchmarks/gpu_check.py [--batch-size 128] [--steps 20]

On a machine without CUDA it says so and exits with status 1, unless ``--device cpu`` is given
(a smoke test of this script; fp32, since bf16 autocast is slower on CPU).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from chemgraph._dgl import dgl
from chemgraph.chem import mol_from_smiles
from chemgraph.data.qm9pack import load_qm9pack
from chemgraph.featurize import get_preset
from chemgraph.graphs import mol_to_graph
from chemgraph.models import build_model, get_model_spec

# label: (registered model, model options); every model is fed as `chemgraph train` feeds it
MODELS = {
    "ESA (SSMMMMPS, d=256)": ("esa", dict(layer_pattern="SSMMMMPS", hidden_dim=256, num_heads=16)),
    "NSA (SSMMMMPS, d=256)": ("nsa", dict(layer_pattern="SSMMMMPS", hidden_dim=256, num_heads=16)),
    "Graphormer (6 x 256)": ("graphormer", dict(hidden_dim=256, num_layers=6, num_heads=16)),
    "GRAT (6 x 128)": ("grat", dict(hidden_dim=128, num_layers=6, num_heads=8)),
    "GCN (5 x 300)": ("gcn", dict(hidden_dim=300)),
    "GIN (5 x 300)": ("gin", dict(hidden_dim=300)),
    "GMoE-GCN (n4 m2 k1)": ("gmoe-gcn", dict(hidden_dim=300, num_experts=4, k=1)),
    "GMoE-GIN (n4 m2 k2)": ("gmoe-gin", dict(hidden_dim=300, num_experts=4, k=2)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--smiles-file", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("CUDA is not available on this machine: the GPU path is untested here.")
        return 1

    if args.smiles_file:
        import pandas as pd

        smiles = pd.read_csv(args.smiles_file)["smiles"].tolist()[: args.batch_size]
    else:
        smiles = load_qm9pack(args.batch_size, seed=0)["smiles"].tolist()
    mols = [mol_from_smiles(s) for s in smiles]
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    print(
        f"device {device} ({torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'})"
        f", {len(smiles)} molecules per batch, autocast {dtype}, torch {torch.__version__}"
    )
    print(f"{'model':<24}{'tokens':>8}{'step ms':>10}{'peak MiB':>10}")
    for name, (registered, options) in MODELS.items():
        spec = get_model_spec(registered)
        preset = get_preset(spec.default_featurizer)
        model = build_model(registered, {**options, **spec.input_options(preset)}).to(device)
        graphs = spec.transform_graphs(model.config, [mol_to_graph(m, preset) for m in mols])
        batch = spec.batch_builder(model.config)(dgl.batch(graphs)).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times = []
        for step in range(args.steps + 3):
            start = time.perf_counter()
            with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
                loss = model(batch).float().square().mean()
                auxiliary = getattr(model, "auxiliary_loss", None)  # GMoE load balancing
                if auxiliary is not None:
                    loss = loss + auxiliary
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if device.type == "cuda":
                torch.cuda.synchronize()
            if step >= 3:
                times.append(time.perf_counter() - start)
            if not torch.isfinite(loss):
                print(f"{name}: non-finite loss at step {step}")
                return 1
        peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else float("nan")
        tokens = batch.x.shape[0 if batch.x.dim() == 2 else 1]  # sparse: atoms of the batch
        print(f"{name:<24}{tokens:>8}{1000 * sum(times) / len(times):>10.1f}{peak:>10.0f}")
    print("gpu_check: all models ran forward and backward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
