"""What a chemist would do instead of transfer learning: the baselines of every transfer table.

Given molecules with cheap low-fidelity labels (e.g. DFT HOMO/LUMO) and a few expensive
high-fidelity ones (e.g. GW), on the same train/val/test split as the transfer strategies
(:func:`chemgraph.data.multi_fidelity.high_fidelity_split`):

* **mean predictor** (both settings): the mean of the training molecules' high-fidelity labels,
  what a model that learned nothing would say;
* **fingerprint kernel ridge on the high-fidelity labels alone** (both settings): Morgan
  fingerprints (radius 2, 2,048 bits), Tanimoto kernel, :class:`sklearn.kernel_ridge.KernelRidge`
  with a precomputed kernel on the centred labels, ``alpha`` chosen on the validation molecules;
* **linear correction** ``high = a·low + b`` (transductive: the low-fidelity labels of the test
  molecules are known): ``a``, ``b`` per target by least squares on the training molecules;
  with ``all_low_columns`` every low-fidelity column enters each target's fit
  (``high_t = Σ_s a_ts·low_s + b_t``);
* **Δ-learning** (Ramakrishnan, Dral, Rupp and von Lilienfeld 2015, "Big data meets quantum
  chemistry approximations: the Δ-machine learning approach", J. Chem. Theory Comput. 11,
  2087, doi:10.1021/acs.jctc.5b00099): the linear correction plus a fingerprint kernel ridge
  on its training residuals;
* inductive (the test molecules' low-fidelity labels are not known): a low-fidelity model — a
  fingerprint kernel ridge trained on the inductive pool's low-fidelity labels — predicts
  them, and that prediction is corrected linearly (and by Δ-learning) as above.

Every baseline is deterministic given the split: no seed changes it.

Public API
----------
- :func:`tanimoto_kernel` — bit fingerprints ``[N, F]``, ``[M, F]`` -> ``float64 [N, M]``.
- :class:`LinearCorrection` — ``high ≈ low @ weights + intercept``, fitted by least squares.
- :class:`FingerprintKernelRidge` — per-target kernel ridge, ``alpha`` chosen on validation.
- :func:`morgan_fingerprints` — SMILES -> ``uint8 [N, 2048]`` Morgan bits.
- :func:`residual_kernel_ridge` — Δ-learning's kernel ridge on ``high − base``.
- :class:`BaselineModel` — one fitted baseline as a model (what a baseline checkpoint holds).
- :func:`transfer_baselines` — every baseline fitted, and its validation and test predictions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from chemgraph.chem import mol_from_smiles
from chemgraph.featurize.fingerprints import MorganFingerprint

__all__ = [
    "KERNEL_RIDGE_ALPHAS",
    "BaselineModel",
    "FingerprintKernelRidge",
    "LinearCorrection",
    "baseline_names",
    "morgan_fingerprints",
    "residual_kernel_ridge",
    "tanimoto_kernel",
    "transfer_baselines",
]

KERNEL_RIDGE_ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
"""Ridge strengths tried by :class:`FingerprintKernelRidge`; the one with the lowest
validation RMSE is kept."""

MAX_KERNEL_MOLECULES = 10_000
"""At most this many training molecules enter a kernel (a 10,000² float64 kernel is 0.8 GB);
a larger training set is subsampled (seeded) for the kernel baselines."""


def tanimoto_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tanimoto (Jaccard) similarity of every pair of bit fingerprints.

    ``K[i, j] = |a_i ∧ b_j| / (|a_i| + |b_j| − |a_i ∧ b_j|)``; two empty fingerprints have
    similarity 1 (identical), an empty and a non-empty one 0.

    Args:
        a: ``[N, F]`` bits (any integer or bool dtype, values 0/1).
        b: ``[M, F]`` bits.

    Returns:
        ``float64 [N, M]`` in [0, 1].
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    common = a @ b.T
    union = a.sum(1)[:, None] + b.sum(1)[None, :] - common
    return np.where(union > 0, common / np.where(union > 0, union, 1.0), 1.0)


def morgan_fingerprints(smiles: list[str]) -> np.ndarray:
    """Morgan fingerprints (radius 2, 2,048 bits; :class:`MorganFingerprint`) of SMILES.

    Returns:
        ``uint8 [N, 2048]``.

    Raises:
        chemgraph.chem.MoleculeParseError: a SMILES RDKit cannot read (with RDKit's reason).
    """
    return MorganFingerprint(radius=2, size=2048).featurize([mol_from_smiles(s) for s in smiles])


@dataclass
class LinearCorrection:
    """``high ≈ low @ weights + intercept``, per target by least squares.

    Attributes:
        weights: ``float64 [S, T]`` (``S`` low-fidelity inputs, ``T`` targets).
        intercept: ``float64 [T]``.
    """

    weights: np.ndarray
    intercept: np.ndarray

    @classmethod
    def fit(cls, low: np.ndarray, high: np.ndarray, same_column: bool) -> LinearCorrection:
        """Fit on molecules with both labels (rows with a NaN input or target are skipped
        for that target).

        Args:
            low: ``[N, S]`` low-fidelity values (labels or a model's predictions).
            high: ``[N, T]`` high-fidelity labels.
            same_column: target ``t`` uses only low-fidelity column ``t`` (``high_t =
                a_t·low_t + b_t``; needs ``S == T``); False: every column.

        Raises:
            ValueError: shapes disagree, or a target has fewer molecules than coefficients.
        """
        low = np.asarray(low, dtype=np.float64).reshape(len(low), -1)
        high = np.asarray(high, dtype=np.float64).reshape(len(high), -1)
        if len(low) != len(high) or (same_column and low.shape[1] != high.shape[1]):
            raise ValueError(f"low {low.shape} and high {high.shape} do not match")
        weights = np.zeros((low.shape[1], high.shape[1]))
        intercept = np.zeros(high.shape[1])
        for t in range(high.shape[1]):
            inputs = [t] if same_column else list(range(low.shape[1]))
            rows = ~np.isnan(high[:, t]) & ~np.isnan(low[:, inputs]).any(1)
            if rows.sum() <= len(inputs):
                raise ValueError(
                    f"target {t}: {int(rows.sum())} molecules for {len(inputs) + 1} coefficients"
                )
            design = np.c_[low[rows][:, inputs], np.ones(int(rows.sum()))]
            solution, *_ = np.linalg.lstsq(design, high[rows, t], rcond=None)
            weights[inputs, t] = solution[:-1]
            intercept[t] = solution[-1]
        return cls(weights, intercept)

    def predict(self, low: np.ndarray) -> np.ndarray:
        """``float64 [N, T]`` corrected values of ``low`` ``[N, S]`` (``N`` may be 0)."""
        inputs = len(self.weights)
        return np.asarray(low, dtype=np.float64).reshape(len(low), inputs) @ self.weights + (
            self.intercept
        )


@dataclass
class FingerprintKernelRidge:
    """Kernel ridge regression on Tanimoto similarities of bit fingerprints, one model per
    target, fitted to the centred labels (the prediction far from every training molecule is
    the training mean, not 0): ``prediction = K(fingerprints, train_fingerprints) @
    dual_coefficients + means``, what :class:`sklearn.kernel_ridge.KernelRidge` with a
    precomputed kernel computes, held as plain arrays (so a checkpoint can hold it).

    Attributes:
        train_fingerprints: ``uint8 [N, F]`` bits of the training molecules.
        dual_coefficients: ``float64 [N, T]``; 0 for a molecule without that target's label.
        means: ``float64 [T]`` training means (NaN: the target had no training label; it
            predicts NaN).
        alphas: the chosen ``alpha`` per target (NaN for a target without labels).
    """

    train_fingerprints: np.ndarray
    dual_coefficients: np.ndarray
    means: np.ndarray
    alphas: list[float] = field(default_factory=list)

    @classmethod
    def fit(
        cls,
        fingerprints: np.ndarray,
        labels: np.ndarray,
        val_fingerprints: np.ndarray,
        val_labels: np.ndarray,
        alphas: tuple[float, ...] = KERNEL_RIDGE_ALPHAS,
    ) -> FingerprintKernelRidge:
        """Fit each target for every ``alpha`` and keep the one with the lowest RMSE on the
        validation molecules (NaN labels skipped).

        Args:
            fingerprints, val_fingerprints: ``[N, F]``, ``[V, F]`` bits.
            labels, val_labels: ``[N, T]``, ``[V, T]`` (NaN = missing).
            alphas: ridge strengths to try.
        """
        # here, not at the top: scikit-learn imports scipy.stats (1.5 CPU s), and this module is
        # imported by every chemgraph predict (a Δ-learning checkpoint's LinearCorrection)
        from sklearn.kernel_ridge import KernelRidge

        labels = np.asarray(labels, dtype=np.float64).reshape(len(labels), -1)
        val_labels = np.asarray(val_labels, dtype=np.float64).reshape(len(val_labels), -1)
        kernel = tanimoto_kernel(fingerprints, fingerprints)
        val_kernel = tanimoto_kernel(val_fingerprints, fingerprints)
        coefficients = np.zeros(labels.shape)
        means, chosen = np.full(labels.shape[1], np.nan), [np.nan] * labels.shape[1]
        for t in range(labels.shape[1]):
            rows = ~np.isnan(labels[:, t])
            val_rows = ~np.isnan(val_labels[:, t])
            if not rows.any():
                continue
            mean = float(labels[rows, t].mean())
            best = None
            for alpha in alphas:
                model = KernelRidge(alpha=alpha, kernel="precomputed")
                model.fit(kernel[np.ix_(rows, rows)], labels[rows, t] - mean)
                error = (
                    np.sqrt(np.mean((model.predict(val_kernel[val_rows][:, rows]) + mean
                                     - val_labels[val_rows, t]) ** 2))
                    if val_rows.any() else 0.0
                )  # fmt: skip
                if best is None or error < best[0]:
                    best = (error, alpha, model.dual_coef_)
            coefficients[rows, t] = best[2]
            means[t], chosen[t] = mean, best[1]
        return cls(np.asarray(fingerprints, dtype=np.uint8), coefficients, means, chosen)

    def predict(self, fingerprints: np.ndarray) -> np.ndarray:
        """``float64 [M, T]`` predictions for ``[M, F]`` bits (``M`` may be 0)."""
        kernel = tanimoto_kernel(fingerprints, self.train_fingerprints)
        return kernel @ self.dual_coefficients + self.means

    def select(self, targets: list[int]) -> FingerprintKernelRidge:
        """The model of ``targets`` (positions) only."""
        return FingerprintKernelRidge(
            self.train_fingerprints, self.dual_coefficients[:, targets], self.means[targets],
            [self.alphas[t] for t in targets],
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain values and tensors (``torch.load(..., weights_only=True)`` reads them): the
        training fingerprints packed 8 bits to a byte."""
        return {
            "fingerprint_size": int(self.train_fingerprints.shape[1]),
            "train_fingerprints": torch.from_numpy(np.packbits(self.train_fingerprints, axis=1)),
            "dual_coefficients": torch.from_numpy(self.dual_coefficients),
            "means": torch.from_numpy(self.means),
            "alphas": [float(a) for a in self.alphas],
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> FingerprintKernelRidge:
        """The inverse of :meth:`to_dict`."""
        bits = np.unpackbits(values["train_fingerprints"].numpy(), axis=1)
        return cls(
            bits[:, : values["fingerprint_size"]], values["dual_coefficients"].numpy(),
            values["means"].numpy(), list(values["alphas"]),
        )  # fmt: skip


BASELINES = {
    "both": ("mean", "kernel_ridge"),
    "transductive": ("linear", "delta", "linear_all", "delta_all"),
    "inductive": ("low_model_linear", "low_model_delta"),
}
"""The baselines of each setting, in table order (``both`` = shown with either setting)."""


def baseline_names(low_name: str, high_name: str) -> dict[str, str]:
    """The label of every baseline in a table, e.g. ``"Δ-learning: a·DFT + b + kernel
    ridge"``."""
    return {
        "mean": f"mean predictor (the training molecules' mean {high_name} label)",
        "kernel_ridge": f"kernel ridge on {high_name} labels only",
        "linear": f"linear correction a·{low_name} + b",
        "delta": f"Δ-learning: a·{low_name} + b + kernel ridge",
        "linear_all": f"linear correction on every {low_name} column",
        "delta_all": f"Δ-learning on every {low_name} column + kernel ridge",
        "low_model_linear": f"{low_name} kernel ridge model, corrected linearly",
        "low_model_delta": f"{low_name} kernel ridge model + Δ-learning",
    }


def _subsample(index: np.ndarray, limit: int, seed: int = 0) -> np.ndarray:
    if len(index) <= limit:
        return index
    return np.sort(np.random.default_rng(seed).choice(index, limit, replace=False))


def residual_kernel_ridge(
    base: np.ndarray,
    high: np.ndarray,
    fingerprints: np.ndarray,
    split: dict[str, np.ndarray],
    max_kernel_molecules: int = MAX_KERNEL_MOLECULES,
) -> FingerprintKernelRidge:
    """The kernel ridge of Δ-learning: :class:`FingerprintKernelRidge` fitted to the
    residuals ``high − base`` of the training molecules (subsampled, seed 0, to at most
    ``max_kernel_molecules``), ``alpha`` chosen on the residuals of the validation molecules.
    The Δ-learning prediction of molecules ``i`` is ``base[i] + model.predict(fingerprints[i])``.

    Args:
        base: ``[N, T]`` what the residual is taken from (e.g. a linear correction of the
            low-fidelity values), in the high-fidelity units; NaN where unknown.
        high: ``[N, T]`` high-fidelity labels (NaN = missing).
        fingerprints: ``[N, F]`` bits.
        split: ``train`` and ``val`` positions.
        max_kernel_molecules: the cap on the kernel's training molecules.
    """
    base = np.asarray(base, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    train, val = _subsample(split["train"], max_kernel_molecules), split["val"]
    return FingerprintKernelRidge.fit(
        fingerprints[train], high[train] - base[train], fingerprints[val], high[val] - base[val]
    )


@dataclass
class BaselineModel:
    """One fitted baseline of :func:`transfer_baselines`, as a model that predicts molecules it
    has not seen (``chemgraph predict`` loads it from a baseline checkpoint of ``chemgraph
    transfer``, :class:`BaselinePredictor`)::

        low        = the given low-fidelity values [N, S] (transductive), or
                     low_model(fingerprints) (inductive), or nothing (S = 0)
        prediction = correction(low) + ridge(fingerprints)

    The mean predictor is a correction without inputs (``W`` ``[0, T]``, ``b`` the training
    mean); the kernel ridge on the high-fidelity labels alone a correction without inputs and
    ``b = 0`` plus ``ridge``.

    Attributes:
        key: the baseline (a key of :data:`BASELINES`).
        correction: ``W`` ``float64 [S, T]``, ``b`` ``float64 [T]``.
        reads: the positions of the ``S`` low-fidelity columns :meth:`predict` reads, in the
            columns of the table it was fitted on (empty for the inductive baselines, whose
            low model predicts them, and for those without a correction of low values).
        same_column: target ``t`` is corrected from low-fidelity column ``t`` only.
        low_model: the inductive baselines' fingerprint kernel ridge of the ``S`` values.
        ridge: a fingerprint kernel ridge added to the correction (Δ-learning's residual), or
            None.
    """

    key: str
    correction: LinearCorrection
    reads: list[int] = field(default_factory=list)
    same_column: bool = True
    low_model: FingerprintKernelRidge | None = None
    ridge: FingerprintKernelRidge | None = None

    @property
    def needs_fingerprints(self) -> bool:
        """Whether :meth:`predict` reads fingerprints."""
        return self.low_model is not None or self.ridge is not None

    def predict(self, fingerprints: np.ndarray | None, low: np.ndarray | None) -> np.ndarray:
        """``float64 [N, T]`` predictions of ``N`` molecules.

        Args:
            fingerprints: ``[N, F]`` Morgan bits (:func:`morgan_fingerprints`); None for a
                baseline that does not read them (:attr:`needs_fingerprints`).
            low: ``[N, S]`` the values of the :attr:`reads` columns (a NaN gives NaN); None
                for a baseline that reads none.

        Raises:
            ValueError: neither input given, or one missing that the baseline needs.
        """
        if fingerprints is None and low is None:
            raise ValueError("no molecules: give their fingerprints or low-fidelity values")
        if self.needs_fingerprints and fingerprints is None:
            raise ValueError(f"the {self.key} baseline needs the molecules' fingerprints")
        count = len(fingerprints) if fingerprints is not None else len(low)
        if self.low_model is not None:
            low = self.low_model.predict(fingerprints)
        elif not self.reads:
            low = np.zeros((count, 0))
        elif low is None:
            raise ValueError(f"the {self.key} baseline needs the low-fidelity values it reads")
        out = self.correction.predict(low)
        return out if self.ridge is None else out + self.ridge.predict(fingerprints)

    def select(self, target: int) -> BaselineModel:
        """The model of target ``target`` (a position) alone: the low-fidelity columns it
        does not use dropped (its own column for a same-column correction)."""
        inputs = list(range(len(self.correction.weights)))
        if self.same_column and inputs:
            inputs = [target]
        return BaselineModel(
            self.key,
            LinearCorrection(
                self.correction.weights[inputs][:, [target]], self.correction.intercept[[target]]
            ),
            [self.reads[i] for i in inputs] if self.reads else [],
            self.same_column,
            None if self.low_model is None else self.low_model.select(inputs),
            None if self.ridge is None else self.ridge.select([target]),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain values and tensors, for a checkpoint (``weights_only`` loading)."""
        return {
            "key": self.key,
            "weights": torch.from_numpy(self.correction.weights),
            "intercept": torch.from_numpy(self.correction.intercept),
            "reads": list(self.reads),
            "same_column": self.same_column,
            "low_model": None if self.low_model is None else self.low_model.to_dict(),
            "ridge": None if self.ridge is None else self.ridge.to_dict(),
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> BaselineModel:
        """The inverse of :meth:`to_dict`."""
        ridges = [
            None if values[name] is None else FingerprintKernelRidge.from_dict(values[name])
            for name in ("low_model", "ridge")
        ]
        correction = LinearCorrection(values["weights"].numpy(), values["intercept"].numpy())
        return cls(
            values["key"], correction, list(values["reads"]), bool(values["same_column"]),
            *ridges,
        )  # fmt: skip


def transfer_baselines(
    low: np.ndarray,
    high: np.ndarray,
    fingerprints: np.ndarray | None,
    split: dict[str, np.ndarray],
    inductive_pool: np.ndarray | None = None,
    max_kernel_molecules: int = MAX_KERNEL_MOLECULES,
    unlabelled: np.ndarray | None = None,
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, BaselineModel]]:
    """Every baseline (see the module docstring) fitted, and its validation and test
    predictions: the validation ones are what a baseline is ranked on beside the transfer
    strategies (the kernel ridges chose their ``alpha`` on the same molecules, as the networks
    chose their epoch).

    Args:
        low: ``[N, S]`` low-fidelity labels of every molecule (NaN = missing).
        high: ``[N, T]`` high-fidelity labels (NaN = missing; ``T == S``).
        fingerprints: ``[N, F]`` bits, or None: no kernel ridge baselines (only the mean and
            the linear corrections).
        split: ``train``/``val``/``test`` positions (the transfer strategies' split).
        inductive_pool: positions whose low-fidelity labels train the low-fidelity model of
            the inductive baselines (the test molecules excluded); None = no inductive
            baselines.
        max_kernel_molecules: a kernel's training molecules are subsampled (seed 0) to at
            most this many.
        unlabelled: positions of molecules without high-fidelity labels to predict too
            (``"unlabelled"`` of each baseline); None = none.

    Returns:
        ``(predictions, models)``: ``{baseline key (BASELINES): {"val": float64 [n_val, T],
        "test": float64 [n_test, T]}}``, and ``"unlabelled"`` ``[len(unlabelled), T]`` with
        ``unlabelled``; ``{baseline key: its BaselineModel}`` (``reads`` positions of ``low``'s
        columns).
    """
    train, val = split["train"], split["val"]
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    kernel_train = _subsample(train, max_kernel_molecules)
    predicted = {"val": val, "test": split["test"]}
    if unlabelled is not None:
        predicted["unlabelled"] = np.asarray(unlabelled, dtype=np.int64)
    known = np.concatenate(list(predicted.values()) + [train])
    no_inputs = np.zeros((0, high.shape[1]))
    mean = LinearCorrection(no_inputs, np.nanmean(high[train], axis=0))
    models = {"mean": BaselineModel("mean", mean)}

    def everywhere(model: BaselineModel) -> np.ndarray:  # [N, T], NaN outside ``known``
        values = np.full_like(high, np.nan)
        values[known] = model.predict(
            None if fingerprints is None else fingerprints[known], low[known][:, model.reads]
        )
        return values

    if fingerprints is not None:
        ridge = FingerprintKernelRidge.fit(
            fingerprints[kernel_train], high[kernel_train], fingerprints[val], high[val]
        )
        zero = LinearCorrection(no_inputs, np.zeros(high.shape[1]))
        models["kernel_ridge"] = BaselineModel("kernel_ridge", zero, ridge=ridge)
    every_column = list(range(low.shape[1]))
    for suffix, same in (("", True), ("_all", False)):
        correction = LinearCorrection.fit(low[train], high[train], same)
        models[f"linear{suffix}"] = BaselineModel(f"linear{suffix}", correction, every_column, same)
        if fingerprints is not None:
            ridge = residual_kernel_ridge(
                everywhere(models[f"linear{suffix}"]), high, fingerprints, split,
                max_kernel_molecules,
            )  # fmt: skip
            models[f"delta{suffix}"] = BaselineModel(
                f"delta{suffix}", correction, every_column, same, ridge=ridge
            )
    if inductive_pool is not None and fingerprints is not None:
        pool = np.setdiff1d(inductive_pool, split["test"])
        held_out = np.random.default_rng(0).random(len(pool)) < 0.1
        low_model = FingerprintKernelRidge.fit(
            fingerprints[_subsample(pool[~held_out], max_kernel_molecules)],
            low[_subsample(pool[~held_out], max_kernel_molecules)],
            fingerprints[pool[held_out]], low[pool[held_out]],
        )  # fmt: skip
        correction = LinearCorrection.fit(low_model.predict(fingerprints[train]), high[train], True)
        models["low_model_linear"] = BaselineModel(
            "low_model_linear", correction, low_model=low_model
        )
        ridge = residual_kernel_ridge(
            everywhere(models["low_model_linear"]), high, fingerprints, split,
            max_kernel_molecules,
        )  # fmt: skip
        models["low_model_delta"] = BaselineModel(
            "low_model_delta", correction, low_model=low_model, ridge=ridge
        )
    predictions = {}
    for key, model in models.items():
        values = everywhere(model)
        predictions[key] = {name: values[index] for name, index in predicted.items()}
    return predictions, models
