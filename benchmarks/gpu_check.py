"""Forward and backward of every model on CUDA in bf16, on real molecules.

Prints, per model, the mean step time (forward + backward + AdamW step) and the peak GPU
memory. Molecules: QM9 from qm9pack (offline) or ``--smiles-file`` (CSV with a ``smiles``
column). With ``--reactions-file`` (reaction SMILES, one per line, e.g. USPTO-MIT) the GRAT
reaction translator is checked too: a training step at the paper's size (24 + 24 layers,
d = 128) and a beam search (width 8, valence rules and the RDKit check on) of an untrained
small translator, whose output graphs only have to decode without error. Run it when a GPU
machine is available:

    python benchmarks/gpu_check.py [--batch-size 128] [--steps 20] \
        [--reactions-file ../shared/data/uspto/uspto_mit_valid.txt.gz]

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
    parser.add_argument("--reactions-file", default=None)
    args = parser.parse_args()
    begin = time.perf_counter()
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

        def loss_of_model(model=model, batch=batch) -> torch.Tensor:
            loss = model(batch).float().square().mean()
            auxiliary = getattr(model, "auxiliary_loss", None)  # GMoE load balancing
            return loss if auxiliary is None else loss + auxiliary

        timing = time_training_steps(model, loss_of_model, args.steps, device, dtype)
        if timing is None:
            print(f"{name}: non-finite loss")
            return 1
        tokens = batch.x.shape[0 if batch.x.dim() == 2 else 1]  # sparse: atoms of the batch
        print(f"{name:<24}{tokens:>8}{timing[0]:>10.1f}{timing[1]:>10.0f}")
    if args.reactions_file and not check_reaction_translator(args, device, dtype):
        return 1
    print(f"gpu_check: all models ran forward and backward ({time.perf_counter() - begin:.0f} s)")
    return 0


def time_training_steps(
    model: torch.nn.Module, loss_of, steps: int, device: torch.device, dtype: torch.dtype
) -> tuple[float, float] | None:
    """Mean milliseconds of ``steps`` AdamW training steps of ``loss_of()`` (after 3 warm-up
    steps) and the peak GPU memory in MiB (NaN on the CPU); None at a non-finite loss."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(steps + 3):
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
            loss = loss_of()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step >= 3:
            times.append(time.perf_counter() - start)
        if not torch.isfinite(loss):
            return None
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else float("nan")
    return 1000 * sum(times) / len(times), peak


def check_reaction_translator(args: argparse.Namespace, device, dtype) -> bool:
    """Training step of the paper-sized GRAT translator and a beam search of a small one."""
    from chemgraph.batches.reaction import TokenVocabulary, observed_valences, reaction_batch
    from chemgraph.data.reactions import load_reaction_graphs
    from chemgraph.reactions.translator_prediction import predict_reactions
    from chemgraph.train.reaction_module import ReactionModule, translation_loss

    items, _, _ = load_reaction_graphs(args.reactions_file, args.batch_size)
    graphs = [g for item in items for g in (*item.reactants, *item.reagents, item.product)]
    vocabulary = TokenVocabulary.from_graphs(graphs)
    valences = observed_valences(graphs, vocabulary)
    sizes = {
        "GRAT translator 24+24": dict(hidden_dim=128, num_heads=8, encoder_layers=24,
                                      decoder_layers=24, edge_hidden=32, projection_dim=64),
        "GRAT translator 3+3": dict(hidden_dim=96, num_heads=4, encoder_layers=3,
                                    decoder_layers=3, edge_hidden=32, projection_dim=32),
    }  # fmt: skip
    batch = reaction_batch(items, vocabulary).to(device)
    for name, options in sizes.items():
        torch.manual_seed(0)
        module = ReactionModule(
            dict(vocab_size=len(vocabulary), dropout=0.0, **options),
            vocabulary.tokens,
            allowed_valences=valences,
        ).to(device)

        def loss_of_module(module=module) -> torch.Tensor:
            return translation_loss(*module(batch), batch)[0]

        timing = time_training_steps(module, loss_of_module, args.steps, device, dtype)
        if timing is None:
            print(f"{name}: non-finite loss")
            return False
        tokens = int(batch.encoder_tokens.shape[1] + batch.decoder_tokens.shape[1])
        print(f"{name:<24}{tokens:>8}{timing[0]:>10.1f}{timing[1]:>10.0f}")
    module.eval()
    start = time.perf_counter()
    with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
        predictions = predict_reactions(module, items, beam_width=8, top_k=5, batch_size=64)
    seconds = time.perf_counter() - start
    decoded = sum(bool(p.smiles) for p in predictions)
    print(
        f"beam search (3+3, width 8, untrained): {len(items)} reactions in {seconds:.1f} s "
        f"({len(items) / seconds:.1f} reactions/s), {decoded} with a valid product"
    )
    return True


if __name__ == "__main__":
    sys.exit(main())
