"""Jobs: one module per ``chemgraph`` command, each one function with one options object.

Layer rule: imports from every layer below (the wings :mod:`chemgraph.library`,
:mod:`chemgraph.reactions` and :mod:`chemgraph.transfer`, train … chem); never from
:mod:`chemgraph.recipes` or :mod:`chemgraph.cli`, and no job imports another: what two jobs
share lives below them (the library pipeline of ``featurize``, ``predict``, ``fingerprint`` and
``qc`` in :mod:`chemgraph.library`; the reaction-outcome types, metrics, the reaction-centre
model and the GRAT translator's beam search of ``react`` and the recipes in
:mod:`chemgraph.reactions`; multi-fidelity transfer learning of ``transfer`` and the
``dft_to_gw`` recipe in :mod:`chemgraph.transfer`).
``make lint`` checks both (import-linter's ``layers`` and ``independence`` contracts,
``pyproject.toml``).

* :mod:`chemgraph.jobs.train`: ``chemgraph train`` (:func:`~chemgraph.jobs.train.train`,
  :func:`~chemgraph.jobs.train.train_ensemble`; featurize, split, fit, evaluate, write).
* :mod:`chemgraph.jobs.predict`: ``chemgraph predict``
  (:func:`~chemgraph.jobs.predict.predict_table`: files or featurize folders, streamed by shard,
  ensembles, applicability domain, resumable, on dask).
* :mod:`chemgraph.jobs.fingerprint`: ``chemgraph fingerprint``
  (:func:`~chemgraph.jobs.fingerprint.fingerprint_table`: each molecule's learned embedding,
  the model's readout, to parquet; through the library's
  :class:`~chemgraph.library.scoring.LibraryRun`, as predict).
* :mod:`chemgraph.jobs.featurize`: ``chemgraph featurize``
  (:func:`~chemgraph.library.featurize.featurize_library`: a library into graph shards and
  feature tables, in worker processes, resumable).
* :mod:`chemgraph.jobs.qc`: ``chemgraph qc`` (:func:`~chemgraph.jobs.qc.label_library`:
  GFN2-xTB HOMO, LUMO and gap of a library, in the library's worker processes, resumable).
* :mod:`chemgraph.jobs.react`: ``chemgraph react`` (:func:`~chemgraph.jobs.react.react`,
  :func:`~chemgraph.jobs.react.react_file`), with the reaction-centre model
  (:mod:`chemgraph.reactions.reaction_centre`, the default) or the GRAT translator's beam
  search (:mod:`chemgraph.reactions.translator_prediction`, ``--decoder generate``; its
  training is :mod:`chemgraph.reactions.translator_training`, the reaction_outcome recipe).
* :mod:`chemgraph.jobs.transfer`: ``chemgraph transfer``, multi-fidelity transfer learning on
  the user's own table (reading it, the split, the output folder); the run itself is the
  transfer wing, :mod:`chemgraph.transfer` (also the ``dft_to_gw`` recipe's).

Every job enforces the output-folder rule itself (:func:`chemgraph._output.check_output_folder`),
so the Python API and the command behave the same. Modules are imported by their own names
(``from chemgraph.jobs.featurize import featurize_library``): this package imports nothing, so
``chemgraph featurize`` does not pay for torch.
"""
