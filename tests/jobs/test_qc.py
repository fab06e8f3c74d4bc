"""``chemgraph qc``: GFN2-xTB labels of a small library, checked against direct calls; every
record accounted for; a resumed run keeps finished shards; SDF geometries used as given."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rdkit import Chem

from chemgraph.chem import mol_from_smiles
from chemgraph.cli import main
from chemgraph.data.readers import REJECTED_COLUMNS, Record
from chemgraph.errors import ConfigError
from chemgraph.jobs.qc import LABEL_COLUMNS, QCOptions, label_library, label_record
from chemgraph.library.records import lowest_energy_conformer
from chemgraph.qc import QCMolecule, xtb_frontier_orbitals

pytest.importorskip("tblite")

LIBRARY = [
    ("O", "water"),
    ("CCO", "ethanol"),
    ("not_a_smiles", "bad"),
    ("[CH3]", "methyl radical"),
    ("", "empty"),
    ("[U]", "uranium"),
    ("CC(=O)[O-]", "acetate"),
]
OPTIONS = QCOptions(conformers=2, id_column="name")


def _library(tmp_path):
    path = tmp_path / "library.csv"
    pd.DataFrame(LIBRARY, columns=["smiles", "name"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("qc")
    manifest = label_library(
        _library(tmp_path), tmp_path / "out", OPTIONS, shard_size=3, progress=False
    )
    return tmp_path, manifest


def _direct(smiles: str) -> tuple[float, float]:
    """HOMO and LUMO (eV) of the job's recipe, step by step: ETKDGv3 + MMFF94 (lowest of two,
    seed 0), then tblite."""
    mol, _ = lowest_energy_conformer(mol_from_smiles(smiles), 2, 0)
    molecule = QCMolecule(
        "direct",
        tuple(a.GetSymbol() for a in mol.GetAtoms()),
        mol.GetConformer().GetPositions(),
        charge=Chem.GetFormalCharge(mol),
    )
    result = xtb_frontier_orbitals(molecule)
    return result.homo_ev, result.lumo_ev


def test_labels_equal_direct_xtb_calls_and_every_record_is_accounted_for(run):
    tmp_path, manifest = run
    labels = pd.read_csv(tmp_path / "out" / "labels.csv")
    assert list(labels.columns) == list(LABEL_COLUMNS)
    assert labels["row"].tolist() == [0, 1, 6]
    assert labels["id"].tolist() == ["water", "ethanol", "acetate"]
    assert labels["smiles"].tolist() == ["O", "CCO", "CC(=O)[O-]"]
    for smiles, (_, label) in zip(["O", "CCO", "CC(=O)[O-]"], labels.iterrows()):
        homo, lumo = _direct(smiles)
        assert label["homo_ev"] == pytest.approx(homo, abs=1e-9)
        assert label["lumo_ev"] == pytest.approx(lumo, abs=1e-9)
    np.testing.assert_allclose(labels["gap_ev"], labels["lumo_ev"] - labels["homo_ev"])
    assert set(labels["method"]) == {"GFN2-xTB"} and set(labels["geometry"]) == {"ETKDGv3+MMFF94"}
    # the water value against the tblite number at the experimental geometry (-12.177 eV): the
    # MMFF94 geometry moves it by about 0.01 eV
    assert labels["homo_ev"][0] == pytest.approx(-12.177, abs=0.05)
    rejected = pd.read_csv(tmp_path / "out" / "rejected.csv", keep_default_na=False)
    assert list(rejected.columns) == list(REJECTED_COLUMNS)
    assert rejected["row"].tolist() == [2, 3, 4, 5]
    reasons = dict(zip(rejected["id"], rejected["reason"]))
    assert reasons["bad"].startswith("SMILES parse error")
    assert reasons["methyl radical"].startswith("open shell (1 radical electron(s)")
    assert reasons["empty"] == "empty SMILES"
    assert reasons["uranium"].startswith("unsupported element(s) U")
    counts = manifest["counts"]
    assert counts["read"] + counts["blank"] == counts["labelled"] + counts["rejected"] == 7
    assert counts["rejected_by_reason"] == {
        "SMILES syntax": 1, "empty record": 1, "open shell": 1, "unsupported element": 1,
    }  # fmt: skip
    saved = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert saved["status"] == "complete" and saved["counts"] == counts


def test_a_resumed_run_keeps_finished_shards_and_computes_the_others(run, tmp_path):
    first, _ = run
    out = tmp_path / "out"
    label_library(_library(first), out, OPTIONS, shard_size=3, progress=False)
    # shard 0 (rows 0-2) stays complete, with a marker the job would never compute; shard 1
    # (rows 3-5) looks killed before its counts were written
    part = out / "parts" / "shard-00000.parquet"
    table = pq.read_table(part)
    marked = table.set_column(
        table.schema.get_field_index("homo_ev"), "homo_ev", pa.array([99.0] * len(table))
    )
    pq.write_table(marked, part)
    (out / "parts" / "shard-00001.json").unlink()
    (out / "parts" / "shard-00001.parquet").unlink()
    manifest = label_library(_library(first), out, OPTIONS, shard_size=3, resume=True,
                             progress=False)  # fmt: skip
    labels = pd.read_csv(out / "labels.csv")
    assert labels["homo_ev"][:2].tolist() == [99.0, 99.0]  # not computed again
    expected = pd.read_csv(first / "out" / "labels.csv")
    pd.testing.assert_frame_equal(labels.iloc[2:], expected.iloc[2:])
    assert pd.read_csv(out / "rejected.csv")["row"].tolist() == [2, 3, 4, 5]
    assert manifest["counts"]["labelled"] == 3
    with pytest.raises(ValueError, match="holds an earlier run; pass --resume"):
        label_library(_library(first), out, OPTIONS, shard_size=3, progress=False)
    with pytest.raises(ValueError, match=r"cannot resume the run in .*(options|conformers)"):
        label_library(_library(first), out, QCOptions(conformers=3, id_column="name"),
                      shard_size=3, resume=True, progress=False)  # fmt: skip


def _sdf_record(mol: Chem.Mol) -> Record:
    return Record(0, "m", Chem.MolToMolBlock(mol) + "$$$$\n", kind="molblock")


def test_an_sdf_geometry_is_used_as_given():
    half, r = np.deg2rad(104.52) / 2, 0.9572  # H2O, experimental: r(OH) 0.9572 Å, 104.52°
    positions = [[0, 0, 0], [r * np.sin(half), 0, r * np.cos(half)],
                 [-r * np.sin(half), 0, r * np.cos(half)]]  # fmt: skip
    water = QCMolecule("water", ("O", "H", "H"), positions)
    mol = Chem.RWMol()
    for symbol in water.elements:
        mol.AddAtom(Chem.Atom(symbol))
    mol.AddBond(0, 1, Chem.BondType.SINGLE)
    mol.AddBond(0, 2, Chem.BondType.SINGLE)
    conformer = Chem.Conformer(3)
    for index, position in enumerate(water.positions):
        conformer.SetAtomPosition(index, position.tolist())
    conformer.Set3D(True)
    mol.AddConformer(conformer)
    Chem.SanitizeMol(mol)
    row = label_record(_sdf_record(mol), OPTIONS)
    # the coordinates as the molfile holds them: Å with 4 decimals
    as_written = QCMolecule("water", water.elements, np.round(water.positions, 4))
    direct = xtb_frontier_orbitals(as_written)
    assert row["geometry"] == "input"
    assert row["homo_ev"] == pytest.approx(direct.homo_ev, abs=1e-9)
    assert row["lumo_ev"] == pytest.approx(direct.lumo_ev, abs=1e-9)
    assert row["homo_ev"] == pytest.approx(-12.177, abs=1e-3)  # tblite 0.8.0, qc/xtb.py
    heavy = Chem.RemoveHs(mol.GetMol())  # 3D oxygen alone: its hydrogens are missing
    with pytest.raises(ValueError, match="3D SDF record without all its hydrogens \\(2 implicit"):
        label_record(_sdf_record(heavy), OPTIONS)
    flat = Chem.MolFromSmiles("CCO")  # no coordinates: a conformer is embedded
    assert label_record(_sdf_record(flat), OPTIONS)["geometry"] == "ETKDGv3+MMFF94"


def test_an_scf_that_does_not_converge_is_a_reject_not_a_label():
    with pytest.raises(ValueError, match="SCF not converged: .* in 1 cycles"):
        label_record(Record(0, "phenol", "c1ccccc1O"), QCOptions(conformers=1, max_cycle=1))


def test_the_command_writes_parquet_with_two_workers(tmp_path, capsys):
    code = main([
        "qc", str(_library(tmp_path)), "--output", str(tmp_path / "out"), "--id-column", "name",
        "--conformers", "2", "--format", "parquet", "--workers", "2", "--shard-size", "2",
        "--quiet",
    ])  # fmt: skip
    assert code == 0
    assert "labelled             3" in capsys.readouterr().out
    labels = pd.read_parquet(tmp_path / "out" / "labels.parquet")
    assert labels["row"].tolist() == [0, 1, 6]  # input order, whichever worker finished first
    homo, lumo = _direct("CCO")
    assert labels["homo_ev"][1] == pytest.approx(homo, abs=1e-9)
    assert not (tmp_path / "out" / "labels.csv").exists()


def test_ctrl_c_stops_the_workers_keeps_finished_shards_and_resume_completes(tmp_path):
    import psutil

    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "OCC(=O)O"]
    path = tmp_path / "lib.smi"
    path.write_text("".join(f"{smiles[i % len(smiles)]} m{i}\n" for i in range(120)))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "chemgraph", "qc", str(path), "--output", str(out),
               "--conformers", "1", "--shard-size", "4", "--workers", "2", "--quiet"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120  # a test that fails rather than hangs
    while not (out / "parts" / "shard-00000.json").exists():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    children = psutil.Process(process.pid).children(recursive=True)
    os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    stdout, stderr = process.communicate(timeout=120)
    _, alive = psutil.wait_procs(children, timeout=120)
    assert alive == []
    assert process.returncode == 128 + signal.SIGINT
    assert stdout == "" and "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("chemgraph qc: stopped by SIGINT;")
    assert line.endswith("run the same command with --resume to continue")
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert not (out / "parts" / "shard-00029.json").exists()  # it really was interrupted
    kept = {  # the complete shards' labels, which resuming must not compute again
        p.name: p.stat().st_mtime_ns
        for p in (out / "parts").glob("*.parquet")
        if p.with_suffix(".json").exists()
    }
    assert kept
    manifest = label_library(path, out, QCOptions(conformers=1), workers=2, shard_size=4,
                             resume=True, progress=False)  # fmt: skip
    assert manifest["counts"]["labelled"] == 120
    assert pd.read_csv(out / "labels.csv")["row"].tolist() == list(range(120))
    assert {n: (out / "parts" / n).stat().st_mtime_ns for n in kept} == kept


def test_a_molecule_without_a_conformer_is_a_reject():
    with pytest.raises(ValueError, match="ETKDGv3 could not embed a conformer"):
        label_record(Record(0, "cyclopropyne", "C1#CC1"), QCOptions(conformers=1))


def test_a_blank_line_is_counted_once_as_blank_not_also_rejected(tmp_path, capsys):
    library = tmp_path / "library.smi"
    library.write_text("O water\n\n[U] uranium\n")
    out = tmp_path / "out"
    assert main(["qc", str(library), "--output", str(out), "--conformers", "1", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    assert (counts["read"], counts["blank"], counts["labelled"], counts["rejected"]) == (2, 1, 1, 1)
    assert counts["rejected_by_reason"] == {"unsupported element": 1}
    rejected = pd.read_csv(out / "rejected.csv", keep_default_na=False)
    assert rejected["row"].tolist() == [2]  # the uranium; not the blank row 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[:4] == [
        "read                 2", "blank                1", "labelled             1",
        "rejected             1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("smiles", "reason"),
    [
        ("[Fe+2]", "transition metal or lanthanide Fe: open d/f shells"),  # 24 electrons: even
        ("Cl[Pt](Cl)(N)N", "transition metal or lanthanide Pt: "),
        ("[Eu+3]", "transition metal or lanthanide Eu: "),
        ("[Na+].[Cl-]", "several fragments (2, e.g. a salt or a solvate)"),
        ("CC(=O)[O-].[Na+]", "several fragments (2, "),
    ],
)
def test_what_a_closed_shell_singlet_cannot_describe_is_rejected(smiles, reason):
    with pytest.raises(ValueError) as error:
        label_record(Record(0, "r", smiles), QCOptions(conformers=1))
    assert str(error.value).startswith(reason)


def test_a_degenerate_homo_and_lumo_is_rejected(monkeypatch):
    from chemgraph.jobs import qc
    from chemgraph.qc.result import FrontierOrbitals

    def degenerate(molecule, method, max_cycle):
        return FrontierOrbitals(-25.405, -25.405 + 2.8e-14, -25.405, -25.405, method, "", "", 0.0)

    monkeypatch.setattr(qc, "xtb_frontier_orbitals", degenerate)
    with pytest.raises(ValueError, match=r"^degenerate HOMO and LUMO \(gap 2\.8e-14 eV"):
        label_record(Record(0, "water", "O"), QCOptions(conformers=1))


def test_the_geometry_column_says_what_was_done():
    options = QCOptions(conformers=1)
    chloride = label_record(Record(0, "chloride", "[Cl-]"), options)
    assert chloride["geometry"] == "single atom"  # nothing embedded or relaxed
    assert chloride["lumo_ev"] - chloride["homo_ev"] > 1.0  # a closed-shell 18-electron ion
    borane = label_record(Record(1, "trimethylborane", "CB(C)C"), options)
    assert borane["geometry"] == "ETKDGv3 (no MMFF94 parameters)"  # MMFF94 has no boron
    assert label_record(Record(2, "water", "O"), options)["geometry"] == "ETKDGv3+MMFF94"


def test_every_reject_reason_is_listed_in_the_help_and_the_guide(capsys):
    from pathlib import Path

    from chemgraph.jobs.qc import REJECT_REASONS

    with pytest.raises(SystemExit):
        main(["qc", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "transfer.md"
    text = guide.read_text().replace("`", "").replace("&lt;", "<").replace("&gt;", ">")
    text = " ".join(text.split())
    for reason in REJECT_REASONS:
        assert reason in shown, reason
        assert reason in text, reason


def test_a_ctrl_c_before_the_job_handles_signals_is_one_line_from_main(
    tmp_path, monkeypatch, capsys
):
    """A Ctrl-C while qc still imports its libraries: main's one line (no output yet, so no
    resume hint) and 130, as for every command."""
    from chemgraph.jobs import qc

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(qc, "label_library", interrupted)
    out = tmp_path / "out"
    assert main(["qc", "-i", str(_library(tmp_path)), "-o", str(out)]) == 128 + signal.SIGINT
    assert capsys.readouterr().err == "chemgraph qc: interrupted (Ctrl-C)\n"


def test_overwrite_replaces_an_earlier_run_and_leaves_other_files(run, tmp_path, capsys):
    first, _ = run
    out = tmp_path / "out"
    label_library(_library(first), out, OPTIONS, shard_size=3, progress=False)
    assert (out / "parts" / "shard-00002.json").exists() and (out / "labels.csv").exists()
    (out / "notes.txt").write_text("mine")
    argv = ["qc", "-i", str(_library(first)), "-o", str(out), "--conformers", "2",
            "--id-column", "name", "--shard-size", "7", "--format", "parquet",
            "--quiet"]  # fmt: skip
    assert main(argv) == 2
    assert "holds an earlier run; pass --resume to continue it, or pass --overwrite" in (
        capsys.readouterr().err
    )
    with pytest.raises(ConfigError, match="give one of them"):
        label_library(_library(first), out, OPTIONS, resume=True, overwrite=True)
    assert main([*argv, "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "labels.parquet", "manifest.json", "notes.txt", "parts", "rejected.csv",
    ]  # fmt: skip
    assert sorted(p.name for p in (out / "parts").iterdir()) == [
        "shard-00000.csv", "shard-00000.json", "shard-00000.parquet",
    ]  # fmt: skip
    assert (out / "notes.txt").read_text() == "mine"
    labels = pd.read_parquet(out / "labels.parquet")
    pd.testing.assert_frame_equal(labels, pd.read_csv(first / "out" / "labels.csv"))
    assert json.loads((out / "manifest.json").read_text())["shard_size"] == 7
