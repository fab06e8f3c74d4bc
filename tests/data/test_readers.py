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


# -- files as people have them: one reader for every command (issue 45) ------------------------


def test_a_gzipped_table_under_a_plain_name_is_read_by_every_reader(tmp_path):
    """Compression is told by the bytes, never the name: train and transfer (read_table,
    read_data) read what predict and featurize (iter_record_chunks) read."""
    from chemgraph.data import read_table
    from chemgraph.data.datasets import read_data

    path = tmp_path / "measured.csv"  # gzip bytes under a plain name, as a download may leave
    path.write_bytes(gzip.compress(b"smiles,logS\nCCO,0.5\nc1ccccc1,-1.5\n"))
    assert read_table(path)["logS"].tolist() == [0.5, -1.5]
    assert read_data(path).table["smiles"].tolist() == ["CCO", "c1ccccc1"]
    assert [r.text for r in records(path)] == ["CCO", "c1ccccc1"]
    plain = tmp_path / "plain.csv.gz"  # and a plain file named .gz
    plain.write_bytes(b"smiles,logS\nCCN,1.0\n")
    assert read_table(plain)["smiles"].tolist() == ["CCN"]


def test_a_header_naming_a_column_twice_is_refused_by_every_reader_with_the_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from chemgraph.data import read_table
    from chemgraph.data.reactions import reaction_ids, reaction_records

    table = tmp_path / "twice.csv"
    table.write_text("smiles,logS,id,logS\nCCO,0.5,a,9.9\n")
    message = r"twice.csv: the header names 'logS' \(columns 2, 4\) more than once"
    with pytest.raises(ValueError, match=message):
        read_table(table)  # train, transfer (pandas would read the second as 'logS.1')
    with pytest.raises(ValueError, match=message):
        records(table, label_columns=["logS"])  # featurize, predict, qc (the first one)
    parquet = tmp_path / "twice.parquet"
    pq.write_table(pa.table([["CCO"], [1.0], [2.0]], names=["smiles", "y", "y"]), parquet)
    for read in (read_table, records):
        with pytest.raises(ValueError, match=r"names 'y' \(columns 2, 3\) more than once"):
            read(parquet)
    reactions = tmp_path / "reactions.csv"
    reactions.write_text("id,reaction,id\nr1,CCO.CC(=O)O>>,x\n")
    for read in (reaction_ids, lambda path: list(reaction_records(path))):
        with pytest.raises(ValueError, match=r"names 'id' \(columns 1, 3\) more than once"):
            read(reactions)


def test_bytes_that_are_not_utf8_are_an_error_naming_their_record_never_replaced(tmp_path):
    """Two Latin-1 ids that differ in one accented letter must not become the same id: the
    record is refused, saying where the bytes are, and shown with them escaped."""
    from chemgraph.data import read_table
    from chemgraph.data.datasets import read_data
    from chemgraph.data.reactions import reaction_ids, reaction_records

    smi = tmp_path / "latin1.smi"
    smi.write_bytes(b"CCO caf\xe9\nCCN caf\xe8\nCC plain\n")
    got = records(smi)
    assert [r.id for r in got] == ["caf\\xe9", "caf\\xe8", "plain"]
    assert got[0].error.startswith("not valid UTF-8: byte 0xe9 in line 1 ('CCO caf\\xe9')")
    assert got[1].error.startswith("not valid UTF-8: byte 0xe8 in line 2")
    assert got[2].error is None

    table = tmp_path / "latin1.csv"
    table.write_bytes(b"smiles,id,logS\nCCO,ok,1\nCCN,caf\xe9,2\nCC,caf\xe8,3\n")
    got = records(table)
    assert [r.id for r in got] == ["ok", "caf\\xe9", "caf\\xe8"]
    assert got[1].error.startswith("not valid UTF-8: byte 0xe9 in column 'id' ('caf\\xe9');")
    with pytest.raises(ValueError) as refused:
        read_table(table)
    assert str(refused.value).startswith(
        f"{table}: row 1 (line 3): not valid UTF-8: byte 0xe9 in column 'id' ('caf\\xe9'); "
        "convert the file to UTF-8"
    )
    assert str(refused.value).endswith("(2 rows hold such bytes: 1, 2)")

    ethanol = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO")).encode()
    sdf = tmp_path / "latin1.sdf"
    sdf.write_bytes(
        b"caf\xe9" + ethanol + b"$$$$\n"  # the title line
        + b"clean" + ethanol + b">  <name>\nna\xefve\n\n$$$$\n"  # an SD property
        + b"clean" + ethanol + b">  <name>\nplain\n\n$$$$\n"
    )  # fmt: skip
    got = records(sdf, label_columns=["name"])
    assert got[0].id == "caf\\xe9"
    assert got[0].error.startswith("not valid UTF-8: byte 0xe9 in the SDF title (line 1)")
    assert got[1].error.startswith("not valid UTF-8: byte 0xef in SD property <name> (line 12)")
    assert got[1].labels == ("na\\xefve",) and got[2].error is None
    source = read_data(sdf, smiles_column="smiles")  # chemgraph train's reading of an SDF
    assert source.rows.tolist() == [2] and source.table["name"].tolist() == ["plain"]
    assert source.rejected["row"].tolist() == [0, 1]
    assert source.rejected["reason"].str.startswith("not valid UTF-8: byte 0x").all()

    reactions = tmp_path / "latin1.csv"
    reactions.write_bytes(b"id,reaction\nx\xe9,CCO.CC(=O)O>>\nok,CCO.CC(=O)O>>\n")
    (first, second) = list(reaction_records(reactions))
    assert first[2].startswith("not valid UTF-8: byte 0xe9 in column 'id'") and second[2] is None
    assert reaction_ids(reactions) == {0: "x\\xe9", 1: "ok"}
