"""Multi-fidelity transfer learning: pretrain on low-fidelity labels, fine-tune on
high-fidelity labels (DFT -> GW, xTB -> DFT, one assay -> another).

Buterez et al. 2024, "An end-to-end attention-based approach for learning on graphs"
(arXiv:2402.10793), section 4.1 and SI 4; the inductive/transductive terms are those of Buterez,
Janet, Kiddle, Oglic and Liò 2024, "Transfer learning with graph neural networks for improved
molecular property prediction in the multi-fidelity setting" (Nat. Commun. 15, 1517,
doi:10.1038/s41467-024-45566-8).

Three strategies, the rows of Buterez et al. 2024 Table 5:

* ``high_fidelity_only`` ("GW only"): train on the high-fidelity training set alone.
* ``inductive``: pretrain on the low-fidelity labels of every molecule *except* the
  high-fidelity test molecules, then fine-tune.
* ``transductive``: pretrain on the low-fidelity labels of every molecule, the high-fidelity
  test molecules included (their low-fidelity labels only), then fine-tune.

A wing beside :mod:`chemgraph.library` and :mod:`chemgraph.reactions` (docs/architecture.md,
"Layers"): ``chemgraph transfer`` (:mod:`chemgraph.jobs.transfer`: the user's table, the split,
the output folder) and the ``dft_to_gw`` recipe run it. One module per concern, imported by
its own name:

* :mod:`~chemgraph.transfer.config`: :class:`~chemgraph.transfer.config.TransferConfig`, the
  strategies, the model groups of a run.
* :mod:`~chemgraph.transfer.chains`: one chain (strategy x seed x target group): pretraining,
  fine-tuning (Δ-learning), its predictions; the stacked Δ-learning model of a chain.
* :mod:`~chemgraph.transfer.pool`: the worker processes that train chains side by side.
* :mod:`~chemgraph.transfer.report`: the results table, margins and claim, seed ensembles,
  the unlabelled molecules' predictions.
* :mod:`~chemgraph.transfer.run`: a whole run (every chain, the baselines, every output file),
  the label curve, and the job ``chemgraph transfer`` and the recipe share.
"""
