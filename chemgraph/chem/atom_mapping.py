"""Atom maps for reactions recorded without them, by rxnmapper.

rxnmapper: Schwaller, Hoover, Reymond, Strobelt and Laino 2021, "Extraction of organic chemistry
grammar from unsupervised learning of chemical reactions", Sci. Adv. 7, eabe4166
(doi:10.1126/sciadv.abe4166), https://github.com/rxn4chemistry/rxnmapper: the attention of a
transformer trained without supervision on reaction SMILES gives the map; its confidence is the
product of the attention probabilities of the chosen atom pairs (1 = certain).

rxnmapper is an optional dependency (``pip install 'chemgraph[mapping]'``), imported only when a
reaction needs a map. Its output writes reagents into the reactant field
(``reactants.reagents>>products``), which is how the reaction-centre model reads them anyway.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from chemgraph.errors import ChemgraphError

__all__ = ["AtomMap", "AtomMapperMissingError", "has_product_atom_maps", "map_reactions"]

_ATOM_MAP = re.compile(r":\d+\]")


class AtomMapperMissingError(ChemgraphError):
    """A file holds unmapped reactions and rxnmapper is not installed."""


@dataclass(frozen=True)
class AtomMap:
    """rxnmapper's answer for one reaction.

    Attributes:
        mapped: the atom-mapped reaction SMILES (``reactants>>products``), None when it failed.
        confidence: rxnmapper's confidence in ``[0, 1]``; NaN when it failed.
        error: why it failed (rxnmapper's message), None when it did not.
    """

    mapped: str | None
    confidence: float
    error: str | None = None


def has_product_atom_maps(text: str) -> bool:
    """Whether the product field of ``reactants>reagents>products`` carries atom-map numbers
    (``[CH3:1]``); an aromatic bond ``c:c`` is not one. A text without two ``>`` has none."""
    fields = text.split(">")
    return len(fields) == 3 and bool(_ATOM_MAP.search(fields[2]))


def map_reactions(
    texts: Sequence[str], batch_size: int = 16, progress: bool = True
) -> list[AtomMap]:
    """Atom-map reaction SMILES with rxnmapper (on the CPU, or CUDA when torch sees one).

    Args:
        texts: ``reactants>reagents>products`` reaction SMILES, products given.
        batch_size: reactions per rxnmapper call.
        progress: a progress bar (reactions mapped / total).

    Returns:
        One :class:`AtomMap` per text, in order. A batch that rxnmapper refuses (e.g. a reaction
        longer than its 512 tokens) is mapped one reaction at a time, so only the reactions
        that fail get an ``error``.

    Raises:
        AtomMapperMissingError: rxnmapper is not installed (the message says how to install it).
    """
    if not texts:
        return []
    try:
        with warnings.catch_warnings():  # rxnmapper's own import of pkg_resources
            warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
            from rxnmapper import RXNMapper
    except ImportError as error:
        raise AtomMapperMissingError(
            f"{len(texts)} reactions have no atom maps and rxnmapper, which maps them, is not "
            "installed: pip install 'chemgraph[mapping]' (or give atom-mapped reactions)"
        ) from error
    mapper = RXNMapper()

    def one_batch(batch: Sequence[str]) -> list[AtomMap]:
        answers = mapper.get_attention_guided_atom_maps(list(batch))
        return [AtomMap(a["mapped_rxn"], float(a["confidence"])) for a in answers]

    maps: list[AtomMap] = []
    with tqdm(total=len(texts), desc="atom mapping", unit="reaction", disable=not progress) as bar:
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            try:
                maps.extend(one_batch(batch))
            except Exception:  # rxnmapper raises plain exceptions; find the reactions at fault
                for text in batch:
                    try:
                        maps.extend(one_batch([text]))
                    except Exception as error:  # noqa: BLE001 - reported with the reaction
                        maps.append(AtomMap(None, float("nan"), f"rxnmapper: {error}"))
            bar.update(len(batch))
    return maps
