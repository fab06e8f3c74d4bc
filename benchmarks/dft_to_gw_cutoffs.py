"""DFT -> GW recipe: test RMSE and time against the radius graph's cutoff and neighbour cap.

For each ``cutoff:max_neighbors`` setting, runs ``chemgraph recipe run dft_to_gw`` on the
embedded data with the ``embedded`` profile of ``recipes/dft_to_gw/config.yaml`` (fixed epochs
and seeds; only ``training.featurizer`` changes) and prints one markdown row per setting: mean
ESA tokens per molecule (radius edges over the 6,000 molecules of the run), GW test RMSE (eV,
mean ± std over seeds) of every strategy for HOMO and LUMO, whether both transfer strategies
beat GW only by more than the seed-to-seed spread
(:func:`chemgraph.transfer.report.transfer_claim`), seconds per pretraining and fine-tuning
epoch, and the recipe's wall time.

    # the table of recipes/dft_to_gw/README.md: 6 settings, ~1.5 h on a busy 2-core machine
    python benchmarks/dft_to_gw_cutoffs.py --pretrain-epochs 5 --finetune-epochs 25
    python benchmarks/dft_to_gw_cutoffs.py --settings 5:none,3.5:8 --seeds 2
    python benchmarks/dft_to_gw_cutoffs.py --pretrain-epochs 1 --finetune-epochs 2 --seeds 1
    python benchmarks/dft_to_gw_cutoffs.py --timing 3           # speed only, ~5 min

Writes ``results.md``, ``results.csv`` and one recipe output folder per setting to ``--out``
(default ``runs/benchmarks/dft_to_gw_cutoffs``); ``--resume`` reuses the settings already there.
The RMSEs do not depend on the machine's load (fixed epochs and seeds); the times of these
runs, one setting after the other, do. ``--timing R`` instead times one pretraining epoch
(collation, forward, backward, AdamW step over the transductive pool) of every setting in
turn, R rounds, so that a change of load touches every setting alike, and writes
``timing.md``: median wall and CPU (user + system) seconds per epoch.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from chemgraph.data import MoleculeDataModule, qm9_gw  # noqa: E402
from chemgraph.featurize import RadiusGraphFeaturizer  # noqa: E402
from chemgraph.recipes import dft_to_gw  # noqa: E402
from chemgraph.recipes.registry import recipe_settings  # noqa: E402
from chemgraph.train.config import merge_settings  # noqa: E402
from chemgraph.train.module import masked_loss  # noqa: E402
from chemgraph.transfer.chains import build_module, pretraining_pool  # noqa: E402
from chemgraph.transfer.config import TransferConfig  # noqa: E402
from chemgraph.transfer.report import results_table, transfer_claim  # noqa: E402

DEFAULT_SETTINGS = "5:none,4:12,3.5:8,3:6,2.5:6,2:4"


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
    data, _ = qm9_gw.embedded_data(values["data"], featurizer)
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
    for record in table[table["method"] != "baseline"].to_dict("records"):
        row[f"{record['target']} {record['strategy']}"] = record["test RMSE"]
    row["claim shown"] = "yes" if shown else "no"
    row["pretrain s/epoch"] = round(
        pretrained["pretrain_seconds"].sum() / max(pretrained["pretrain_epochs"].sum(), 1), 1
    )
    row["fine-tune s/epoch"] = round(
        models["finetune_seconds"].sum() / max(models["finetune_epochs"].sum(), 1), 2
    )
    row["recipe s"] = round(float((out / "wall_s.txt").read_text()))
    return row


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_epochs(settings: list[tuple[float, int | None]], rounds: int) -> pd.DataFrame:
    """Median wall and CPU seconds of one pretraining epoch per setting (see the docstring)."""
    values = recipe_settings("dft_to_gw", None)
    training = merge_settings(values["training"], values["profiles"]["embedded"])
    epochs = []
    for cutoff, cap in settings:
        featurizer = {**training["featurizer"], "cutoff": cutoff, "max_neighbors": cap}
        config = TransferConfig.from_dict({**training, "featurizer": featurizer})
        data, split = qm9_gw.embedded_data(values["data"], config.graph_featurizer)
        pool = data.dataset(pretraining_pool(data, split, "transductive"), "low")
        torch.manual_seed(0)
        module = build_module(config, data.targets, pool.labels, config.learning_rate)
        builder = module.batch_builder()
        loader = MoleculeDataModule(
            pool, None, None, builder, config.batch_size, 0, 0
        ).train_dataloader()
        optimizer = torch.optim.AdamW(module.parameters(), lr=config.learning_rate)
        epochs.append((cutoff, cap, module, loader, optimizer))
    records = []
    for _ in range(rounds):
        for cutoff, cap, module, loader, optimizer in epochs:
            module.train()
            wall, cpu = time.perf_counter(), _cpu_seconds()
            for inputs, labels in loader:
                loss = masked_loss(module(inputs), module._scaled(labels), "regression")
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            records.append(
                dict(
                    cutoff=cutoff, max_neighbors="none" if cap is None else cap,
                    wall=time.perf_counter() - wall, cpu=_cpu_seconds() - cpu,
                )
            )  # fmt: skip
    frame = pd.DataFrame(records).groupby(["cutoff", "max_neighbors"], sort=False).median()
    frame = frame.reset_index().rename(columns={"wall": "wall s/epoch", "cpu": "CPU s/epoch"})
    return frame.round(1)


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
    parser.add_argument("--timing", type=int, default=0, metavar="R", help="time epochs only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.timing:
        frame = time_epochs(parse_settings(args.settings), args.timing)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "timing.md").write_text(markdown(frame) + "\n")
        print(markdown(frame))
        return frame
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
