"""Scoring a library: ``chemgraph predict`` from graph shards against from SMILES.

On the first ``--molecules`` SMILES of MoleculeNet HIV (``../shared/data``, read where it is;
the library file is written to a temporary folder):

1. a default ESA (``chemgraph train``'s settings: hidden 64, 4 heads, ``SMMSPS``, readout
   ``seeds+sum``) is trained for one epoch on ESOL, so that its checkpoint holds the training
   fingerprints of a real run (the weights do not change the speed);
2. ``chemgraph featurize`` writes the library's graph shards (``--workers``);
3. each checkpoint (that ESA, and the 2-target fixture ESA of ``tests/fixtures/checkpoints``,
   hidden 8, no fingerprints) predicts the library end to end through
   :func:`chemgraph.jobs.predict.predict_table`: from the featurize folder (graph shards used
   as they are) in one process and in ``--workers`` scoring processes, and from the ``.smi``
   file (featurized first, then scored, ``--workers`` processes each); the script checks that
   all give the same predictions and similarities to the training set;
4. the parts of a prediction alone, on the same molecules, in this process: the model's
   forward passes (:func:`chemgraph.jobs.predict.predict_graphs` on each shard's batched
   graph, batches of 256 sorted by size) and the applicability domain (maximum Tanimoto
   similarity to the ESOL training molecules);
5. the Tanimoto similarity of random pairs of library molecules (all pairs of the first 2,000),
   which :data:`chemgraph.data.applicability.DEFAULT_SIMILARITY_THRESHOLD` is set against.

    OMP_NUM_THREADS=2 nice -n 10 python benchmarks/predict_throughput.py [--molecules 20000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

import chemgraph  # noqa: E402, F401  (before torch use: OpenMP settings, DGL shim)
from chemgraph.chem import mols_from_smiles  # noqa: E402
from chemgraph.data.applicability import FINGERPRINT, TrainingFingerprints  # noqa: E402
from chemgraph.graphs import load_shard_batch  # noqa: E402
from chemgraph.jobs.featurize import FeaturizeOptions, featurize_library  # noqa: E402
from chemgraph.jobs.predict import predict_table  # noqa: E402
from chemgraph.jobs.train import train  # noqa: E402
from chemgraph.models import get_model_spec  # noqa: E402
from chemgraph.train.checkpoint import load_checkpoint  # noqa: E402
from chemgraph.train.config import TrainingConfig  # noqa: E402
from chemgraph.train.inference import predict_graphs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "checkpoints" / "esa.ckpt"
ESOL_TARGET = "measured log solubility in mols per litre"


def timed(function, *args, **kwargs):
    """``(result, wall seconds)``."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def train_default_esa(data: Path, out: Path) -> Path:
    config = TrainingConfig(
        data=str(data / "moleculenet" / "delaney-processed.csv"),
        target_columns=[ESOL_TARGET],
        out=str(out),
        max_epochs=1,
        progress=False,
    )
    train(config, overwrite=True)
    return out / "best.ckpt"


def parts_alone(checkpoint: Path, folder: Path) -> tuple[float, float, int]:
    """Molecules per second of the forward passes alone and of the applicability domain alone,
    over every graph shard of ``folder``; and the number of training molecules."""
    module = load_checkpoint(checkpoint, kind="property")
    spec = get_model_spec(module.hparams.model)
    builder = spec.batch_builder(module.model.config)
    stored = module.hparams.get("train_fingerprints")
    fingerprints = TrainingFingerprints.from_dict(stored) if stored else None
    forward = similarity = 0.0
    count = 0
    for shard in sorted((folder / "graphs").glob("shard-*.bin")):
        graphs, _ = load_shard_batch(shard)
        features = pd.read_parquet(folder / "features" / f"{shard.stem}.parquet")
        forward += timed(predict_graphs, module, graphs, builder, 256)[1]
        bits = FINGERPRINT.featurize(mols_from_smiles(features["smiles"].tolist()))
        if fingerprints is not None:
            similarity += timed(fingerprints.max_similarity, bits)[1]
        count += graphs.batch_size
    domain = count / similarity if similarity else float("nan")
    return count / forward, domain, len(fingerprints) if fingerprints else 0


