"""Can a GRAT translator memorise N USPTO-MIT reactions? The paper's bond head against chemgraph's.

A correct encoder-decoder memorises a few dozen examples. This script trains a small
:class:`chemgraph.models.GRATTranslator` on the first ``--reactions`` reactions of the USPTO-MIT
valid split (full batch, AdamW, linear warm-up then cosine decay, fixed seed), then beam-searches
the same reactions, once with the paper's bond head (``bond_scoring: additive``,
``atom_valence_state: false``) and once with chemgraph's (query-key term per bond class, each
earlier atom's bonds so far; ``recipes/reaction_outcome/README.md``). Both use the same token
embedding scale and the valence rules of beam search.

    OMP_NUM_THREADS=1 python benchmarks/reaction_memorisation.py          # 64 reactions, 400 steps
    python benchmarks/reaction_memorisation.py --reactions 16 --steps 100 # quick look

Prints, per bond head, the teacher-forced scores every 50 steps and the beam-search top-k
accuracy and invalid rates on the training reactions.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

from chemgraph.batches.reaction import TokenVocabulary, observed_valences, reaction_batch
from chemgraph.data.reactions import load_reaction_graphs
from chemgraph.models.grat.translator import LEGACY_OPTIONS
from chemgraph.reactions.predictions import top_k_metrics
from chemgraph.reactions.translator_prediction import predict_reactions
from chemgraph.train.reaction_module import ReactionModule, translation_loss

USPTO = Path(__file__).resolve().parents[2] / "shared" / "data" / "uspto"
HEADS = {"paper (additive)": LEGACY_OPTIONS, "chemgraph": {}}


def memorise(items, options: dict, args: argparse.Namespace) -> dict:
    """Train on ``items`` with bond-head ``options``; beam-search top-k on the same items."""
    graphs = [g for i in items for g in (*i.reactants, *i.reagents, i.product)]
    vocabulary = TokenVocabulary.from_graphs(graphs)
    torch.manual_seed(args.seed)
    module = ReactionModule(
        model_config=dict(
            vocab_size=len(vocabulary), hidden_dim=args.hidden_dim, num_heads=4,
            encoder_layers=args.layers, decoder_layers=args.layers, projection_dim=32,
            dropout=0.0, **options,
        ),
        vocabulary=vocabulary.tokens,
        allowed_valences=observed_valences(graphs, vocabulary),
    )  # fmt: skip
    optimizer = torch.optim.AdamW(module.parameters(), lr=args.lr, betas=(0.9, 0.98))
    batch = reaction_batch(items, vocabulary)
    start = time.perf_counter()
    for step in range(args.steps):
        warmup = min(1.0, (step + 1) / 50)
        cosine = 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in optimizer.param_groups:
            group["lr"] = args.lr * warmup * cosine
        loss, parts = translation_loss(*module(batch), batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        if (step + 1) % 50 == 0:
            print(
                f"  step {step + 1}: loss {loss.item():.4f}, labels {parts['label_accuracy']:.3f}, "
                f"bond precision {parts['bond_precision']:.3f}, recall "
                f"{parts['bond_recall']:.3f}, graphs {parts['graph_accuracy']:.3f} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    module.eval()
    predictions = predict_reactions(module, items, beam_width=8, top_k=5)
    metrics = top_k_metrics(predictions, [item.product_smiles for item in items])
    metrics["bond_recall"] = float(parts["bond_recall"])
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(USPTO / "uspto_mit_valid.txt.gz"))
    parser.add_argument("--reactions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2, help="encoder and decoder layers each")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items, _, rejected = load_reaction_graphs(args.data, args.reactions)
    print(f"{len(items)} reactions ({len(rejected)} rejected), {args.steps} full-batch steps")
    results = {}
    for name, options in HEADS.items():
        print(f"bond head: {name}")
        results[name] = memorise(items, options, args)
    print(f"\n{'bond head':<20}{'top-1':>8}{'top-5':>8}{'invalid top-1':>15}{'bond recall':>13}")
    for name, metrics in results.items():
        print(
            f"{name:<20}{metrics['top_1']:>8.1f}{metrics['top_5']:>8.1f}"
            f"{metrics['invalid_top1']:>15.1f}{metrics['bond_recall']:>13.3f}"
        )


if __name__ == "__main__":
    main()
