"""Molecules with labels at two levels of theory (low and high fidelity), and the split of
the molecules with high-fidelity labels: the data of transfer learning across levels of theory
(:mod:`chemgraph.transfer`; Buterez et al. 2024, "An end-to-end attention-based approach
for learning on graphs", arXiv:2402.10793, section 4.1 and SI 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from chemgraph._dgl import dgl
from chemgraph.data.splits import random_split
from chemgraph.data.table import MoleculeDataset

__all__ = ["SPLITS", "MultiFidelityData", "high_fidelity_split"]

SPLITS = ("train", "val", "test")


@dataclass
class MultiFidelityData:
    """Molecules with labels at two levels of theory.

    Attributes:
        graphs: one :class:`dgl.DGLGraph` per molecule (``ndata["x"]``, ``edata["e"]``).
        ids: ``[N]`` molecule identifiers written into predictions: ``int64`` (e.g. QM9
            index) or ``object`` strings (the ``--id-column`` of ``chemgraph transfer``).
        low: ``float32 [N, T]`` low-fidelity labels (e.g. DFT HOMO/LUMO, eV); NaN = missing.
        high: ``float32 [N, T]`` high-fidelity labels (e.g. GW HOMO/LUMO, eV); NaN = missing
            (most molecules).
        targets: the ``T`` target names (``["homo", "lumo"]``).
        low_name, high_name: short names of the two levels (``"DFT"``, ``"GW"``).
        low_theory, high_theory: the exact levels of theory, for reports.
        smiles: one SMILES per molecule, for the fingerprint baselines
            (:mod:`chemgraph.train.baselines`); None = only the linear-correction baselines.
        groups: ``int64 [N]``, the distinct molecule of each entry
            (:func:`chemgraph.data.duplicate_groups`), so that a test molecule's other
            entries stay out of the inductive pretraining pool
            (:func:`chemgraph.transfer.chains.pretraining_pool`); None = each entry its own
            molecule.
        low_columns: the ``T`` names of the low-fidelity labels as a table of molecules holds
            them (e.g. ``xtb_homo``), in target order; None = ``low_fidelity_<target>``
            (:attr:`low_fidelity_columns`).

    Raises:
        ValueError: lengths or shapes disagree.
    """

    graphs: list[dgl.DGLGraph]
    ids: np.ndarray
    low: torch.Tensor
    high: torch.Tensor
    targets: list[str]
    low_name: str = "low fidelity"
    high_name: str = "high fidelity"
    low_theory: str = ""
    high_theory: str = ""
    smiles: list[str] | None = None
    groups: np.ndarray | None = None
    low_columns: list[str] | None = None

    def __post_init__(self) -> None:
        n, t = len(self.graphs), len(self.targets)
        self.ids = np.asarray(self.ids)
        if self.ids.dtype.kind not in "iuO":
            self.ids = self.ids.astype(object)  # numpy's fixed-width strings -> Python str
        self.low = torch.tensor(np.array(self.low, dtype=np.float32))  # a writable copy
        self.high = torch.tensor(np.array(self.high, dtype=np.float32))
        for name in ("low", "high"):
            if tuple(getattr(self, name).shape) != (n, t):
                raise ValueError(
                    f"{name} labels must be [{n}, {t}], got {tuple(getattr(self, name).shape)}"
                )
        if len(self.ids) != n:
            raise ValueError(f"{len(self.ids)} ids for {n} graphs")
        if self.smiles is not None and len(self.smiles) != n:
            raise ValueError(f"{len(self.smiles)} SMILES for {n} graphs")
        if self.groups is not None:
            self.groups = np.asarray(self.groups, dtype=np.int64)
            if self.groups.shape != (n,):
                raise ValueError(f"{len(self.groups)} groups for {n} graphs")
        if self.low_columns is not None and len(self.low_columns) != t:
            raise ValueError(f"{len(self.low_columns)} low-fidelity column names for {t} targets")

    @property
    def low_fidelity_columns(self) -> list[str]:
        """The names of the low-fidelity labels, one per target: :attr:`low_columns`, else
        ``low_fidelity_<target>``. A transductive Δ-learning checkpoint of
        :mod:`chemgraph.transfer` reads the molecules' low-fidelity values from the input
        columns of these names in ``chemgraph predict``."""
        if self.low_columns is not None:
            return list(self.low_columns)
        return [f"low_fidelity_{target}" for target in self.targets]

    def __len__(self) -> int:
        return len(self.graphs)

    def dataset(
        self, index: np.ndarray, fidelity: str, columns: list[int] | None = None
    ) -> MoleculeDataset:
        """Molecules ``index`` with their ``"low"`` or ``"high"`` labels only; ``columns``:
        only these targets (positions in :attr:`targets`; None = all)."""
        labels = (self.low if fidelity == "low" else self.high)[torch.as_tensor(index)]
        columns = list(range(len(self.targets))) if columns is None else list(columns)
        if columns != list(range(len(self.targets))):
            labels = labels[:, columns]
        return MoleculeDataset(
            [self.graphs[i] for i in index],
            labels,
            np.asarray(index),
            [str(self.ids[i]) for i in index],
            [
                f"{self.high_name if fidelity == 'high' else self.low_name} {self.targets[c]}"
                for c in columns
            ],
        )


def high_fidelity_split(
    data: MultiFidelityData,
    seed: int,
    counts: dict[str, int] | None = None,
    fractions: tuple[float, float, float] | None = None,
    groups: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Seeded random train/val/test split of the molecules with every high-fidelity label.

    Give ``counts`` (Buterez et al. 2024 SI 4: 25,000 / 5,000 / 10,000) or ``fractions``.
    ``groups`` (``int [N]``, the distinct molecule of each entry of ``data``:
    :func:`chemgraph.data.duplicate_groups`) keeps a molecule's rows in one split, with
    ``fractions`` only (:func:`chemgraph.data.random_split` with its groups: the sizes then
    only approximate the fractions); None = each entry its own molecule.

    Returns:
        ``{"train", "val", "test"}`` -> sorted ``int64`` positions in ``data``.

    Raises:
        ValueError: neither or both given; ``groups`` with ``counts`` or not one per entry;
            more molecules asked for than labelled; an empty split.
    """
    if (counts is None) == (fractions is None):
        raise ValueError("give exactly one of counts and fractions")
    labelled = np.flatnonzero(~torch.isnan(data.high).any(dim=1).numpy())
    if groups is not None:
        if fractions is None:
            raise ValueError("groups keep a molecule's rows in one split with fractions only")
        if len(groups) != len(data):
            raise ValueError(f"{len(groups)} groups for {len(data)} molecules")
        parts = random_split(len(labelled), fractions, seed, np.asarray(groups)[labelled])
        sizes = [len(part) for part in parts]
        if min(sizes) < 1:
            raise ValueError(f"every split needs at least one molecule, got sizes {sizes}")
        return {name: labelled[part] for name, part in zip(SPLITS, parts, strict=True)}
    if fractions is not None:
        if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-6:
            raise ValueError(f"fractions must be 3 numbers summing to 1, got {fractions}")
        n_train = int(round(fractions[0] * len(labelled)))
        n_val = int(round(fractions[1] * len(labelled)))
        sizes = [n_train, n_val, len(labelled) - n_train - n_val]
    else:
        sizes = [int(counts[name]) for name in SPLITS]
    if sum(sizes) > len(labelled):
        raise ValueError(
            f"split sizes {sizes} need {sum(sizes)} molecules with {data.high_name} labels; "
            f"only {len(labelled)} have them"
        )
    if min(sizes) < 1:
        raise ValueError(f"every split needs at least one molecule, got sizes {sizes}")
    order = labelled[np.random.default_rng(seed).permutation(len(labelled))]
    bounds = np.cumsum([0, *sizes])
    return {name: np.sort(order[bounds[i] : bounds[i + 1]]) for i, name in enumerate(SPLITS)}
