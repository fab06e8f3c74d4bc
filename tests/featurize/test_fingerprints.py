"""chemgraph.featurize.fingerprints: equal to RDKit's own generators, spec parser, round trips."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import MACCSkeys, rdFingerprintGenerator

from chemgraph.featurize.fingerprints import (
    FINGERPRINT_KINDS,
    FeatureMorganFingerprint,
    MACCSFingerprint,
    MorganFingerprint,
    fingerprint_from_dict,
    parse_fingerprint,
)

SMILES = [
    "CCO",  # ethanol
    "c1ccccc1",  # benzene
    "CC(=O)Oc1ccccc1C(=O)O",  # aspirin
    "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",  # caffeine
    "CN1CCC[C@H]1c1cccnc1",  # nicotine
    "CC(C)Cc1ccc(cc1)[C@@H](C)C(=O)O",  # ibuprofen
    "O=C1CC[C@@H](N2C(=O)c3ccccc3C2=O)C(=O)N1",  # thalidomide
    "CC(=O)[O-].[Na+]",  # a salt
    "[Na+]",  # one atom, no bond
    "Clc1ccc(cc1)C(c1ccc(Cl)cc1)C(Cl)(Cl)Cl",  # DDT
]


@pytest.fixture(scope="module")
def mols():
    return [Chem.MolFromSmiles(s) for s in SMILES]


def _rdkit_bits(generator, mol) -> np.ndarray:
    """RDKit's ExplicitBitVect -> numpy via DataStructs, independent of chemgraph's path."""
    fp = generator.GetFingerprint(mol)
    out = np.zeros(fp.GetNumBits(), dtype=np.uint8)
    DataStructs.ConvertToNumpyArray(fp, out)
    return out


@pytest.mark.parametrize(("radius", "size"), [(2, 2048), (3, 1024), (1, 512), (0, 64)])
def test_morgan_bits_equal_rdkit(mols, radius, size):
    fp = MorganFingerprint(radius=radius, size=size)
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=size)
    batch = fp.featurize(mols)
    assert batch.shape == (len(mols), size) and batch.dtype == np.uint8
    for i, mol in enumerate(mols):
        expected = generator.GetFingerprintAsNumPy(mol)
        np.testing.assert_array_equal(batch[i], expected)
        np.testing.assert_array_equal(fp(mol), expected)
        np.testing.assert_array_equal(batch[i], _rdkit_bits(generator, mol))
    assert set(np.unique(batch)) <= {0, 1}


def test_morgan_counts_equal_rdkit(mols):
    fp = parse_fingerprint("morgan:radius=2,size=2048,counts")
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    batch = fp.featurize(mols)
    assert batch.dtype == np.uint32 and batch.shape == (len(mols), 2048)
    for i, mol in enumerate(mols):
        np.testing.assert_array_equal(batch[i], generator.GetCountFingerprintAsNumPy(mol))
        sparse = generator.GetCountFingerprint(mol).GetNonzeroElements()
        assert {int(k): int(v) for k, v in sparse.items()} == {
            int(k): int(batch[i, k]) for k in np.flatnonzero(batch[i])
        }


def test_radius0_counts_count_atoms_by_hand():
    # Radius 0: one environment per heavy atom, so the counts add up to the atom count;
    # ethanol has two distinct carbons (CH3, CH2) and one O: 3 distinct invariants.
    fp = MorganFingerprint(radius=0, size=2048, counts=True)
    counts = fp(Chem.MolFromSmiles("CCO"))
    assert counts.sum() == 3 and np.count_nonzero(counts) == 3
    # Benzene: six identical aromatic CH atoms -> one bit with count 6.
    counts = fp(Chem.MolFromSmiles("c1ccccc1"))
    assert counts.sum() == 6 and sorted(counts[counts > 0]) == [6]


def test_feature_morgan_equals_rdkit(mols):
    fp = parse_fingerprint("featmorgan:radius=2,size=2048")
    assert isinstance(fp, FeatureMorganFingerprint)
    generator = rdFingerprintGenerator.GetMorganGenerator(
        radius=2,
        fpSize=2048,
        atomInvariantsGenerator=rdFingerprintGenerator.GetMorganFeatureAtomInvGen(),
    )
    batch = fp.featurize(mols)
    for i, mol in enumerate(mols):
        np.testing.assert_array_equal(batch[i], generator.GetFingerprintAsNumPy(mol))
    plain = MorganFingerprint().featurize(mols)
    assert not np.array_equal(batch, plain)  # the invariants differ
    counts = FeatureMorganFingerprint(counts=True).featurize(mols)
    for i, mol in enumerate(mols):
        np.testing.assert_array_equal(counts[i], generator.GetCountFingerprintAsNumPy(mol))


def test_chirality_flag_separates_enantiomers():
    r, s = Chem.MolFromSmiles("C[C@H](N)C(=O)O"), Chem.MolFromSmiles("C[C@@H](N)C(=O)O")
    plain = MorganFingerprint()
    chiral = parse_fingerprint("morgan:chirality")
    assert chiral == MorganFingerprint(chirality=True)
    np.testing.assert_array_equal(plain(r), plain(s))
    assert not np.array_equal(chiral(r), chiral(s))


def test_maccs_equals_rdkit_and_known_keys(mols):
    fp = parse_fingerprint("maccs")
    assert isinstance(fp, MACCSFingerprint) and len(fp) == 167
    batch = fp.featurize(mols)
    assert batch.shape == (len(mols), 167) and batch.dtype == np.uint8
    for i, mol in enumerate(mols):
        expected = np.zeros(167, dtype=np.uint8)
        DataStructs.ConvertToNumpyArray(MACCSkeys.GenMACCSKeys(mol), expected)
        np.testing.assert_array_equal(batch[i], expected)
        np.testing.assert_array_equal(fp(mol), expected)
    assert (batch[:, 0] == 0).all()  # bit 0 is unused
    # By hand from the MACCS key definitions (MACCSkeys.smartsPatts):
    # benzene: 162 aromatic atom 'a', 163 six-membered ring, 165 ring atom '[R]'.
    assert np.flatnonzero(batch[1]).tolist() == [162, 163, 165]
    # ethanol CH3-CH2-OH: 82 *~CH2~[heteroatom with H], 109 *~CH2~O, 114 CH3~CH2~*,
    # 139 OH, 153 [!C;!H]~CH2~*, 155 *!@CH2!@*, 157 C-O, 160 CH3, 164 O.
    assert np.flatnonzero(batch[0]).tolist() == [82, 109, 114, 139, 153, 155, 157, 160, 164]
    # methane: only 160 '[C;H3,H4]'.
    assert np.flatnonzero(fp(Chem.MolFromSmiles("C"))).tolist() == [160]


@pytest.mark.parametrize(
    ("spec", "expected", "name", "dtype"),
    [
        ("morgan", MorganFingerprint(2, 2048), "morgan_r2_2048", np.uint8),
        ("morgan:radius=3,size=1024", MorganFingerprint(3, 1024), "morgan_r3_1024", np.uint8),
        (
            "morgan:radius=2,size=2048,counts",
            MorganFingerprint(2, 2048, counts=True),
            "morgan_r2_2048_counts",
            np.uint32,
        ),
        (
            " Morgan : size=512 , counts=false ",
            MorganFingerprint(2, 512),
            "morgan_r2_512",
            np.uint8,
        ),
        (
            "morgan:chirality,counts=true",
            MorganFingerprint(chirality=True, counts=True),
            "morgan_r2_2048_chiral_counts",
            np.uint32,
        ),
        (
            "featmorgan:radius=2,size=2048",
            FeatureMorganFingerprint(2, 2048),
            "featmorgan_r2_2048",
            np.uint8,
        ),
        ("maccs", MACCSFingerprint(), "maccs", np.uint8),
    ],
)
def test_parse_fingerprint(spec, expected, name, dtype):
    fp = parse_fingerprint(spec)
    assert fp == expected and type(fp) is type(expected)
    assert fp.name == name and fp.dtype == np.dtype(dtype)
    assert parse_fingerprint(fp.spec) == fp
    assert fingerprint_from_dict(fp.to_dict()) == fp
    assert type(fp).from_dict(fp.to_dict()) == fp
    d = fp.to_dict()
    assert d["length"] == len(fp) and d["dtype"] == np.dtype(dtype).name and d["rdkit_version"]


def test_defaults_are_ecfp4_2048():
    assert MorganFingerprint() == MorganFingerprint(radius=2, size=2048, counts=False)
    assert parse_fingerprint("morgan") == MorganFingerprint()
    assert FeatureMorganFingerprint() != MorganFingerprint()  # different classes, never equal


@pytest.mark.parametrize(
    ("spec", "token"),
    [
        ("ecfp4", "'ecfp4'"),
        ("morgan:radius=two", "'radius=two'"),
        ("morgan:bits=1024", "'bits=1024'"),
        ("morgan:radius", "'radius'"),
        ("morgan:counts=maybe", "'counts=maybe'"),
        ("maccs:size=166", "'size=166'"),
        ("morgan:radius=2,radius=3", "'radius'"),
        ("morgan:size=0", "size"),
        ("morgan:radius=-1", "radius"),
        ("morgan:,", "empty option"),
        ("", "empty"),
    ],
)
def test_parse_fingerprint_errors_name_the_token(spec, token):
    with pytest.raises(ValueError) as info:
        parse_fingerprint(spec)
    message = str(info.value)
    assert token in message
    if spec.startswith("ecfp") or not spec:
        assert all(kind in message for kind in FINGERPRINT_KINDS)
    if "bits=" in spec:
        assert "radius=INT" in message and "counts" in message


def test_column_names():
    for fp in [MorganFingerprint(), MorganFingerprint(3, 1024, counts=True), MACCSFingerprint()]:
        names = fp.column_names
        assert len(names) == len(fp) and len(set(names)) == len(fp)
    assert MorganFingerprint().column_names[:2] == ("morgan_r2_2048_0000", "morgan_r2_2048_0001")
    assert MorganFingerprint().column_names[-1] == "morgan_r2_2048_2047"
    assert MorganFingerprint(size=1024, counts=True).column_names[-1] == (
        "morgan_r2_1024_counts_1023"
    )
    assert FeatureMorganFingerprint().column_names[0] == "featmorgan_r2_2048_0000"
    assert MACCSFingerprint().column_names[0] == "maccs_000"
    assert MACCSFingerprint().column_names[-1] == "maccs_166"


def test_from_dict_errors():
    with pytest.raises(ValueError, match="kind"):
        fingerprint_from_dict({"radius": 2})
    with pytest.raises(ValueError, match="length"):
        fingerprint_from_dict({**MorganFingerprint().to_dict(), "length": 1024})
    with pytest.raises(ValueError, match="expected 'maccs'"):
        MACCSFingerprint.from_dict({"kind": "morgan"})


def test_pickle_and_batch_edge_cases(mols):
    for fp in [MorganFingerprint(counts=True), FeatureMorganFingerprint(), MACCSFingerprint()]:
        before = fp.featurize(mols)  # builds the generator
        clone = pickle.loads(pickle.dumps(fp))
        assert clone == fp
        np.testing.assert_array_equal(clone.featurize(mols), before)
        empty = fp.featurize([])
        assert empty.shape == (0, len(fp)) and empty.dtype == fp.dtype
        np.testing.assert_array_equal(fp.featurize(iter(mols[:2])), before[:2])
        with pytest.raises(ValueError, match=r"mols\[1\] is None"):
            fp.featurize([mols[0], None])
    with pytest.raises(ValueError):
        MorganFingerprint(radius=True)
