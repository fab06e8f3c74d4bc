"""``make demo-gap``: ESA on the HOMO-LUMO gap (eV) of real QM9 molecules, offline.

Draws ``--molecules`` molecules (seed 0) from the ``qm9pack`` package, writes them as a CSV,
trains with ``recipes/property_prediction/qm9_gap.yaml`` (:func:`chemgraph.train.runner.train`)
and prints the test metrics. ``python -m chemgraph.recipes.qm9_gap_demo --help`` lists the
options.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from chemgraph._output import check_output_folder
from chemgraph._resources import recipe_path
from chemgraph.data.qm9pack import load_qm9pack
from chemgraph.train.config import TrainingConfig
from chemgraph.train.metrics import format_metrics
from chemgraph.train.runner import train

__all__ = ["RECIPE", "run"]

# not __name__: run as ``python -m`` this module is ``__main__``, outside the chemgraph loggers
log = logging.getLogger("chemgraph.recipes.qm9_gap_demo")

RECIPE = recipe_path("property_prediction", "qm9_gap.yaml")


def run(
    out: str | Path,
    molecules: int = 10_000,
    max_epochs: int | None = None,
    config: str | Path = RECIPE,
) -> dict[str, dict[str, float]]:
    """Write ``molecules`` QM9 molecules to ``out/qm9_gap.csv``, train on their gap, log the
    test metrics.

    Args:
        out: output folder (files of an earlier run are replaced).
        molecules: QM9 molecules drawn (seed 0).
        max_epochs: overrides the recipe's.
        config: the :class:`chemgraph.train.config.TrainingConfig` YAML.

    Returns:
        The metrics of :func:`chemgraph.train.runner.train` (gap RMSE/MAE in eV, R²).

    Raises:
        ImportError: ``qm9pack`` is not installed. ValueError: bad settings.
    """
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = load_qm9pack(molecules, seed=0)
    data = out / "qm9_gap.csv"
    table.to_csv(data, index=False)
    log.info(
        "QM9 (qm9pack): %d molecules, HOMO-LUMO gap %.3f ± %.3f eV -> %s",
        len(table), table.gap_ev.mean(), table.gap_ev.std(), data,
    )  # fmt: skip
    settings = TrainingConfig.from_yaml(config, data=str(data), out=str(out), max_epochs=max_epochs)
    metrics = train(settings)
    log.info(
        "\nESA on QM9 HOMO-LUMO gap (eV), random 80/10/10 split, best validation checkpoint:\n"
        "%s\nepochs: %d; wall time %.0f s; parity plot: %s",
        format_metrics(metrics), metrics["epochs_trained"], time.perf_counter() - start,
        out / "parity.png",
    )  # fmt: skip
    return metrics


def main(argv: list[str] | None = None) -> int:
    """The ``python -m chemgraph.recipes.qm9_gap_demo`` command; INFO messages go to stdout."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/demo", help="output folder, new or empty")
    parser.add_argument(
        "--overwrite", action="store_true", help="allow a non-empty --out (an earlier run's)"
    )
    parser.add_argument("--molecules", type=int, default=10_000, help="QM9 molecules to use")
    parser.add_argument("--max-epochs", type=int, default=None, help="override the recipe")
    parser.add_argument("--config", default=str(RECIPE), help="recipe YAML")
    args = parser.parse_args(argv)
    try:
        check_output_folder(args.out, "--out", args.overwrite, "--overwrite")
    except ValueError as error:
        parser.error(str(error))
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("chemgraph").addHandler(handler)
    logging.getLogger("chemgraph").setLevel(logging.INFO)
    run(args.out, args.molecules, args.max_epochs, args.config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
