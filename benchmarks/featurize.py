"""Library featurisation speed: chemgraph's graph featurizer beside RDKit and peers.

Single process, same SMILES (MOSES, from ``pip install --no-deps molsets``: 1.58M real
drug-like SMILES), molecules per second for:

- RDKit parse alone (``Chem.MolFromSmiles``);
- the floor: RDKit parse + one pass reading the atom and bond properties the canonical preset
  uses, a plain Python loop over the atoms and bonds;
- chemgraph: parse + :func:`chemgraph.graphs.mols_to_graphs` per 5,000-molecule shard (what
  ``chemgraph featurize`` computes), and ``chemgraph featurize`` end to end (start-up, reading,
  canonical SMILES, writing shards) with 1 and 2 workers on ``--scaling-rows`` rows;
- dgllife ``smiles_to_bigraph`` with its canonical atom/bond featurizers;
- chemprop v2 ``SimpleMoleculeMolGraphFeaturizer`` (after ``chemprop.utils.make_mol``);
- deepchem ``MolGraphConvFeaturizer(use_edges=True)`` (on fewer molecules: it is slow).

Then the peak resident memory of ``chemgraph featurize`` on a 1M-row input (2 workers), and
the bytes of the graph shards of ``--molecules`` molecules per preset, in 5,000-molecule shards
as ``chemgraph featurize`` writes them: the previous format (``dgl.save_graphs`` of the batched
graph, chemgraph before the compact shards) beside :func:`chemgraph.graphs.save_shard`, whose
shards are checked to load as the graphs saved. Peers are optional: a missing package is
reported as such. Install them with
``pip install dgllife chemprop deepchem && pip install --no-deps molsets``.

``--whole-command`` measures only the floor, the in-memory featurizer and ``chemgraph featurize
--workers 1`` end to end on the same ``--molecules`` SMILES, in CPU time (the command's: the
command, its worker and the worker's forkserver), so that the ratios hold on a busy machine; it
also gives the command's fixed start-up cost and the ratio it extrapolates to at 100k and 1M
rows.

    python benchmarks/featurize.py [--molecules 20000] [--rss-rows 1000000]
    python benchmarks/featurize.py --shard-bytes-only --smiles-csv PATH/moleculenet/HIV.csv
    python benchmarks/featurize.py --whole-command --molecules 40000 --repeats 2 \
        --smiles-csv PATH/moleculenet/HIV.csv
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pandas as pd  # noqa: E402
from rdkit import Chem, RDLogger  # noqa: E402

import chemgraph  # noqa: E402, F401  (before torch: OpenMP settings, DGL shim)
from chemgraph._dgl import dgl  # noqa: E402
from chemgraph.chem import mols_from_smiles  # noqa: E402
from chemgraph.featurize import available_presets, get_preset  # noqa: E402
from chemgraph.graphs import load_shard, mols_to_graphs, save_shard  # noqa: E402

RDLogger.DisableLog("rdApp.*")


def moses_smiles(count: int) -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("moses")
    if spec is None:
        raise SystemExit("MOSES SMILES need: pip install --no-deps molsets")
    path = Path(spec.origin).parent / "dataset" / "data" / "train.csv.gz"
    return pd.read_csv(path, nrows=count)["SMILES"].tolist()


def csv_smiles(path: Path, count: int) -> list[str]:
    """The first ``count`` non-empty SMILES of a CSV's ``smiles`` column."""
    return pd.read_csv(path)["smiles"].dropna().head(count).tolist()


def rate(function, smiles: list[str]) -> float:
    start = time.perf_counter()
    function(smiles)
    return len(smiles) / (time.perf_counter() - start)


def rdkit_parse(smiles):
    return [Chem.MolFromSmiles(s) for s in smiles]


def rdkit_floor(smiles):
    for mol in rdkit_parse(smiles):
        if mol is None:  # a SMILES RDKit rejects (MoleculeNet files hold a few)
            continue
        for a in mol.GetAtoms():
            (a.GetSymbol(), a.GetTotalDegree(), a.GetFormalCharge(), a.GetChiralTag(),
             a.GetTotalNumHs(), a.GetHybridization(), a.GetIsAromatic(), a.IsInRing(),
             a.GetMass())  # fmt: skip
        for b in mol.GetBonds():
            (b.GetBondType(), b.GetIsConjugated(), b.IsInRing(), b.GetStereo(),
             b.GetBeginAtomIdx(), b.GetEndAtomIdx())  # fmt: skip


