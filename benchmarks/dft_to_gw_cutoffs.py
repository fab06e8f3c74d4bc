"""DFT -> GW recipe: test RMSE and time against the radius graph's cutoff and neighbour cap.

For each ``cutoff:max_neighbors`` setting, runs ``chemgraph recipe run dft_to_gw`` on the
embedded data with the ``embedded`` profile of ``recipes/dft_to_gw/config.yaml`` (fixed epochs
and seeds; only ``training.featurizer`` changes) and prints one markdown row per setting: mean
ESA tokens per molecule (radius edges over the 6,000 molecules of the run), GW test RMSE (eV,
mean ± std over seeds) of every strategy for HOMO and LUMO, whether both transfer strategies
beat GW only by more than the seed-to-seed spread
(:func:`chemgraph.train.transfer.transfer_claim`), seconds per pretraining and fine-tuning
epoch, and the recipe's wall time.

    python benchmarks/dft_to_gw_cutoffs.py                       # 4 settings, ~40 min, 2 cores
    python benchmarks/dft_to_gw_cutoffs.py --settings 5:none,3.5:8 --seeds 2
    python benchmarks/dft_to_gw_cutoffs.py --pretrain-epochs 1 --finetune-epochs 2 --seeds 1

Writes ``results.md``, ``results.csv`` and one recipe output folder per setting to ``--out``
(default ``runs/benchmarks/dft_to_gw_cutoffs``); ``--resume`` reuses the settings already there.
Times depend on the machine's load; the RMSEs do not (fixed epochs and seeds).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from chemgraph.featurize import RadiusGraphFeaturizer  # noqa: E402
from chemgraph.recipes import dft_to_gw  # noqa: E402
from chemgraph.recipes.registry import recipe_settings  # noqa: E402
from chemgraph.train.transfer import results_table, transfer_claim  # noqa: E402

DEFAULT_SETTINGS = "5:none,4:12,3.5:8,3:6"


def parse_settings(text: str) -> list[tuple[float, int | None]]:
    """``"5:none,3.5:8"`` -> ``[(5.0, None), (3.5, 8)]``."""
    settings = []
    for item in text.split(","):
        cutoff, _, cap = item.strip().partition(":")
        settings.append((float(cutoff), None if cap in ("", "none") else int(cap)))
    return settings


def mean_tokens(cutoff: float, max_neighbors: int | None) -> float:
    """Mean ESA edge tokens per molecule over the molecules of the embedded run."""
    values = recipe_settings("dft_to_gw", None)
    featurizer = RadiusGraphFeaturizer(
        **{**values["training"]["featurizer"], "cutoff": cutoff, "max_neighbors": max_neighbors}
    )
    data, _ = dft_to_gw.embedded_data(values["data"], featurizer)
    return float(np.mean([max(graph.num_edges(), 1) for graph in data.graphs]))


def run_setting(
    cutoff: float, max_neighbors: int | None, args: argparse.Namespace, out: Path
) -> dict:
    training = {"featurizer": {"cutoff": cutoff, "max_neighbors": max_neighbors}}
    if args.pretrain_epochs is not None:
        training["pretrain_epochs"] = args.pretrain_epochs
    if args.finetune_epochs is not None:
        training["finetune_max_epochs"] = args.finetune_epochs
        training["early_stopping_patience"] = args.finetune_epochs
    if not args.progress:
        training["progress"] = False
    override = {"data": {"source": "embedded"}, "training": training}
    if not (args.resume and (out / "runs.csv").exists() and (out / "wall_s.txt").exists()):
        start = time.perf_counter()
        dft_to_gw.run(override, seeds=args.seeds, out=out)
        (out / "wall_s.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
    runs = pd.read_csv(out / "runs.csv")
    table = results_table(runs, "GW")
    shown, _ = transfer_claim(table, "GW", "eV")
    models = runs.drop_duplicates(["strategy", "seed"])
    pretrained = models[models["pretrain_epochs"] > 0]
    row = {
        "cutoff": cutoff,
        "max_neighbors": "none" if max_neighbors is None else max_neighbors,
        "tokens": round(mean_tokens(cutoff, max_neighbors), 1),
    }
    for record in table.itertuples(index=False):
        row[f"{record.target} {record.strategy}"] = record.ESA
    row["claim shown"] = "yes" if shown else "no"
    row["pretrain s/epoch"] = round(
        pretrained["pretrain_seconds"].sum() / max(pretrained["pretrain_epochs"].sum(), 1), 1
    )
    row["fine-tune s/epoch"] = round(
        models["finetune_seconds"].sum() / max(models["finetune_epochs"].sum(), 1), 2
    )
    row["recipe s"] = round(float((out / "wall_s.txt").read_text()))
    return row


def markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help="cutoff:cap,... (Å)")
    parser.add_argument("--seeds", type=int, default=None, help="default: the profile's")
    parser.add_argument("--pretrain-epochs", type=int, default=None)
    parser.add_argument("--finetune-epochs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/benchmarks/dft_to_gw_cutoffs"))
    parser.add_argument("--resume", action="store_true", help="reuse finished settings")
    parser.add_argument("--progress", action="store_true", help="log every epoch")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for cutoff, cap in parse_settings(args.settings):
        folder = args.out / f"cutoff{cutoff:g}_k{'none' if cap is None else cap}"
        rows.append(run_setting(cutoff, cap, args, folder))
        frame = pd.DataFrame(rows)
        frame.to_csv(args.out / "results.csv", index=False)
        (args.out / "results.md").write_text(markdown(frame) + "\n")
    print(markdown(frame))
    return frame


if __name__ == "__main__":
    main()
