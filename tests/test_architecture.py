"""The package's shape, as docs/architecture.md describes it: no module over 800 lines, and the
layer picture drawn from the imports (docs/layers.py) is the one the page shows, with the three
wings side by side."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
grimp = pytest.importorskip("grimp")  # installed with import-linter (the `dev` extra)
from layers import layer_rows, package_imports  # noqa: E402

WINGS = ["library", "reactions", "transfer"]


def test_no_module_is_over_800_lines():
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "chemgraph").rglob("*.py")
    }
    assert lengths  # the package was found
    assert {path: n for path, n in lengths.items() if n > 800} == {}


def test_the_layer_block_of_the_architecture_page_is_drawn_from_the_imports():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- layers from imports: begin -->\n```\n(.*?)```\n<!-- layers from imports: end -->",
        page,
        re.S,
    )
    assert block is not None
    rows = layer_rows(package_imports())
    drawn = [f"{level:2d}  {' | '.join(row)}" for level, row in reversed(list(enumerate(rows)))]
    assert block.group(1).splitlines() == drawn


def test_the_three_wings_share_a_row_and_import_none_of_one_another():
    imports = package_imports()
    rows = layer_rows(imports)
    (row,) = [row for row in rows if "transfer" in row]
    assert row == WINGS
    for wing in WINGS:
        assert imports[wing].isdisjoint(WINGS)
        assert "train" in imports[wing]  # above the training toolkit
    assert set(WINGS) <= imports["jobs"] | imports["recipes"]


def test_layer_rows_refuse_an_import_cycle():
    with pytest.raises(ValueError, match="import cycle: a -> b -> a"):
        layer_rows({"a": {"b"}, "b": {"a"}})


def test_layer_rows_place_each_package_above_its_longest_chain():
    imports = {
        "top": {"middle", "bottom"},
        "middle": {"bottom"},
        "side": {"bottom"},
        "bottom": set(),
    }
    assert layer_rows(imports) == [["bottom"], ["middle", "side"], ["top"]]
