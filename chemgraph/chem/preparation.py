"""The chemistry of chemgraph's one featurization step: what happens to every parsed molecule
before it becomes a graph, the same in ``chemgraph train``, ``featurize`` and ``predict``.

A :class:`MoleculePreparation` is part of every checkpoint (the ``standardize`` and
``fragments`` hyper-parameters of :class:`chemgraph.train.module.PropertyPredictionModule`),
and ``chemgraph predict`` featurizes a library with the checkpoint's own, so a molecule gets
the same features in training and prediction by construction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rdkit import Chem

from chemgraph.chem.parse import FragmentPolicy, apply_fragment_policy, check_fragment_policy
from chemgraph.chem.standardize import STANDARDIZE_METHODS, StandardizeMethod, standardize

__all__ = ["MoleculePreparation"]


@dataclass(frozen=True)
class MoleculePreparation:
    """Standardise a parsed molecule, then apply the fragment (salt) policy.

    Attributes:
        standardize: ``"none"``, ``"basic"`` or ``"chembl"`` (:func:`chemgraph.chem.standardize`).
        fragments: ``"keep"`` every fragment or only the ``"largest"``
            (:data:`chemgraph.chem.FragmentPolicy`).

    Raises:
        ValueError: an unknown ``standardize`` method or ``fragments`` policy.
    """

    standardize: StandardizeMethod = "none"
    fragments: FragmentPolicy = "keep"

    def __post_init__(self) -> None:
        if self.standardize not in STANDARDIZE_METHODS:
            raise ValueError(
                f"standardize must be one of {', '.join(STANDARDIZE_METHODS)}, "
                f"got {self.standardize!r}"
            )
        check_fragment_policy(self.fragments)

    def __call__(self, mol: Chem.Mol) -> Chem.Mol:
        """The prepared molecule (``mol`` itself when there is nothing to do).

        Raises:
            MoleculeParseError: standardisation fails (its reason names the step), or
                ``"chembl"`` without its package (ImportError with the pip command).
        """
        if self.standardize != "none":
            mol = standardize(mol, self.standardize)
        return apply_fragment_policy(mol, self.fragments)

    def to_dict(self) -> dict[str, Any]:
        """``{"standardize": ..., "fragments": ...}``, as checkpoints and manifests store it."""
        return asdict(self)
