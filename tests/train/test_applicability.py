"""The applicability domain: maximum Tanimoto similarity to the training molecules, its
threshold calibrated on the training set, and the training labels' range."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from chemgraph.data import applicability
from chemgraph.data.applicability import FINGERPRINT, TrainingFingerprints, TrainingLabelRange

MOLECULES = [
    "CCO", "CCN", "CCCO", "c1ccccc1", "Cc1ccccc1", "CC(=O)Nc1ccccc1", "OC(=O)c1ccccc1O",
    "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "C1CCCCC1", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "ClCCl", "C#N",
]  # fmt: skip


def _mols(smiles):
    return [Chem.MolFromSmiles(s) for s in smiles]


def _on_bits(smiles):
    return set(np.flatnonzero(FINGERPRINT(Chem.MolFromSmiles(smiles))).tolist())


def test_hand_computed_tanimoto_of_small_molecules():
    # Morgan radius 2, 2048 bits. Ethanol sets bits {80, 222, 294, 807, 1057, 1410},
    # ethylamine {80, 294, 789, 981, 1057, 1171}: 3 in common of 9 -> 1/3;
    # propanol {80, 222, 294, 473, 794, 807, 1057, 1277}: 5 in common of 9 -> 5/9
    assert _on_bits("CCO") == {80, 222, 294, 807, 1057, 1410}
    assert _on_bits("CCN") == {80, 294, 789, 981, 1057, 1171}
    query = FINGERPRINT.featurize(_mols(["CCO"]))
    assert TrainingFingerprints.from_mols(_mols(["CCN"])).max_similarity(query)[0] == (
        pytest.approx(1 / 3)
    )
    training = TrainingFingerprints.from_mols(_mols(["CCN", "CCCO"]))
    assert training.max_similarity(query)[0] == pytest.approx(5 / 9)


def test_training_molecules_have_similarity_one_and_others_match_rdkit(monkeypatch):
    monkeypatch.setattr(applicability, "_TRAINING_BLOCK", 5)  # three blocks of training rows
    training, queries = MOLECULES[:11], MOLECULES + ["CCCCCCCCCC", "O=C=O", "[Na+].[Cl-]"]
    fingerprints = TrainingFingerprints.from_mols(_mols(training))
    similarity = fingerprints.max_similarity(FINGERPRINT.featurize(_mols(queries)))
    assert similarity.dtype == np.float32 and similarity.shape == (len(queries),)
    np.testing.assert_array_equal(similarity[: len(training)], 1.0)
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    reference = [generator.GetFingerprint(m) for m in _mols(training)]
    expected = [
        max(DataStructs.BulkTanimotoSimilarity(generator.GetFingerprint(m), reference))
        for m in _mols(queries)
    ]
    np.testing.assert_allclose(similarity, expected, rtol=1e-6)
    assert similarity[len(training)] < 1.0


def test_a_fingerprint_without_bits_and_an_empty_query():
    fingerprints = TrainingFingerprints.from_mols(_mols(["CCO"]))
    assert fingerprints.max_similarity(np.zeros((1, 2048), np.uint8)).tolist() == [0.0]
    assert fingerprints.max_similarity(np.zeros((0, 2048), np.uint8)).shape == (0,)


def test_stored_form_is_packed_and_loads_with_weights_only():
    fingerprints = TrainingFingerprints.from_mols(_mols(MOLECULES))
    stored = fingerprints.to_dict()
    assert stored["fingerprint"] == "morgan:radius=2,size=2048"
    assert stored["count"] == len(MOLECULES) and len(stored["packed"]) == 256 * len(MOLECULES)
    buffer = io.BytesIO()
    torch.save({"hyper_parameters": {"train_fingerprints": stored}}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)["hyper_parameters"]["train_fingerprints"]
    again = TrainingFingerprints.from_dict(loaded)
    np.testing.assert_array_equal(again.packed, fingerprints.packed)
    np.testing.assert_array_equal(np.unpackbits(again.packed[0]), FINGERPRINT(_mols(["CCO"])[0]))


def test_stored_form_of_another_fingerprint_is_refused():
    stored = TrainingFingerprints.from_mols(_mols(["CCO"])).to_dict()
    with pytest.raises(ValueError, match="morgan:radius=3,size=2048"):
        TrainingFingerprints.from_dict({**stored, "fingerprint": "morgan:radius=3,size=2048"})
    with pytest.raises(ValueError, match="bytes of packed fingerprints for 2 molecules"):
        TrainingFingerprints.from_dict({**stored, "count": 2})


def test_concatenate_keeps_each_fingerprint_once():
    first = TrainingFingerprints.from_mols(_mols(["CCO", "CCN"]))
    second = TrainingFingerprints.from_mols(_mols(["CCN", "CCCO"]))
    union = TrainingFingerprints.concatenate([first, second])
    assert len(union) == 3
    query = FINGERPRINT.featurize(_mols(["CCO", "CCCO", "CCN"]))
    np.testing.assert_array_equal(union.max_similarity(query), 1.0)


# aromatic heterocycles with [nH], charges and zwitterions, nitro groups, isotopes, stereo,
# radicals, macrocycles and fused rings, salts, metals, a dative bond, hydrogens in brackets
VARIED = [
    "c1cc[nH]c1", "Cn1cnc2c1c(=O)n(C)c(=O)n2C", "C[N+](C)(C)CC(=O)[O-]", "O=[N+]([O-])c1ccccc1",
    "[2H]C([2H])([2H])O", "C/C=C/C(=O)O", "N[C@@H](C)C(=O)O", "[CH2]C", "[CH]1CCCCC1",
    "C1CCCCCCCCCCC1", "c1ccc2cc3ccccc3cc2c1", "[Na+].[Cl-]", "[Cu+2].[O-]S(=O)(=O)[O-]",
    "[NH3]->[Pt+2](<-[NH3])(Cl)Cl", "[H][H]", "O=S1(=O)CCCC1", "c1ccc2[se]ccc2c1",
    "[O-][n+]1ccccc1", "FC(F)(F)c1cc(-c2ccccn2)no1", "B1(O)OC(C)(C)C(C)(C)O1", "C1=CC=CC=C1",
    # an iron complex of MoleculeNet HIV whose bits differ when read without sanitisation
    "C1C[N+]23CCC[N+]4(C1)CC[S-]1->[Fe+2]567[SH+]CC[N+]58CCC[N+]6(CCC8)CC[S-]7->[Fe+2]124[SH+]CC3",
]  # fmt: skip


def test_fingerprints_of_canonical_smiles_equal_those_of_fully_parsed_molecules():
    canonical = [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in MOLECULES + VARIED]
    expected = np.stack([FINGERPRINT(Chem.MolFromSmiles(s)) for s in canonical])
    bits = applicability.canonical_smiles_fingerprints(canonical + ["C1CC"])
    assert bits.dtype == np.uint8 and bits.shape == (len(canonical) + 1, 2048)
    np.testing.assert_array_equal(bits[:-1], expected)
    assert not bits[-1].any()  # unreadable: no bits
    assert applicability.canonical_smiles_fingerprints([]).shape == (0, 2048)


def _leave_one_out_by_brute_force(smiles: list[str]) -> list[float]:
    """Each molecule's greatest RDKit Tanimoto similarity to the other molecules."""
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    prints = [generator.GetFingerprint(m) for m in _mols(smiles)]
    return [
        max(DataStructs.BulkTanimotoSimilarity(prints[i], prints[:i] + prints[i + 1 :]))
        for i in range(len(prints))
    ]


