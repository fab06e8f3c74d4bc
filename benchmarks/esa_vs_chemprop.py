"""ESA (``chemgraph train --model esa``) against Chemprop v2 (``chemprop train``), side by side.

Benchmark (not a test). Both tools run in this one script, one after the other, as
subprocesses with one thread each (``OMP_NUM_THREADS=1``), on the same molecules and the same
split, for six data sets (``--datasets``, default all):

``qm9_gap``
    HOMO–LUMO gap in eV (``HOMO_LUMO_gap_au`` × 27.211386245988) of the first ``--molecules``
    (10,000) QM9 molecules of ``../shared/data/qm9/qm9pack_subset10k.csv.gz``; random 80/10/10
    split, seed 0; test MAE (headline), RMSE, R².
``esol``
    Measured log solubility (mol/L) of ``../shared/data/moleculenet/delaney-processed.csv``;
    random 80/10/10, seed 0; test RMSE (headline), MAE, R².
``qm9_gap_heldout``
    The same target on ``--molecules`` (10,000) molecules drawn (seed 1) from all of qm9pack's
    130,831 less the 10,000 of ``qm9pack_subset10k.csv.gz`` (:func:`qm9_heldout_sample`; needs
    the ``qm9pack`` package, ``chemgraph[offline-data]``); random 80/10/10, seed 0.
``lipophilicity``
    Octanol/water distribution coefficient logD at pH 7.4 (``exp``) of
    ``../shared/data/moleculenet/Lipophilicity.csv``; random 80/10/10, seed 0; test RMSE
    (headline), MAE, R².
``freesolv``
    Measured hydration free energy in kcal/mol (``expt``) of
    ``../shared/data/moleculenet/SAMPL.csv``; random 80/10/10, seed 0; test RMSE (headline),
    MAE, R².
``bbbp``
    Blood–brain barrier penetration (``p_np``, 0/1) of ``../shared/data/moleculenet/BBBP.csv``;
    Bemis–Murcko scaffold split 80/10/10; test ROC-AUC (headline), PR-AUC (average precision),
    MCC at probability 0.5.

ESA's defaults were chosen on the validation molecules of ``qm9_gap`` and ``esol``
(``benchmarks/esa_defaults.py``); ``qm9_gap_heldout``, ``lipophilicity``, ``freesolv`` and
``bbbp`` played no part in any choice, and each table's header line says which kind it is.
Every table carries the baseline a chemist would try first, on the same split: Morgan
fingerprints (radius 2, 2,048 bits) with a Tanimoto kernel ridge (regression; ``alpha`` chosen on
the validation molecules, :class:`chemgraph.train.baselines.FingerprintKernelRidge`) or a
500-tree random forest (classification).

chemgraph runs first on a ``smiles,<target>`` copy of the data; the rows it accepted are
written to a second copy for Chemprop (BBBP has SMILES that RDKit rejects), and the rows
chemgraph put in its validation and test splits are handed to Chemprop as a ``--splits-file``
on that copy. Every run's test molecules are checked against the split's, so both tools are
scored, here with one function per task kind (scikit-learn), on exactly the same molecules.

Measurements (``--mode``):

``epoch`` (QM9 only)
    Time per training epoch: each tool runs for ``E1`` and ``E2`` epochs and the per-epoch time
    is ``(t(E2) - t(E1)) / (E2 - E1)``, so start-up, featurization and evaluation cancel.
``budget``
    Accuracy. Chemprop with its defaults (50 epochs) takes ``T`` seconds; chemgraph then gets
    ``--max-time-minutes m·T/60`` and ``--max-epochs 1000`` for each ``m`` of
    ``--multipliers`` (its cosine learning-rate schedule decays over the time budget). An
    equal-work row, chemgraph with its defaults (the default protocol's fixed epoch count, no
    time budget), gives numbers that do not move with machine load; so do the ensemble rows,
    ``chemgraph train --ensemble K`` with the defaults for each ``K`` of ``--ensembles``
    (K models on one split, weight seeds 0..K-1, scored by their mean prediction), whose wall
    time is set against Chemprop's in the "× Chemprop's time" column, and, as the same budget
    for Chemprop, ``chemprop train --ensemble-size K`` (its members' mean prediction).
``both`` (default)
    Both of the above.

``--seeds S1 S2 ...`` (default ``0``) repeats every accuracy row once per seed, on the same split
(chemgraph's split seed stays 0): chemgraph ``--seed S``, Chemprop ``--pytorch-seed S``, and
for ensembles of K the member seeds ``S·K`` to ``S·K + K - 1`` of both tools, so no two
replicates share a model. Each 1× or m× budget is m times the same seed's Chemprop time. With
more than one seed the table gives mean ± standard deviation over the seeds, and a second table
the headline metric of every seed.

Chemprop lives in its own virtual environment (``--chemprop`` path to its ``chemprop``
executable; default ``benchmarks/.chemprop-venv/bin/chemprop``). Make one with::

    python -m venv benchmarks/.chemprop-venv
    benchmarks/.chemprop-venv/bin/pip install torch==2.13.0 chemprop==2.3.1

The script stops with a clear message when it is absent. Wall-clock times move with machine
load: run it on an idle machine and read the ratios, not the seconds. One table per data set
goes to ``--out/results.md`` (rewritten after each data set) and to stdout.

Usage::

    python benchmarks/esa_vs_chemprop.py                          # all data sets, both modes
    python benchmarks/esa_vs_chemprop.py --mode epoch             # QM9 epoch timing only
    python benchmarks/esa_vs_chemprop.py --datasets esol bbbp --mode budget --multipliers 1 3
    python benchmarks/esa_vs_chemprop.py --datasets qm9_gap --mode budget --multipliers 3 \
        --ensembles 3                                             # a 3-model ESA ensemble too
    python benchmarks/esa_vs_chemprop.py --datasets bbbp --mode budget --multipliers 1 \
        --ensembles 3 --seeds 0 1 2                               # 3 seeds, mean ± sd
    python benchmarks/esa_vs_chemprop.py --smoke --molecules 500 --epochs 3 4   # smoke run
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import metrics as skm
from sklearn.ensemble import RandomForestClassifier

from chemgraph.data.qm9pack import qm9pack_data_folder
from chemgraph.train.baselines import FingerprintKernelRidge, morgan_fingerprints
from chemgraph.units import HARTREE_TO_EV

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
CHEMPROP_EPOCHS = 50  # chemprop train's default --epochs
SMOKE_ROWS = 300  # --smoke: rows read of every data set but the QM9 ones
SMOKE_EPOCHS = {"chemgraph": 2, "chemprop": 3}  # --smoke caps (Chemprop's warm-up needs > 2)


@dataclass(frozen=True)
class Dataset:
    """One data set: its file, the columns read, and how both tools train and are scored."""

    title: str
    source: Path
    smiles_column: str
    target_column: str
    target: str  # the target's column name in the tables written here
    task: str  # "regression" or "classification"
    split: str  # chemgraph's --split: "random" (seed 0) or "scaffold"
    metrics: tuple[str, ...]  # headline first
    scale: float = 1.0
    heldout_seed: int | None = None  # see :func:`qm9_heldout_sample`
    tuned: bool = False  # ESA's defaults were chosen on this split (benchmarks/esa_defaults.py)


QM9_TUNING = DATA / "qm9" / "qm9pack_subset10k.csv.gz"
"""The QM9 molecules ESA's defaults were chosen on (``qm9_gap``: its first 10,000 rows)."""

