"""Same molecule, same answer: features and predictions do not depend on the atom order.

For every model of the registry (tiny, seeded, eval mode, parameters perturbed so that the
zero-initialised gates and edge conditionings are active), one molecule written from different
atoms must get the same prediction within 1e-5, while enantiomers, cis/trans ring isomers and
E/Z isomers (different molecules) must not: stereo is encoded by CIP descriptors, not by RDKit's
order-dependent chiral tags and bond stereo. (NSA and GRAT read no bond stereo, so E/Z isomers
are the exception there: expected failures.) Graphormer's edge encoding reads the bonds along
one shortest path of each atom pair, chosen by bond features, not by atom index. The same for
the 3D ESA of the dft_to_gw recipe on radius graphs with shuffled atoms.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from fixtures.tiny_models import BOND_GRAPH_MODELS, tiny_config
from rdkit import Chem

from chemgraph._dgl import dgl
from chemgraph.batches import batch_builder
from chemgraph.chem import embed_conformers, mol_from_smiles, mols_from_smiles
from chemgraph.featurize import RadiusGraphFeaturizer, get_preset
from chemgraph.graphs import (
    add_distance_features,
    atoms_to_radius_graph,
    mol_to_radius_graph,
    mols_to_graphs,
)
from chemgraph.models import ESA, ESAConfig, build_model, get_model_spec

SHARED_DATA = Path(__file__).parents[1].parent / "shared" / "data"

# Written out: stereocentres (alanine, ephedrine, threonine, menthol, glucose, cholesterol with
# eight), stereo double bonds (butenes, fumaric acid, tamoxifen), ring stereo (1,4-dimethyl-
# cyclohexane: CIP r/s; a spiro BACE inhibitor), both kinds, a sulfoxide.
STEREO_MOLECULES = [
    "N[C@@H](C)C(=O)O",  # L-alanine
    "N[C@H](C)C(=O)O",  # D-alanine
    "C/C=C/C",  # (E)-but-2-ene
    "C/C=C\\C",  # (Z)-but-2-ene
    "OC(=O)/C=C/C(O)=O",  # fumaric acid
    "OC(=O)/C=C\\C(O)=O",  # maleic acid
    "C[C@H]1CC[C@@H](C)CC1",  # cis-1,4-dimethylcyclohexane
    "C[C@H]1CC[C@H](C)CC1",  # trans
    "CO[C@@H]1CC[C@@]2(CC1)Cc1ccc(OCC(C)C)cc1C21N=C(C)C(N)=N1",  # spiro, ring stereo
    "CN[C@@H](C)[C@H](O)c1ccccc1",  # (1R,2S)-ephedrine
    "C[C@@H](O)[C@H](N)C(=O)O",  # L-threonine
    "CC(C)[C@@H]1CC[C@@H](C)C[C@H]1O",  # (-)-menthol
    "OC[C@H]1O[C@H](O)[C@H](O)[C@@H](O)[C@@H]1O",  # beta-D-glucopyranose
    "C[C@H](CCCC(C)C)[C@H]1CC[C@@H]2[C@@]1(CC[C@H]1[C@H]2CC=C2C[C@@H](O)CC[C@]12C)C",
    "C/C=C/[C@@H](F)Cl",  # both kinds
    "C/C=C\\[C@@H](F)Cl",
    "N[C@@H](Cl)/C=C/F",
    "CC/C(=C(\\c1ccccc1)c1ccc(OCCN(C)C)cc1)c1ccccc1",  # tamoxifen (Z)
    "CC/C(=C(/c1ccccc1)c1ccc(OCCN(C)C)cc1)c1ccccc1",  # (E)
    "C[S@](=O)c1ccccc1",  # a chiral sulfoxide
    "C[S@@](=O)c1ccccc1",
]

# Pairs of different molecules that differ only in the stereo of atoms: enantiomers (also of a
# molecule with two centres, whose R and S swap atoms), cis/trans ring isomers.
CHIRAL_ISOMERS = [
    ("N[C@@H](C)C(=O)O", "N[C@H](C)C(=O)O"),
    ("C[C@H]1CC[C@@H](C)CC1", "C[C@H]1CC[C@H](C)CC1"),
    ("CN[C@@H](C)[C@H](O)c1ccccc1", "CN[C@H](C)[C@@H](O)c1ccccc1"),
    ("C/C=C/[C@@H](F)Cl", "C/C=C/[C@H](F)Cl"),
    ("C[S@](=O)c1ccccc1", "C[S@@](=O)c1ccccc1"),
]
# ... and only in the stereo of a double bond (E/Z isomers).
DOUBLE_BOND_ISOMERS = [
    ("C/C=C/C", "C/C=C\\C"),
    ("OC(=O)/C=C/C(O)=O", "OC(=O)/C=C\\C(O)=O"),
    ("C/C=C/[C@@H](F)Cl", "C/C=C\\[C@@H](F)Cl"),
    ("CC/C(=C(\\c1ccccc1)c1ccc(OCCN(C)C)cc1)c1ccccc1",
     "CC/C(=C(/c1ccccc1)c1ccc(OCCN(C)C)cc1)c1ccccc1"),
]  # fmt: skip
# Models that do not read bond stereo, so cannot tell E from Z (they never did): NSA's tokens
# are atoms only (Buterez et al. 2024); GRAT's attention is conditioned on the bond type
# (Yoo et al. 2020).
BLIND_TO_BOND_STEREO = {
    "nsa": "node-set attention reads atom features only",
    "grat": "GRAT's edge types are bond types, without stereo",
}

# Tiny models with ESA's default pattern, which holds masked (M) blocks.
TINY_PATTERN = "SMMSPS"
TOLERANCE = 1e-5
BATCH = 128


def _perturbed(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Seeded noise on every parameter, so that zero-initialised parts (GMoE gates, GRAT's
    edge conditioning, Graphormer's virtual-token bias) take part in the prediction."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


@cache
def registry_model(name: str, seed: int = 1) -> torch.nn.Module:
    config = tiny_config(name, layer_pattern=TINY_PATTERN)
    torch.manual_seed(0)
    return _perturbed(build_model(name, config), seed=seed)


def predict(name: str, mols: list[Chem.Mol], seed: int = 1) -> torch.Tensor:
    """``float32 [len(mols)]``: featurize, transform, batch and run as chemgraph predict does,
    with the family's tiny model perturbed by ``seed``."""
    spec = get_model_spec(name)
    model = registry_model(name, seed)
    preset = get_preset(spec.default_featurizer)
    collate = spec.batch_builder(model.config)
    outputs = []
    with torch.no_grad():
        for start in range(0, len(mols), BATCH):
            graphs = dgl.unbatch(mols_to_graphs(mols[start : start + BATCH], preset))
            graphs = spec.transform_graphs(model.config, graphs)
            outputs.append(model(collate(dgl.batch(graphs))).reshape(-1))
    return torch.cat(outputs)


