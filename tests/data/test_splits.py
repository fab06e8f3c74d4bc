"""Tests for chemgraph.data.splits: random and scaffold splits, single-class warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from rdkit import Chem

from chemgraph.data.splits import (
    murcko_scaffold,
    random_split,
    scaffold_split,
    warn_single_class,
)

# Hand-made set; scaffolds worked out by hand:
#   "c1ccccc1": 0 benzene, 2 toluene, 4 phenol, 8 aniline    (4 molecules)
#   "":         1 ethanol, 5 butane, 9 acetic acid            (3, acyclic)
#   "C1CCCCC1": 3 cyclohexane, 6 methylcyclohexane            (2)
#   "c1ccncc1": 7 pyridine                                    (1)
SMILES = [
    "c1ccccc1",
    "CCO",
    "Cc1ccccc1",
    "C1CCCCC1",
    "Oc1ccccc1",
    "CCCC",
    "CC1CCCCC1",
    "c1ccncc1",
    "Nc1ccccc1",
    "CC(=O)O",
]


def _check_partition(parts: tuple[np.ndarray, ...], n: int) -> None:
    for part in parts:
        assert part.dtype == np.int64
    joined = np.concatenate(parts)
    assert len(joined) == n
    assert sorted(joined.tolist()) == list(range(n))


@pytest.mark.parametrize(
    ("n", "fractions", "sizes"),
    [
        (100, (0.8, 0.1, 0.1), (80, 10, 10)),
        (2039, (0.8, 0.1, 0.1), (1631, 204, 204)),
        (10, (0.5, 0.5, 0.0), (5, 5, 0)),
        (7, (1.0, 0.0, 0.0), (7, 0, 0)),
        (0, (0.8, 0.1, 0.1), (0, 0, 0)),
    ],
)
def test_random_split_sizes_and_partition(n, fractions, sizes):
    parts = random_split(n, fractions, seed=3)
    assert tuple(len(p) for p in parts) == sizes
    _check_partition(parts, n)


def test_random_split_seeds():
    a = random_split(200, seed=0)
    b = random_split(200, seed=0)
    c = random_split(200, seed=1)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])
    assert not np.array_equal(a[2], c[2])
    # seeded with numpy's Generator: the validation set is the permutation's middle slice
    order = np.random.default_rng(0).permutation(200)
    np.testing.assert_array_equal(a[1], np.sort(order[160:180]))


@pytest.mark.parametrize("fractions", [(0.8, 0.1), (0.8, 0.3, 0.1), (1.2, -0.1, -0.1)])
def test_random_split_rejects_bad_fractions(fractions):
    with pytest.raises(ValueError, match="fractions"):
        random_split(10, fractions)


def test_murcko_scaffold_values():
    assert murcko_scaffold("Cc1ccccc1") == "c1ccccc1"
    assert murcko_scaffold("CCO") == ""
    assert murcko_scaffold("CC1CCCCC1") == "C1CCCCC1"
    assert murcko_scaffold("CCc1ccc(Cc2ccccc2)cc1") == "c1ccc(Cc2ccccc2)cc1"
    # chirality dropped (includeChirality=False)
    assert murcko_scaffold("N[C@@H]1CCCC[C@H]1O") == "C1CCCCC1"
    assert murcko_scaffold(Chem.MolFromSmiles("Oc1ccccc1")) == "c1ccccc1"


def test_murcko_scaffold_invalid_smiles():
    with pytest.raises(ValueError):
        murcko_scaffold("C1CC")


def test_scaffold_split_exact_membership():
    # cutoffs: train <= 6, train + valid <= 8 (n = 10)
    # benzene group (4) -> train (4); acyclic (3): 7 > 6, 4 + 0 + 3 <= 8 -> valid;
    # cyclohexane (2): 4 + 2 <= 6 -> train; pyridine (1): 7 > 6, 6 + 3 + 1 > 8 -> test
    train, valid, test = scaffold_split(SMILES, (0.6, 0.2, 0.2))
    assert train.tolist() == [0, 2, 3, 4, 6, 8]
    assert valid.tolist() == [1, 5, 9]
    assert test.tolist() == [7]


def test_scaffold_split_default_fractions_greedy_fill():
    # cutoffs 8 and 9: benzene (4) + acyclic (3) -> train (7); cyclohexane (2) -> valid (9);
    # pyridine (1) still fits in train (7 + 1 <= 8), as in DeepChem
    train, valid, test = scaffold_split(SMILES)
    assert train.tolist() == [0, 1, 2, 4, 5, 7, 8, 9]
    assert valid.tolist() == [3, 6]
    assert test.tolist() == []


def test_scaffold_split_ties_follow_deepchem():
    # equal-size groups: DeepChem sorts by (size, first index) descending, so the group whose
    # first member comes later is placed first
    train, valid, test = scaffold_split(["c1ccccc1", "C1CCCCC1"], (0.5, 0.5, 0.0))
    assert train.tolist() == [1]
    assert valid.tolist() == [0]
    assert test.tolist() == []


def test_scaffold_split_groups_never_straddle():
    smiles = SMILES * 3  # 30 molecules, same four scaffolds
    parts = scaffold_split(smiles, (0.5, 0.3, 0.2))
    _check_partition(parts, len(smiles))
    scaffolds = [murcko_scaffold(s) for s in smiles]
    owner: dict[str, int] = {}
    for k, part in enumerate(parts):
        for i in part:
            assert owner.setdefault(scaffolds[i], k) == k
    # deterministic
    again = scaffold_split(smiles, (0.5, 0.3, 0.2))
    for x, y in zip(parts, again, strict=True):
        np.testing.assert_array_equal(x, y)


def test_scaffold_split_invalid_smiles_names_index():
    with pytest.raises(ValueError, match="molecule 1"):
        scaffold_split(["CCO", "C1CC"])


def test_warn_single_class():
    labels = torch.tensor(
        [[0.0, 1.0], [0.0, 0.0], [1.0, float("nan")], [0.0, 1.0], [0.0, float("nan")]]
    )
    splits = {"train": np.array([0, 2]), "valid": np.array([1, 3]), "test": np.array([4])}
    with pytest.warns(UserWarning) as record:
        messages = warn_single_class(labels, splits, ["A", "B"])
    assert len(messages) == 4
    assert len(record) == 4
    assert "'train'" in messages[0] and "'B'" in messages[0] and "are 1" in messages[0]
    assert "'valid'" in messages[1] and "'A'" in messages[1] and "are 0" in messages[1]
    assert "'test'" in messages[2] and "'A'" in messages[2]
    assert "'test'" in messages[3] and "'B'" in messages[3] and "no labels" in messages[3]


def test_warn_single_class_silent_when_both_classes():
    labels = np.array([[0.0], [1.0], [1.0], [0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            warn_single_class(labels, {"train": np.array([0, 1]), "test": np.array([2, 3])}, ["y"])
            == []
        )