DATASETS = {
    "qm9_gap": Dataset(
        "QM9 HOMO-LUMO gap (eV)", QM9_TUNING, "SMILES", "HOMO_LUMO_gap_au", "gap_ev",
        "regression", "random", ("mae", "rmse", "r2"), HARTREE_TO_EV, tuned=True,
    ),
    "qm9_gap_heldout": Dataset(
        "QM9 HOMO-LUMO gap (eV), held-out sample", QM9_TUNING, "smiles", "gap_ev", "gap_ev",
        "regression", "random", ("mae", "rmse", "r2"), heldout_seed=1,
    ),
    "esol": Dataset(
        "ESOL log solubility (log mol/L)", DATA / "moleculenet" / "delaney-processed.csv",
        "smiles", "measured log solubility in mols per litre", "log_solubility", "regression",
        "random", ("rmse", "mae", "r2"), tuned=True,
    ),
    "lipophilicity": Dataset(
        "Lipophilicity logD (pH 7.4)", DATA / "moleculenet" / "Lipophilicity.csv", "smiles",
        "exp", "logd", "regression", "random", ("rmse", "mae", "r2"),
    ),
    "freesolv": Dataset(
        "FreeSolv hydration free energy (kcal/mol)", DATA / "moleculenet" / "SAMPL.csv",
        "smiles", "expt", "hydration_free_energy", "regression", "random", ("rmse", "mae", "r2"),
    ),
    "bbbp": Dataset(
        "BBBP blood-brain barrier penetration (p_np)", DATA / "moleculenet" / "BBBP.csv",
        "smiles", "p_np", "p_np", "classification", "scaffold", ("roc_auc", "pr_auc", "mcc"),
    ),
}  # fmt: skip
METRIC_HEADERS = {
    "mae": "MAE ↓", "rmse": "RMSE ↓", "r2": "R² ↑",
    "roc_auc": "ROC-AUC ↑", "pr_auc": "PR-AUC ↑", "mcc": "MCC@0.5 ↑",
}  # fmt: skip


