"""Reaction outcomes below the jobs: what ``chemgraph react`` and the reaction recipes share.

* :mod:`~chemgraph.reactions.predictions`: :class:`~chemgraph.reactions.predictions.
  ReactionPrediction` (ranked products of one reaction), top-k metrics, the prediction frame
  and the table of ``chemgraph react --input``, the same for the GRAT translator's beam search
  and the reaction-centre model.
* :mod:`~chemgraph.reactions.reaction_centre`: the reaction-centre model's prediction,
  evaluation and checkpoints (Jin et al. 2017, WLN/WLDN); ``chemgraph react``'s default
  decoder. No Lightning.
* :mod:`~chemgraph.reactions.reaction_centre_calibration`: its calibrated probabilities and
  the "no confident product" threshold, both fitted on held-out reactions. No Lightning.
* :mod:`~chemgraph.reactions.reaction_centre_training`: its training (scorer, ranker, then
  calibration; the ``reaction_centre`` recipe).
* :mod:`~chemgraph.reactions.translator_prediction`: a GRAT translator's beam search
  (:func:`~chemgraph.reactions.translator_prediction.predict_reactions`, and the table of
  ``chemgraph react --input``: :func:`~chemgraph.reactions.translator_prediction.predict_file`);
  ``chemgraph react --decoder generate`` and the ``reaction_outcome`` recipe's evaluation. No
  Lightning.
* :mod:`~chemgraph.reactions.translator_training`: training a GRAT translator (the
  ``reaction_outcome`` recipe), whose checkpoints ``chemgraph react --decoder generate`` reads.

Training imports Lightning, prediction does not (docs/architecture.md, "Layers"), so
``chemgraph react`` starts without it.

Layer: below :mod:`chemgraph.jobs`, beside :mod:`chemgraph.library` (neither imports the
other), above :mod:`chemgraph.train` (docs/architecture.md, "Layers"). Modules are imported by
their own names: this package imports nothing.
"""