def random_pair_similarity(smiles: list[str]) -> np.ndarray:
    """Tanimoto similarity of every pair of ``smiles`` (upper triangle)."""
    mols = [m for m in mols_from_smiles(smiles) if not isinstance(m, Exception)]
    bits = torch.from_numpy(FINGERPRINT.featurize(mols).astype(np.float32))
    common = bits @ bits.T
    counts = bits.sum(dim=1)
    union = counts[:, None] + counts[None, :] - common
    similarity = (common / union.clamp(min=1)).numpy()
    return similarity[np.triu_indices(len(mols), k=1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--molecules", type=int, default=20_000)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")

    smiles = pd.read_csv(args.data / "moleculenet" / "HIV.csv")["smiles"].head(args.molecules)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        library = scratch / "library.smi"
        library.write_text("".join(f"{s}\n" for s in smiles))
        checkpoint, seconds = timed(train_default_esa, args.data, scratch / "esa")
        print(f"default ESA trained 1 epoch on ESOL in {seconds:.0f} s")
        folder = scratch / "lib"
        manifest, seconds = timed(
            featurize_library, library, folder, FeaturizeOptions(), workers=args.workers,
            progress=False,
        )  # fmt: skip
        records = manifest["counts"]["read"] + manifest["counts"]["blank"]
        print(
            f"featurize {records:,} records ({manifest['counts']['featurized']:,} molecules), "
            f"{args.workers} workers: {seconds:.1f} s, {records / seconds:,.0f} mol/s"
        )
        rows = []
        for name, path in (
            ("default ESA (hidden 64)", checkpoint),
            ("fixture ESA (hidden 8)", FIXTURE),
        ):
            _, one_process = timed(
                predict_table, path, folder, scratch / "a.parquet", progress=False
            )  # fmt: skip
            _, shards = timed(
                predict_table, path, folder, scratch / "b.parquet", workers=args.workers,
                progress=False,
            )  # fmt: skip
            _, from_smiles = timed(
                predict_table, path, library, scratch / "c.parquet", workers=args.workers,
                progress=False,
            )  # fmt: skip
            tables = [pd.read_parquet(scratch / f"{x}.parquet") for x in "abc"]
            # the similarity too: from shards it is computed from the canonical SMILES
            # (canonical_smiles_fingerprints), from SMILES featurize stores the fingerprints
            columns = [c for c in tables[0].columns if c.endswith("_pred")]
            columns.append("max_similarity_to_train")
            difference = max(
                np.nanmax(np.abs(t[columns].to_numpy() - tables[0][columns].to_numpy()))
                for t in tables[1:]
            )
            forward, domain, training = parts_alone(path, folder)
            rows.append((name, records / one_process, records / shards, records / from_smiles,
                         from_smiles / shards, forward, domain, training, difference))  # fmt: skip
            for output in "abc":
                (scratch / f"{output}.parquet").unlink()
        similarity = random_pair_similarity(smiles.head(2_000).tolist())

    print()
    workers = args.workers
    print(f"| checkpoint | from shards, 1 process (mol/s) | from shards, {workers} workers | "
          f"from SMILES, {workers} workers | shards / SMILES | forward passes alone, 1 process "
          "| domain alone (mol/s; training molecules) | max difference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, one, shards, smiles_rate, ratio, forward, domain, training, difference in rows:
        domain_text = f"{domain:,.0f} ({training:,})" if training else "— (none stored)"
        print(f"| {name} | {one:,.0f} | {shards:,.0f} | {smiles_rate:,.0f} | {ratio:.2f}× | "
              f"{forward:,.0f} | {domain_text} | {difference:.1e} |")  # fmt: skip
    percentiles = np.percentile(similarity, [50, 90, 95, 99, 99.9])
    print(
        f"\nTanimoto of {len(similarity):,} random pairs (first 2,000 molecules): "
        + ", ".join(f"p{p:g} {v:.3f}" for p, v in zip([50, 90, 95, 99, 99.9], percentiles))
        + f"; share >= 0.3: {(similarity >= 0.3).mean():.2%}"
    )


if __name__ == "__main__":
    main()