Test = tuple[list[str], np.ndarray, np.ndarray]
"""A run's test molecules: SMILES, true values, predictions."""


@dataclass
class Run:
    """One finished training run: its table row."""

    label: str
    seconds: float
    epochs: str  # "50", or "3 × 50" for an ensemble
    scores: dict[str, float]
    ratio: float = 1.0  # wall time / the same seed's Chemprop defaults wall time


def qm9_heldout_sample(tuning: Path, size: int, seed: int) -> pd.DataFrame:
    """``size`` qm9pack molecules that are not in ``tuning``, drawn uniformly at random.

    qm9pack's 130,831 molecules (:func:`chemgraph.data.qm9pack.qm9pack_data_folder`) less every
    molecule of the qm9pack-format table ``tuning`` (by QM9 ``Index`` and, so that no
    structure comes back under another index, by ``InChi``); from the rest ``size`` rows are
    drawn without replacement with ``numpy.random.default_rng(seed)``, kept in QM9 index order.

    Returns:
        Columns ``qm9_index`` (int), ``inchi`` (str), ``smiles`` (str, QM9's GDB SMILES),
        ``gap_ev`` (float64, HOMO–LUMO gap in eV, ``HOMO_LUMO_gap_au`` × :data:`HARTREE_TO_EV`).

    Raises:
        chemgraph.errors.MissingDependencyError: qm9pack is not installed.
        ValueError: fewer than ``size`` molecules are left.
    """
    columns = ["Index", "SMILES", "InChi", "HOMO_LUMO_gap_au"]
    folder = qm9pack_data_folder()
    table = pd.concat(
        [pd.read_csv(folder / f"qm9_part{part}.csv", usecols=columns) for part in (1, 2, 3)],
        ignore_index=True,
    )
    tuned = pd.read_csv(tuning, usecols=["Index", "InChi"])
    pool = table[~table["Index"].isin(tuned["Index"]) & ~table["InChi"].isin(tuned["InChi"])]
    if len(pool) < size:
        raise ValueError(f"{len(pool)} qm9pack molecules outside {tuning.name}, {size} asked")
    chosen = np.sort(np.random.default_rng(seed).choice(len(pool), size, replace=False))
    pool = pool.iloc[chosen]
    return pd.DataFrame({
        "qm9_index": pool["Index"].to_numpy(dtype=int),
        "inchi": pool["InChi"].to_numpy(),
        "smiles": pool["SMILES"].str.strip().to_numpy(),
        "gap_ev": pool["HOMO_LUMO_gap_au"].to_numpy(dtype=np.float64) * HARTREE_TO_EV,
    })  # fmt: skip


