"""Recipes: complete experiments, each a configuration plus ``run()``.

A recipe module holds ``DESCRIPTION``, ``default_config()`` and ``run(config=None, seeds=None,
out=...)`` (and, where the run has settings of its own, their
:class:`chemgraph.train.config.RunConfig`); the YAML profiles live in the top-level
``recipes/NAME/`` folder (:mod:`chemgraph.recipes.registry`). The engines they run are in the
layers below: :mod:`chemgraph.transfer`, :mod:`chemgraph.jobs.train`,
:mod:`chemgraph.reactions`, :mod:`chemgraph.data.reactions`.

Layer rule: imports from every layer below (chem … data, train); never from
:mod:`chemgraph.cli`. The ``chemgraph`` command imports only :mod:`chemgraph.recipes.registry`.

* ``dft_to_gw``: DFT -> GW transfer learning of HOMO/LUMO with 3D ESA (Buterez et al. 2024,
  "An end-to-end attention-based approach for learning on graphs", arXiv:2402.10793).
* ``reaction_outcome``: GRAT reaction outcome prediction on USPTO-MIT (Yoo et al. 2020,
  "Graph-Aware Transformer: Is Attention All Graphs Need?", arXiv:2006.05213).
* ``qm9_gap`` (:mod:`chemgraph.recipes.qm9_gap_demo`, ``make demo-gap``): ESA on the HOMO-LUMO
  gap of 10,000 QM9 molecules, offline.
"""
