"""ESA's default learning rate, batch size and readout, chosen on validation data only.

Benchmark (not a test). ``chemgraph train --model esa --protocol default`` (50 epochs, AdamW, 5%
warm-up, cosine decay to 1% of the peak; ESA width 64, 4 heads, ``SMMSPS``, 8 seeds) for every
setting of the grid peak learning rate {1e-3, 5e-4} × batch size {64, 128} × readout
{``seeds`` (the paper's PMA readout), ``seeds+sum``} on the two tuning data sets of
``esa_vs_chemprop.py``: the QM9 HOMO–LUMO gap (the first 10,000 molecules of
``qm9pack_subset10k.csv.gz``) and ESOL, each a random 80/10/10 split, seed 0, weight seed 0.

The score of a run is the validation metric of its best epoch (``metrics.json``'s ``"val"``:
MAE in eV for the QM9 gap, RMSE for ESOL); the test metrics are written beside it but play no
part in the choice. Rule, fixed before the runs: rank the settings on each data set by that
validation metric (1 = best), pick the lowest mean rank over the data sets; a tie goes to the
lower mean of ``metric / best metric of the data set``. Only settings run on every requested
data set are ranked.

Each run goes to ``--out/<dataset>/lr<lr>_batch<b>_<readout>``; a run whose ``metrics.json`` is
there is read, not trained again (so two invocations with different ``--datasets`` can share the
work, and a last one with all of them ranks everything). The table goes to
``--out/results.md`` and stdout.

Usage::

    python benchmarks/esa_defaults.py                                   # the whole grid
    python benchmarks/esa_defaults.py --datasets esol                   # ESOL only
    python benchmarks/esa_defaults.py --batch-sizes 128                 # the batch-128 half
    python benchmarks/esa_defaults.py --datasets esol --molecules 300 --max-epochs 2  # smoke
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from esa_vs_chemprop import DATASETS, REPO, markdown_table, timed, write_table  # noqa: E402

TUNING = ("qm9_gap", "esol")
"""The data sets the defaults are chosen on (held out of ``esa_vs_chemprop.py``'s held-out
comparison)."""


def run_name(learning_rate: float, batch_size: int, readout: str) -> str:
    """The run folder's name of one setting, e.g. ``lr0.0005_batch128_seeds+sum``."""
    return f"lr{learning_rate:g}_batch{batch_size}_{readout}"


def train(
    name: str,
    data: Path,
    out: Path,
    setting: tuple[float, int, str],
    max_epochs: int | None,
    report: bool = False,
) -> dict | None:
    """Train ESA with ``setting`` (peak lr, batch size, readout) on ``data`` into ``out`` (or
    read the finished run there); its ``metrics.json`` (None: not there and ``report``)."""
    metrics = out / "metrics.json"
    if not metrics.is_file() and report:
        return None
    if not metrics.is_file():
        learning_rate, batch_size, readout = setting
        out.mkdir(parents=True, exist_ok=True)
        config = out.parent / f"{out.name}.yaml"
        config.write_text(
            f"split_seed: 0\nlearning_rate: {learning_rate!r}\nbatch_size: {batch_size}\n"
            f"model_options:\n  readout: {readout}\n"
        )
        dataset = DATASETS[name]
        command = [
            sys.executable, "-m", "chemgraph", "train", "--data", str(data),
            "--smiles-column", "smiles", "--target-columns", dataset.target,
            "--task", dataset.task, "--model", "esa", "--split", dataset.split, "--seed", "0",
            "--config", str(config), "--protocol", "default", "--out", str(out), "--quiet",
            "--overwrite",
        ]  # fmt: skip
        if max_epochs is not None:
            command += ["--max-epochs", str(max_epochs)]
        seconds = timed(command, out.parent / f"{out.name}.log")
        print(f"{name}/{out.name}: {seconds:.0f} s", file=sys.stderr, flush=True)
    return json.loads(metrics.read_text())