def test_the_threshold_of_three_molecules_by_hand():
    # ethanol and propanol share 5 of 9 bits (above); benzene shares none with either:
    # leave-one-out similarities [5/9, 5/9, 0], sorted [0, 5/9, 5/9]; the 5th percentile
    # (linear interpolation) lies at 0.05 x 2 = 0.1 of the way from 0 to 5/9: 1/18
    fingerprints = TrainingFingerprints.from_mols(_mols(["CCO", "CCCO", "c1ccccc1"]))
    assert fingerprints.nearest_neighbour_similarity(np.arange(3)).tolist() == pytest.approx(
        [5 / 9, 5 / 9, 0]
    )
    assert fingerprints.similarity_threshold == pytest.approx(1 / 18)
    assert TrainingFingerprints.from_mols(_mols(["CCO"])).similarity_threshold is None


def test_calibrated_threshold_is_the_5th_percentile_of_leave_one_out_similarities(monkeypatch):
    monkeypatch.setattr(applicability, "_TRAINING_BLOCK", 5)  # a molecule's own block varies
    training = MOLECULES + ["CCO", "CCCCO", "OCCO", "c1ccncc1", "Oc1ccccc1", "CC(=O)O"]
    expected = _leave_one_out_by_brute_force(training)
    assert expected[0] == expected[len(MOLECULES)] == 1.0  # ethanol twice: its twin counts
    fingerprints = TrainingFingerprints.from_mols(_mols(training))
    np.testing.assert_allclose(
        fingerprints.nearest_neighbour_similarity(np.arange(len(training))), expected, rtol=1e-6
    )
    assert fingerprints.similarity_threshold == pytest.approx(np.percentile(expected, 5), 1e-6)
    assert applicability.THRESHOLD_PERCENTILE == 5.0
    # kept in the checkpoint's stored form, and read back
    stored = fingerprints.to_dict()
    assert stored["similarity_threshold"] == fingerprints.similarity_threshold
    assert stored["threshold_percentile"] == 5.0
    again = TrainingFingerprints.from_dict(stored)
    assert again.similarity_threshold == fingerprints.similarity_threshold
    # some rows only: each against every other training molecule
    rows = np.array([2, 7, 16])
    np.testing.assert_allclose(
        fingerprints.nearest_neighbour_similarity(rows), np.array(expected)[rows], rtol=1e-6
    )


