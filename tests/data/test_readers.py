"""chemgraph.data.readers: every record of every format, blank and malformed ones flagged."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from rdkit import Chem

from chemgraph.data.readers import Record, iter_record_chunks


def records(path, **kwargs) -> list[Record]:
    return [record for chunk in iter_record_chunks(path, 2, **kwargs) for record in chunk]


def test_smi_rows_are_line_numbers_and_blank_lines_are_records(tmp_path):
    path = tmp_path / "lib.smi"
    # BOM, CRLF, a blank line, a whitespace-only line, a lone CR, a record without a name
    path.write_bytes(b"\xef\xbb\xbfCCO ethanol\r\n\r\n  \t\nCCN amine\rc1ccccc1\n")
    got = records(path)
    assert [(r.row, r.id, r.text, r.kind) for r in got] == [
        (0, "ethanol", "CCO", "smiles"),
        (1, "1", "", "blank"),
        (2, "2", "", "blank"),
        (3, "amine", "CCN", "smiles"),
        (4, "4", "c1ccccc1", "smiles"),
    ]


CSV = (
    "name,smiles,note\n"
    "ethanol,CCO,x\n"  # line 2, row 0
    "\n"  # line 3, row 1: blank line
    ",,\n"  # line 4, row 2: every field empty
    ',"CCN",\n'  # line 5, row 3: no id -> "3"
    'multi,"C\nC",y\n'  # lines 6-7, row 4: a quoted line break
    "bad,CC,too,many\n"  # line 8, row 5: more fields than the header
    "short,CCCl\n"  # line 9, row 6: fewer fields: the missing ones are empty
)


def test_csv_rows_count_blank_lines_and_match_pandas(tmp_path):
    path = tmp_path / "lib.csv"
    path.write_text(CSV)
    got = records(path, id_column="name")
    assert [(r.row, r.id, r.kind) for r in got] == [
        (0, "ethanol", "smiles"),
        (1, "1", "blank"),
        (2, "2", "blank"),
        (3, "3", "smiles"),
        (4, "multi", "smiles"),
        (5, "bad", "smiles"),
        (6, "short", "smiles"),
    ]
    assert [r.text for r in got] == ["CCO", "", "", "CCN", "C\nC", "bad,CC,too,many", "CCCl"]
    assert [r.error for r in got][:5] == [None] * 5 and got[6].error is None
    assert got[5].error == (
        "malformed row: 4 fields where the header has 3 (an unquoted ',' in a field?)"
    )
    # without quoted line breaks, row r is on line r + 2 of the file (header = line 1)
    line = dict(enumerate(CSV.split("\n"), start=1))
    assert line[1 + 2] == "" and line[2 + 2] == ",," and line[3 + 2] == ',"CCN",'
    # and row r is row r of pandas.read_csv(..., skip_blank_lines=False)
    frame = pd.read_csv(
        tmp_path / "lib.csv", skip_blank_lines=False, dtype=str, keep_default_na=False,
        on_bad_lines="skip",
    )  # fmt: skip
    assert frame["smiles"].tolist()[:5] == ["CCO", "", "", "CCN", "C\nC"]


def test_tsv_and_gzip(tmp_path):
    path = tmp_path / "lib.tsv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("SMILES\tid\nCCO\ta\n\t\nc1ccccc1\t\n")
    got = records(path, id_column="id")
    assert [(r.row, r.id, r.text, r.kind) for r in got] == [
        (0, "a", "CCO", "smiles"),
        (1, "1", "", "blank"),
        (2, "2", "c1ccccc1", "smiles"),
    ]


def test_parquet_null_smiles_is_an_empty_record_not_blank(tmp_path):
    path = tmp_path / "lib.parquet"
    pd.DataFrame({"smiles": ["CCO", None, "CCN"], "id": ["a", "b", None]}).to_parquet(path)
    got = records(path, id_column="id")
    assert [(r.row, r.id, r.text, r.kind) for r in got] == [
        (0, "a", "CCO", "smiles"),
        (1, "b", "", "smiles"),
        (2, "2", "CCN", "smiles"),
    ]


def test_sdf_records_terminators_blank_records_and_ids(tmp_path):
    ethanol = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO"))  # title line empty
    named = "named" + ethanol + ">  <code>  (1)\nE-1\n\n"
    path = tmp_path / "lib.sdf"
    path.write_text(
        named + "$$$$ \n" + ethanol + "$$$$\t\n" + "$$$$\n" + ethanol + "$$$$\r\n" + "\n \n"
    )
    got = records(path)
    assert [(r.row, r.id, r.kind) for r in got] == [
        (0, "named", "molblock"),
        (1, "1", "molblock"),  # empty title -> the row
        (2, "2", "blank"),  # nothing before its $$$$
        (3, "3", "molblock"),
    ]  # the whitespace after the last $$$$ is not a record
    assert got[0].text.endswith("$$$$ \n") and got[1].text.endswith("$$$$\t\n")
    assert records(path, id_column="code")[0].id == "E-1"


def test_xyz_frames_blank_lines_between_them_malformed_ones_and_ids(tmp_path):
    water = "3\nname=water charge=0\nO 0 0 0.1\nH 0 0.76 -0.47\nH 0 -0.76 -0.47\n"
    helium = "1\nHe atom\nHe 0 0 0\n"
    path = tmp_path / "lib.xyz.gz"
    text = water + "\n\n" + helium + "x\ny\n" + water + "2\nname=cut\nH 0 0 0\n"
    path.write_bytes(gzip.compress(text.encode()))
    got = records(path, id_column="name")
    assert [(r.row, r.id, r.kind, r.error is None) for r in got] == [
        (0, "water", "xyz", True),
        (1, "1", "xyz", True),  # a plain comment line: no name= key
        (2, "2", "xyz", False),  # line 11 is no atom count; the reader goes on at line 13
        (3, "water", "xyz", True),
        (4, "4", "xyz", False),  # the file ends inside it
    ]
    assert got[0].text == water and got[1].text == helium and got[3].text == water
    assert got[2].error.startswith("XYZ parse error: line 11: 'x' is not an atom count")
    assert got[4].error == "XYZ parse error: the file ends inside frame 5, at 1 of its 2 atom lines"
    assert [r.id for r in records(path)][:2] == ["0", "1"]  # without an id key: the row
    with pytest.raises(ValueError, match="a .xyz file has no label columns"):
        records(path, label_columns=["energy"])


def test_empty_and_unparseable_tables_are_clear_errors(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    (tmp_path / "no_id.csv").write_text("smiles\nC\n")
    with pytest.raises(ValueError, match="is empty"):
        records(empty)
    huge = tmp_path / "huge.csv"
    huge.write_text('smiles\nCCO\n"' + "C" * 200_000 + '"\n')
    with pytest.raises(ValueError, match=r"huge.csv, line 3: unreadable table: field larger"):
        records(huge)
    with pytest.raises(ValueError, match="no id column 'id'"):
        records(empty.with_name("no_id.csv"), id_column="id")


def test_a_table_column_named_id_gives_the_ids_unless_another_is_named(tmp_path):
    path = tmp_path / "library.csv"
    path.write_text("id,name,smiles\nm150,ethanol,CCO\n,blank id,CC\n")
    records = [r for chunk in iter_record_chunks(path, 10) for r in chunk]
    assert [r.id for r in records] == ["m150", "1"]  # an empty cell: the row number
    named = [r for chunk in iter_record_chunks(path, 10, id_column="name") for r in chunk]
    assert [r.id for r in named] == ["ethanol", "blank id"]
    pd.read_csv(path).to_parquet(tmp_path / "library.parquet")
    records = [r for chunk in iter_record_chunks(tmp_path / "library.parquet", 10) for r in chunk]
    assert records[0].id == "m150"
