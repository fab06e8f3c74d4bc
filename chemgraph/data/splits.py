"""Train/validation/test splits: seeded random and Bemis–Murcko scaffold splits.

Every splitter returns three ``int64`` index arrays ``(train, valid, test)`` that are disjoint
and together cover ``range(n)``; each array is sorted ascending. Given ``groups``
(:func:`duplicate_groups`: one group per distinct molecule), every splitter keeps the rows of
a group in one split, so that a molecule given twice (another SMILES of it, repeated
measurements) is never both a training and a test molecule; :func:`find_duplicates` says how
many there were.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem.Scaffolds import MurckoScaffold

from chemgraph.chem import MoleculeParseError, MoleculePreparation, mol_from_smiles

__all__ = [
    "SPLIT_NAMES",
    "Duplicates",
    "duplicate_groups",
    "find_duplicates",
    "murcko_scaffold",
    "predefined_parts",
    "read_split_file",
    "random_split",
    "scaffold_split",
    "warn_single_class",
]

Split = tuple[np.ndarray, np.ndarray, np.ndarray]


def _check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    if len(fractions) != 3:
        raise ValueError(f"fractions must be (train, valid, test), got {tuple(fractions)}")
    f_train, f_valid, f_test = (float(f) for f in fractions)
    if min(f_train, f_valid, f_test) < 0:
        raise ValueError(f"fractions must be >= 0, got {tuple(fractions)}")
    if not math.isclose(f_train + f_valid + f_test, 1.0, abs_tol=1e-6):
        raise ValueError(
            f"fractions must sum to 1, got {tuple(fractions)} (sum {f_train + f_valid + f_test:g})"
        )
    return f_train, f_valid, f_test


def _as_split(train: Sequence[int], valid: Sequence[int], test: Sequence[int]) -> Split:
    return tuple(np.sort(np.asarray(part, dtype=np.int64)) for part in (train, valid, test))


def duplicate_groups(
    smiles: Sequence[str], preparation: MoleculePreparation | None = None
) -> np.ndarray:
    """The distinct molecule of each SMILES: ``int64 [n]``, equal for the same molecule.

    Two SMILES are the same molecule when RDKit's canonical isomeric SMILES of what the model
    sees (the molecule after ``preparation``, :class:`chemgraph.chem.MoleculePreparation`, so
    ``fragments="largest"`` makes a salt the same molecule as its parent) are equal. A SMILES RDKit
    cannot parse is its own molecule. Groups are numbered in order of first appearance.
    """
    prepare = preparation or MoleculePreparation()
    keys: dict[str, int] = {}
    groups = np.empty(len(smiles), dtype=np.int64)
    for index, text in enumerate(smiles):
        try:
            key = Chem.MolToSmiles(prepare(mol_from_smiles(text)))
        except MoleculeParseError:
            key = f"unparsable:{text}"
        groups[index] = keys.setdefault(key, len(keys))
    return groups


@dataclass
class Duplicates:
    """Rows that hold the same molecule (:func:`find_duplicates`).

    Attributes:
        molecules: distinct molecules given in more than one row.
        rows: the rows holding them (``rows - molecules`` rows repeat a molecule).
        differing_labels: of those molecules, how many have rows whose labels differ.
        examples: the rows (as given in ``rows`` of :func:`find_duplicates`) of the first five.
    """

    molecules: int = 0
    rows: int = 0
    differing_labels: int = 0
    examples: list[list[int]] = field(default_factory=list)
    across_splits: int = 0

    def to_dict(self) -> dict:
        """The ``duplicates`` entry of ``metrics.json``."""
        kept = (
            "a molecule's rows are in one split"
            if not self.across_splits
            else f"{self.across_splits} molecules are in more than one split of the given split"
        )
        return {
            "molecules": self.molecules,
            "rows": self.rows,
            "differing_labels": self.differing_labels,
            "across_splits": self.across_splits,
            "labels": f"kept: every row stays an example; {kept}",
            "examples": self.examples,
        }

    def __str__(self) -> str:
        if not self.molecules:
            return "no molecule is given twice"
        where = (
            "each molecule's rows are kept in one split"
            if not self.across_splits
            else f"LEAKAGE: {self.across_splits} of them are in more than one split of the "
            "predefined split, so test metrics are inflated"
        )
        return (
            f"{self.molecules} molecule{'s are' if self.molecules != 1 else ' is'} given in "
            f"more than one row ({self.rows} rows, "
            f"{self.differing_labels} with differing labels; e.g. rows {self.examples[0]}): "
            f"{where}; every row stays an example"
        )


def find_duplicates(
    groups: np.ndarray,
    rows: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    parts: np.ndarray | None = None,
) -> Duplicates:
    """How many molecules ``groups`` (:func:`duplicate_groups`) gives more than once.

    Args:
        groups: ``int [n]`` molecule of each item.
        rows: ``int [n]`` the items' names for ``examples`` (default ``0..n-1``).
        labels: ``float [n, T]`` labels (NaN = missing) to compare within a molecule.
        parts: ``int [n]`` the split of each item (-1: none), e.g. a predefined split; then
            ``across_splits`` counts the molecules in more than one split (leakage).
    """
    groups = np.asarray(groups, dtype=np.int64)
    rows = np.arange(len(groups)) if rows is None else np.asarray(rows)
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    summary = Duplicates(molecules=len(repeated), rows=int(counts[repeated].sum()))
    for group in repeated:
        members = np.flatnonzero(inverse == group)
        if labels is not None:
            values = np.asarray(labels, dtype=np.float64).reshape(len(groups), -1)[members]
            if any(len(np.unique(v[~np.isnan(v)])) > 1 for v in values.T):
                summary.differing_labels += 1
        if len(summary.examples) < 5:
            summary.examples.append([int(r) for r in rows[members]])
    if parts is not None and summary.molecules:
        parts = np.asarray(parts, dtype=np.int64)
        used = parts >= 0
        pairs = np.unique(np.stack([groups[used], parts[used]]), axis=1)
        summary.across_splits = int((np.bincount(pairs[0]) > 1).sum()) if pairs.size else 0
    return summary


SPLIT_NAMES: dict[str, int] = {"train": 0, "val": 1, "valid": 1, "validation": 1, "test": 2}
"""Names of the train (0), validation (1) and test (2) splits in a predefined split."""


def predefined_parts(names: Sequence[object]) -> np.ndarray:
    """The split of each item from its split name (a split column, as Chemprop's
    ``--splits-column``): ``int64 [n]``, 0 train, 1 validation, 2 test, -1 none (an empty
    cell). Names are :data:`SPLIT_NAMES`, compared after ``strip().lower()``.

    Raises:
        ValueError: a name that is not a split (the first ones are named).
    """
    parts = np.full(len(names), -1, dtype=np.int64)
    unknown: dict[str, int] = {}
    for index, name in enumerate(names):
        text = "" if name is None or (isinstance(name, float) and math.isnan(name)) else str(name)
        text = text.strip().lower()
        if not text:
            continue
        if text not in SPLIT_NAMES:
            unknown.setdefault(text, index)
            continue
        parts[index] = SPLIT_NAMES[text]
    if unknown:
        shown = ", ".join(f"{name!r} (item {index})" for name, index in list(unknown.items())[:5])
        raise ValueError(f"split names must be train, val (valid) or test; got {shown}")
    return parts


def _indices(value: object, path: str, name: str) -> list[int]:
    """A split's indices: a list of integers, or Chemprop's ``"0-3,7"`` text."""
    if isinstance(value, str):
        out: list[int] = []
        for piece in filter(None, (p.strip() for p in value.split(","))):
            low, _, high = piece.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise ValueError(f"{path}: split {name!r}: {piece!r} is not an index or range")
            out.extend(range(int(low), int(high or low) + 1))
        return out
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value
    ):
        raise ValueError(f"{path}: split {name!r} must be a list of row numbers >= 0")
    return list(value)


def read_split_file(path: str | os.PathLike[str], num_rows: int) -> np.ndarray:
    """A split file as the split of each source row: ``int64 [num_rows]`` (0 train, 1
    validation, 2 test, -1 none).

    The file is JSON: ``{"train": [...], "val": [...], "test": [...]}`` of 0-based source rows
    (``"valid"`` for ``"val"`` too), or a list holding one such mapping (Chemprop's
    ``--splits-file``, whose index lists may also be ``"0-3,7"`` strings).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not such JSON, several splits in the list, a row outside ``0..num_rows-1``,
            or a row in two splits (the overlap is named).
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as handle:
        try:
            content = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not JSON ({error})") from error
    if isinstance(content, list):
        if len(content) != 1:
            raise ValueError(f"{path}: holds {len(content)} splits; give a file with one")
        content = content[0]
    if not isinstance(content, dict) or not set(content) <= set(SPLIT_NAMES):
        raise ValueError(f'{path}: expected {{"train": [...], "val": [...], "test": [...]}}')
    parts = np.full(num_rows, -1, dtype=np.int64)
    for name, value in content.items():
        rows = np.asarray(_indices(value, path, name), dtype=np.int64)
        outside = rows[rows >= num_rows]
        if outside.size:
            raise ValueError(
                f"{path}: split {name!r} names row {int(outside[0])}, but the data has "
                f"{num_rows} rows (0-{num_rows - 1})"
            )
        taken = rows[(parts[rows] >= 0) & (parts[rows] != SPLIT_NAMES[name])]
        if taken.size:
            raise ValueError(
                f"{path}: row {int(taken[0])} is in split {name!r} and in another split "
                f"({taken.size} rows overlap): a row belongs to one split"
            )
        parts[rows] = SPLIT_NAMES[name]
    return parts


