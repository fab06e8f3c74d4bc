"""QM9 loaders: original XYZ records (Mathematica numbers), DeepChem CSV, units, options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chemgraph.data.datasets import get_dataset, load_dataset
from chemgraph.data.datasets.qm9 import (
    ATOM_REFERENCES,
    TARGETS,
    parse_qm9_xyz,
    read_qm9_file,
)
from chemgraph.featurize import GaussianBasis
from chemgraph.graph_keys import ATOMIC_NUMBERS, DISTANCE, EDGE_FEATURES
from chemgraph.units import HARTREE_PER_KCAL_MOL, HARTREE_TO_EV

from .conftest import FIXTURES

ORIGINAL = FIXTURES / "qm9_original"


def test_original_records_units_and_rejects():
    table, rejected = read_qm9_file(ORIGINAL / "dsgdb9nsd.xyz.tar.bz2")
    assert table["qm9_index"].tolist() == [1, 2]
    methane = table.iloc[0]
    assert methane["smiles"] == "C"
    assert methane["homo"] == pytest.approx(-0.3877 * 27.211386245988)
    assert methane["gap"] == pytest.approx(0.5048 * HARTREE_TO_EV)
    assert methane["zpve"] == pytest.approx(0.044749 * HARTREE_TO_EV)
    assert methane["mu"] == 0.0 and methane["alpha"] == 13.21 and methane["cv"] == 6.469
    assert methane["A"] == 157.7118
    # U0 atomization by hand: U0(CH4) - U0(C) - 4 U0(H), Hartree -> eV
    by_hand = (-40.47893 - (-37.846772) - 4 * (-0.500273)) * HARTREE_TO_EV
    assert methane["u0_atom"] == pytest.approx(by_hand)
    # ... and equal to DeepChem's u0_atom for gdb_1 (kcal/mol): atom references check out
    assert methane["u0_atom"] == pytest.approx(
        -395.999594594 * HARTREE_PER_KCAL_MOL * HARTREE_TO_EV, abs=1e-4
    )
    assert methane["positions"].dtype == np.float32 and methane["positions"].shape == (5, 3)
    assert methane["atomic_numbers"].tolist() == [6, 1, 1, 1, 1]
    ammonia = table.iloc[1]
    assert ammonia["positions"][1, 0] == pytest.approx(0.0173)  # written 1.73*^-2
    assert ammonia["mulliken_charges"][3] == pytest.approx(0.2357)  # written 0.2357*^0
    assert len(ammonia["frequencies"]) == 6
    (bad,) = rejected.to_dict("records")
    assert (
        bad["input"] == "dsgdb9nsd_000003.xyz" and "expected 8 lines for 3 atoms" in bad["reason"]
    )


def test_parse_error_names_the_line():
    text = "1\ngdb 9\t1\t2\n"
    with pytest.raises(ValueError, match="expected 6 lines"):
        parse_qm9_xyz(text)
    with pytest.raises(ValueError, match="line 3: expected 'element x y z charge'"):
        parse_qm9_xyz("1\ngdb 9" + "\t1.0" * 15 + "\nXx 0 0 0 0\n1.0\nC\tC\nI\tI\n")


def test_deepchem_csv_agrees_with_original_records():
    deepchem, _ = read_qm9_file(FIXTURES / "qm9_deepchem" / "qm9.csv")
    original, _ = read_qm9_file(ORIGINAL / "dsgdb9nsd.xyz.tar.bz2")
    assert "positions" not in deepchem
    for target in TARGETS:
        np.testing.assert_allclose(deepchem[target], original[target], rtol=1e-5, atol=1e-4,
                                   err_msg=target)  # fmt: skip


def test_drop_uncharacterized_and_targets_option():
    kept = load_dataset("qm9", root=ORIGINAL, download=False)
    assert kept.parse().table["qm9_index"].tolist() == [1, 2]
    dropped = load_dataset("qm9", root=ORIGINAL, download=False, drop_uncharacterized=True)
    assert dropped.parse().table["qm9_index"].tolist() == [1]
    assert get_dataset("qm9", targets=["homo", "lumo"]).target_columns == ["homo", "lumo"]
    with pytest.raises(ValueError, match="unknown QM9 target"):
        get_dataset("qm9", targets=["homo_ev"]).target_columns  # noqa: B018
    with pytest.raises(ValueError, match="unknown option"):
        get_dataset("qm9", drop=True)


def test_radius_graphs_from_coordinates():
    dataset = load_dataset("qm9", root=ORIGINAL, download=False, targets=["homo", "lumo"])
    graphs, rejected = dataset.featurize(geometry="radius", cutoff=1.5, num_basis=8)
    methane = graphs.graphs[0]
    assert methane.ndata[ATOMIC_NUMBERS].tolist() == [6, 1, 1, 1, 1]
    # C-H bonds are 1.09 Å, H-H distances 1.78 Å: with a 1.5 Å cutoff only the 8 C-H edges
    assert methane.num_edges() == 8
    # the Gaussian-expanded distances sit where every batch builder reads edge features
    expected = GaussianBasis(8, 1.5)(methane.edata[DISTANCE])
    assert methane.edata[EDGE_FEATURES].shape == (8, 8)
    torch.testing.assert_close(methane.edata[EDGE_FEATURES], expected)
    assert torch.allclose(graphs.labels[0], torch.tensor([-0.3877, 0.1171]) * HARTREE_TO_EV)
    bonds, _ = dataset.featurize("canonical")
    assert bonds.graphs[0].num_nodes() == 1  # implicit hydrogens in the bond graph
    assert set(ATOM_REFERENCES) == {1, 6, 7, 8, 9}
    assert len(rejected) == 1  # the malformed record is reported, not dropped silently


def test_random_split_is_seeded():
    dataset = load_dataset("qm9", root=ORIGINAL, download=False)
    a = dataset.split(seed=3)
    b = dataset.split(seed=3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert sorted(np.concatenate(list(a.values())).tolist()) == [0, 1]


def test_qm9pack_rows_with_numbers_written_as_zero_point(tmp_path):
    """Acetylene (QM9 #4) has coordinates written ``0.``, which JSON cannot read."""
    import pandas as pd

    from chemgraph.data.qm9pack import qm9pack_data_folder

    try:
        folder = qm9pack_data_folder()
    except ImportError:
        pytest.skip("qm9pack (extra offline-data) is not installed")
    part = pd.read_csv(folder / "qm9_part1.csv", nrows=5)
    assert "0.," in part.loc[part["Index"] == 4, "XYZ_Ang"].item()
    part.to_csv(tmp_path / "qm9_part1.csv", index=False)
    table, rejected = read_qm9_file(tmp_path / "qm9_part1.csv")
    assert len(rejected) == 0
    assert table["qm9_index"].tolist() == [1, 2, 3, 4, 5]
    acetylene = table.set_index("qm9_index").loc[4]
    assert acetylene["atomic_numbers"].tolist() == [6, 6, 1, 1]
    assert acetylene["positions"].shape == (4, 3)
    # a linear molecule: every atom on the line through the two carbons
    carbon_axis = acetylene["positions"][1] - acetylene["positions"][0]
    for position in acetylene["positions"][2:]:
        offset = position - acetylene["positions"][0]
        assert np.linalg.norm(np.cross(offset, carbon_axis)) < 1e-3


def test_parse_qm9pack_geometry_checks_three_numbers_per_atom():
    from chemgraph.data.qm9pack import parse_qm9pack_geometry

    symbols, xyz = parse_qm9pack_geometry("['C','H']", "[[0.,1.5,-2],[1e-1,0,0.]]")
    assert symbols == ("C", "H")
    assert xyz.tolist() == [[0.0, 1.5, -2.0], [0.1, 0.0, 0.0]]
    with pytest.raises(ValueError, match="2 elements but 5 coordinate values"):
        parse_qm9pack_geometry("['C','H']", "[[0.,1.5,-2],[1e-1,0]]")
