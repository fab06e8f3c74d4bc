"""Reaction outcome prediction side by side: three models, same reactions, same CPU minutes.

Every run trains one model on the first ``size`` reactions of the USPTO-MIT valid split for at
most ``--cpu-minutes`` of its process's CPU time (``time.process_time``: machine load does not
change how much training it buys; reading and encoding the data are not counted), then
predicts the first ``--max-test`` test reactions; all runs are scored here by one rule:

* the reaction-centre model (Jin et al. 2017, WLN/WLDN, NeurIPS, arXiv:1709.04555; Coley et
  al. 2019, Chem. Sci. 10, 370; on the GRAT encoder): ``chemgraph``'s reaction_centre recipe
  (``recipes/reaction_centre/config.yaml``'s model with :data:`REACTION_CENTRE_SETTINGS`, the
  shipped model's training settings of the recorded runs: 2 + 2 fixed epochs, the ranker on the
  first 4,000 training reactions, no calibration), its two stages sharing the budget
  (``max_cpu_minutes``, split as
  :data:`chemgraph.reactions.reaction_centre_training.CPU_SHARES`); the same
  run also ranks the same candidates by the scorer's summed logit alone (no ranker), the
  simplest ranking of them;
* GRAT autoregressive (Yoo et al. 2020, "Graph-Aware Transformer: Is Attention All Graphs
  Need?", arXiv:2006.05213): the reaction_outcome recipe's ``cpu`` profile
  (``recipes/reaction_outcome/cpu.yaml``; 1% of the training reactions held out to pick the
  checkpoint), ``max_cpu_minutes`` instead of its wall-clock limit, beam search width 8;
* a SMILES-to-SMILES Transformer (the Molecular Transformer recipe of Schwaller et al. 2019,
  ACS Cent. Sci. 5, 1572, DOI 10.1021/acscentsci.9b00576; ``smiles_transformer.py``), width
  128, CPU-time budget in its own loop, beam search width 8.

Scoring (:func:`score_run`, the same for all): a prediction counts only when it is a valid
product by ``chemgraph.chem.validity.product_problem`` (no radical or bare atom the reactants
lack, no atom they do not hold; invalid outputs are counted and left out of the ranks); top-k:
one of the first k valid predictions holds the recorded product's molecules (canonical SMILES,
fragment order ignored); a test reaction a model could not read counts as wrong for it.
Reactions/s at prediction are counted per CPU second of the predicting process (and wall clock,
which depends on the machine's load).

Each run writes ``<out>/<model>_<size>_seed<seed>/`` (``run.json``: sizes, CPU minutes,
steps; ``predictions.json``: the ranked SMILES of each test row); a run whose folder holds
``run.json`` is reused, and every finished run in ``--out`` at the same ``--cpu-minutes`` is
scored, so a benchmark can be run in parts (two invocations at once, ``--jobs 1`` each, on
two cores) and the last one scores them all. Prints and writes ``table.md`` (side by side at
the largest size, the learning curves), ``scores.json`` and
``learning_curves.png`` (top-1 and top-5 against training reactions).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/reaction_outcome.py --cpu-minutes 3 \\
        --models reaction_centre grat smiles_transformer --sizes 30000     # side by side
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/reaction_outcome.py --cpu-minutes 3 \\
        --models reaction_centre --sizes 5000 10000 30000                  # + learning curve
    python benchmarks/reaction_outcome.py --cpu-minutes 0.2 --sizes 300 --max-test 20 --out /tmp/r
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
MODELS = ("reaction_centre", "grat", "smiles_transformer")
LABELS = {
    "reaction_centre": "reaction centre (GRAT encoder + WLDN ranker)",
    "summed_logit": "same candidates ranked by summed scorer logit (no ranker)",
    "grat": "GRAT autoregressive (cpu profile)",
    "smiles_transformer": "SMILES Transformer (width 128)",
}
PAPER = {"WLN/WLDN, Jin et al. 2017 (409k train)": 79.6,
         "Coley et al. 2019 (409k train)": 85.6,
         "GRAT, Yoo et al. 2020 (409k train, GPU)": 88.25,
         "Molecular Transformer, Schwaller et al. 2019 (409k train, GPU)": 90.4}  # fmt: skip
TOP_K = (1, 2, 3, 5)
REACTION_CENTRE_SETTINGS = {
    "scorer_epochs": 2, "ranker_epochs": 2, "ranker_reactions": 4000,
    "calibration_reactions": 0, "top_changes": 10, "max_candidates": 20, "max_tries": 60,
}  # fmt: skip
"""Over the recipe's ``config.yaml``: the settings of the runs in ``benchmarks/README.md``
(the shipped model's of 2026-12-02; the recipe's own have moved on since)."""


def _timed(function, *arguments):
    """``function(*arguments)`` with its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*arguments)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def run_reaction_centre(args: argparse.Namespace, size: int, seed: int, out: Path) -> dict:
    """Train and predict with the reaction-centre model; returns ``run.json``'s fields."""
    import torch

    from chemgraph.data.reaction_centre import load_reaction_centre_examples
    from chemgraph.reactions.reaction_centre import load_reaction_centre_model
    from chemgraph.reactions.reaction_centre_training import (
        ReactionCentreTrainingConfig,
        train_reaction_centre_model,
    )
    from chemgraph.recipes.registry import recipe_settings

    recipe = recipe_settings("reaction_centre", None)
    fields = ReactionCentreTrainingConfig.__dataclass_fields__
    config = ReactionCentreTrainingConfig.from_dict(
        {k: v for k, v in recipe.items() if k in fields}
        | REACTION_CENTRE_SETTINGS
        | {
            "train": args.train,
            "out": str(out),
            "max_train": size,
            "seed": seed,
            "max_cpu_minutes": args.cpu_minutes,
            "progress": False,
        }  # fmt: skip
    )
    path, train_wall, train_cpu = _timed(train_reaction_centre_model, config)
    model = load_reaction_centre_model(path)
    examples, rows, _ = load_reaction_centre_examples(
        args.test, model.config.max_distance, args.max_test, progress=False
    )
    predictions, wall, cpu = _timed(model.predict, examples, 5)
    summed = model.candidates(examples)  # best summed logit first: the ranker-free baseline
    settings = model.settings
    return {
        "train_cpu_minutes": settings["train_cpu_minutes"],
        "train_wall_minutes": train_wall / 60,
        "prepare_cpu_minutes": train_cpu / 60 - settings["train_cpu_minutes"],
        "training_reactions": settings["training_reactions"],
        "ranker_reactions": settings["ranker_reactions"],
        "ranker_coverage": settings["ranker_coverage"],
        "parameters": sum(
            p.numel() for p in (*model.scorer.parameters(), *model.ranker.parameters())
        ),  # fmt: skip
        "predict_wall_seconds": wall,
        "predict_cpu_seconds": cpu,
        "predictions": {int(r): p.smiles for r, p in zip(rows, predictions)},
        "summed_logit": {
            int(r): [c.smiles for c in found[:5]] for r, (found, _) in zip(rows, summed)
        },
        "torch_threads": torch.get_num_threads(),
    }