def chemgraph_graphs(smiles, shard=5_000):
    preset = get_preset("canonical")
    for start in range(0, len(smiles), shard):
        mols = [
            m for m in mols_from_smiles(smiles[start : start + shard]) if isinstance(m, Chem.Mol)
        ]
        mols_to_graphs(mols, preset)


def dgllife_graphs(smiles):
    from dgllife.utils import CanonicalAtomFeaturizer, CanonicalBondFeaturizer, smiles_to_bigraph

    atom, bond = CanonicalAtomFeaturizer(), CanonicalBondFeaturizer()
    for s in smiles:
        smiles_to_bigraph(s, node_featurizer=atom, edge_featurizer=bond)


def chemprop_graphs(smiles):
    from chemprop.featurizers import SimpleMoleculeMolGraphFeaturizer
    from chemprop.utils import make_mol

    featurizer = SimpleMoleculeMolGraphFeaturizer()
    for s in smiles:
        featurizer(make_mol(s, keep_h=False, add_h=False))


def deepchem_graphs(smiles):
    import logging

    logging.getLogger("deepchem").setLevel(logging.ERROR)
    from deepchem.feat import MolGraphConvFeaturizer

    MolGraphConvFeaturizer(use_edges=True).featurize(smiles)


def shard_bytes(
    smiles: list[str], folder: Path, shard: int = 5_000
) -> tuple[int, list[tuple[str, int, int]]]:
    """The molecules of ``smiles`` that RDKit parses and, per preset, ``(preset, bytes before,
    bytes after)`` of their graph shards of ``shard`` molecules."""
    import torch

    mols = [m for m in mols_from_smiles(smiles) if isinstance(m, Chem.Mol)]
    sizes = []
    for preset in available_presets():
        before = after = 0
        for start in range(0, len(mols), shard):
            graph = mols_to_graphs(mols[start : start + shard], get_preset(preset))
            rows = torch.arange(start, start + graph.batch_size)
            labels = {"row": rows, "num_nodes": graph.batch_num_nodes(),
                      "num_edges": graph.batch_num_edges()}  # fmt: skip
            dgl.save_graphs(str(folder / "before.bin"), [graph], labels)
            save_shard(folder / "after.bin", graph, rows)
            graphs, loaded_rows = load_shard(folder / "after.bin")
            expected = dgl.unbatch(graph)
            assert torch.equal(loaded_rows, rows) and len(graphs) == len(expected)
            for a, b in zip(graphs, expected):
                assert all(torch.equal(a.ndata[k], b.ndata[k]) for k in b.ndata)
                assert all(torch.equal(a.edata[k], b.edata[k]) for k in b.edata)
            before += (folder / "before.bin").stat().st_size
            after += (folder / "after.bin").stat().st_size
        sizes.append((preset, before, after))
    return len(mols), sizes


def print_shard_bytes(molecules: int, sizes: list[tuple[str, int, int]], source: str) -> None:
    print(f"graph shards of {molecules:,} molecules ({source}), 5,000 per shard")
    print(f"{'preset':<12}{'before (bytes)':>16}{'after (bytes)':>16}{'ratio':>8}")
    for preset, before, after in sizes:
        print(f"{preset:<12}{before:>16,}{after:>16,}{before / after:>8.1f}")


def cpu_rate(function, smiles: list[str]) -> float:
    """Molecules per second of this process's CPU time (user + system) for ``function``: on a
    machine that other jobs share, CPU time moves far less than the wall clock does."""
    start = time.process_time()
    function(smiles)
    return len(smiles) / (time.process_time() - start)


