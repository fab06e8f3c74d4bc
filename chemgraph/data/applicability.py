"""Applicability domain: how close a molecule is to the molecules a model was trained on.

The distance of a molecule to a training set is its *maximum Tanimoto similarity* to the
training molecules: ``max_j |a ∧ t_j| / |a ∨ t_j|`` over Morgan fingerprints (radius 2, 2048
bits: :data:`FINGERPRINT`, RDKit's ``rdFingerprintGenerator.GetMorganGenerator`` through
:class:`chemgraph.featurize.fingerprints.MorganFingerprint`). It is 1.0 for a training molecule
(and for any molecule with the same fingerprint) and falls towards 0 as the molecule shares
fewer circular substructures with its nearest training neighbour. Two fingerprints without any
bit set have similarity 0.

A molecule is *in domain* when its maximum similarity is at least a threshold,
:data:`DEFAULT_SIMILARITY_THRESHOLD` (0.3) unless chosen otherwise. For these fingerprints, pairs
of unrelated drug-like molecules score below about 0.3 (measured in ``benchmarks/README.md``,
"Scoring a library"), so a molecule under it has no training molecule closer than a random
one, and its prediction is an extrapolation.

``chemgraph train`` stores the fingerprints of the training split in the checkpoint
(:meth:`TrainingFingerprints.to_dict`, 256 bytes per molecule, plain Python values so that the
checkpoint loads with ``torch.load(..., weights_only=True)``); ``chemgraph predict`` reports
every prediction's maximum similarity and whether it is in domain.
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
    "DEFAULT_SIMILARITY_THRESHOLD",
    "FINGERPRINT",
    "TrainingFingerprints",
    "canonical_smiles_fingerprints",
]

#: The fingerprint of the applicability domain: Morgan, radius 2, 2048 bits (ECFP4-like).
FINGERPRINT = MorganFingerprint(radius=2, size=2048)

#: Maximum Tanimoto similarity at or above which a molecule is in the domain.
DEFAULT_SIMILARITY_THRESHOLD = 0.3

_DATIVE_BONDS = ("->", "<-")

_TRAINING_BLOCK = 4096  # training molecules per similarity block (a 32 MiB float32 matrix)


class TrainingFingerprints:
    """The packed fingerprints of a model's training molecules.

    Args:
        packed: ``uint8 [M, 256]``: row ``j`` is :data:`FINGERPRINT` of training molecule ``j``
            as :func:`numpy.packbits` (big bit order) packs it.

    Raises:
        ValueError: ``packed`` is not ``uint8 [M, 256]``.
    """

    def __init__(self, packed: np.ndarray) -> None:
        width = FINGERPRINT.size // 8
        if packed.dtype != np.uint8 or packed.ndim != 2 or packed.shape[1] != width:
            raise ValueError(f"packed fingerprints must be uint8 [M, {width}], got {packed.shape}")
        self.packed = packed

    def __len__(self) -> int:
        return len(self.packed)

    @classmethod
    def from_mols(cls, mols: Iterable[Chem.Mol]) -> TrainingFingerprints:
        """The fingerprints of ``mols`` (RDKit molecules, none ``None``)."""
        return cls(np.packbits(FINGERPRINT.featurize(mols), axis=1))

    @classmethod
    def concatenate(cls, parts: Sequence[TrainingFingerprints]) -> TrainingFingerprints:
        """One set holding every molecule of ``parts`` (the training sets of an ensemble's
        members), identical fingerprints kept once."""
        return cls(np.unique(np.concatenate([part.packed for part in parts]), axis=0))

    def to_dict(self) -> dict[str, Any]:
        """``{"fingerprint": "morgan:radius=2,size=2048", "count": M, "packed": bytes}``: plain
        values for a checkpoint's hyper-parameters (``packed``: ``M × 256`` bytes)."""
        return {
            "fingerprint": FINGERPRINT.spec,
            "count": len(self),
            "packed": self.packed.tobytes(),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainingFingerprints:
        """Inverse of :meth:`to_dict`.

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
        return cls(packed.reshape(values["count"], FINGERPRINT.size // 8))

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
            best = torch.maximum(best, similarity.max(dim=1).values)
        return best.numpy()


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