def run_grat(args: argparse.Namespace, size: int, seed: int, out: Path) -> dict:
    """Train GRAT with the reaction_outcome recipe's cpu profile and beam search the test
    reactions; returns ``run.json``'s fields."""
    import torch

    from chemgraph.data.reactions import load_reaction_graphs
    from chemgraph.reactions.translator_prediction import predict_reactions
    from chemgraph.reactions.translator_training import train_reaction_model
    from chemgraph.recipes.reaction_outcome import ReactionOutcomeConfig
    from chemgraph.recipes.registry import recipe_settings
    from chemgraph.train.checkpoint import load_checkpoint

    values = recipe_settings("reaction_outcome", {"profile": "cpu"})
    config = ReactionOutcomeConfig.from_dict(
        values
        | {
            "train": args.train,
            "test": args.test,
            "out": str(out),
            "max_train": size,
            "max_test": args.max_test,
            "seed": seed,
            "max_time_minutes": None,
            "max_cpu_minutes": args.cpu_minutes,
            "progress": False,
        }  # fmt: skip
    )
    path, train_wall, train_cpu = _timed(train_reaction_model, config)
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    module = load_checkpoint(path, kind="reaction")
    items, rows, _ = load_reaction_graphs(args.test, args.max_test)
    predictions, wall, cpu = _timed(
        predict_reactions, module, items, config.beam_width, config.top_k,
        config.eval_batch_size, config.length_penalty,
    )  # fmt: skip
    return {
        "train_cpu_minutes": None,  # the budget's, when it stopped the fit (see _child)
        "train_wall_minutes": train_wall / 60,
        "train_and_prepare_cpu_minutes": train_cpu / 60,
        "steps": int(checkpoint["global_step"]),
        "epochs": float(checkpoint["epoch"]),
        "training_reactions": size,
        "parameters": sum(p.numel() for p in module.parameters()),
        "predict_wall_seconds": wall,
        "predict_cpu_seconds": cpu,
        "predictions": {int(r): p.smiles for r, p in zip(rows, predictions)},
        "torch_threads": torch.get_num_threads(),
    }