def written_elsewhere(mols: list[Chem.Mol], seed: int) -> list[Chem.Mol]:
    """Each molecule parsed back from a random SMILES of it (seeded): other atom order, and
    other RDKit chiral tags and bond stereo for the same stereocentres and double bonds."""
    Chem.rdBase.SeedRandomNumberGenerator(seed)
    out = [mol_from_smiles(Chem.MolToSmiles(mol, doRandom=True)) for mol in mols]
    assert [Chem.MolToSmiles(m) for m in out] == [Chem.MolToSmiles(m) for m in mols]
    return out


def feature_multisets(mol: Chem.Mol, preset_name: str) -> tuple[list, list]:
    """The atom rows and the bond rows of a molecule, sorted: equal for any atom order."""
    preset = get_preset(preset_name)
    atoms = sorted(map(tuple, preset.atom.featurize_atoms(mol).tolist()))
    bonds = sorted(map(tuple, preset.bond.featurize_bonds(mol).tolist()))
    return atoms, bonds


# --- always: molecules written in this file -------------------------------------------------


@pytest.fixture(scope="module")
def stereo_mols() -> list[Chem.Mol]:
    return [mol_from_smiles(smiles) for smiles in STEREO_MOLECULES]


@pytest.fixture(scope="module")
def stereo_mols_elsewhere(stereo_mols) -> list[list[Chem.Mol]]:
    """Three random SMILES and three random atom permutations of every molecule."""
    rng = np.random.default_rng(0)
    orders = [written_elsewhere(stereo_mols, seed) for seed in (1, 2, 3)]
    for _ in range(3):
        orders.append(
            [Chem.RenumberAtoms(m, rng.permutation(m.GetNumAtoms()).tolist()) for m in stereo_mols]
        )
    return orders


