"""Applicability domain: how close a molecule is to the molecules a model was trained on, and
whether a prediction lies within the range of the training labels.

The distance of a molecule to a training set is its *maximum Tanimoto similarity* to the
training molecules: ``max_j |a ∧ t_j| / |a ∨ t_j|`` over Morgan fingerprints (radius 2, 2048
bits: :data:`FINGERPRINT`, RDKit's ``rdFingerprintGenerator.GetMorganGenerator`` through
:class:`chemgraph.featurize.fingerprints.MorganFingerprint`). It is 1.0 for a training molecule
(and for any molecule with the same fingerprint) and falls towards 0 as the molecule shares
fewer circular substructures with its nearest training neighbour. Two fingerprints without any
bit set have similarity 0.

A molecule is *in domain* when its maximum similarity is at least a threshold calibrated on the
training set itself (:meth:`TrainingFingerprints.calibrated_threshold`): the
:data:`THRESHOLD_PERCENTILE` (5th) percentile of the training molecules' leave-one-out
nearest-neighbour similarities (each one's maximum similarity to the *other* training
molecules). A new molecule drawn from the training set's own distribution is, like a left-out
training molecule, in domain with probability about 95%; one less similar to its nearest
training neighbour than 95% of the training molecules are to theirs is flagged. How close
neighbours are depends on the training set (small QM9 molecules set few bits; a 400-molecule
set is sparser than a 2,000-molecule one), which a fixed threshold cannot follow: measured, and
the percentile chosen on validation splits, in ``benchmarks/README.md``
(``applicability_domain.py``). Checkpoints written before chemgraph calibrated it fall back to
:data:`DEFAULT_SIMILARITY_THRESHOLD` (0.3): pairs of unrelated drug-like molecules score below
about 0.3 (``benchmarks/README.md``, "Scoring a library").

A prediction is *outside the training range* of a target when it is below the smallest or above
the largest training label of that target (:class:`TrainingLabelRange`): the model extrapolates
in the label too, whatever the molecule's similarity.

``chemgraph train`` stores the fingerprints of the training split with their calibrated
threshold (:meth:`TrainingFingerprints.to_dict`, 256 bytes per molecule) and the training
labels' range (:meth:`TrainingLabelRange.to_dict`) in the checkpoint, as plain Python values so
that it loads with ``torch.load(..., weights_only=True)``; ``chemgraph predict`` reports every
prediction's maximum similarity, whether it is in domain and whether it is outside the training
range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from rdkit import Chem, rdBase

from chemgraph.chem import mols_from_smiles
from chemgraph.featurize.fingerprints import MorganFingerprint, parse_fingerprint

__all__ = [
    "CALIBRATION_MOLECULES",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "FINGERPRINT",
    "THRESHOLD_PERCENTILE",
    "TrainingFingerprints",
    "TrainingLabelRange",
    "canonical_smiles_fingerprints",
]

#: The fingerprint of the applicability domain: Morgan, radius 2, 2048 bits (ECFP4-like).
FINGERPRINT = MorganFingerprint(radius=2, size=2048)

#: Maximum Tanimoto similarity at or above which a molecule is in the domain of a checkpoint
#: written before chemgraph calibrated the threshold on the training set.
DEFAULT_SIMILARITY_THRESHOLD = 0.3

#: Percentile of the training molecules' leave-one-out nearest-neighbour similarities that is
#: the calibrated threshold (chosen on validation splits: ``benchmarks/README.md``,
#: ``applicability_domain.py``).
THRESHOLD_PERCENTILE = 5.0

#: The most training molecules whose leave-one-out similarity the calibration computes (each
#: against every training molecule); a larger training set is sampled (seed 0), which bounds the
#: cost at ``CALIBRATION_MOLECULES × M`` comparisons.
CALIBRATION_MOLECULES = 5_000

_DATIVE_BONDS = ("->", "<-")

_TRAINING_BLOCK = 4096  # training molecules per similarity block (a 32 MiB float32 matrix)


class TrainingFingerprints:
    """The packed fingerprints of a model's training molecules and the similarity threshold of
    their applicability domain.

    Args:
        packed: ``uint8 [M, 256]``: row ``j`` is :data:`FINGERPRINT` of training molecule ``j``
            as :func:`numpy.packbits` (big bit order) packs it.
        similarity_threshold: the calibrated threshold of ``in_domain``
            (:meth:`calibrated_threshold`); None when unknown (fingerprints stored before
            chemgraph calibrated it, or fewer than 2 molecules).

    Raises:
        ValueError: ``packed`` is not ``uint8 [M, 256]``.
    """

    def __init__(self, packed: np.ndarray, similarity_threshold: float | None = None) -> None:
        width = FINGERPRINT.size // 8
        if packed.dtype != np.uint8 or packed.ndim != 2 or packed.shape[1] != width:
            raise ValueError(f"packed fingerprints must be uint8 [M, {width}], got {packed.shape}")
        self.packed = packed
        self.similarity_threshold = similarity_threshold

    def __len__(self) -> int:
        return len(self.packed)

    @classmethod
    def from_mols(cls, mols: Iterable[Chem.Mol]) -> TrainingFingerprints:
        """The fingerprints of ``mols`` (RDKit molecules, none ``None``), with their calibrated
        threshold (:meth:`calibrated_threshold`)."""
        fingerprints = cls(np.packbits(FINGERPRINT.featurize(mols), axis=1))
        fingerprints.similarity_threshold = fingerprints.calibrated_threshold()
        return fingerprints

    @classmethod
    def concatenate(cls, parts: Sequence[TrainingFingerprints]) -> TrainingFingerprints:
        """One set holding every molecule of ``parts`` (the training sets of an ensemble's
        members), identical fingerprints kept once.

        Its threshold is the smallest of the parts' (the members of ``chemgraph train
        --ensemble`` share one training set, hence one threshold), the most inclusive: a
        molecule's nearest neighbour among all the members' training molecules is at least as
        close as among any one member's. None when a part has none.
        """
        thresholds = [part.similarity_threshold for part in parts]
        threshold = None if None in thresholds else min(thresholds)
        return cls(np.unique(np.concatenate([part.packed for part in parts]), axis=0), threshold)

    def to_dict(self) -> dict[str, Any]:
        """``{"fingerprint": "morgan:radius=2,size=2048", "count": M, "packed": bytes,
        "similarity_threshold": float | None, "threshold_percentile": 5.0}``: plain values for a
        checkpoint's hyper-parameters (``packed``: ``M × 256`` bytes)."""
        return {
            "fingerprint": FINGERPRINT.spec,
            "count": len(self),
            "packed": self.packed.tobytes(),
            "similarity_threshold": self.similarity_threshold,
            "threshold_percentile": THRESHOLD_PERCENTILE,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainingFingerprints:
        """Inverse of :meth:`to_dict`; fingerprints stored before the threshold was calibrated
        get ``similarity_threshold`` None.

        Raises:
            ValueError: another fingerprint, or ``packed`` not ``count × 256`` bytes.
        """
        if parse_fingerprint(values["fingerprint"]) != FINGERPRINT:
            raise ValueError(
                f"training fingerprints are {values['fingerprint']!r}; this chemgraph version "
                f"compares {FINGERPRINT.spec!r}"
            )
        packed = np.frombuffer(values["packed"], dtype=np.uint8)
        if packed.size != values["count"] * FINGERPRINT.size // 8:
            raise ValueError(
                f"{packed.size} bytes of packed fingerprints for {values['count']} molecules"
            )
        packed = packed.reshape(values["count"], FINGERPRINT.size // 8)
        return cls(packed, values.get("similarity_threshold"))

    def max_similarity(self, bits: np.ndarray) -> np.ndarray:
        """Maximum Tanimoto similarity of each query to the training molecules.

        Intersections are counted as a sparse-by-dense product (each query's set bits pick
        rows of the training bit matrix, :func:`torch.nn.functional.embedding_bag`), in blocks
        of 4096 training molecules, so the memory is bounded whatever the training set size and
        the time grows as ``N × M × (bits set per query)`` (queries per second against a
        default ESA's training set: ``benchmarks/README.md``, "Scoring a library").

        Args:
            bits: ``[N, 2048]`` 0/1 values (any integer or bool dtype): :data:`FINGERPRINT`
                of each query, e.g. ``FINGERPRINT.featurize(mols)``.

        Returns:
            ``float32 [N]`` in [0, 1]; all 0 when there are no training molecules.
        """
        return self._max_similarity(bits, None)

    def nearest_neighbour_similarity(self, rows: np.ndarray) -> np.ndarray:
        """Leave-one-out: the maximum Tanimoto similarity of training molecules ``rows`` to the
        *other* training molecules (an identical fingerprint of another training molecule
        counts: 1.0).

        Args:
            rows: ``int [R]`` distinct indices of training molecules.

        Returns:
            ``float32 [R]`` in [0, 1]; 0 for a molecule without another training molecule.
        """
        rows = np.asarray(rows, dtype=np.int64)
        return self._max_similarity(np.unpackbits(self.packed[rows], axis=1), rows)

    def calibrated_threshold(self) -> float | None:
        """The threshold of ``in_domain`` for this training set: the
        :data:`THRESHOLD_PERCENTILE` percentile (:func:`numpy.percentile`, linear
        interpolation) of :meth:`nearest_neighbour_similarity` over every training molecule,
        or over :data:`CALIBRATION_MOLECULES` of them drawn at random (seed 0) from a larger
        set. None for fewer than 2 molecules (no neighbour to leave one out against).

        Exchangeability: a new molecule from the distribution of the training set is compared
        with ``M`` training molecules as a left-out one is with ``M - 1``, so about
        ``100 - THRESHOLD_PERCENTILE`` % of such molecules reach the threshold.
        """
        if len(self) < 2:
            return None
        rows = np.arange(len(self))
        if len(self) > CALIBRATION_MOLECULES:
            generator = np.random.default_rng(0)
            rows = np.sort(generator.choice(len(self), CALIBRATION_MOLECULES, replace=False))
        similarity = self.nearest_neighbour_similarity(rows)
        return float(np.percentile(similarity.astype(np.float64), THRESHOLD_PERCENTILE))

    def _max_similarity(self, bits: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """:meth:`max_similarity` of ``bits``; with ``rows`` (query ``i`` is training molecule
        ``rows[i]``), its similarity to itself left out."""
        queries = torch.from_numpy(np.array(bits, dtype=np.uint8))
        best = torch.zeros(len(queries), dtype=torch.float32)
        if len(queries) == 0 or len(self) == 0:
            return best.numpy()
        query_rows, indices = torch.nonzero(queries, as_tuple=True)
        offsets = torch.searchsorted(query_rows, torch.arange(len(queries)))
        query_counts = queries.sum(dim=1, dtype=torch.float32)[:, None]
        for start in range(0, len(self), _TRAINING_BLOCK):
            block = np.unpackbits(self.packed[start : start + _TRAINING_BLOCK], axis=1)
            weight = torch.from_numpy(np.ascontiguousarray(block.T, dtype=np.float32))
            common = torch.nn.functional.embedding_bag(indices, weight, offsets, mode="sum")
            union = query_counts + weight.sum(dim=0)[None, :] - common
            similarity = common / union.clamp(min=1.0)
            if rows is not None:  # each query's own column in this block
                inside = np.flatnonzero((rows >= start) & (rows < start + len(block)))
                similarity[torch.from_numpy(inside), torch.from_numpy(rows[inside] - start)] = 0.0
            best = torch.maximum(best, similarity.max(dim=1).values)
        return best.numpy()


class TrainingLabelRange:
    """The smallest and largest training label of each target of a regression model.

    Args:
        low, high: ``float64 [T]``: per target, the smallest and largest training label (NaN
            for a target without training labels: nothing is then outside its range).

    Raises:
        ValueError: ``low`` and ``high`` of different shapes, or not one-dimensional.
    """

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if low.ndim != 1 or low.shape != high.shape:
            raise ValueError(f"low and high must be [T] alike, got {low.shape} and {high.shape}")
        self.low, self.high = low, high

    @classmethod
    def from_labels(cls, labels: np.ndarray | torch.Tensor) -> TrainingLabelRange:
        """The range of ``labels`` ``float [N, T]`` (NaN = missing, ignored), in their units."""
        values = np.asarray(labels, dtype=np.float64).reshape(len(labels), -1)
        present = ~np.isnan(values)
        low = np.where(present, values, np.inf).min(axis=0, initial=np.inf)
        high = np.where(present, values, -np.inf).max(axis=0, initial=-np.inf)
        empty = ~present.any(axis=0)
        low[empty], high[empty] = np.nan, np.nan
        return cls(low, high)

    @classmethod
    def union(cls, parts: Sequence[TrainingLabelRange]) -> TrainingLabelRange:
        """The range that covers every part's (the members of an ensemble)."""
        return cls(
            np.fmin.reduce([part.low for part in parts]),
            np.fmax.reduce([part.high for part in parts]),
        )

    def to_dict(self) -> dict[str, list[float | None]]:
        """``{"min": [T floats], "max": [T floats]}`` (None for NaN): plain values for a
        checkpoint's hyper-parameters."""
        return {
            "min": [None if np.isnan(v) else float(v) for v in self.low],
            "max": [None if np.isnan(v) else float(v) for v in self.high],
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Sequence[float | None]]) -> TrainingLabelRange:
        """Inverse of :meth:`to_dict`."""
        return cls(
            np.array([np.nan if v is None else v for v in values["min"]], dtype=np.float64),
            np.array([np.nan if v is None else v for v in values["max"]], dtype=np.float64),
        )

    def outside(self, predicted: np.ndarray) -> np.ndarray:
        """Whether each prediction is below its target's smallest or above its largest training
        label.

        Args:
            predicted: ``float [N, T]`` in the targets' units.

        Returns:
            ``bool [N, T]``; False for a NaN prediction and for a target without a range.
        """
        predicted = np.asarray(predicted, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return (predicted < self.low) | (predicted > self.high)


def canonical_smiles_fingerprints(smiles: Sequence[str]) -> np.ndarray:
    """:data:`FINGERPRINT` bits of SMILES that RDKit wrote from sanitised molecules (the
    canonical ``smiles`` column of ``chemgraph featurize``), faster than parsing them in full
    (measured in ``benchmarks/README.md``, "Scoring a library").

    Such a SMILES already holds the molecule's aromaticity and charges, so it is read without
    sanitisation and only what the Morgan atom invariants read is computed: implicit hydrogens
    (``UpdatePropertyCache``) and ring membership (``FastFindRings``). A SMILES with a dative
    bond (``->``, ``<-``, whose bits would differ) or one this reading rejects is parsed in
    full (:func:`chemgraph.chem.mols_from_smiles`). The bits equal ``FINGERPRINT(mol)`` of the
    fully parsed molecule for all 61,000 molecules of MoleculeNet HIV, BBBP, Tox21 and 10,000
    QM9 molecules written as canonical SMILES (``benchmarks/README.md``, "Scoring a library").
    Not for arbitrary input: an unsanitisable SMILES (e.g. pentavalent carbon) gets the bits of
    its unsanitised molecule. A molecule whose canonical SMILES reads back as another molecule
    (RDKit writes some metal complexes with dative bonds that parse differently: 1 of the
    41,120 HIV molecules) gets bits that differ from those of the molecule as first read, which
    a file input uses; ``chemgraph featurize --fingerprint morgan:radius=2,size=2048`` stores
    the latter, and ``chemgraph predict`` then reads them.

    Args:
        smiles: RDKit canonical SMILES.

    Returns:
        ``uint8 [N, 2048]``; a row of zeros for a SMILES RDKit cannot read at all.
    """
    bits = np.zeros((len(smiles), FINGERPRINT.size), dtype=np.uint8)
    in_full: list[int] = []
    with rdBase.BlockLogs():
        for index, text in enumerate(smiles):
            mol = None
            if not any(bond in text for bond in _DATIVE_BONDS):
                mol = Chem.MolFromSmiles(text, sanitize=False)
            if mol is not None:
                try:
                    mol.UpdatePropertyCache(strict=False)
                    Chem.FastFindRings(mol)
                except RuntimeError:
                    mol = None
            if mol is None or mol.GetNumAtoms() == 0:
                in_full.append(index)
            else:
                bits[index] = FINGERPRINT(mol)
    for index, mol in zip(in_full, mols_from_smiles([smiles[i] for i in in_full])):
        if not isinstance(mol, Exception):
            bits[index] = FINGERPRINT(mol)
    return bits