def random_split(
    num_items: int,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    groups: Sequence[int] | np.ndarray | None = None,
) -> Split:
    """Seeded random split of ``range(num_items)``, whole groups at a time.

    Sizes: ``valid = round(f_valid * n)``, ``test = round(f_test * n)`` (Python ``round``),
    ``train`` = the rest. The permutation comes from ``numpy.random.default_rng(seed)``, so a
    seed gives the same split on every platform. With ``groups``, the groups are permuted
    instead of the items and each group goes, whole, to the split in which its first item
    falls when the permuted groups are laid end to end (so the sizes only approximate the
    fractions); when every group has one item this is the same split as without ``groups``.

    Args:
        num_items: ``n``, the number of items.
        fractions: ``(f_train, f_valid, f_test)``, each >= 0, summing to 1.
        seed: seed of the permutation.
        groups: ``int [n]``, the group of each item (e.g. :func:`duplicate_groups`); default
            one group per item.

    Returns:
        ``(train, valid, test)``: ``int64`` index arrays, sorted, disjoint, covering ``range(n)``.

    Raises:
        ValueError: negative ``num_items``, invalid fractions, or ``groups`` not of length n.
    """
    if num_items < 0:
        raise ValueError(f"num_items must be >= 0, got {num_items}")
    _, f_valid, f_test = _check_fractions(fractions)
    n_valid = min(round(f_valid * num_items), num_items)
    n_test = min(round(f_test * num_items), num_items - n_valid)
    n_train = num_items - n_valid - n_test
    if groups is None:
        groups = np.arange(num_items)
    groups = np.asarray(groups, dtype=np.int64)
    if groups.shape != (num_items,):
        raise ValueError(f"groups must have one entry per item ({num_items}), got {groups.shape}")
    _, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(sizes))
    starts = np.cumsum(sizes[order]) - sizes[order]
    part_of_group = np.empty(len(sizes), dtype=np.int64)
    part_of_group[order] = np.searchsorted([n_train, n_train + n_valid], starts, side="right")
    part = part_of_group[inverse]
    return _as_split(*(np.flatnonzero(part == k) for k in range(3)))


