"""GRAT against a SMILES Transformer on reaction outcome prediction, same data, same minutes.

Both models train, in one run of this script, on the same USPTO-MIT reactions for the same
wall-clock budget, and are evaluated by beam search (width 8) on the same test reactions:

* GRAT (Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs Need?",
  arXiv:2006.05213): ``chemgraph``'s reaction_outcome recipe (:mod:`chemgraph.recipes.
  reaction_outcome`) with the settings of ``recipes/reaction_outcome/cpu.yaml`` and this
  script's budget; beam search keeps atoms to their observed valences and returns only graphs
  RDKit can sanitise.
* a SMILES-to-SMILES Transformer (the Molecular Transformer recipe of Schwaller et al. 2019,
  ACS Cent. Sci. 5, 1572, DOI 10.1021/acscentsci.9b00576; written for this benchmark in
  ``smiles_transformer.py``), sized for a CPU.

The USPTO-MIT train split is not in ``../shared/data``, so both train on the 30,000 reactions of
the *valid* split (1% held out for the checkpoint) and are tested on the first ``--max-test``
reactions of the test split. The two trainings run at the same time, one process and one thread
each (``--threads``), so a busy machine slows both alike; each gets ``--minutes`` of training,
then beam search (not counted in the budget). Seeds are fixed; the numbers still depend on how
many steps the budget buys on the machine.

    OMP_NUM_THREADS=1 python benchmarks/reaction_outcome.py --minutes 60          # the goal run
    python benchmarks/reaction_outcome.py --minutes 2 --max-train 2000 --max-test 20 --out /tmp/r

Prints both settings, a table of top-1/2/3/5 accuracy and invalid rates (%), the steps,
epochs, parameters and minutes of each, and one summary line; ``--out`` holds each model's
outputs (``grat/``: the recipe's files; ``smiles_transformer/metrics.json``) and ``table.md``.
An existing ``--out`` is refused unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import shutil
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))  # smiles_transformer.py, also in the spawned processes

USPTO = BENCHMARKS.parents[1] / "shared" / "data" / "uspto"
PAPER = {"GRAT, Yoo et al. 2020 (409k train, GPU)": 88.25,
         "Molecular Transformer, Schwaller et al. 2019": 90.4}  # fmt: skip
TOP_K = (1, 2, 3, 5)


def run_grat(args: argparse.Namespace, out: Path) -> dict:
    """Train and evaluate GRAT with the recipe; returns its metrics plus steps and parameters."""
    import torch

    from chemgraph.recipes.reaction_outcome import ReactionOutcomeConfig, run
    from chemgraph.train.checkpoint import load_checkpoint

    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="[grat] %(message)s")
    config = ReactionOutcomeConfig.from_dict(
        {
            **_cpu_profile(),
            "train": args.train,
            "test": args.test,
            "out": str(out),
            "max_train": args.max_train,
            "max_test": args.max_test,
            "max_time_minutes": args.minutes,
            "beam_width": args.beam_width,
            "seed": args.seed,
        }  # fmt: skip
    )
    metrics = run(config)
    checkpoint = torch.load(out / "best.ckpt", map_location="cpu", weights_only=True)
    module = load_checkpoint(out / "best.ckpt", kind="reaction")
    metrics["steps"] = int(checkpoint["global_step"])
    metrics["epochs"] = float(checkpoint["epoch"])
    metrics["parameters"] = sum(p.numel() for p in module.parameters())
    metrics["eval_seconds"] = metrics["predict_seconds"]
    return metrics


def _cpu_profile() -> dict:
    from chemgraph.recipes.registry import recipe_settings

    return recipe_settings("reaction_outcome", {"profile": "cpu"})


def run_smiles_transformer(args: argparse.Namespace, out: Path) -> dict:
    """Train and evaluate the SMILES Transformer of ``smiles_transformer.py``."""
    from smiles_transformer import SmilesTransformerSettings, read_reactions, train_and_evaluate

    settings = SmilesTransformerSettings(
        d_model=args.d_model, heads=4, encoder_layers=3, decoder_layers=3, ff_dim=4 * args.d_model,
        dropout=0.0, batch_size=64, lr=2e-3, warmup=200, beam_width=args.beam_width,
        seed=args.seed, max_minutes=args.minutes, threads=args.threads,
    )  # fmt: skip
    metrics = train_and_evaluate(
        read_reactions(args.train, args.max_train), read_reactions(args.test, args.max_test),
        settings,
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    return metrics


def _child(name: str, args: argparse.Namespace, out: Path) -> None:
    """One model's run in its own process; writes ``out/<name>/metrics.json``."""
    runner = {"grat": run_grat, "smiles_transformer": run_smiles_transformer}[name]
    metrics = runner(args, out / name)
    (out / name / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str))


