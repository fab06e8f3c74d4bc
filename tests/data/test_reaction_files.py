"""chemgraph.data.reactions.read_reaction_file on every accepted format of a file of reactions:
USPTO-MIT lines, plain reaction SMILES lines (.txt/.smi), .csv/.tsv with a reaction column,
USPTO-50K CSVs, gzip variants; rejected records with row, input, reason and file."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from chemgraph.data.reactions import (
    REACTION_COLUMNS,
    load_reaction_graphs,
    reaction_records,
    read_reaction_file,
)

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # as tests/conftest.py

ESTER = "CC(=O)Cl.OCC>c1ccncc1>CCOC(C)=O"
AMIDE = "CC(=O)O.NCc1ccccc1>>CC(=O)NCc1ccccc1"
MAPPED = (  # USPTO-MIT: pyridine written on the left of >> without maps is a reagent
    "[CH3:1][C:2](=[O:3])[Cl:4].[OH:5][CH2:6][CH3:7].c1ccncc1>>"
    "[CH3:1][C:2](=[O:3])[O:5][CH2:6][CH3:7]"
)
# USPTO-50K (GLN raw_test.csv), its first reaction: Boc protection of an indole
USPTO_50K = (
    "CC(C)(C)OC(=O)O[C:6]([O:5][C:2]([CH3:1])([CH3:3])[CH3:4])=[O:7].[CH3:8][C:9](=[O:10])"
    "[c:11]1[cH:12][cH:13][c:14]2[nH:15][cH:16][cH:17][c:18]2[cH:19]1>>[CH3:1][C:2]([CH3:3])"
    "([CH3:4])[O:5][C:6](=[O:7])[n:15]1[c:14]2[cH:13][cH:12][c:11]([C:9]([CH3:8])=[O:10])"
    "[cH:19][c:18]2[cH:17][cH:16]1"
)
BOC_REACTANTS = ("CC(C)(C)OC(=O)OC(=O)OC(C)(C)C", "CC(=O)c1ccc2[nH]ccc2c1")
BOC_PRODUCT = ("CC(=O)c1ccc2c(ccn2C(=O)OC(C)(C)C)c1",)
SEPARATORS = "expected 'reactants>reagents>products' (2 '>' separators), found 0"


def _write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["reactions.txt", "reactions.smi", "reactions.txt.gz", "rxns"])
def test_lines_of_reaction_smiles_text_after_whitespace_ignored(tmp_path, name):
    text = (
        f"{MAPPED} 2-4;2-5\n"  # USPTO-MIT edit labels
        f"{ESTER}\tFischer-like, from the textbook\n"  # a name after a tab
        "\n"  # blank: skipped, but counted as a line
        "not a reaction\n"
        f"   {AMIDE}   \n"
        "CCO>>\n"  # no products: cannot be trained on
    )
    path = _write(tmp_path / name, text)
    reactions, rows, rejected = read_reaction_file(path)
    assert rows == [0, 1, 4]
    assert [r.reactants for r in reactions] == [
        ("CC(=O)Cl", "CCO"),
        ("CC(=O)Cl", "CCO"),
        ("CC(=O)O", "NCc1ccccc1"),
    ]
    assert [r.reagents for r in reactions] == [("c1ccncc1",), ("c1ccncc1",), ()]
    assert [r.products for r in reactions] == [("CCOC(C)=O",)] * 2 + [("CC(=O)NCc1ccccc1",)]
    assert reactions[0].mapped == MAPPED and reactions[1].mapped == ESTER
    assert list(rejected.columns) == ["row", "input", "reason", "file"]
    assert str(rejected["row"].dtype) == "int64"
    assert rejected["row"].tolist() == [3, 5]
    assert rejected["input"].tolist() == ["not", "CCO>>"]
    assert rejected["reason"].iloc[0] == SEPARATORS
    assert "product" in rejected["reason"].iloc[1]
    assert set(rejected["file"]) == {name}
    assert read_reaction_file(path, limit=4)[1] == [0, 1]  # the first 4 lines


@pytest.mark.parametrize(
    "name,header,delimiter",
    [
        ("mine.csv", "id,reaction,yield", ","),
        ("mine.csv.gz", "id,rxn_smiles,yield", ","),
        ("mine.csv", "id,Reactions,yield", ","),  # any case
        ("mine.tsv", "id\treaction_smiles\tyield", "\t"),
        ("mine.tsv.gz", "id\tRXN\tyield", "\t"),
    ],
)
def test_tables_with_a_reaction_column(tmp_path, name, header, delimiter):
    records = [
        ["r1", ESTER, "81"],
        ["r2", f"{AMIDE} (a note)", "75"],  # text after the SMILES ignored
        [],  # blank row: skipped
        ["r4", "", "0"],
        ["r5"],  # short row
        ["r6", "CCO>>CC(=O", "12"],
    ]
    lines = [header] + [delimiter.join(fields) for fields in records]
    path = _write(tmp_path / name, "\n".join(lines) + "\n")
    reactions, rows, rejected = read_reaction_file(path)
    assert rows == [0, 1]  # data rows, the header not counted
    assert [r.products for r in reactions] == [("CCOC(C)=O",), ("CC(=O)NCc1ccccc1",)]
    column = header.split(delimiter)[1]
    assert rejected.to_dict("records") == [
        {"row": 3, "input": "", "reason": f"empty {column!r} field", "file": name},  # the field
        {"row": 4, "input": "r5", "reason": f"no {column!r} field: 1 of 3", "file": name},
        {"row": 5, "input": "CCO>>CC(=O", "reason": rejected["reason"].iloc[2], "file": name},
    ]  # fmt: skip
    assert rejected["reason"].iloc[2].startswith("products molecule 1 of 1 ('CC(=O'): SMILES")
    assert read_reaction_file(path, limit=1)[1] == [0]


@pytest.mark.parametrize("name", ["raw_test.csv", "raw_test.csv.gz"])
def test_uspto_50k_csv(tmp_path, name):
    text = (
        "id,class,reactants>reagents>production\n"
        f"US07928231B2,UNK,{USPTO_50K}\n"
        f"US20090192322A1,5,{ESTER}\n"
        "US1,UNK,CC>>C>C\n"
    )
    path = _write(tmp_path / name, text)
    reactions, rows, rejected = read_reaction_file(path)
    assert rows == [0, 1]
    assert reactions[0].reactants == BOC_REACTANTS and reactions[0].reagents == ()
    assert reactions[0].products == BOC_PRODUCT and reactions[0].mapped == USPTO_50K
    assert reactions[1].reagents == ("c1ccncc1",)
    assert rejected["row"].tolist() == [2] and rejected["input"].tolist() == ["CC>>C>C"]
    assert "found 3" in rejected["reason"].iloc[0]
    graphs, kept, rejected = load_reaction_graphs(path)
    assert kept == [0, 1] and [g.product_smiles for g in graphs] == [BOC_PRODUCT[0], "CCOC(C)=O"]
    assert rejected["row"].tolist() == [2]


def test_a_table_without_a_reaction_column_is_refused_whole(tmp_path):
    path = _write(tmp_path / "molecules.csv", "smiles,label\nCCO,1\n")
    expected = (
        f"{path}: no reaction column; the header must name one of {', '.join(REACTION_COLUMNS)} "
        "(any case); found ['smiles', 'label']"
    )
    with pytest.raises(ValueError) as error:
        read_reaction_file(path)
    assert str(error.value) == expected


def test_reaction_records_yield_rows_texts_and_reasons(tmp_path):
    path = _write(tmp_path / "r.csv", f"reaction\n{ESTER} x\n\n,\nCCO>>CC=O\n")
    assert list(reaction_records(path)) == [
        (0, ESTER, None),
        (3, "CCO>>CC=O", None),
    ]  # blank and all-empty rows are skipped
    path = _write(tmp_path / "r.txt", f"{ESTER} x\n\nCCO>>CC=O\n")
    assert list(reaction_records(path)) == [(0, ESTER, None), (2, "CCO>>CC=O", None)]


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_real_uspto_50k_and_mit_files():
    path = SHARED_DATA / "uspto" / "uspto50k_test_class.csv.gz"
    reactions, rows, rejected = read_reaction_file(path, limit=50)
    assert rows == list(range(50)) and rejected.empty
    assert reactions[0].reactants == BOC_REACTANTS and reactions[0].products == BOC_PRODUCT
    path = SHARED_DATA / "uspto" / "uspto_mit_test_human.txt"
    reactions, rows, rejected = read_reaction_file(path)
    assert len(reactions) + len(rejected) == 80