@pytest.mark.parametrize("preset_name", ["canonical", "ogb"])
def test_feature_rows_do_not_depend_on_the_atom_order(
    stereo_mols, stereo_mols_elsewhere, preset_name
):
    tags_changed = 0
    for index, (smiles, mol) in enumerate(zip(STEREO_MOLECULES, stereo_mols, strict=True)):
        expected = feature_multisets(mol, preset_name)
        for others in stereo_mols_elsewhere:
            assert feature_multisets(others[index], preset_name) == expected, smiles
            tags_changed += _tag_multiset(others[index]) != _tag_multiset(mol)
    assert tags_changed > 10  # the raw tags did change with the order: the test means something


def _tag_multiset(mol: Chem.Mol) -> list:
    return sorted(
        [str(atom.GetChiralTag()) for atom in mol.GetAtoms()]
        + [str(bond.GetStereo()) for bond in mol.GetBonds()]
    )


@pytest.mark.parametrize("name", BOND_GRAPH_MODELS)
def test_written_stereo_molecules_get_one_prediction(name, stereo_mols, stereo_mols_elsewhere):
    expected = predict(name, stereo_mols)
    assert torch.isfinite(expected).all()
    for others in stereo_mols_elsewhere:
        torch.testing.assert_close(predict(name, others), expected, atol=TOLERANCE, rtol=0)


def _differences(name: str, pairs: list[tuple[str, str]]) -> torch.Tensor:
    """Per pair, the larger prediction gap of two random models of the family: the test is
    whether the stereo features reach the output, and one random model may by chance be nearly
    blind to a pair whose two stereocentres both invert (their contributions can cancel; GRAT
    with seed 1: 3e-6 for the ephedrine enantiomers, against 3e-3 to 4e-2 for the others)."""
    gaps = []
    for seed in (1, 2):
        first = predict(name, [mol_from_smiles(a) for a, _ in pairs], seed)
        gaps.append((first - predict(name, [mol_from_smiles(b) for _, b in pairs], seed)).abs())
    return torch.stack(gaps).amax(dim=0)


@pytest.mark.parametrize("name", BOND_GRAPH_MODELS)
def test_enantiomers_and_cis_trans_isomers_get_different_predictions(name):
    gap = _differences(name, CHIRAL_ISOMERS)
    assert (gap > TOLERANCE).all(), [
        p for p, g in zip(CHIRAL_ISOMERS, gap.tolist()) if g <= TOLERANCE
    ]


@pytest.mark.parametrize("name", BOND_GRAPH_MODELS)
def test_e_and_z_isomers_get_different_predictions(name):
    if name in BLIND_TO_BOND_STEREO:
        pytest.xfail(BLIND_TO_BOND_STEREO[name])
    gap = _differences(name, DOUBLE_BOND_ISOMERS)
    assert (gap > TOLERANCE).all(), [
        pair for pair, g in zip(DOUBLE_BOND_ISOMERS, gap.tolist()) if g <= TOLERANCE
    ]