def write_table(dataset: Dataset, out: Path, limit: int | None) -> int:
    """``smiles,<target>`` of the first ``limit`` rows of ``dataset`` (SMILES stripped, target
    scaled; a held-out QM9 sample: :func:`qm9_heldout_sample` of ``limit`` molecules); returns
    the row count."""
    if dataset.heldout_seed is not None:
        sample = qm9_heldout_sample(dataset.source, limit, dataset.heldout_seed)
        sample[["smiles", dataset.target]].to_csv(out, index=False, float_format="%.17g")
        return len(sample)
    opener = gzip.open if dataset.source.suffix == ".gz" else open
    with opener(dataset.source, "rt", newline="") as lines, out.open("w", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["smiles", dataset.target])
        count = 0
        for row in csv.DictReader(lines):
            if limit is not None and count >= limit:
                break
            value = float(row[dataset.target_column]) * dataset.scale
            writer.writerow([row[dataset.smiles_column].strip(), repr(value)])
            count += 1
    return count


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file as dicts."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def single_thread_env() -> dict[str, str]:
    """This process's environment, with one thread for OpenMP and MKL."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
    }


def timed(command: list[str], log: Path) -> float:
    """Run ``command`` (stdout and stderr to ``log``); its wall time in seconds."""
    start = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, env=single_thread_env()
        )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed ({done.returncode}); see {log}")
    return seconds


def run_chemgraph(
    dataset: Dataset,
    data: Path,
    out: Path,
    max_epochs: int | None,
    max_minutes: float | None,
    ensemble: int | None = None,
    seed: int = 0,
) -> float:
    """Train ESA (an ensemble of ``ensemble`` models) with chemgraph's default protocol into
    ``out``, weight seed ``seed`` (an ensemble: ``seed·K`` onwards) on the split of seed 0;
    the wall time in seconds."""
    if out.exists():
        shutil.rmtree(out)
    split_config = out.parent / "split_seed.yaml"
    split_config.write_text("split_seed: 0\n")
    command = [
        sys.executable, "-m", "chemgraph", "train", "--data", str(data),
        "--smiles-column", "smiles", "--target-columns", dataset.target, "--task", dataset.task,
        "--model", "esa", "--split", dataset.split, "--seed", str(seed * (ensemble or 1)),
        "--config", str(split_config), "--protocol", "default", "--out", str(out), "--quiet",
    ]  # fmt: skip
    if max_epochs is not None:
        command += ["--max-epochs", str(max_epochs)]
    if max_minutes is not None:
        command += ["--max-time-minutes", f"{max_minutes:.4f}"]
    if ensemble is not None:
        command += ["--ensemble", str(ensemble)]
    return timed(command, out.parent / f"{out.name}.log")


def run_chemprop(
    chemprop: Path,
    dataset: Dataset,
    data: Path,
    splits: Path,
    out: Path,
    epochs: int | None,
    ensemble: int | None = None,
    seed: int = 0,
) -> float:
    """Train Chemprop with its defaults (``epochs`` if given; an ensemble of ``ensemble``
    models) on the split of ``splits`` into ``out``, weight seed ``seed`` (an ensemble:
    ``seed·K`` onwards); the wall time in seconds."""
    if out.exists():
        shutil.rmtree(out)
    command = [
        str(chemprop), "train", "--data-path", str(data), "-s", "smiles",
        "--target-columns", dataset.target, "-t", dataset.task, "--splits-file", str(splits),
        "-o", str(out), "-n", "0", "--data-seed", "0",
        "--pytorch-seed", str(seed * (ensemble or 1)),
    ]  # fmt: skip
    if epochs is not None:
        command += ["--epochs", str(epochs)]
    if ensemble is not None:
        command += ["--ensemble-size", str(ensemble)]
    return timed(command, out.parent / f"{out.name}.log")


def write_split(run: Path, data: Path, accepted: Path, splits: Path) -> dict[str, list[int]]:
    """From a chemgraph run on ``data``: write the rows it accepted to ``accepted`` and its
    split, as row indices of ``accepted``, to the Chemprop ``splits`` file; returns the split
    (train = every accepted row not in val or test)."""
    table = read_rows(data)
    rejected = {int(r["row"]) for r in read_rows(run / "rejected.csv")}
    kept = [row for row in range(len(table)) if row not in rejected]
    with accepted.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table[row] for row in kept)
    index = {row: position for position, row in enumerate(kept)}
    predictions = read_rows(run / "predictions.csv")
    split = {
        name: sorted(index[int(p["row"])] for p in predictions if p["split"] == name)
        for name in ("val", "test")
    }
    held = set(split["val"]) | set(split["test"])
    split = {"train": [i for i in range(len(kept)) if i not in held], **split}
    splits.write_text(json.dumps([split]))
    return split


def chemgraph_test(run: Path, target: str) -> Test:
    """SMILES, true values and predictions of a chemgraph run's test molecules, in row order
    (an ensemble's ``predictions.csv`` holds its members' mean prediction)."""
    rows = sorted(
        (r for r in read_rows(run / "predictions.csv") if r["split"] == "test"),
        key=lambda r: int(r["row"]),
    )
    truth = np.array([float(r[target]) for r in rows])
    predicted = np.array([float(r[f"{target}_pred"]) for r in rows])
    return [r["smiles"] for r in rows], truth, predicted


def chemprop_test(run: Path, accepted: Path, test_rows: list[int], target: str) -> Test:
    """SMILES, true values (from ``accepted``) and predictions of a Chemprop run's test
    molecules, in the splits file's order; for an ensemble (``model_<k>`` sub-folders), the mean
    of its members' predictions."""
    table = read_rows(accepted)
    tables = [read_rows(m) for m in sorted(run.glob("model_*/test_predictions.csv"))]
    rows = tables[0]
    if any([r["smiles"] for r in t] != [r["smiles"] for r in rows] for t in tables):
        raise SystemExit(f"{run}: the ensemble's members have different test molecules")
    truth = np.array([float(table[row][target]) for row in test_rows])
    predicted = np.mean([[float(r[target]) for r in t] for t in tables], axis=0)
    return [r["smiles"] for r in rows], truth, predicted