# Runs a command and waits for every process it started, its workers' forkserver included (a
# child subreaper adopts them when the command exits), then prints the wall seconds, the CPU
# seconds (user + system) of all of them, and the peak RSS (KiB) of the largest one.
_MEASURE = """
import ctypes, os, resource, subprocess, sys, time
try:
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER (Linux)
except (AttributeError, OSError):
    pass
start = time.perf_counter()
subprocess.run(sys.argv[1:], check=True)
wall = time.perf_counter() - start
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""


def cli_run(smiles_file: Path, workers: int, out: Path) -> tuple[float, float, float]:
    """``(wall s, CPU s, peak RSS MiB)`` of ``chemgraph featurize --workers N``: the CPU time
    of the command and of every process it started (its workers and their forkserver, on
    Linux), the RSS of the largest single process."""
    command = [sys.executable, "-m", "chemgraph", "featurize", str(smiles_file), "--output",
               str(out), "--workers", str(workers), "--quiet"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True
    )
    if result.returncode:
        raise SystemExit(result.stderr)
    wall, cpu, peak_kib = result.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu), int(peak_kib) / 1024


def cli_rate(smiles_file: Path, count: int, workers: int, out: Path) -> tuple[float, float]:
    """(mol/s by the wall clock, peak RSS MiB over the command and its workers) of
    ``chemgraph featurize``."""
    wall, _, peak = cli_run(smiles_file, workers, out)
    return count / wall, peak


def whole_command(smiles: list[str], repeats: int) -> None:
    """The floor, ``mols_to_graphs`` in memory and ``chemgraph featurize --workers 1`` end to end
    (start-up, reading, parsing, canonical SMILES, graphs, writing the shards, the parquet
    tables and the report), each in CPU time (the command's: all of its processes) on the same
    SMILES, interleaved ``repeats`` times, the best of each; then the start-up alone (the
    command on a one-row input: the imports of the command and of its worker's forkserver)."""
    best: dict[str, float] = {}
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        library = folder / "library.smi"
        library.write_text("\n".join(smiles) + "\n")
        (folder / "one.smi").write_text(smiles[0] + "\n")
        for repeat in range(repeats):
            for name, function in (("floor", rdkit_floor), ("in memory", chemgraph_graphs)):
                best[name] = max(best.get(name, 0.0), cpu_rate(function, smiles))
            wall, cpu, _ = cli_run(library, 1, folder / f"run{repeat}")
            walls.append(wall)
            best["command"] = max(best.get("command", 0.0), len(smiles) / cpu)
            _, startup, _ = cli_run(folder / "one.smi", 1, folder / f"one{repeat}")
            best["start-up"] = min(best.get("start-up", float("inf")), startup)
    floor = best["floor"]
    print(f"{len(smiles):,} SMILES, CPU time (best of {repeats}), {os.cpu_count()} CPUs")
    print(f"{'':<60}{'mol/s':>9}{'vs floor':>10}")
    for label, name in (
        ("RDKit parse + atom/bond pass (floor)", "floor"),
        ("chemgraph mols_to_graphs (in memory)", "in memory"),
        ("chemgraph featurize --workers 1 (whole command)", "command"),
    ):
        print(f"{label:<60}{best[name]:>9,.0f}{best[name] / floor:>10.2f}")
    startup = best["start-up"]
    per_molecule = 1 / best["command"] - startup / len(smiles)
    print(
        f"whole command: {startup:.1f} CPU s of start-up (a one-row input), then "
        f"{per_molecule * 1e6:,.0f} µs a molecule ({1 / per_molecule / floor:.2f}x the floor); "
        f"wall {min(walls):.1f} s"
    )
    for rows in (100_000, 1_000_000):
        seconds = startup + rows * per_molecule
        print(f"  at {rows:,} rows: {rows / seconds / floor:.2f}x the floor")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--molecules", type=int, default=20_000)
    parser.add_argument("--deepchem-molecules", type=int, default=2_000)
    parser.add_argument("--rss-rows", type=int, default=1_000_000, help="0 skips the RSS run")
    parser.add_argument(
        "--scaling-rows", type=int, default=100_000, help="rows of the 1 vs 2 workers run"
    )
    parser.add_argument(
        "--smiles-csv", type=Path, help="CSV with a smiles column to use instead of MOSES"
    )
    parser.add_argument(
        "--shard-bytes-only", action="store_true", help="measure only the graph shard sizes"
    )
    parser.add_argument(
        "--whole-command",
        action="store_true",
        help="only the floor, the in-memory featurizer and chemgraph featurize --workers 1 on "
        "--molecules SMILES, in CPU time",
    )
    parser.add_argument("--repeats", type=int, default=1, help="--whole-command runs (best of)")
    args = parser.parse_args()

    if args.whole_command:
        smiles = (
            csv_smiles(args.smiles_csv, args.molecules)
            if args.smiles_csv
            else moses_smiles(args.molecules)
        )
        whole_command(smiles, args.repeats)
        return 0

    if args.shard_bytes_only:
        smiles = (
            csv_smiles(args.smiles_csv, args.molecules)
            if args.smiles_csv
            else moses_smiles(args.molecules)
        )
        with tempfile.TemporaryDirectory() as folder:
            molecules, sizes = shard_bytes(smiles, Path(folder))
        print_shard_bytes(molecules, sizes, args.smiles_csv or "MOSES")
        return 0

    count = max(args.molecules, args.rss_rows, args.scaling_rows)
    smiles = csv_smiles(args.smiles_csv, count) if args.smiles_csv else moses_smiles(count)
    sample = smiles[: args.molecules]
    rows = [("RDKit parse alone", rate(rdkit_parse, sample))]
    rows.append(("RDKit parse + atom/bond pass (floor)", rate(rdkit_floor, sample)))
    rows.append(("chemgraph mols_to_graphs (in memory)", rate(chemgraph_graphs, sample)))
    peers = [("dgllife smiles_to_bigraph", dgllife_graphs, sample),
             ("chemprop v2 SimpleMoleculeMolGraphFeaturizer", chemprop_graphs, sample),
             ("deepchem MolGraphConvFeaturizer", deepchem_graphs,
              sample[: args.deepchem_molecules])]  # fmt: skip
    for name, function, subset in peers:
        try:
            rows.append((name, rate(function, subset)))
        except ImportError as error:
            rows.append((f"{name} (not installed: {error.name})", float("nan")))

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        scaling = folder / "scaling.smi"
        scaling.write_text("\n".join(smiles[: args.scaling_rows]) + "\n")
        one, _ = cli_rate(scaling, args.scaling_rows, 1, folder / "one")
        two, _ = cli_rate(scaling, args.scaling_rows, 2, folder / "two")
        rows.append((f"chemgraph featurize {args.scaling_rows:,} rows, 1 worker", one))
        rows.append((f"chemgraph featurize {args.scaling_rows:,} rows, 2 workers", two))
        molecules, sizes = shard_bytes(sample, folder)
        peak = float("nan")
        if args.rss_rows:
            big = folder / "big.smi.gz"
            with gzip.open(big, "wt") as handle:
                handle.write("\n".join(smiles[: args.rss_rows]) + "\n")
            big_rate, peak = cli_rate(big, args.rss_rows, 2, folder / "big")

    floor = rows[1][1]
    by_name = dict(rows)
    ours = by_name["chemgraph mols_to_graphs (in memory)"]
    print(f"{args.molecules:,} MOSES SMILES, one process unless stated, {os.cpu_count()} CPUs")
    print(f"{'featurizer':<52}{'mol/s':>9}{'vs floor':>10}")
    for name, value in rows:
        print(f"{name:<52}{value:>9,.0f}{value / floor:>10.2f}")
    chemprop = by_name.get("chemprop v2 SimpleMoleculeMolGraphFeaturizer", float("nan"))
    dgllife = by_name.get("dgllife smiles_to_bigraph", float("nan"))
    if args.rss_rows:
        print(
            f"chemgraph featurize on {args.rss_rows:,} rows, 2 workers: {big_rate:,.0f} mol/s, "
            f"peak RSS {peak:,.0f} MiB (largest single process)"
        )
    print(
        f"featurize: chemgraph {ours:,.0f} mol/s = {ours / chemprop:.2f}x chemprop v2, "
        f"{ours / dgllife:.2f}x dgllife, {floor / ours:.2f}x below the RDKit floor; "
        f"2 workers {two / one:.2f}x 1 worker"
    )
    print_shard_bytes(molecules, sizes, args.smiles_csv or "MOSES")
    return 0


if __name__ == "__main__":
    sys.exit(main())
