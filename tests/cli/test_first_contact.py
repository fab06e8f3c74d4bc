"""The commands a new user runs first: `--version`, `datasets list | info`, `recipe list`."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest
import yaml

from chemgraph._resources import card_path
from chemgraph.cli import main
from chemgraph.cli.base import PIPE_WIDTH, table_lines
from chemgraph.data.datasets import list_datasets
from chemgraph.recipes.registry import RECIPES, get_recipe

NAMES = list_datasets()


def words(text: str) -> str:
    """``text`` with every run of whitespace made one space (wrapped output compares equal)."""
    return " ".join(text.split())


def fits(line: str, width: int) -> bool:
    """Whether ``line`` fits ``width``, or overflows only by one word that cannot be broken
    (a URL, a path)."""
    return len(line) <= width or " " not in line.strip()


def test_version_is_the_installed_distribution_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"chemgraph {importlib.metadata.version('chemgraph')}\n"


@pytest.mark.parametrize("width", [160, 100, 80, 60])
def test_datasets_list_fits_the_terminal_and_names_stay_whole(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["datasets", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "family", "rows", "description"]
    assert [line.split()[0] for line in lines[1:]] == NAMES
    assert max(len(line) for line in lines) <= width
    assert "esol           moleculenet    1,128  ESOL (Delaney) " in "\n".join(lines)


def test_datasets_list_on_a_narrow_terminal_keeps_names_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "20")
    assert main(["datasets", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == NAMES
    assert "lipophilicity  moleculenet    4,200  Lipophilicity" in "\n".join(lines)


def test_datasets_list_through_a_pipe_is_pipe_width():
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    result = subprocess.run(
        [sys.executable, "-m", "chemgraph", "datasets", "list"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == NAMES
    # descriptions are longer than the line: shortened to end within the last few columns
    assert PIPE_WIDTH - 10 < max(len(line) for line in lines) <= PIPE_WIDTH


def test_table_lines_shortens_or_wraps_only_the_last_column():
    url = "https://x.org/" + "y" * 30
    rows = [("a_long_name", "12", "one two three four five six"), ("b", "3", f"see {url}")]
    assert table_lines(rows, 40, align="<>") == [
        "a_long_name  12  one two three four …",
        "b             3  see …",
    ]
    assert table_lines(rows, 40, wrap=True) == [
        "a_long_name  12  one two three four five",
        "                 six",
        "b            3   see",
        f"                 {url}",  # words, URLs included, are never split
    ]
    # narrower than the name columns: names whole, MIN_TEXT_WIDTH (20) columns of text
    assert table_lines(rows, 5)[0] == "a_long_name  12  one two three four …"


@pytest.mark.parametrize("name", NAMES)
def test_datasets_info_is_a_readable_card(capsys, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "100")
    card = yaml.safe_load(card_path(name).read_text(encoding="utf-8"))
    assert main(["datasets", "info", name]) == 0
    out = capsys.readouterr().out
    text = words(out)
    assert out.startswith(f"{name}: {card['family']} family, ")
    assert words(card["description"]) in text
    assert f"licence {words(card['license'])}" in text
    assert f"citation {words(card['citation'])}" in text
    for spec in card["files"]:
        assert spec["name"] in text
        if spec.get("url"):
            assert spec["url"] in out.split()
    for column, about in card["columns"].items():
        unit = (about or {}).get("unit") or "-"
        row = re.compile(rf"  {re.escape(column)} +{re.escape(unit)}( |$)")
        assert any(row.match(line) for line in out.splitlines()), (column, unit)
    assert "name:" not in out and "files:" not in out  # not the YAML
    assert all(fits(line, 100) for line in out.splitlines())


def test_a_card_in_a_deep_folder_still_fits_the_width():
    from dataclasses import replace
    from pathlib import Path

    from chemgraph.cli.datasets import card_text
    from chemgraph.data.datasets import dataset_card

    deep = Path("/", *(["a-rather-long-folder-name"] * 8), "datasets", "esol.yaml")
    out = card_text(replace(dataset_card("esol"), path=deep), 100)
    assert all(fits(line, 100) for line in out.splitlines())
    assert f"  {deep}" in out.splitlines()


def test_datasets_info_states_size_units_and_split(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["datasets", "info", "esol"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("esol: moleculenet family, 1,128 rows\n")
    assert "\nsplit     random: 80/10/10, seed 0\n" in out
    assert "\ntask      regression, metric rmse\n" in out
    assert "  delaney-processed.csv  1,128 rows, 96,699 bytes, sha256 checked;" in out
    assert "  measured log solubility in mols per litre  log10(mol/L)  measured aqueous" in out
    assert main(["datasets", "info", "qm9_gw"]) == 0
    out = capsys.readouterr().out
    assert "\nsplit     counts: train 25,000 / valid 5,000 / test 10,000, seed 0\n" in out
    assert "db_new_qm9_gw.yaml  133,885 rows, no published checksum; no download URL" in out


def test_datasets_info_yaml_prints_the_card_file(capsys):
    assert main(["datasets", "info", "esol", "--yaml"]) == 0
    assert capsys.readouterr().out == card_path("esol").read_text(encoding="utf-8")
    assert main(["datasets", "info", "ESOL", "--yaml"]) == 0  # names are case-insensitive
    assert capsys.readouterr().out == card_path("esol").read_text(encoding="utf-8")
    assert main(["datasets", "info", "QM9-GW", "--yaml"]) == 0  # and take - for _
    assert capsys.readouterr().out == card_path("qm9_gw").read_text(encoding="utf-8")


@pytest.mark.parametrize("action", ["info", "download", "featurize"])
@pytest.mark.parametrize("name", ["nope", "qm9_gw_embedded"])  # the latter: a card, no loader
def test_an_unknown_dataset_names_the_registered_ones(capsys, action, name):
    assert main(["datasets", action, name]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"chemgraph datasets: error: no dataset card {name!r} among the registered datasets: "
        f"{', '.join(NAMES)}\n"
    )


@pytest.mark.parametrize("width", [100, 60])
def test_recipe_list_shows_every_recipe_with_its_whole_description(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["recipe", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    starts = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert starts == list(RECIPES)
    for name in RECIPES:
        assert f"{name} {words(get_recipe(name).DESCRIPTION)}" in words(out)
    assert max(len(line) for line in lines) <= width


def test_recipe_list_imports_no_recipe_and_no_heavy_library():
    """`recipe list` took 7-10 s importing every recipe (torch, DGL, Lightning); it reads the
    registry's descriptions alone."""
    heavy = ["torch", "lightning", "dgl", "rdkit", "pandas", "chemgraph.train.config"]
    heavy += [recipe.module for recipe in RECIPES.values()]
    code = (
        "import sys\n"
        "from chemgraph.cli import main\n"
        "assert main(['recipe', 'list']) == 0\n"
        f"print([name for name in {heavy!r} if name in sys.modules], file=sys.stderr)\n"
    )
    env = {**os.environ, "COLUMNS": "100"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "[]"
    assert [line.split()[0] for line in result.stdout.splitlines() if line[:1] != " "] == list(
        RECIPES
    )