@pytest.mark.parametrize("preset_name", ["canonical", "ogb"])
@pytest.mark.parametrize(("first", "second"), CHIRAL_ISOMERS + DOUBLE_BOND_ISOMERS)
def test_stereoisomers_get_different_feature_rows(preset_name, first, second):
    # the two SMILES differ in @/@@ or / and \\ only: same atoms in the same order
    a, b = mol_from_smiles(first), mol_from_smiles(second)
    assert Chem.MolToSmiles(a) != Chem.MolToSmiles(b)
    assert Chem.MolToSmiles(a, isomericSmiles=False, canonical=False) == Chem.MolToSmiles(
        b, isomericSmiles=False, canonical=False
    )
    preset = get_preset(preset_name)
    atoms_differ = preset.atom.featurize_atoms(a) != preset.atom.featurize_atoms(b)
    bonds_differ = preset.bond.featurize_bonds(a) != preset.bond.featurize_bonds(b)
    if (first, second) in CHIRAL_ISOMERS:
        assert atoms_differ.any() and not bonds_differ.any()
    else:
        assert bonds_differ.any() and not atoms_differ.any()


# --- shared data: >= 500 MoleculeNet molecules with stereo ----------------------------------


@pytest.fixture(scope="module")
def dataset_mols() -> list[Chem.Mol]:
    smiles = []
    for file, column in (("bace.csv", "mol"), ("BBBP.csv", "smiles"),
                         ("Lipophilicity.csv", "smiles")):  # fmt: skip
        table = pd.read_csv(SHARED_DATA / "moleculenet" / file)[column].astype(str)
        smiles += table[table.str.contains("@|/|\\\\", regex=True)].head(200).tolist()
    mols = [m for m in mols_from_smiles(smiles) if isinstance(m, Chem.Mol)]
    assert len(mols) >= 500
    return mols


@pytest.fixture(scope="module")
def dataset_mols_elsewhere(dataset_mols) -> list[Chem.Mol]:
    return written_elsewhere(dataset_mols, seed=12)


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} not present")
@pytest.mark.parametrize("name", BOND_GRAPH_MODELS)
def test_moleculenet_stereo_molecules_get_one_prediction(
    name, dataset_mols, dataset_mols_elsewhere
):
    expected = predict(name, dataset_mols)
    got = predict(name, dataset_mols_elsewhere)
    torch.testing.assert_close(got, expected, atol=TOLERANCE, rtol=0)


# --- 3D: radius graphs of shuffled atoms (the 3D ESA of the dft_to_gw recipe) ---------------

RADIUS = RadiusGraphFeaturizer(cutoff=5.0, num_basis=16)


def _esa_3d(in_features: int, set_type: str) -> torch.nn.Module:
    torch.manual_seed(0)
    options = tiny_config("esa", layer_pattern=TINY_PATTERN)
    config = ESAConfig(**{**options, "in_features": in_features, "set_type": set_type,
                          "attention": "dense"})  # fmt: skip
    return _perturbed(ESA(config), seed=2)


def predict_3d(model: torch.nn.Module, graphs: list) -> torch.Tensor:
    collate = batch_builder(model.config.set_type, model.config.attention)
    with torch.no_grad():
        return model(collate(dgl.batch(graphs))).reshape(-1)


@pytest.fixture(scope="module")
def conformers() -> list[Chem.Mol]:
    # every third molecule: alanine, (Z)-butene, the cyclohexanes, ephedrine, glucose, ...;
    # sanitised again, as a molecule read back from SMILES is (Chem.AddHs leaves the new
    # hydrogens' hybridisation unset)
    mols = [embed_conformers(mol_from_smiles(s), seed=0).mol for s in STEREO_MOLECULES[::3]]
    for mol in mols:
        Chem.SanitizeMol(mol)
    return mols