def mean_ranks(scores: dict[str, list[float]]) -> tuple[list[float], list[float]]:
    """Mean rank (1 = lowest value, ties share the mean rank) and mean ``value / lowest`` of
    each setting over the data sets; ``scores`` maps a data set to one value per setting."""
    ranks, ratios = [], []
    for values in scores.values():
        values = np.asarray(values)
        order = np.argsort(np.argsort(values, kind="stable"), kind="stable") + 1.0
        ranks.append([np.mean(order[values == v]) for v in values])
        ratios.append(values / values.min())
    return list(np.mean(ranks, axis=0)), list(np.mean(ratios, axis=0))


def main(argv: list[str] | None = None) -> int:
    """Train (or read) the grid; write ``results.md`` and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=TUNING, default=list(TUNING))
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[1e-3, 5e-4])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument(
        "--readouts", nargs="+", choices=("seeds", "seeds+sum"), default=["seeds", "seeds+sum"]
    )
    parser.add_argument("--molecules", type=int, default=10_000, help="QM9 molecules read")
    parser.add_argument("--max-epochs", type=int, help="smoke runs only (default: the protocol's)")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "benchmarks" / "esa_defaults")
    parser.add_argument(
        "--report",
        action="store_true",
        help="train nothing: table the finished runs in --out (settings missing on a data set "
        "are listed, not ranked)",
    )
    args = parser.parse_args(argv)
    for name in args.datasets:
        if not DATASETS[name].source.is_file():
            raise SystemExit(
                f"{DATASETS[name].source} is absent: this benchmark needs ../shared/data"
            )
    settings = list(itertools.product(args.learning_rates, args.batch_sizes, args.readouts))
    val: dict[str, list[float | None]] = {}
    test: dict[str, list[float | None]] = {}
    for name in args.datasets:
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "data.csv"
        write_table(DATASETS[name], data, args.molecules if name == "qm9_gap" else None)
        headline = DATASETS[name].metrics[0]
        runs = [
            train(name, data, folder / run_name(*s), s, args.max_epochs, args.report)
            for s in settings
        ]
        val[name] = [m and m["val"][headline] for m in runs]
        test[name] = [m and m["test"][headline] for m in runs]
    complete = [i for i in range(len(settings)) if all(val[n][i] is not None for n in val)]
    if not complete:
        raise SystemExit("no setting has a finished run on every data set")
    ranks, ratios = mean_ranks({n: [val[n][i] for i in complete] for n in val})
    best = complete[min(range(len(complete)), key=lambda j: (ranks[j], ratios[j]))]
    ranked = {i: (rank, ratio) for i, rank, ratio in zip(complete, ranks, ratios, strict=True)}
    header = ["peak lr", "batch", "readout"]
    header += [f"{name} val {DATASETS[name].metrics[0].upper()}" for name in args.datasets]
    header += ["mean rank", "mean val / best"]
    header += [f"{name} test {DATASETS[name].metrics[0].upper()}" for name in args.datasets]
    rows = []
    for i, (learning_rate, batch_size, readout) in enumerate(settings):
        mark = "**" if i == best else ""
        rank, ratio = ("not ranked", "")
        if i in ranked:
            rank, ratio = f"{ranked[i][0]:.1f}", f"{ranked[i][1]:.3f}"
        rows.append([
            f"{learning_rate:g}", str(batch_size), readout,
            *(f"{mark}{val[n][i]:.4f}{mark}" if val[n][i] is not None else "not run"
              for n in args.datasets),
            rank, ratio,
            *(f"{test[n][i]:.4f}" if test[n][i] is not None else "" for n in args.datasets),
        ])  # fmt: skip
    lines = [
        "# ESA defaults chosen on validation data (test columns: not used in the choice)",
        "",
        *markdown_table(header, rows),
        "",
        f"pick (lowest mean validation rank over {', '.join(args.datasets)}, among the "
        f"{len(complete)} settings run on all of them): lr {settings[best][0]:g}, batch "
        f"{settings[best][1]}, readout {settings[best][2]}",
    ]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
