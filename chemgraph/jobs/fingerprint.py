"""Learned fingerprints: each molecule's readout from a trained checkpoint (what ``chemgraph
fingerprint`` runs).

The embedding of a molecule is the model's readout, ``model.embed(batch)``
(:class:`chemgraph.models.PropertyModel`; ``model.head`` of it gives the prediction): the mean of
ESA's pooled seeds, Graphormer's [VNode] state, GRAT's CLS token, the mean of GMoE/GCN/GIN's
last atom states. It is read by the data path of ``chemgraph predict``
(:class:`chemgraph.library.scoring.LibraryRun`): a library file is featurized with the checkpoint's
preset and molecule preparation, or a ``chemgraph featurize`` folder made with them is used as
it is; shards are embedded one at a time (in this process, in ``workers`` processes, or as
dask.distributed tasks), each written to a part of ``<output>.partial/embeddings/`` atomically,
so memory does not grow with the library and an interrupted run is resumed.

Output, a parquet file with one row per input record, in input order, bad records included::

    row        int64                        0-based record of the input
    id         string                       the record's id (id column, .smi name, SDF title)
    input      string                       the record as given (its SMILES as written, an SDF
                                            title line), kept for every record (as predict's)
    smiles     string                       canonical SMILES; "" when not featurized
    embedding  fixed_size_list<float32>[D]  the readout; null when not featurized
    error      string                       null when embedded, else why not featurized

One ``embedding`` column of fixed-size lists, not ``D`` float columns: the width is part of the
schema (``pyarrow.parquet.read_schema(path).field("embedding").type.list_size``), the embedded
records' vectors are one ``float32 [N, D]`` array in row order without a copy
(``table["embedding"].combine_chunks().flatten().to_numpy().reshape(-1, D)``; pandas reads one
numpy array per row: ``np.stack(frame.embedding[frame.error.isna()])``), and a record that was
not featurized is one null, not ``D`` NaNs that a NaN embedding could be mistaken for.

An ensemble is refused: its members are trained from independent random initialisations, so
coordinate ``d`` of one member's readout has nothing to do with coordinate ``d`` of another's,
and neither a mean nor a common column of them means anything; embed with one member's
``best.ckpt`` (``runs/ens/model-0/best.ckpt``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from chemgraph._files import atomic_path, write_parquet_atomically
from chemgraph.errors import ConfigError
from chemgraph.library.scoring import LibraryRun, shard_table
from chemgraph.train.ensemble import Ensemble, checkpoint_files
from chemgraph.train.inference import embed_graphs, embedding_width, model_inputs

__all__ = ["FingerprintOptions", "FingerprintSummary", "fingerprint_table"]


@dataclass(frozen=True)
class FingerprintOptions:
    """What :func:`fingerprint_table` reads and how it batches; checks itself when built, so
    the Python API and ``chemgraph fingerprint`` refuse the same values with the same message.

    Attributes:
        smiles_column, id_column: a table's SMILES and id columns (SDF: the id property);
            default: as ``chemgraph predict``. Only for a file.
        batch_size: molecules per forward pass (at least 1); the embeddings do not depend on
            it beyond float32 rounding (padding is masked).

    Raises:
        ConfigError: ``batch_size`` below 1.
    """

    smiles_column: str | None = None
    id_column: str | None = None
    batch_size: int = 256

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"--batch-size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True)
class FingerprintSummary:
    """What :func:`fingerprint_table` wrote.

    Attributes:
        records: input records (rows of the output).
        embedded: records with an embedding.
        failed: records with an ``error`` (``records - embedded``).
        width: ``D``, the embedding's length.
        output: the parquet file.
    """

    records: int
    embedded: int
    failed: int
    width: int
    output: Path


def fingerprint_table(
    checkpoint: str | Path | Sequence[str | Path],
    input_path: str | Path,
    output_path: str | Path,
    options: FingerprintOptions | None = None,
    workers: int = 1,
    shard_size: int = 5_000,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    device: str | torch.device | None = None,
    dask_scheduler: str | None = None,
) -> FingerprintSummary:
    """Write the learned embedding of every record of a library (the module docstring's table).

    Args:
        checkpoint: one model: ``best.ckpt`` of ``chemgraph train`` or its run folder.
        input_path: a library file (``.smi``, ``.sdf``, ``.csv``, ``.tsv``, ``.parquet``,
            optionally ``.gz``) or a ``chemgraph featurize`` folder made with the checkpoint's
            preset and molecule preparation.
        output_path: the ``.parquet`` file to write.
        options: columns and batch size (:class:`FingerprintOptions`).
        workers, shard_size, resume, overwrite, progress, device, dask_scheduler: as in
            :func:`chemgraph.jobs.predict.predict_table` (the same work folder rules, under
            ``<output>.partial/``).

    Returns:
        The counts, the embedding width and the file written.

    Raises:
        ConfigError: an output not ending in ``.parquet``, an ensemble, a label-augmented
            model (:class:`chemgraph.models.LabelAugmentation`), or see
            :class:`~chemgraph.library.scoring.LibraryRun`.
        FileNotFoundError: no such checkpoint or input.
        ValueError: as :func:`chemgraph.jobs.predict.predict_table`.
        chemgraph._interrupts.Interrupted: SIGINT or SIGTERM; complete shards are kept for
            ``resume``, and the message says where and how to continue.
    """
    options = FingerprintOptions() if options is None else options
    output = Path(output_path)
    if not output.name.lower().endswith(".parquet"):
        raise ConfigError(f"--output must be a .parquet file, got {output}")
    run = LibraryRun(
        input_path, output, options.smiles_column, options.id_column, workers, shard_size,
        resume=resume, overwrite=overwrite, progress=progress, dask_scheduler=dask_scheduler,
        parts="embeddings",
    )  # fmt: skip
    files = checkpoint_files(checkpoint)
    if len(files) > 1:
        raise ConfigError(
            f"{len(files)} checkpoints ({', '.join(map(str, files))}): fingerprint takes one "
            "model. The members of an ensemble are trained from independent random starts, so "
            "their embeddings share no coordinates and have no meaningful mean; pass one "
            "member's best.ckpt (e.g. model-0/best.ckpt) and run once per member if needed"
        )
    model = Ensemble(files, device)
    reads = getattr(model.modules[0], "low_fidelity_inputs", [])
    if reads:
        raise ConfigError(
            f"{files[0]} is a label-augmented model of chemgraph transfer: its readout ends "
            f"with each molecule's low-fidelity values {reads}, so it is not a function of the "
            "molecule alone; fingerprint a checkpoint of another strategy"
        )
    width = embedding_width(model.modules[0])
    schema = pa.schema(
        [("row", pa.int64()), ("id", pa.string()), ("input", pa.string()), ("smiles", pa.string()),
         ("embedding", pa.list_(pa.float32(), width)), ("error", pa.string())]
    )  # fmt: skip
    with run.keeping_work():  # while featurizing or embedding: the work folder is kept
        run.start(model, {"command": "fingerprint"})
        run.score(_ShardEmbeddings(run, model, schema, options.batch_size), "embed")
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = atomic_path(output)
    records = embedded = 0
    with pq.ParquetWriter(temporary, schema) as writer:
        for table in run.tables():
            writer.write_table(table)
            records += len(table)
            embedded += table["error"].null_count
    os.replace(temporary, output)
    run.finish()
    return FingerprintSummary(records, embedded, records - embedded, width, output)


class _ShardEmbeddings:
    """``task(shard)`` embeds one shard, writes its part (atomically) and returns its records;
    picklable for worker processes and dask (the model pickles as its checkpoint file)."""

    def __init__(self, run: LibraryRun, model: Ensemble, schema: pa.Schema, batch_size: int):
        self.part, self.folder, self.model = run.part, run.folder, model
        self.schema, self.batch_size = schema, batch_size

    def __call__(self, shard: int) -> int:
        module = self.model.modules[0]

        def embeddings(graphs: Any, features: pa.Table) -> dict[str, Any]:
            values = embed_graphs(module, *model_inputs(module, graphs), self.batch_size)
            return {"embedding": list(values)}

        frame = shard_table(self.folder, shard, embeddings)
        field = self.schema.field("embedding")
        matrix = np.zeros((len(frame), field.type.list_size), np.float32)  # zeros: masked
        embedded = frame["error"].isna().to_numpy()
        if embedded.any():
            matrix[embedded] = np.stack(frame["embedding"][embedded])
        vectors = pa.FixedSizeListArray.from_arrays(
            pa.array(matrix.ravel()), field.type.list_size, mask=pa.array(~embedded)
        )
        position = self.schema.get_field_index("embedding")
        table = pa.Table.from_pandas(
            frame.drop(columns="embedding"), self.schema.remove(position), preserve_index=False
        ).add_column(position, field, vectors)
        write_parquet_atomically(table, self.part(shard))
        return len(table)