def run_smiles_transformer(args: argparse.Namespace, size: int, seed: int, out: Path) -> dict:
    """Train the SMILES Transformer of ``smiles_transformer.py`` and beam search the test
    reactions; returns ``run.json``'s fields."""
    from smiles_transformer import (
        SmilesTransformerSettings,
        parse_reaction,
        parse_reactions,
        predict,
        read_reactions,
        train_model,
    )

    settings = SmilesTransformerSettings(
        d_model=128, heads=4, encoder_layers=3, decoder_layers=3, ff_dim=512, dropout=0.0,
        batch_size=64, lr=2e-3, warmup=200, beam_width=8, seed=seed,
        max_minutes=args.cpu_minutes, threads=1,
    )  # fmt: skip
    pairs, _ = parse_reactions(read_reactions(args.train, size), settings.separate_reagents)
    model, vocabulary, stats = train_model(pairs, settings)
    test = [parse_reaction(line, settings.separate_reagents)
            for line in read_reactions(args.test, args.max_test)]  # fmt: skip
    rows = [r for r, pair in enumerate(test) if pair is not None]
    beams, wall, cpu = _timed(predict, model, vocabulary, [test[r][0] for r in rows], settings)
    return {
        "train_cpu_minutes": stats["train_cpu_seconds"] / 60,
        "train_wall_minutes": stats["train_seconds"] / 60,
        "steps": stats["steps"],
        "epochs": stats["epochs"],
        "training_reactions": stats["train_reactions"],
        "parameters": stats["parameters"],
        "predict_wall_seconds": wall,
        "predict_cpu_seconds": cpu,
        "predictions": dict(zip(rows, beams)),
    }


