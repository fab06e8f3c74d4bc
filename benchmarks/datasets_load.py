"""Dataset loaders on every real file in ../shared/data: rows, rejects, first and second load.

For each file the registered loader reads it from a folder holding only that file (so the
loader is the one ``load_dataset`` uses), featurises it with the ``canonical`` preset (QM9 and
OC20 also as radius graphs: that is what their coordinates are for) into a fresh
``CHEMGRAPH_HOME``, and loads it again:

- parsed / rejected: records in the table and records rejected (parse or featurisation), with
  the rejected rows grouped by reason (atom numbers in RDKit messages folded to ``#``);
- first load: parse + featurise + cache write (seconds); second load: a new loader object,
  cache hit (source checksum + shard read).

    python benchmarks/datasets_load.py [--data-dir ../shared/data] [--only hiv,deepchem_format]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import chemgraph  # noqa: E402, F401  (OpenMP settings, DGL shim)
from chemgraph.data.datasets import get_dataset  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# file (relative to the data folder), dataset, extra files to place beside it, options
FILES: list[tuple[str, str, tuple[str, ...], dict]] = [
    ("moleculenet/delaney-processed.csv", "esol", (), {}),
    ("moleculenet/SAMPL.csv", "freesolv", (), {}),
    ("moleculenet/Lipophilicity.csv", "lipophilicity", (), {}),
    ("moleculenet/BBBP.csv", "bbbp", (), {}),
    ("moleculenet/bace.csv", "bace", (), {}),
    ("moleculenet/HIV.csv", "hiv", (), {}),
    ("moleculenet/tox21.csv.gz", "tox21", (), {}),
    ("moleculenet/clintox.csv", "clintox", (), {}),
    ("qm9/qm9pack_subset10k.csv.gz", "qm9", (), {}),
    ("qm9/qm9pack_subset1k.extxyz.gz", "qm9", (), {}),
    ("qm9/deepchem_format/qm9_head10.csv", "qm9", (), {}),
    ("qm9/deepchem_format/qm9_mini.sdf", "qm9", ("qm9/deepchem_format/qm9_mini.sdf.csv",), {}),
    ("qm9/deepchem_format/gdb9_small.sdf", "qm9", (), {}),
    ("uspto/uspto_mit_test.txt.gz", "uspto_mit", (), {"splits": ["test"]}),
    ("uspto/uspto_mit_valid.txt.gz", "uspto_mit", (), {"splits": ["valid"]}),
    ("uspto/uspto_mit_test_human.txt", "uspto_mit", (), {"splits": ["test_human"]}),
    ("uspto/uspto50k_test_raw.csv.gz", "uspto_50k", (), {"splits": ["test"]}),
    ("uspto/uspto50k_test_class.csv.gz", "uspto_50k", (), {"splits": ["test"]}),
    ("oc20/oc20_s2ef_frame_atoms.json", "oc20", (), {}),
]
GRAPHS = {"qm9": [{}, {"geometry": "radius", "cutoff": 5.0, "num_basis": 16}],
          "oc20": [{"cutoff": 6.0, "num_basis": 50}]}  # fmt: skip


def _reasons(rejected) -> str:
    if len(rejected) == 0:
        return "-"
    folded = (
        rejected["reason"]
        .astype(str)
        .map(lambda r: re.sub(r"# \d+", "# #", re.sub(r"atoms?: [\d ]+", "atoms: #", r))[:58])
    )
    return "; ".join(f"{n}x {r}" for r, n in folded.value_counts().items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument(
        "--only", default="", help="comma-separated dataset names or file-name parts"
    )
    args = parser.parse_args(argv)
    if not args.data_dir.is_dir():
        print(f"no data folder {args.data_dir}", file=sys.stderr)
        return 1
    only = {s for s in args.only.split(",") if s}
    header = (f"{'file':<38} {'dataset':<13} {'graphs':<14} {'parsed':>7} {'rejected':>8} "
              f"{'first s':>8} {'second s':>8}  rejected by reason")  # fmt: skip
    print(header)
    print("-" * len(header))
    total_first = total_second = 0.0
    files = 0
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["CHEMGRAPH_HOME"] = str(Path(scratch) / "home")
        for number, (relative, name, extra, options) in enumerate(FILES):
            if only and name not in only and not any(part in relative for part in only):
                continue
            root = Path(scratch) / f"root{number}"
            root.mkdir()
            for item in (relative, *extra):
                (root / Path(item).name).symlink_to(args.data_dir / item)
            for graph_options in GRAPHS.get(name, [{}]):
                start = time.perf_counter()
                dataset = get_dataset(name, root, download=False, **options)
                if graph_options.get("geometry") == "radius" and (
                    "positions" not in dataset.parse().table
                ):
                    continue  # DeepChem qm9.csv has no coordinates
                graphs, rejected = dataset.featurize("canonical", **graph_options)
                first = time.perf_counter() - start
                start = time.perf_counter()
                again, _ = get_dataset(name, root, download=False, **options).featurize(
                    "canonical", **graph_options
                )
                second = time.perf_counter() - start
                assert len(again) == len(graphs)
                total_first, total_second = total_first + first, total_second + second
                files += 1
                kind = graph_options.get("geometry", "radius" if name == "oc20" else "bonds")
                print(f"{Path(relative).name:<38} {name:<13} {kind:<14} {len(graphs):>7} "
                      f"{len(rejected):>8} {first:>8.2f} {second:>8.2f}  {_reasons(rejected)}",
                      flush=True)  # fmt: skip
    print(f"summary: {files} loads of {len(FILES)} real files; first loads {total_first:.1f} s, "
          f"second (cached) loads {total_second:.1f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
