"""Featurize a compound library into graph shards and feature tables (``chemgraph featurize``).

The job is :class:`FeaturizeOptions` -> :func:`featurize_library`, then :func:`summary_table`;
both live in the library pipeline (:mod:`chemgraph.library`: :func:`chemgraph.library.featurize.
featurize_library`, :class:`chemgraph.library.records.FeaturizeOptions`), which ``chemgraph
predict`` and ``chemgraph fingerprint`` also run on a file input, and are importable from here.

Output folder::

    manifest.json                 input sha256, options, chemgraph version, counts, status
    graphs/shard-NNNNN.bin        the shard's graphs, compact (chemgraph.graphs.load_shard)
    features/shard-NNNNN.parquet  id, row, input (the record as given), canonical SMILES,
                                  fingerprints, named descriptors,
                                  label columns (float64; ``chemgraph train --data FOLDER``)
    rejected.csv                  row, id, input, reason (every record that was not featurized)
    parts/shard-NNNNN.json        per-shard counts; written last, it marks the shard complete
    parts/shard-NNNNN.csv         per-shard rejected records (concatenated into rejected.csv)

``overwrite`` (``--overwrite``) removes these (:data:`chemgraph.library.featurize.OUTPUTS`)
from an earlier run's folder before writing, and leaves every other file there.

Every record of the input is accounted for: the manifest's counts satisfy
``read == featurized + rejected`` (``read``: records with content), and ``blank`` counts the
blank records (whitespace only) once: they are neither featurized nor in ``rejected.csv``. Ids
used by more than one record are counted with examples (``counts["duplicate_ids"]``). ``row``
is the record's 0-based index in the file as :mod:`chemgraph.data.readers` defines it per
format (blank records included).

Each shard is a pure function of its records and the options, so the output does not depend on
the number of workers or on whether the run was resumed. Every file is written to a temporary
name and renamed. Every file, graph shards included (:mod:`chemgraph.graphs.shards`), is
byte-identical between runs of the same input and options, so a file's sha256 can key a cache.

Slow records. Local runs watch every record's steps in their worker processes and reject a
record that exceeds ``record_timeout`` or crashes its worker (:mod:`chemgraph.library.workers`).
Progress and interrupts: :mod:`chemgraph.library.featurize`.
"""

from __future__ import annotations

from typing import Any

from chemgraph.library.featurize import OUTPUTS as OUTPUTS
from chemgraph.library.featurize import FeaturizeInterrupted as FeaturizeInterrupted
from chemgraph.library.featurize import featurize_library as featurize_library
from chemgraph.library.output import summary_lines
from chemgraph.library.records import FeaturizeOptions as FeaturizeOptions

__all__ = ["summary_table"]


def summary_table(manifest: dict[str, Any]) -> str:
    """The end-of-run summary of :func:`featurize_library`'s manifest: read, blank,
    featurized, rejected by reason, duplicate ids."""
    counts = manifest["counts"]
    lines = summary_lines(counts, "featurized")
    duplicates = counts["duplicate_ids"]
    if duplicates["ids"]:
        examples = ", ".join(
            f"{e['id']!r} (rows {', '.join(map(str, e['rows']))})" for e in duplicates["examples"]
        )
        lines.append(
            f"duplicate ids {duplicates['ids']:,} ({duplicates['records']:,} records reuse an "
            f"earlier record's id), e.g. {examples}"
        )
    return "\n".join(lines)
