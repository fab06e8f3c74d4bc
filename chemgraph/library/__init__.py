"""The streaming record pipeline of a compound library, shared by the library jobs.

``chemgraph featurize``, ``predict``, ``fingerprint`` and ``qc`` (:mod:`chemgraph.jobs`) read a
library in shards of records, run each shard in worker processes and keep one resumable output
folder; this package is that pipeline, so that no job imports another. Layer: below
:mod:`chemgraph.jobs`, beside :mod:`chemgraph.reactions` (neither imports the other), above
:mod:`chemgraph.train` (docs/architecture.md, "Layers").

* :mod:`~chemgraph.library.records`: one record -> molecule -> features (the steps, the
  :class:`~chemgraph.library.records.FeaturizeOptions`, rejection reasons and their
  categories, the rejected row of a record).
* :mod:`~chemgraph.library.workers`: the local worker pool with heartbeats and per-record time
  limits (forkserver), and Dask.
* :mod:`~chemgraph.library.output`: the output folder: shard parts, manifest, resume,
  ``rejected.csv``, duplicate ids, the counts and the summary table's lines.
* :mod:`~chemgraph.library.progress`: the progress of records: a bar on a terminal, plain
  lines in a log file.
* :mod:`~chemgraph.library.runner`: every shard of a job run once (complete ones kept on
  resume), by the job's workers, with the progress.
* :mod:`~chemgraph.library.featurize`: :func:`~chemgraph.library.featurize.featurize_library`,
  a library file into graph shards and feature tables (``chemgraph featurize``, and ``predict``
  and ``fingerprint`` for a file input).
* :mod:`~chemgraph.library.training_set`: a featurize folder read back as the training set of
  ``chemgraph train -i FOLDER``.
* :mod:`~chemgraph.library.scoring`: :class:`~chemgraph.library.scoring.LibraryRun` and
  :func:`~chemgraph.library.scoring.shard_table`, the shards of a library scored by a model
  into one output (``predict``, ``fingerprint``).

Modules are imported by their own names: this package imports nothing, so that the worker
processes (which preload :mod:`~chemgraph.library.workers`) import neither DGL nor pandas.
"""
