"""The applicability domain and the training-range flags of ``chemgraph predict`` (issue 46).

Three parts, each printing markdown tables (and writing ``<out>/<part>.json``):

``percentile``
    How the threshold's percentile was chosen, on validation splits only: for ESOL, FreeSolv,
    Lipophilicity, BBBP and QM9 training sets of 400 and 2,000 molecules (chemgraph's random
    80/10/10 split, seed 0, duplicates kept together), the threshold at each candidate
    percentile of the training molecules' leave-one-out nearest-neighbour similarities and the
    share of the *validation* molecules it puts in domain, beside the fixed 0.3 of before. The
    rule: the largest percentile that keeps at least 90% of every validation split in domain
    (the tightest domain that still accepts molecules of the training distribution). No model
    is trained; no test split or HIV molecule is looked at.
``qm9``
    ``chemgraph train --ensemble 3`` (a small ESA, a few epochs: the domain depends on the
    training molecules, not on the model) on 500 and 2,500 QM9 molecules (HOMO-LUMO gap, eV;
    400 and 2,000 training molecules), then ``chemgraph predict`` of 1,000 *other* QM9 molecules
    (in neither pool) and of 2,000 MoleculeNet HIV molecules (drug-like; seeded sample): the
    share in domain at the calibrated threshold and at 0.3, the predictions outside the
    training range, and ``metrics.json``'s validation record (error in and out of the domain,
    Spearman correlation of the ensemble's spread with its absolute error) beside the mean
    predictor's validation RMSE.
``esol``
    The ESOL example of the issue: ``chemgraph train --ensemble 3`` on ESOL (chemgraph's
    defaults but ``--max-epochs``), then ``chemgraph predict`` of MoleculeNet HIV (the first
    ``--hiv-molecules``): predictions outside the training labels' range, how many of them are
    in domain, the lowest prediction, and those below -15 log S as the issue counted them.

    python benchmarks/applicability_domain.py --part percentile
    python benchmarks/applicability_domain.py --part qm9 --epochs 10
    python benchmarks/applicability_domain.py --part esol --epochs 30 --hiv-molecules 41127

Data: ``--data`` (default ``../shared/data``, see its ``MANIFEST.md``); work folder ``--out``
(default ``runs/applicability_domain``): the prepared tables, the runs and the predictions.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from chemgraph.chem import MoleculePreparation, mols_from_smiles
from chemgraph.data import duplicate_groups, random_split
from chemgraph.data.applicability import (
    DEFAULT_SIMILARITY_THRESHOLD,
    FINGERPRINT,
    TrainingFingerprints,
)
from chemgraph.jobs.predict import PredictOptions, predict_table
from chemgraph.jobs.train import train_ensemble
from chemgraph.train.config import TrainingConfig
from chemgraph.units import HARTREE_TO_EV

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = Path("runs/applicability_domain")
SEED = 0  # every seeded choice of this script
PERCENTILES = (1.0, 2.0, 5.0, 10.0, 20.0)
COVERAGE = 0.9  # the share of every validation split the chosen percentile keeps in domain
FIXED = DEFAULT_SIMILARITY_THRESHOLD  # the threshold before calibration: the baseline
QM9_POOLS = (500, 2_500)  # molecules per QM9 model (80% of them train it)
OTHER_QM9 = 1_000
HIV_SAMPLE = 2_000
SMALL_ESA = {"hidden_dim": 64, "num_heads": 4}

MOLECULENET = {  # name: (file under moleculenet/, SMILES column)
    "ESOL": ("delaney-processed.csv", "smiles"),
    "FreeSolv": ("SAMPL.csv", "smiles"),
    "Lipophilicity": ("Lipophilicity.csv", "smiles"),
    "BBBP": ("BBBP.csv", "smiles"),
}


def _qm9(data: Path) -> pd.DataFrame:
    """The 10,000 QM9 molecules of the shared subset, in a seeded random order, with the
    HOMO-LUMO gap in eV."""
    table = pd.read_csv(
        data / "qm9" / "qm9pack_subset10k.csv.gz", usecols=["SMILES", "HOMO_LUMO_gap_au"]
    )
    table = table.rename(columns={"SMILES": "smiles"})
    table["gap_ev"] = table.pop("HOMO_LUMO_gap_au") * HARTREE_TO_EV
    order = np.random.default_rng(SEED).permutation(len(table))
    return table.iloc[order].reset_index(drop=True)


def _hiv(data: Path) -> pd.Series:
    """The SMILES of MoleculeNet HIV (blank lines dropped), in file order."""
    return pd.read_csv(data / "moleculenet" / "HIV.csv")["smiles"].dropna().reset_index(drop=True)


def _train_and_validation(smiles: list[str]) -> tuple[list, list]:
    """The training and validation molecules of chemgraph's random 80/10/10 split (seed 0, the
    rows of one molecule kept together) of the SMILES RDKit reads, prepared as ``chemgraph
    train`` prepares them by default."""
    preparation = MoleculePreparation()
    parsed = [(s, m) for s, m in zip(smiles, mols_from_smiles(smiles))
              if not isinstance(m, Exception)]  # fmt: skip
    mols = [preparation(m) for _, m in parsed]
    groups = duplicate_groups([s for s, _ in parsed], preparation)
    train, val, _ = random_split(len(mols), (0.8, 0.1, 0.1), seed=SEED, groups=groups)
    return [mols[i] for i in train], [mols[i] for i in val]


def percentile_part(data: Path) -> dict:
    """The share of each validation split in domain at each candidate percentile."""
    sets = {
        name: pd.read_csv(data / "moleculenet" / file)[column].dropna().tolist()
        for name, (file, column) in MOLECULENET.items()
    }
    qm9 = _qm9(data)["smiles"].tolist()
    for pool in QM9_POOLS:
        sets[f"QM9 ({pool * 4 // 5:,} train)"] = qm9[:pool]
    rows = []
    for name, smiles in sets.items():
        train, val = _train_and_validation(smiles)
        fingerprints = TrainingFingerprints(np.packbits(FINGERPRINT.featurize(train), axis=1))
        nearest = fingerprints.nearest_neighbour_similarity(np.arange(len(train)))
        similarity = fingerprints.max_similarity(FINGERPRINT.featurize(val))
        row = {"data": name, "train": len(train), "val": len(val)}
        row["fixed 0.3"] = float((similarity >= FIXED).mean())
        for percentile in PERCENTILES:
            threshold = float(np.percentile(nearest.astype(np.float64), percentile))
            row[f"p{percentile:g} threshold"] = threshold
            row[f"p{percentile:g} in domain"] = float((similarity >= threshold).mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    kept = [p for p in PERCENTILES if (table[f"p{p:g} in domain"] >= COVERAGE).all()]
    chosen = max(kept) if kept else None
    print("### Validation molecules in domain (share), by the threshold's percentile\n")
    shown = table[["data", "train", "val", "fixed 0.3"]].copy()
    for percentile in PERCENTILES:
        shown[f"p{percentile:g}"] = [
            f"{t:.3f}: {s:.1%}"
            for t, s in zip(
                table[f"p{percentile:g} threshold"], table[f"p{percentile:g} in domain"]
            )
        ]
    shown["fixed 0.3"] = [f"{s:.1%}" for s in shown["fixed 0.3"]]
    print(_markdown(shown))
    print(
        f"\nchosen: the largest percentile with >= {COVERAGE:.0%} of every validation split in "
        f"domain: {chosen}"
    )
    return {"rows": rows, "chosen": chosen}


def _train(table: pd.DataFrame, target: str, out: Path, epochs: int, options: dict) -> dict:
    """``chemgraph train --ensemble 3`` of ``table`` into ``out``; its metrics and seconds."""
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "data.csv", index=False)
    config = TrainingConfig.from_dict(
        {"data": str(out / "data.csv"), "target_columns": [target], "out": str(out / "run"),
         "max_epochs": epochs, "progress": False, "model_options": options}
    )  # fmt: skip
    started = time.perf_counter()
    metrics = train_ensemble(config, 3, overwrite=True)
    member = json.loads((out / "run" / "model-0" / "metrics.json").read_text())
    return {"metrics": metrics, "mean_predictor": member["mean_predictor"],
            "seconds": time.perf_counter() - started}  # fmt: skip


def _predict(run: Path, smiles: list[str], output: Path, target: str) -> dict:
    """``chemgraph predict`` of ``smiles`` with the ensemble ``run``: shares in domain at the
    calibrated threshold and at 0.3, and the out-of-range count."""
    library = output.with_suffix(".smi")
    library.write_text("".join(f"{s}\n" for s in smiles))
    shards = max(1, min(5_000, -(-len(smiles) // 2)))  # both workers busy on a small library
    summary = predict_table(run, library, output, PredictOptions(), workers=2,
                            shard_size=shards, overwrite=True, progress=False)  # fmt: skip
    table = pd.read_parquet(output)
    predicted = table[table["error"].isna()]
    return {
        "molecules": len(predicted),
        "threshold": summary.similarity_threshold,
        "in_domain": float(predicted["in_domain"].mean()),
        "in_domain_fixed": float((predicted["max_similarity_to_train"] >= FIXED).mean()),
        "outside_training_range": summary.outside_training_range[target],
        "table": table,
    }


def qm9_part(data: Path, out: Path, epochs: int) -> dict:
    qm9 = _qm9(data)
    other = qm9["smiles"].iloc[-OTHER_QM9:].tolist()  # in neither pool
    hiv = _hiv(data).sample(HIV_SAMPLE, random_state=SEED).tolist()
    results = {}
    for pool in QM9_POOLS:
        folder = out / f"qm9_{pool}"
        trained = _train(qm9[["smiles", "gap_ev"]].iloc[:pool], "gap_ev", folder, epochs, SMALL_ESA)
        record = {"seconds": trained["seconds"], "metrics": trained["metrics"],
                  "mean_predictor": trained["mean_predictor"]}  # fmt: skip
        for name, smiles in (("other QM9", other), ("HIV", hiv)):
            found = _predict(folder / "run", smiles, folder / f"{name.replace(' ', '_')}.parquet",
                             "gap_ev")  # fmt: skip
            found.pop("table")
            record[name] = found
        results[f"{pool * 4 // 5}"] = record
    print("### QM9-trained ensembles: molecules in domain\n")
    print(
        "| training molecules | threshold (calibrated) | other QM9 in domain | HIV in domain |"
        " other QM9 at 0.3 | HIV at 0.3 | outside training range (QM9 / HIV) |"
    )
    print("|---|---|---|---|---|---|---|")
    for train, record in results.items():
        qm, hiv_ = record["other QM9"], record["HIV"]
        print(
            f"| {int(train):,} | {qm['threshold']:.3f} | {qm['in_domain']:.1%} | "
            f"{hiv_['in_domain']:.1%} | {qm['in_domain_fixed']:.1%} | "
            f"{hiv_['in_domain_fixed']:.1%} | {qm['outside_training_range']} / "
            f"{hiv_['outside_training_range']} |"
        )
    print("\n### Their metrics.json: validation error in and out of the domain, spread vs error\n")
    print(
        "| training molecules | val RMSE (ensemble) | val RMSE (mean predictor) | in domain: "
        "n, RMSE | out of domain: n, RMSE | Spearman(spread, abs error) | minutes (3 models) |"
    )
    print("|---|---|---|---|---|---|---|")
    for train, record in results.items():
        metrics = record["metrics"]
        domain = metrics["applicability_domain"]["val"]
        inside, outside = domain["in_domain"], domain["out_of_domain"]
        spearman = metrics["spread_vs_error"]["val"]["gap_ev"]["spearman"]
        print(
            f"| {int(train):,} | {metrics['val']['rmse']:.3f} | "
            f"{record['mean_predictor']['val']['rmse']:.3f} | {inside['molecules']}, "
            f"{_number(inside['rmse'])} | {outside['molecules']}, {_number(outside['rmse'])} | "
            f"{_number(spearman)} | {record['seconds'] / 60:.1f} |"
        )
    return results


def esol_part(data: Path, out: Path, epochs: int, hiv_molecules: int) -> dict:
    file, column = MOLECULENET["ESOL"]
    esol = pd.read_csv(data / "moleculenet" / file)
    target = "measured log solubility in mols per litre"
    table = esol[[column, target]].rename(columns={target: "logS"})
    folder = out / "esol"
    trained = _train(table, "logS", folder, epochs, {})
    hiv = _hiv(data).iloc[:hiv_molecules].tolist()
    started = time.perf_counter()
    found = _predict(folder / "run", hiv, folder / "HIV.parquet", "logS")
    seconds = time.perf_counter() - started
    scored = found.pop("table")
    predicted = scored[scored["error"].isna()]
    outside = predicted[predicted["logS_outside_training_range"]]
    lowest = predicted.loc[predicted["logS_pred"].idxmin()]
    below = predicted[predicted["logS_pred"] < -15]
    record = {
        **found, "predict_seconds": seconds, "train_seconds": trained["seconds"],
        "val_rmse": trained["metrics"]["val"]["rmse"],
        "mean_predictor_val_rmse": trained["mean_predictor"]["val"]["rmse"],
        "training_range": [float(table["logS"].min()), float(table["logS"].max())],
        "outside_in_domain": int(outside["in_domain"].sum()),
        "below_minus_15": len(below), "below_minus_15_in_domain": int(below["in_domain"].sum()),
        "lowest": {"smiles": lowest["smiles"], "logS_pred": float(lowest["logS_pred"]),
                   "in_domain": bool(lowest["in_domain"])},
    }  # fmt: skip
    print("### ESOL ensemble on MoleculeNet HIV\n")
    print(
        f"- training labels (all of ESOL; the training split's range is within): "
        f"{record['training_range'][0]:.2f} to {record['training_range'][1]:.2f} log S"
    )
    print(
        f"- {found['molecules']:,} HIV molecules predicted in {seconds:.0f} s; calibrated "
        f"threshold {found['threshold']:.3f}; {found['in_domain']:.1%} in domain "
        f"({found['in_domain_fixed']:.1%} at 0.3)"
    )
    print(
        f"- {found['outside_training_range']:,} predictions outside the training labels' "
        f"range, {record['outside_in_domain']:,} of them in domain"
    )
    print(
        f"- {len(below):,} below -15 log S, {record['below_minus_15_in_domain']:,} of them in "
        f"domain; the lowest {lowest['logS_pred']:.1f} ({lowest['smiles']})"
    )
    print(
        f"- validation RMSE {record['val_rmse']:.3f} (mean predictor "
        f"{record['mean_predictor_val_rmse']:.3f}); training {trained['seconds'] / 60:.1f} min"
    )
    return record


def _markdown(frame: pd.DataFrame) -> str:
    """A markdown table of ``frame``'s cells as they are (no index)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |"]
    lines.append("|" + "---|" * len(frame.columns))
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("percentile", "qm9", "esol"), action="append")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--epochs", type=int, default=10, help="max epochs of every model")
    parser.add_argument("--hiv-molecules", type=int, default=41_127)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    for part in args.part or ("percentile", "qm9", "esol"):
        if part == "percentile":
            result = percentile_part(args.data)
        elif part == "qm9":
            result = qm9_part(args.data, args.out, args.epochs)
        else:
            result = esol_part(args.data, args.out, args.epochs, args.hiv_molecules)
        (args.out / f"{part}.json").write_text(json.dumps(result, indent=2, default=str))
        print()


if __name__ == "__main__":
    main()