class _BudgetLog(logging.Handler):
    """Keeps the CPU minutes a :class:`chemgraph.train.callbacks.CPUTimeLimit` stopped at."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _child(model: str, size: int, seed: int, args: argparse.Namespace, folder: Path) -> None:
    """One run in its own process (one torch thread); writes ``folder/run.json``."""
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format=f"[{model} {size} seed {seed}] %(message)s")
    handler = _BudgetLog()
    logging.getLogger("chemgraph").addHandler(handler)
    runner = {"reaction_centre": run_reaction_centre, "grat": run_grat,
              "smiles_transformer": run_smiles_transformer}[model]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    cpu = time.process_time()
    result = runner(args, size, seed, folder)
    result |= {"model": model, "size": size, "seed": seed, "cpu_minutes": args.cpu_minutes,
               "process_cpu_minutes": (time.process_time() - cpu) / 60,
               "budget_log": [m for m in handler.messages if "CPU-time budget" in m]}  # fmt: skip
    if result["train_cpu_minutes"] is None and result["budget_log"]:
        result["train_cpu_minutes"] = args.cpu_minutes  # stopped by the budget
    (folder / "run.json").write_text(json.dumps(result, indent=1))


def score_run(predictions: dict, test_path: str, max_test: int) -> dict:
    """Top-k accuracy (%) and invalid outputs of one run's ranked SMILES, by the rule of the
    module docstring.

    Args:
        predictions: test row (0-based line, as ``str`` or ``int``) -> SMILES, best first.
        test_path: the USPTO-MIT test file; max_test: its first lines scored.

    Returns:
        ``top_<k>`` (% of the readable test reactions), ``no_valid_prediction`` (%),
        ``invalid_outputs`` (% of all outputs returned), ``outputs``, ``reactions``
        (readable test reactions), ``unreadable`` (test lines RDKit cannot read, left out).
    """
    from rdkit import Chem, RDLogger
    from smiles_transformer import read_reactions

    from chemgraph.chem.graph_codec import same_molecules
    from chemgraph.chem.reactions import ReactionParseError, canonical_smiles, parse_reaction_smiles
    from chemgraph.chem.validity import ReactionInputs, product_problem

    RDLogger.DisableLog("rdApp.*")

    ranked = {int(r): list(s) for r, s in predictions.items()}
    hits, no_valid, invalid, outputs, reactions, unreadable = dict.fromkeys(TOP_K, 0), 0, 0, 0, 0, 0
    for row, line in enumerate(read_reactions(test_path, max_test)):
        try:
            reaction = parse_reaction_smiles(line)
            inputs = ReactionInputs.from_smiles([*reaction.reactants, *reaction.reagents])
        except (ReactionParseError, ValueError):
            unreadable += 1
            continue
        reactions += 1
        target = ".".join(reaction.products)
        valid = []
        for smiles in ranked.get(row, []):
            outputs += 1
            mol = Chem.MolFromSmiles(smiles) if smiles else None
            if mol is None or product_problem(mol, inputs) is not None:
                invalid += 1
                continue
            valid.append(canonical_smiles(mol))
        no_valid += not valid
        rank = next((k for k, s in enumerate(valid) if same_molecules(s, target)), None)
        for k in TOP_K:
            hits[k] += rank is not None and rank < k
    n = max(1, reactions)
    result = {f"top_{k}": 100 * hits[k] / n for k in TOP_K}
    return result | {
        "no_valid_prediction": 100 * no_valid / n,
        "invalid_outputs": 100 * invalid / max(1, outputs),
        "outputs": outputs, "reactions": reactions, "unreadable": unreadable,
    }  # fmt: skip


def _train_cpu_minutes(run: dict) -> float:
    """Training CPU minutes of a run (GRAT's: its budget stop, else the whole fit with data)."""
    if run["train_cpu_minutes"] is not None:
        return run["train_cpu_minutes"]
    return run["train_and_prepare_cpu_minutes"]


def tables(runs: list[dict], scores: list[dict], args: argparse.Namespace) -> str:
    """The side-by-side table at the largest size and the learning-curve table (Markdown)."""
    largest = max(r["size"] for r in runs)
    head = " | ".join(f"top-{k}" for k in TOP_K)
    lines = [
        f"Side by side: {largest:,} training reactions, {args.cpu_minutes:g} training CPU "
        f"minutes per model (one thread), first {args.max_test} USPTO-MIT test reactions.\n",
        f"| model | seed | {head} | no valid prediction | invalid outputs | train CPU min "
        "| reactions/CPU-s | reactions/s (wall, shared) | steps | parameters |",
        "|---" * 12 + "|",
    ]
    rows = []
    for run, score in zip(runs, scores):
        if run["size"] != largest:
            continue
        for key in (run["model"], "summed_logit"):
            if key not in score:
                continue
            s = score[key]
            steps = run.get("steps", "")
            rows.append(
                f"| {LABELS[key]} | {run['seed']} | "
                + " | ".join(f"{s[f'top_{k}']:.1f}" for k in TOP_K)
                + f" | {s['no_valid_prediction']:.1f} | {s['invalid_outputs']:.1f}"
                f" | {_train_cpu_minutes(run):.2f}"
                f" | {s['reactions'] / max(run['predict_cpu_seconds'], 1e-9):.1f}"
                f" | {s['reactions'] / max(run['predict_wall_seconds'], 1e-9):.1f}"
                f" | {steps} | {run['parameters']:,} |"
            )  # fmt: skip
    lines += rows
    for label, top1 in PAPER.items():
        lines.append(f"| {label} | | {top1:.1f} |" + " |" * 9)
    lines += [
        "\nLearning curves: top-1 / top-5 (%) against training reactions, same budget and "
        "test reactions.\n",
        "| model | seed | training reactions | top-1 | top-5 | train CPU min |",
        "|---" * 6 + "|",
    ]
    for run, score in sorted(zip(runs, scores), key=lambda p: (p[0]["model"], p[0]["seed"],
                                                                p[0]["size"])):  # fmt: skip
        s = score[run["model"]]
        lines.append(
            f"| {LABELS[run['model']]} | {run['seed']} | {run['size']:,} | {s['top_1']:.1f}"
            f" | {s['top_5']:.1f} | {_train_cpu_minutes(run):.2f} |"
        )
    return "\n".join(lines)


def plot(runs: list[dict], scores: list[dict], path: Path, cpu_minutes: float) -> None:
    """Top-1 and top-5 against training reactions, one line per model and seed (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    groups: dict[tuple[str, int], list[tuple[int, dict]]] = {}
    for run, score in zip(runs, scores):
        groups.setdefault((run["model"], run["seed"]), []).append((run["size"], score))
    for axis, k in zip(axes, (1, 5)):
        for (model, seed), points in sorted(groups.items()):
            points.sort(key=lambda p: p[0])
            axis.plot([p[0] for p in points], [p[1][model][f"top_{k}"] for p in points],
                      marker="o", label=f"{LABELS[model]}, seed {seed}")  # fmt: skip
        axis.set_xscale("log")
        axis.set_xlabel("training reactions (USPTO-MIT valid split)")
        axis.set_title(f"top-{k} accuracy, {cpu_minutes:g} training CPU min per model")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("% of test reactions")
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=str(USPTO / "uspto_mit_valid.txt.gz"))
    parser.add_argument("--test", default=str(USPTO / "uspto_mit_test.txt.gz"))
    parser.add_argument("--max-test", type=int, default=500)
    parser.add_argument("--cpu-minutes", type=float, default=3.0,
                        help="training budget of each run, CPU minutes of its process")  # fmt: skip
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[30000],
                        help="training reactions (the first N of --train)")  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    parser.add_argument("--out", default="runs/benchmarks/reaction_outcome")
    parser.add_argument("--plot", default=None, help="PNG path (default <out>/learning_curves.png)")
    parser.add_argument("--overwrite", action="store_true", help="redo runs that exist")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = [(m, n, s) for m in args.models for n in args.sizes for s in args.seeds]
    folders = {w: out / f"{w[0]}_{w[1]}_seed{w[2]}" for w in wanted}
    todo = []
    for key, folder in folders.items():
        done = (folder / "run.json").is_file()
        earlier = json.loads((folder / "run.json").read_text()) if done else {}
        if done and not args.overwrite and earlier["cpu_minutes"] != args.cpu_minutes:
            parser.error(f"{folder} was run with another --cpu-minutes; choose another --out")
        if args.overwrite and folder.exists():
            shutil.rmtree(folder)
            done = False
        if not done:
            todo.append(key)
    print(json.dumps({"benchmark": vars(args), "runs": [list(k) for k in todo]}), flush=True)
    context = multiprocessing.get_context("spawn")
    running: list = []
    start = time.perf_counter()
    try:
        while todo or running:
            while todo and len(running) < args.jobs:
                key = todo.pop(0)
                process = context.Process(target=_child, args=(*key, args, folders[key]),
                                          name="_".join(map(str, key)))  # fmt: skip
                process.start()
                running.append(process)
            time.sleep(1)
            for process in [p for p in running if not p.is_alive()]:
                running.remove(process)
                if process.exitcode != 0:
                    print(f"run {process.name} failed (exit {process.exitcode})", flush=True)
    except KeyboardInterrupt:  # stop the runs, leave no orphan
        for process in running:
            process.terminate()
            process.join()
        raise
    # every finished run of the folder at this budget, also those of earlier invocations
    runs = [json.loads(f.read_text()) for f in sorted(out.glob("*/run.json"))]
    runs = [r for r in runs if r["cpu_minutes"] == args.cpu_minutes]
    if not runs:
        raise SystemExit("no run finished (see the log above)")
    scores = []
    for run in runs:
        score = {run["model"]: score_run(run["predictions"], args.test, args.max_test)}
        if "summed_logit" in run:
            score["summed_logit"] = score_run(run["summed_logit"], args.test, args.max_test)
        scores.append(score)
    text = tables(runs, scores, args)
    (out / "table.md").write_text(text + "\n")
    (out / "scores.json").write_text(json.dumps(
        [{"model": r["model"], "size": r["size"], "seed": r["seed"], **s} for r, s in
         zip(runs, scores)], indent=1))  # fmt: skip
    png = Path(args.plot) if args.plot else out / "learning_curves.png"
    plot(runs, scores, png, args.cpu_minutes)
    print()
    print(text)
    print(f"\nplot: {png}; reaction outcome: {len(runs)} runs scored "
          f"({(time.perf_counter() - start) / 60:.1f} min)")  # fmt: skip


if __name__ == "__main__":
    main()
