"""Reaction outcomes below the jobs: what ``chemgraph react`` and the reaction recipes share.

* :mod:`~chemgraph.reactions.predictions`: :class:`~chemgraph.reactions.predictions.
  ReactionPrediction` (ranked products of one reaction), top-k metrics, the prediction frame
  and the table of ``chemgraph react --input``, the same for the GRAT translator's beam search
  and the reaction-centre model.
* :mod:`~chemgraph.reactions.reaction_centre`: the reaction-centre model's training (three
  stages), prediction, evaluation and checkpoints (Jin et al. 2017, WLN/WLDN); ``chemgraph
  react``'s default decoder and the ``reaction_centre`` recipe.

Layer: below :mod:`chemgraph.jobs`, beside :mod:`chemgraph.library` (neither imports the
other), above :mod:`chemgraph.train` (docs/architecture.md, "Layers"). Modules are imported by
their own names: this package imports nothing.
"""
