"""The applicability domain: maximum Tanimoto similarity to the training molecules."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from chemgraph.data import applicability
from chemgraph.data.applicability import FINGERPRINT, TrainingFingerprints

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