def table(results: dict[str, dict], args: argparse.Namespace) -> str:
    """The side-by-side table (Markdown) of both runs and the papers' top-1."""
    names = {"grat": "GRAT (chemgraph)", "smiles_transformer": "SMILES Transformer (benchmark)"}
    lines = [
        "| model | " + " | ".join(f"top-{k}" for k in TOP_K)
        + " | invalid top-1 | invalid beam | steps | epochs | parameters | train min | beam min |",
        "|---" * 12 + "|",
    ]  # fmt: skip
    for key, metrics in results.items():
        lines.append(
            f"| {names[key]} | " + " | ".join(f"{metrics[f'top_{k}']:.2f}" for k in TOP_K)
            + f" | {metrics['invalid_top1']:.2f} | {metrics['invalid_beam']:.2f}"
            f" | {metrics['steps']} | {metrics['epochs']:.2f} | {metrics['parameters']:,}"
            f" | {metrics['train_seconds'] / 60:.1f} | {metrics['eval_seconds'] / 60:.1f} |"
        )  # fmt: skip
    for label, top1 in PAPER.items():
        lines.append(f"| {label} | {top1:.2f} |" + " |" * 10)
    reactions = next(iter(results.values()))["reactions"]
    lines.append(
        f"\n{reactions} USPTO-MIT test reactions, beam {args.beam_width}, {args.minutes:g} "
        f"training minutes each (run side by side, {args.threads} thread each), seed {args.seed}."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(USPTO / "uspto_mit_valid.txt.gz"))
    parser.add_argument("--test", default=str(USPTO / "uspto_mit_test.txt.gz"))
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--max-test", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=60.0, help="training budget of each")
    parser.add_argument("--beam-width", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=128, help="SMILES Transformer width")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("grat", "smiles_transformer"), default=None)
    parser.add_argument("--out", default="runs/benchmarks/reaction_outcome")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        if not args.overwrite:
            parser.error(f"{out} exists; pass --overwrite to replace it or choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    print(json.dumps({"benchmark": vars(args), "grat": _cpu_profile()["model_options"]}))
    names = [args.only] if args.only else ["grat", "smiles_transformer"]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_child, args=(n, args, out), name=n) for n in names]
    start = time.perf_counter()
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.join()
    except KeyboardInterrupt:  # stop both trainings, leave no orphan
        for process in processes:
            process.terminate()
            process.join()
        raise
    failed = [p.name for p in processes if p.exitcode != 0]
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)} (see the log above)")
    results = {n: json.loads((out / n / "metrics.json").read_text()) for n in names}
    text = table(results, args)
    (out / "table.md").write_text(text + "\n")
    print()
    print(text)
    print(
        "reaction outcome: "
        + "; ".join(
            f"{n} top-1 {m['top_1']:.2f}% invalid top-1 {m['invalid_top1']:.2f}%"
            for n, m in results.items()
        )  # fmt: skip
        + f" ({(time.perf_counter() - start) / 60:.1f} min in all)"
    )


if __name__ == "__main__":
    main()