def test_a_large_training_set_is_calibrated_on_a_sample_of_its_molecules(monkeypatch):
    monkeypatch.setattr(applicability, "CALIBRATION_MOLECULES", 4)
    training = MOLECULES[:10]
    expected = np.array(_leave_one_out_by_brute_force(training))
    rows = np.sort(np.random.default_rng(0).choice(len(training), 4, replace=False))
    threshold = TrainingFingerprints.from_mols(_mols(training)).similarity_threshold
    assert threshold == pytest.approx(np.percentile(expected[rows], 5), rel=1e-6)


def test_fingerprints_stored_before_the_calibration_and_the_threshold_of_a_union():
    stored = TrainingFingerprints.from_mols(_mols(["CCO", "CCCO", "c1ccccc1"])).to_dict()
    old = {k: v for k, v in stored.items() if k not in ("similarity_threshold",
                                                        "threshold_percentile")}  # fmt: skip
    assert TrainingFingerprints.from_dict(old).similarity_threshold is None
    first = TrainingFingerprints.from_mols(_mols(["CCO", "CCCO", "c1ccccc1"]))  # 1/18
    second = TrainingFingerprints.from_mols(_mols(["CCO", "CCCO"]))  # [5/9, 5/9]: 5/9
    assert second.similarity_threshold == pytest.approx(5 / 9)
    union = TrainingFingerprints.concatenate([first, second])
    assert union.similarity_threshold == pytest.approx(1 / 18) and len(union) == 3
    old_part = TrainingFingerprints.from_dict(old)
    assert TrainingFingerprints.concatenate([first, old_part]).similarity_threshold is None


def test_training_label_range_and_predictions_outside_it():
    labels = np.array([[1.0, np.nan, np.nan], [-2.5, 10.0, np.nan], [3.0, 4.0, np.nan]])
    found = TrainingLabelRange.from_labels(labels)
    assert found.low.tolist()[:2] == [-2.5, 4.0] and found.high.tolist()[:2] == [3.0, 10.0]
    assert np.isnan(found.low[2]) and np.isnan(found.high[2])  # a target without labels
    stored = found.to_dict()
    assert stored == {"min": [-2.5, 4.0, None], "max": [3.0, 10.0, None]}
    buffer = io.BytesIO()
    torch.save({"hyper_parameters": {"train_label_range": stored}}, buffer)
    buffer.seek(0)
    again = TrainingLabelRange.from_dict(
        torch.load(buffer, weights_only=True)["hyper_parameters"]["train_label_range"]
    )
    predicted = np.array(
        [[-2.5, 4.0, 1e9], [3.0, 10.0, -1e9], [-2.6, 3.9, 0.0], [3.1, 10.1, np.nan],
         [0.0, np.nan, 0.0]]
    )  # fmt: skip
    assert again.outside(predicted).tolist() == [
        [False, False, False],  # the bounds themselves are inside
        [False, False, False],
        [True, True, False],
        [True, True, False],
        [False, False, False],  # NaN: not judged
    ]
    union = TrainingLabelRange.union(
        [again, TrainingLabelRange(np.array([-3.0, 5.0, 0.0]), np.array([2.0, 11.0, 1.0]))]
    )
    assert union.low.tolist() == [-3.0, 4.0, 0.0] and union.high.tolist() == [3.0, 11.0, 1.0]
