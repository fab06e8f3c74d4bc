"""Atom maps for reactions recorded without them, by rxnmapper.

rxnmapper: Schwaller, Hoover, Reymond, Strobelt and Laino 2021, "Extraction of organic chemistry
grammar from unsupervised learning of chemical reactions", Sci. Adv. 7, eabe4166
(doi:10.1126/sciadv.abe4166), https://github.com/rxn4chemistry/rxnmapper: the attention of a
transformer trained without supervision on reaction SMILES gives the map; its confidence is the
product of the attention probabilities of the chosen atom pairs (1 = certain).

rxnmapper is an optional dependency (``pip install 'chemgraph[mapping]'``), imported only when a
reaction needs a map. Its output writes reagents into the reactant field
(``reactants.reagents>>products``), which is how the reaction-centre model reads them anyway.
Its transformer reads at most 512 tokens; it refuses longer reactions, and near that length
its attention may pair atoms wrongly, so every map it gives is checked (:func:`map_problem`)
and an implausible one is answered as a failure with the reason, never accepted silently.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rdkit import Chem, rdBase
from tqdm.auto import tqdm

from chemgraph.errors import ChemgraphError

__all__ = [
    "AtomMap",
    "AtomMapperMissingError",
    "has_product_atom_maps",
    "map_problem",
    "map_reactions",
]

_ATOM_MAP = re.compile(r":\d+\]")


class AtomMapperMissingError(ChemgraphError):
    """A file holds unmapped reactions and rxnmapper is not installed."""


@dataclass(frozen=True)
class AtomMap:
    """rxnmapper's answer for one reaction.

    Attributes:
        mapped: the atom-mapped reaction SMILES (``reactants>>products``), None when rxnmapper
            failed (an implausible map is kept here, with its ``error``).
        confidence: rxnmapper's confidence in ``[0, 1]``; NaN when it failed.
        error: why it failed (rxnmapper's message, or why its map is implausible:
            :func:`map_problem`), None when it did not.
    """

    mapped: str | None
    confidence: float
    error: str | None = None


def has_product_atom_maps(text: str) -> bool:
    """Whether the product field of ``reactants>reagents>products`` carries atom-map numbers
    (``[CH3:1]``); an aromatic bond ``c:c`` is not one. A text without two ``>`` has none."""
    fields = text.split(">")
    return len(fields) == 3 and bool(_ATOM_MAP.search(fields[2]))


def map_problem(mapped: str) -> str | None:
    """Why an atom-mapped reaction SMILES (``reactants>reagents>products``) cannot be a true
    map, or None: a field RDKit cannot read, a map number on two atoms of one side (a
    reactant atom mapped twice), or a product atom whose map number no reactant atom carries
    or one of another element (atoms are conserved: a map pairs each product atom with
    itself). Hydrogens count by element too (``[H:3]``); unmapped atoms are not checked.
    """
    fields = mapped.split(">")
    if len(fields) != 3:
        return f"{mapped!r} is not reactants>reagents>products"
    sides = {}
    for name, text in (("reactant", ".".join(f for f in fields[:2] if f)), ("product", fields[2])):
        with rdBase.BlockLogs():
            mol = Chem.MolFromSmiles(text, sanitize=False) if text else None
        if mol is None:
            return f"its {name} field {text!r} does not parse"
        numbers = [(a.GetAtomMapNum(), a.GetSymbol()) for a in mol.GetAtoms() if a.GetAtomMapNum()]
        twice = sorted(n for n, count in Counter(n for n, _ in numbers).items() if count > 1)
        if twice:
            return f"map number {twice[0]} is on {name} atoms twice"
        sides[name] = dict(numbers)
    for number, element in sides["product"].items():
        reactant = sides["reactant"].get(number)
        if reactant is None:
            return f"product atom {element}:{number} is mapped to no reactant atom"
        if reactant != element:
            return f"product atom {element}:{number} is mapped to a reactant {reactant}"
    return None


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
        that fail get an ``error``; so does a map that :func:`map_problem` finds implausible.

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
        return [_checked(a["mapped_rxn"], float(a["confidence"])) for a in answers]

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


def _checked(mapped: str, confidence: float) -> AtomMap:
    """rxnmapper's answer, with an ``error`` when its map is implausible (:func:`map_problem`)."""
    problem = map_problem(mapped)
    if problem is None:
        return AtomMap(mapped, confidence)
    return AtomMap(
        mapped, confidence, f"rxnmapper's atom map is implausible (confidence "
        f"{confidence:.3f}): {problem}",
    )  # fmt: skip