def murcko_scaffold(smiles_or_mol: str | Chem.Mol) -> str:
    """Bemis–Murcko scaffold SMILES (rings and the linkers between them, side chains removed).

    Computed with RDKit's ``MurckoScaffold.MurckoScaffoldSmiles(mol=..., includeChirality=False)``
    as DeepChem's ``ScaffoldSplitter`` does (Bemis & Murcko, J. Med. Chem. 39, 2887 (1996)).
    Acyclic molecules have no scaffold and give ``""``, one shared group.

    Args:
        smiles_or_mol: a SMILES string (all fragments kept) or an RDKit molecule.

    Raises:
        chemgraph.chem.MoleculeParseError: the SMILES cannot be parsed.
    """
    mol = (
        mol_from_smiles(smiles_or_mol, fragments="keep")
        if isinstance(smiles_or_mol, str)
        else smiles_or_mol
    )
    return MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=False)


def scaffold_split(
    smiles: Sequence[str],
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    groups: Sequence[int] | np.ndarray | None = None,
) -> Split:
    """Deterministic Bemis–Murcko scaffold split, DeepChem's ``ScaffoldSplitter`` convention.

    1. Group the molecules by :func:`murcko_scaffold` (acyclic molecules form the ``""`` group).
    2. Sort the groups by size, largest first; groups of equal size are ordered by their first
       (smallest) index, larger first — exactly DeepChem's
       ``sorted(groups, key=lambda g: (len(g), g[0]), reverse=True)``, which MoleculeNet/OGB
       scaffold splits were made with.
    3. Walk the groups in that order: a group goes to train if train's size plus the group's
       stays ``<= f_train * n``; otherwise to valid if train + valid + the group stays
       ``<= (f_train + f_valid) * n``; otherwise to test. (As in DeepChem, a later, smaller
       group may still go to train after a larger one did not fit.)

    A scaffold never straddles two splits, so the split sizes only approximate the fractions.
    With ``groups``, every item takes the scaffold of its group's first item, so a group
    (e.g. a salt and its parent under ``fragments="largest"``) is never split either.

    Args:
        smiles: ``n`` SMILES (or RDKit molecules).
        fractions: ``(f_train, f_valid, f_test)``, each >= 0, summing to 1.
        groups: ``int [n]``, the group of each item (e.g. :func:`duplicate_groups`).

    Returns:
        ``(train, valid, test)``: ``int64`` index arrays, sorted, disjoint, covering ``range(n)``.

    Raises:
        ValueError: invalid fractions, or a SMILES that RDKit cannot parse (its index is named).
    """
    f_train, f_valid, _ = _check_fractions(fractions)
    scaffold_of_group: dict[int, str] = {}
    scaffolds: dict[str, list[int]] = {}
    for index, item in enumerate(smiles):
        group = index if groups is None else int(groups[index])
        scaffold = scaffold_of_group.get(group)
        if scaffold is None:
            try:
                scaffold = scaffold_of_group[group] = murcko_scaffold(item)
            except ValueError as error:
                raise ValueError(
                    f"scaffold_split: molecule {index} ({item!r}) cannot be parsed: {error}"
                ) from error
        scaffolds.setdefault(scaffold, []).append(index)
    ordered = sorted(scaffolds.values(), key=lambda group: (len(group), group[0]), reverse=True)

    n = len(smiles)
    train_cutoff = f_train * n
    valid_cutoff = (f_train + f_valid) * n
    train: list[int] = []
    valid: list[int] = []
    test: list[int] = []
    for group in ordered:
        if len(train) + len(group) <= train_cutoff:
            train.extend(group)
        elif len(train) + len(valid) + len(group) <= valid_cutoff:
            valid.extend(group)
        else:
            test.extend(group)
    return _as_split(train, valid, test)


