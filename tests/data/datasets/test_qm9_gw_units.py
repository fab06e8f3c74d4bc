"""QM9-GW: the file's own DFT columns and the unit of its values (card ``layout.unit``)."""

from __future__ import annotations

import pytest

from chemgraph.data.datasets import dataset_card
from chemgraph.data.datasets.qm9_gw import QM9GWLayoutError, read_qm9_gw
from chemgraph.units import HARTREE_TO_EV

from .conftest import FIXTURES

CARD = dataset_card("qm9_gw")
LAYOUT = CARD.raw["layout"]
FILE = FIXTURES / "qm9_gw" / "db_new_qm9_gw.yaml"


def test_card_documents_the_dft_columns_in_ev():
    assert LAYOUT["unit"] == "eV"  # the data descriptor's unit
    assert LAYOUT["fields"]["pbe_homo"] == ["PBE", "HOMO"]
    assert LAYOUT["fields"]["pbe_lumo"] == ["PBE", "LUMO"]
    columns = CARD.raw["columns"]
    assert columns["pbe_homo"]["unit"] == columns["pbe_lumo"]["unit"] == "eV"
    assert "DFT level of the file" in columns["pbe_homo"]["description"]


def test_values_are_returned_in_ev():
    table = read_qm9_gw(FILE, LAYOUT)
    # by hand, the fixture: '000001': {PBE: {HOMO: -9.10, LUMO: 0.50}, ...}
    assert table.loc[0, ["pbe_homo", "pbe_lumo"]].tolist() == [-9.10, 0.50]
    in_hartree = read_qm9_gw(FILE, {**LAYOUT, "unit": "hartree"})
    assert in_hartree.loc[0, "pbe_homo"] == pytest.approx(-9.10 * HARTREE_TO_EV)
    assert in_hartree.loc[2, "evgw_lumo"] == pytest.approx(1.80 * HARTREE_TO_EV)
    with pytest.raises(QM9GWLayoutError, match=r"layout.unit must be one of \['eV', 'hartree'\]"):
        read_qm9_gw(FILE, {**LAYOUT, "unit": "kcal/mol"})