def regression_scores(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Test MAE, RMSE and R²."""
    error = predicted - truth
    return {
        "mae": float(np.mean(np.abs(error))),
        "rmse": float(np.sqrt(np.mean(error**2))),
        "r2": float(1 - np.sum(error**2) / np.sum((truth - truth.mean()) ** 2)),
    }


def classification_scores(truth: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    """Test ROC-AUC, PR-AUC (average precision) and MCC at probability 0.5; the AUCs are NaN
    when the test set holds one class."""
    labels = truth.astype(int)
    both = len(np.unique(labels)) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MCC of a single predicted class
        mcc = float(skm.matthews_corrcoef(labels, (probability >= 0.5).astype(int)))
    return {
        "roc_auc": float(skm.roc_auc_score(labels, probability)) if both else float("nan"),
        "pr_auc": float(skm.average_precision_score(labels, probability)) if both else float("nan"),
        "mcc": mcc,
    }


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a markdown table."""
    return [
        f"| {' | '.join(header)} |",
        f"|{'---|' * len(header)}",
        *(f"| {' | '.join(row)} |" for row in rows),
    ]


class Comparison:
    """Both tools on one data set: same table, same split, runs under ``out/<name>``."""

    def __init__(self, name: str, out: Path, chemprop: Path, limit: int | None, smoke: bool):
        self.dataset = DATASETS[name]
        self.out = out / name
        self.out.mkdir(parents=True, exist_ok=True)
        self.chemprop_path = chemprop
        self.smoke = smoke
        self.data = self.out / "data.csv"  # chemgraph's table
        self.accepted = self.out / "accepted.csv"  # Chemprop's: the rows chemgraph accepted
        self.splits = self.out / "splits.json"
        self.num_rows = write_table(self.dataset, self.data, limit)
        self.split: dict[str, list[int]] | None = None
        self.expected: list[str] = []  # the test molecules' SMILES

    def chemgraph(
        self,
        label: str,
        run: str,
        max_epochs: int | None,
        max_minutes: float | None = None,
        ensemble: int | None = None,
        seed: int = 0,
    ) -> Run:
        """Train ESA (an ensemble) and score it; the first run fixes the split that Chemprop
        gets."""
        path = self.out / run
        seconds = run_chemgraph(
            self.dataset, self.data, path, max_epochs, max_minutes, ensemble, seed
        )
        if self.split is None:
            self.split = write_split(path, self.data, self.accepted, self.splits)
            self.expected = [read_rows(self.accepted)[row]["smiles"] for row in self.split["test"]]
        metrics = sorted(path.glob("model-*/metrics.json")) or [path / "metrics.json"]
        epochs = [json.loads(m.read_text())["epochs_trained"] for m in metrics]
        text = f"{len(epochs)} × {epochs[0]}" if ensemble else str(epochs[0])
        return self._score(label, path, seconds, text, chemgraph_test(path, self.dataset.target))

    def chemprop(
        self,
        label: str,
        run: str,
        epochs: int | None,
        ensemble: int | None = None,
        seed: int = 0,
    ) -> Run:
        """Train Chemprop (an ensemble) on the split of the first chemgraph run and score it."""
        path = self.out / run
        seconds = run_chemprop(
            self.chemprop_path, self.dataset, self.accepted, self.splits, path, epochs,
            ensemble, seed,
        )  # fmt: skip
        test = chemprop_test(path, self.accepted, self.split["test"], self.dataset.target)
        epochs_text = str(epochs or CHEMPROP_EPOCHS)
        if ensemble:
            epochs_text = f"{ensemble} × {epochs_text}"
        return self._score(label, path, seconds, epochs_text, test)

    def baseline(self, seed: int) -> Run:
        """The simple baseline on the same split: Morgan fingerprints (radius 2, 2,048 bits) and,
        for regression, :class:`~chemgraph.train.baselines.FingerprintKernelRidge` (Tanimoto
        kernel, ``alpha`` chosen on the validation molecules; no seed changes it), for
        classification a random forest (scikit-learn, 500 trees, ``random_state=seed``) whose
        class-1 probability is scored."""
        start = time.perf_counter()
        table = read_rows(self.accepted)
        target = self.dataset.target
        parts = {
            name: (
                morgan_fingerprints([table[row]["smiles"] for row in rows]),
                np.array([float(table[row][target]) for row in rows]),
            )
            for name, rows in self.split.items()
        }
        (train, labels), (val, val_labels), (test, _) = (parts[n] for n in ("train", "val", "test"))
        if self.dataset.task == "regression":
            model = FingerprintKernelRidge.fit(train, labels, val, val_labels)
            predicted, label = model.predict(test)[:, 0], "Morgan fingerprint kernel ridge"
        else:
            forest = RandomForestClassifier(n_estimators=500, random_state=seed, n_jobs=1)
            forest.fit(train, labels.astype(int))
            predicted = forest.predict_proba(test)[:, 1]
            label = "Morgan fingerprint random forest"
        smiles = [table[row]["smiles"] for row in self.split["test"]]
        truth = np.array([float(table[row][target]) for row in self.split["test"]])
        return self._score(
            label, self.out / "baseline", time.perf_counter() - start, "—",
            (smiles, truth, predicted),
        )  # fmt: skip

    def _score(self, label: str, path: Path, seconds: float, epochs: str, test: Test) -> Run:
        """Check that ``test`` holds the split's test molecules; score it."""
        smiles, truth, predicted = test
        if smiles != self.expected:
            raise SystemExit(f"{path}: the test molecules are not the split's test rows")
        score = regression_scores if self.dataset.task == "regression" else classification_scores
        print(f"{path.relative_to(self.out.parent)}: {seconds:.0f} s", file=sys.stderr, flush=True)
        return Run(label, seconds, epochs, score(truth, predicted))

    def header(self) -> str:
        """The section's header line: data, split, molecule counts, threads, date."""
        d = self.dataset
        split = "random 80/10/10 seed 0" if d.split == "random" else "scaffold 80/10/10"
        sizes = ", ".join(f"{name} {len(self.split[name])}" for name in ("train", "val", "test"))
        rejected = self.num_rows - sum(len(rows) for rows in self.split.values())
        source = d.source.name
        if d.heldout_seed is not None:
            source = f"qm9pack less the molecules of {source}, drawn with seed {d.heldout_seed}"
        tuned = "ESA's defaults chosen on it" if d.tuned else "played no part in any choice"
        return (
            f"## {d.title}: {source}, {self.num_rows} rows ({rejected} rejected by "
            f"RDKit), chemgraph {split} ({sizes}; {tuned}), 1 thread per tool, "
            f"{datetime.date.today()}"
        )

    def epoch_table(self, first: int, second: int) -> list[str]:
        """Time per training epoch of both tools, from ``first``- and ``second``-epoch runs
        (interleaved, chemgraph first)."""
        seconds: dict[str, list[float]] = {"chemgraph": [], "chemprop": []}
        for epochs in (first, second):
            for tool, times in seconds.items():
                run = getattr(self, tool)("", f"{tool}_{epochs}ep", epochs)
                times.append(run.seconds)
        per_epoch = {tool: (t[1] - t[0]) / (second - first) for tool, t in seconds.items()}
        rows = [
            ["Chemprop v2 (defaults)", f"{per_epoch['chemprop']:.2f}"],
            ["chemgraph ESA (defaults)", f"{per_epoch['chemgraph']:.2f}"],
        ]
        return [
            f"time per training epoch, from {first}- and {second}-epoch runs:",
            "",
            *markdown_table(["tool", "s/epoch"], rows),
            "",
            f"ratio ESA / Chemprop: {per_epoch['chemgraph'] / per_epoch['chemprop']:.2f}",
        ]

    def accuracy_runs(self, multipliers: list[float], ensembles: list[int], seed: int) -> list[Run]:
        """The runs of one seed: chemgraph's defaults (equal work), Chemprop's defaults,
        chemgraph at ``m`` times Chemprop's wall time for each of ``multipliers``, and
        ensembles of ``K`` default models of both tools for each of ``ensembles``."""
        cap = SMOKE_EPOCHS if self.smoke else {"chemgraph": None, "chemprop": None}
        tag = f"_seed{seed}"
        runs = [
            self.chemgraph(
                "chemgraph ESA defaults (equal work)", f"esa_defaults{tag}", cap["chemgraph"],
                seed=seed,
            ),
            self.chemprop("Chemprop v2 defaults", f"chemprop_defaults{tag}", cap["chemprop"],
                          seed=seed),
        ]  # fmt: skip
        budget = runs[1].seconds / 60
        for m in multipliers:
            label = f"chemgraph ESA, {m:g}x Chemprop's time"
            max_epochs = cap["chemgraph"] or 1000
            runs.append(
                self.chemgraph(label, f"esa_budget_x{m:g}{tag}", max_epochs, m * budget, seed=seed)
            )
        for size in ensembles:
            label = f"chemgraph ESA ensemble of {size} defaults (fixed work)"
            runs.append(
                self.chemgraph(
                    label, f"esa_ensemble_{size}{tag}", cap["chemgraph"], None, size, seed
                )
            )
            label = f"Chemprop v2 ensemble of {size} defaults"
            runs.append(
                self.chemprop(label, f"chemprop_ensemble_{size}{tag}", cap["chemprop"], size, seed)
            )  # fmt: skip
        runs.append(self.baseline(seed))
        for run in runs:
            run.ratio = run.seconds / runs[1].seconds
        return runs

    def accuracy_table(
        self, multipliers: list[float], ensembles: list[int], seeds: list[int]
    ) -> list[str]:
        """The runs of :meth:`accuracy_runs` for every seed, as one table (mean ± standard
        deviation over the seeds when there are several) and, for several seeds, a second
        table with the headline metric of each seed."""
        per_seed = [self.accuracy_runs(multipliers, ensembles, seed) for seed in seeds]
        metrics = self.dataset.metrics
        header = ["run", "wall s", "× Chemprop's time", "epochs"]
        header += [f"test {METRIC_HEADERS[m]}" for m in metrics]
        rows = []
        for runs in zip(*per_seed):
            epochs = sorted({r.epochs for r in runs}, key=lambda e: (len(e), e))
            rows.append([
                runs[0].label,
                f"{np.mean([r.seconds for r in runs]):.0f}",
                f"{np.mean([r.ratio for r in runs]):.2f}",
                epochs[0] if len(epochs) == 1 else f"{epochs[0]} to {epochs[-1]}",
                *(spread([r.scores[m] for r in runs]) for m in metrics),
            ])  # fmt: skip
        lines = markdown_table(header, rows)
        if len(seeds) > 1:
            headline = METRIC_HEADERS[metrics[0]]
            lines += ["", f"test {headline} of each seed:", ""]
            lines += markdown_table(
                ["run", *(f"seed {s}" for s in seeds)],
                [[runs[0].label, *(f"{r.scores[metrics[0]]:.3f}" for r in runs)]
                 for runs in zip(*per_seed)],
            )  # fmt: skip
        return lines


def spread(values: list[float]) -> str:
    """``mean ± sample standard deviation`` of ``values`` to 3 decimals; the value alone for
    one."""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


def main(argv: list[str] | None = None) -> int:
    """Run the measurements; write ``results.md`` and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=tuple(DATASETS), default=list(DATASETS))
    parser.add_argument("--mode", choices=("epoch", "budget", "both"), default="both")
    parser.add_argument("--molecules", type=int, default=10_000, help="QM9 molecules read")
    parser.add_argument("--epochs", type=int, nargs=2, default=(3, 8), metavar=("E1", "E2"))
    parser.add_argument(
        "--multipliers", type=float, nargs="*", default=[1.0, 3.0], metavar="M",
        help="time-budget rows at M times Chemprop's wall time (default: 1 3; none: no such row)",
    )  # fmt: skip
    parser.add_argument(
        "--ensembles", type=int, nargs="*", default=[], metavar="K",
        help="also train ensembles of K default models of both tools (fixed work), e.g. "
        "--ensembles 3",
    )  # fmt: skip
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], metavar="S",
        help="weight seeds: every accuracy row once per seed, mean ± sd (default: 0)",
    )  # fmt: skip
    parser.add_argument(
        "--chemprop", type=Path, default=REPO / "benchmarks" / ".chemprop-venv" / "bin" / "chemprop"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "runs" / "benchmarks" / "esa_vs_chemprop"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"smoke run: accuracy runs capped at {SMOKE_EPOCHS['chemgraph']} chemgraph and "
        f"{SMOKE_EPOCHS['chemprop']} Chemprop epochs, every data set but QM9 cut to "
        f"{SMOKE_ROWS} rows (--epochs still sets the epoch timing)",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.datasets if args.mode != "epoch" or n == "qm9_gap"]
    if not names:
        raise SystemExit("--mode epoch times QM9 only: add qm9_gap to --datasets")
    for name in names:
        if not DATASETS[name].source.is_file():
            raise SystemExit(
                f"{DATASETS[name].source} is absent: this benchmark needs ../shared/data"
            )
    if not args.chemprop.is_file():
        raise SystemExit(
            f"Chemprop is not installed at {args.chemprop}: make its environment with\n"
            "  python -m venv benchmarks/.chemprop-venv\n"
            "  benchmarks/.chemprop-venv/bin/pip install torch==2.13.0 chemprop==2.3.1\n"
            "or pass --chemprop PATH/TO/chemprop"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    title = "# ESA (chemgraph) vs Chemprop v2"
    lines = [f"{title} (SMOKE RUN: capped epochs, cut data)" if args.smoke else title]
    for name in names:
        qm9 = name.startswith("qm9_gap")
        limit = args.molecules if qm9 else (SMOKE_ROWS if args.smoke else None)
        comparison = Comparison(name, args.out, args.chemprop, limit, args.smoke)
        body = []
        if args.mode in ("epoch", "both") and name == "qm9_gap":
            body += ["", *comparison.epoch_table(*args.epochs)]
        if args.mode in ("budget", "both"):
            body += ["", *comparison.accuracy_table(args.multipliers, args.ensembles, args.seeds)]
        lines += ["", comparison.header(), *body]
        (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