def warn_single_class(
    labels: torch.Tensor | np.ndarray,
    splits: Mapping[str, np.ndarray],
    target_columns: Sequence[str],
) -> list[str]:
    """Warn about classification tasks whose labels in a split are all one class.

    ROC-AUC (and MCC) are undefined on such a split/task. For every split and task whose
    present (non-NaN) labels hold a single class — or no label at all in a non-empty split —
    a message is returned and emitted with :func:`warnings.warn` (``UserWarning``).

    Args:
        labels: ``float [N, T]`` labels, NaN = missing.
        splits: split name -> ``int64`` indices into ``labels`` (e.g. ``{"train": ..., ...}``).
        target_columns: the ``T`` task names, in label order.

    Returns:
        The messages, in split order then task order (empty when every split is fine).
    """
    values = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.shape[1] != len(target_columns):
        raise ValueError(
            f"labels have {values.shape[1]} tasks but target_columns names {len(target_columns)}"
        )
    messages: list[str] = []
    for name, indices in splits.items():
        index = np.asarray(indices, dtype=np.int64)
        if index.size == 0:
            continue
        for j, column in enumerate(target_columns):
            column_values = values[index, j]
            present = column_values[~np.isnan(column_values)]
            classes = np.unique(present)
            if classes.size == 0:
                message = (
                    f"split {name!r}, task {column!r}: no labels present among "
                    f"{index.size} molecules"
                )
            elif classes.size == 1:
                message = (
                    f"split {name!r}, task {column!r}: all {present.size} present labels are "
                    f"{classes[0]:g} (single class; ROC-AUC is undefined)"
                )
            else:
                continue
            messages.append(message)
            warnings.warn(message, UserWarning, stacklevel=2)
    return messages
