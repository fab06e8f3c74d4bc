"""GRAT reaction outcome prediction on real USPTO-MIT data, reduced to fit a CPU.

Yoo et al. 2020 (section 4.2) trains on the 409,035 USPTO-MIT training reactions (24 + 24 layers,
width 128, 8 GPUs) and reports 88.25% top-1 on the 40,000 test reactions. The training split is
not in ``../shared/data``, so this run trains on the 30,000 reactions of the *validation* split
(1% of them held out to pick the checkpoint), for a fixed wall-clock budget, with a small model,
and evaluates by beam search on the first ``--max-test`` reactions of the test split. It is a
reduced-data, reduced-model, reduced-time run: read its numbers as a check that the pipeline
learns, not as a reproduction (the full recipe is ``recipes/reaction_outcome/config.yaml``).

    OMP_NUM_THREADS=2 nice -n 10 python benchmarks/reaction_outcome.py            # ~30 min
    python benchmarks/reaction_outcome.py --minutes 1 --max-train 2000 --max-test 50   # smoke

Prints the settings, the validation lines, a table of top-1/2/3/5 accuracy and invalid-output
rate next to the paper's top-1, and one summary line. Outputs in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from chemgraph.recipes.reaction_outcome import ReactionOutcomeConfig, run

USPTO = Path(__file__).resolve().parents[2] / "shared" / "data" / "uspto"
PAPER_TOP1 = 88.25


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # chemgraph logs progress
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(USPTO / "uspto_mit_valid.txt.gz"))
    parser.add_argument("--test", default=str(USPTO / "uspto_mit_test.txt.gz"))
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--max-test", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=20.0, help="training wall-clock budget")
    parser.add_argument("--hidden-dim", type=int, default=96)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--beam-width", type=int, default=8)
    parser.add_argument("--out", default="runs/benchmarks/reaction_outcome")
    args = parser.parse_args()
    config = ReactionOutcomeConfig(
        train=args.train,
        test=args.test,
        out=args.out,
        max_train=args.max_train,
        max_test=args.max_test,
        valid_fraction=0.01,
        model_options={
            "hidden_dim": args.hidden_dim,
            "num_heads": args.num_heads,
            "encoder_layers": args.layers,
            "decoder_layers": args.layers,
            "projection_dim": 32,
            "dropout": 0.0,
        },
        batch_size=args.batch_size,
        learning_rate=1e-3,
        warmup_steps=300,
        max_time_minutes=args.minutes,
        val_check_interval=250,
        beam_width=args.beam_width,
        top_k=5,
        eval_batch_size=50,
    )
    print(json.dumps(config.to_dict()))
    start = time.perf_counter()
    metrics = run(config)
    minutes = (time.perf_counter() - start) / 60
    print()
    print(f"{'':<34}{'top-1':>8}{'top-2':>8}{'top-3':>8}{'top-5':>8}{'invalid':>9}")
    print(
        f"{'GRAT, this run (reduced)':<34}"
        + "".join(f"{metrics[f'top_{k}']:>8.2f}" for k in (1, 2, 3, 5))
        + f"{metrics['invalid_top1']:>9.2f}"
    )
    print(f"{'GRAT, Yoo et al. 2020 (409k train, GPU)':<34}{PAPER_TOP1:>8.2f}")
    print(
        f"reaction outcome: top-1 {metrics['top_1']:.2f}% top-5 {metrics['top_5']:.2f}% on "
        f"{metrics['reactions']} USPTO-MIT test reactions after {metrics['train_seconds'] / 60:.1f}"
        f" min of graph building and training ({args.minutes:g}-minute training budget) on the"
        f" 30k valid split; invalid top-1 {metrics['invalid_top1']:.1f}% ({minutes:.1f} min in all)"
    )


if __name__ == "__main__":
    main()