# the second: a neighbour cap that binds (ties broken by element and position, not atom order)
@pytest.mark.parametrize(
    "radius", [RADIUS, RadiusGraphFeaturizer(cutoff=3.0, num_basis=16, max_neighbors=3)]
)
def test_3d_esa_on_atom_types_and_distances_ignores_the_atom_order(conformers, radius):
    model = _esa_3d(radius.edge_token_features, "edge")
    z = [np.array([a.GetAtomicNum() for a in m.GetAtoms()]) for m in conformers]
    pos = [m.GetConformer().GetPositions() for m in conformers]
    expected = predict_3d(model, [atoms_to_radius_graph(*zp, radius) for zp in zip(z, pos)])
    rng = np.random.default_rng(0)
    for _ in range(3):
        orders = [rng.permutation(len(numbers)) for numbers in z]
        graphs = [atoms_to_radius_graph(n[o], p[o], radius) for n, p, o in zip(z, pos, orders)]
        torch.testing.assert_close(predict_3d(model, graphs), expected, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("set_type", ["edge", "node"])
def test_3d_set_attention_on_preset_features_ignores_the_atom_order(conformers, set_type):
    # mol_to_radius_graph: canonical atom features (CIP chirality) + Gaussian distances
    preset = get_preset("canonical")
    width = 2 * len(preset.atom) + RADIUS.num_basis if set_type == "edge" else len(preset.atom)
    model = _esa_3d(width, set_type)

    def graphs(mols):
        return [add_distance_features(mol_to_radius_graph(m, preset, RADIUS.cutoff), RADIUS)
                for m in mols]  # fmt: skip

    expected = predict_3d(model, graphs(conformers))
    rng = np.random.default_rng(1)
    for seed in (1, 2, 3):
        shuffled = [
            Chem.RenumberAtoms(m, rng.permutation(m.GetNumAtoms()).tolist()) for m in conformers
        ]
        torch.testing.assert_close(
            predict_3d(model, graphs(shuffled)), expected, atol=TOLERANCE, rtol=0
        )
        # RenumberAtoms keeps every atom's bond order, hence its chiral tag; a random SMILES
        # read back (coordinates carried over) changes the tags too
        rewritten = [_written_elsewhere_in_3d(m, seed) for m in conformers]
        torch.testing.assert_close(
            predict_3d(model, graphs(rewritten)), expected, atol=TOLERANCE, rtol=0
        )


def _written_elsewhere_in_3d(mol: Chem.Mol, seed: int) -> Chem.Mol:
    """``mol`` (explicit hydrogens, one conformer) read back from a random SMILES of it, with
    its coordinates: other atom order, bond order and chiral tags."""
    Chem.rdBase.SeedRandomNumberGenerator(seed)
    written = Chem.Mol(mol)
    smiles = Chem.MolToSmiles(written, doRandom=True)
    order = [int(i) for i in written.GetProp("_smilesAtomOutputOrder").strip("[]").split(",") if i]
    params = Chem.SmilesParserParams()
    params.removeHs = False
    out = Chem.MolFromSmiles(smiles, params)
    conformer = Chem.Conformer(out.GetNumAtoms())
    for new, old in enumerate(order):
        conformer.SetAtomPosition(new, mol.GetConformer().GetAtomPosition(old))
    out.AddConformer(conformer)
    assert Chem.MolToSmiles(out) == Chem.MolToSmiles(mol)
    return out


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"{SHARED_DATA} not present")
def test_3d_esa_on_qm9_geometries_ignores_the_atom_order():
    import ase.io

    with gzip.open(SHARED_DATA / "qm9" / "qm9pack_subset1k.extxyz.gz", "rt") as handle:
        frames = ase.io.read(handle, index=":300", format="extxyz")
    z = [frame.get_atomic_numbers() for frame in frames]
    pos = [frame.get_positions() for frame in frames]
    model = _esa_3d(RADIUS.edge_token_features, "edge")
    expected = predict_3d(model, [atoms_to_radius_graph(*zp, RADIUS) for zp in zip(z, pos)])
    rng = np.random.default_rng(3)
    orders = [rng.permutation(len(numbers)) for numbers in z]
    graphs = [atoms_to_radius_graph(n[o], p[o], RADIUS) for n, p, o in zip(z, pos, orders)]
    torch.testing.assert_close(predict_3d(model, graphs), expected, atol=TOLERANCE, rtol=0)
