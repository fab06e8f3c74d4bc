"""Reaction SMILES: split into reactants, reagents and products; atom maps; canonical SMILES.

A reaction SMILES is ``reactants>reagents>products`` with the molecules of each field joined by
``'.'`` (Daylight's reaction SMILES; the reagent field may be empty, as in ``A.B>>C``). The two
arrows are the ``'>'`` characters that do not end a dative bond ``'->'`` (RDKit writes potassium
benzoate as ``O=C([O-]->[K+])c1ccccc1``; the other direction, ``'<-'``, and bracket atoms hold no
``'>'``). Datasets such as USPTO-MIT (Jin et al., NeurIPS 2017) and USPTO-50K (Schneider et al., J.
Chem. Inf. Model. 2016) write every molecule on the left of ``>>`` and carry atom maps
(``[CH3:1]``); the role of a molecule follows from the maps: a *reactant* contributes at least one
mapped atom to a product, a *reagent* (solvent, catalyst, base ...) contributes none. This is the
split of the Molecular Transformer's "separated" USPTO-MIT task (Schwaller et al., ACS Cent. Sci.
2019).

Model inputs are canonical SMILES without atom maps (RDKit ``MolToSmiles``, isomeric); the
mapped input is kept on :class:`Reaction` for analysis (reaction centres, edit labels).

Public API
----------
- :class:`ReactionParseError` — ``ValueError`` with a ``reason: str`` attribute.
- :class:`Reaction` — frozen record: ``reactants``, ``reagents``, ``products`` (canonical SMILES
  tuples) and ``mapped`` (the input).
- :func:`parse_reaction_smiles` — one reaction SMILES to a :class:`Reaction`, or raise.
- :func:`split_reaction_smiles` — the three field texts of a reaction SMILES, or raise.
- :func:`strip_atom_maps`, :func:`atom_map_numbers`, :func:`canonical_smiles` — helpers on RDKit
  molecules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rdkit import Chem

from chemgraph.chem.iteration import atom_list
from chemgraph.chem.parse import MoleculeParseError, mols_from_smiles
from chemgraph.errors import ChemgraphError

__all__ = [
    "Reaction",
    "ReactionParseError",
    "atom_map_numbers",
    "canonical_smiles",
    "parse_field",
    "parse_reaction_smiles",
    "split_reaction_smiles",
    "strip_atom_maps",
]


class ReactionParseError(ChemgraphError, ValueError):
    """A reaction SMILES could not be split or one of its molecules could not be parsed.

    Attributes:
        reason: human-readable cause, e.g. ``"expected 'reactants>reagents>products' (2 '>'
            separators), found 1"``, ``"empty molecule in the reactants field"`` or
            ``"product 1 of 1: SMILES parse error: ..."`` (RDKit's own message). Never empty.
        record: the offending reaction SMILES, or ``None`` when there is none to show.
    """

    def __init__(self, reason: str, record: str | None = None) -> None:
        self.reason = reason or "unknown reaction parse error"
        self.record = record
        if record is None:
            super().__init__(self.reason)
        else:
            super().__init__(f"cannot parse reaction {record!r}: {self.reason}")

    def __reduce__(self) -> tuple[type[ReactionParseError], tuple[str, str | None]]:
        # Keep ``reason`` and ``record`` across pickling (DataLoader worker processes).
        return type(self), (self.reason, self.record)


@dataclass(frozen=True)
class Reaction:
    """One reaction, its molecules as canonical SMILES without atom maps.

    Attributes:
        reactants: canonical SMILES, one per molecule, in input order.
        reagents: canonical SMILES of the molecules that contribute no mapped atom to a product
            (see :func:`parse_reaction_smiles`), in input order; may be empty.
        products: canonical SMILES, one per molecule, in input order.
        mapped: the reaction SMILES as given (atom maps kept; surrounding whitespace and any
            text after the first inner whitespace, such as USPTO-MIT edit labels, removed).
    """

    reactants: tuple[str, ...]
    reagents: tuple[str, ...]
    products: tuple[str, ...]
    mapped: str

    def to_smiles(self) -> str:
        """``"reactants>reagents>products"``, molecules of a field joined by ``'.'``.

        Example: ``Reaction(("CC(=O)O", "OCC"), (), ("CCOC(C)=O",), ...).to_smiles()`` is
        ``"CC(=O)O.OCC>>CCOC(C)=O"``.
        """
        return ">".join(".".join(field) for field in (self.reactants, self.reagents, self.products))


def strip_atom_maps(mol: Chem.Mol) -> Chem.Mol:
    """A copy of ``mol`` with every atom-map number set to 0 (the input is not changed)."""
    out = Chem.Mol(mol)
    for atom in atom_list(out):
        atom.SetAtomMapNum(0)
    return out


def atom_map_numbers(mol: Chem.Mol) -> frozenset[int]:
    """The non-zero atom-map numbers of ``mol`` (``[CH3:7]`` gives 7)."""
    return frozenset(n for atom in atom_list(mol) if (n := atom.GetAtomMapNum()))


def canonical_smiles(mol: Chem.Mol) -> str:
    """RDKit canonical isomeric SMILES of ``mol`` with atom maps removed.

    Two inputs that differ only in atom order or atom-map numbers give the same string
    (``"[CH3:2][OH:1]"`` and ``"OC"`` both give ``"CO"``). Stereochemistry is perceived again
    without the maps: a centre that only the map numbers made distinct loses its flag, and the
    ring centres of a 1,4-disubstituted cyclohexane, which the maps make chiral, are written as
    for the unmapped molecule, so the result reads back to itself.
    """
    out = strip_atom_maps(mol)
    Chem.AssignStereochemistry(out, cleanIt=True, force=True)
    return Chem.MolToSmiles(out)


_FIELDS = ("reactants", "reagents", "products")


def parse_field(text: str, field: str, record: str) -> list[Chem.Mol]:
    """The molecules of one ``'.'``-joined field, in order; an empty field gives ``[]``.

    Raises:
        ReactionParseError: an empty molecule, or one RDKit rejects: ``"<field> molecule i of
            n ('<SMILES>'): <reason of chemgraph.chem.parse.mol_from_smiles>"``.
    """
    if not text:
        return []
    parts = text.split(".")
    if any(not part for part in parts):
        raise ReactionParseError(f"empty molecule in the {field} field", record)
    mols = mols_from_smiles(parts)
    for i, mol in enumerate(mols):
        if isinstance(mol, MoleculeParseError):
            raise ReactionParseError(
                f"{field} molecule {i + 1} of {len(parts)} ({parts[i]!r}): {mol.reason}", record
            )
    return mols


# A CXSMILES block with an AND ("&1:3") or OR ("o1:3") enhanced stereo group.
_ENHANCED_STEREO = re.compile(r"\|(?:[^|]*[,|])?[&o]\d+:")

# A reaction arrow: a '>' that does not end a dative bond '->' (bracket atoms hold no '>').
_ARROW = re.compile(r"(?<!-)>")


def split_reaction_smiles(text: str) -> tuple[str, str, str]:
    """The reactant, reagent and product fields of a reaction SMILES, as written.

    Only reaction arrows split: a ``'>'`` that ends a dative bond ``'->'`` belongs to its molecule
    (``"O->[Mg+2]<-O.CCBr>>CCO"`` gives ``("O->[Mg+2]<-O.CCBr", "", "CCO")``). Surrounding
    whitespace is ignored, and so is text after the first inner whitespace (a name, CXSMILES
    extensions ``|...|``, USPTO-MIT edit labels), as RDKit does for SMILES, except a CXSMILES
    block with enhanced stereo groups (``&1:...``, ``o1:...``): without it the molecules' stereo
    tags would read as absolute, so such a reaction is rejected.

    Args:
        text: ``"reactants>reagents>products"``; any field may be empty here.

    Returns:
        ``(reactants, reagents, products)``, each the ``'.'``-joined SMILES of its field
        (``""`` when empty); ``">".join(...)`` of them is the reaction SMILES without the
        surrounding whitespace and trailing text.

    Raises:
        ReactionParseError: ``text`` is not a str or is blank, it does not have exactly two
            reaction arrows, or its CXSMILES block holds enhanced stereo groups.
    """
    if not isinstance(text, str):
        raise ReactionParseError(f"reaction SMILES must be a str, got {type(text).__name__}")
    words = text.split(maxsplit=1)
    if not words:
        raise ReactionParseError("empty reaction SMILES", text)
    if len(words) > 1 and _ENHANCED_STEREO.match(words[1]):
        raise ReactionParseError(
            "the CXSMILES block holds enhanced stereo groups (AND/OR), which reaction inputs do "
            "not read: without them the stereo would count as absolute; remove the stereo "
            "marks of those atoms or the groups",
            text.strip(),
        )
    smiles = words[0]
    fields = _ARROW.split(smiles)
    if len(fields) != 3:
        raise ReactionParseError(
            f"expected 'reactants>reagents>products' (2 '>' separators), found {len(fields) - 1}",
            smiles,
        )
    reactants, reagents, products = fields
    return reactants, reagents, products


def parse_reaction_smiles(
    text: str, *, split_reagents: bool = True, allow_empty_products: bool = False
) -> Reaction:
    """Parse one reaction SMILES into reactants, reagents and products.

    Each molecule (a ``'.'``-separated component) is parsed with RDKit
    (:func:`chemgraph.chem.mol_from_smiles` semantics: sanitised, implicit hydrogens) and
    written as canonical SMILES without atom maps.

    Roles: with ``split_reagents=True`` and at least one mapped atom in the products, the roles
    of the left-hand molecules come from the atom maps alone: a molecule from the reactant or
    the reagent field is a reactant when one of its atom-map numbers occurs in a product, and a
    reagent otherwise (so a fully unmapped molecule, or a mapped solvent whose numbers are not
    in any product, is a reagent). When the products carry no atom map at all the roles cannot
    be derived and the fields are kept as written, as they are with ``split_reagents=False``.

    Args:
        text: ``"reactants>reagents>products"``, e.g. ``"CC(=O)O.OCC>[H+]>CCOC(C)=O"`` or
            ``"[CH3:1][OH:2].[Na+]>>[CH3:1][O-:2]"``, split by :func:`split_reaction_smiles`
            (dative bonds ``'->'`` are not arrows; surrounding whitespace and text after the
            first inner whitespace are ignored).
        split_reagents: derive the reactant/reagent roles from the atom maps (see above).
        allow_empty_products: accept an empty product field (``"A.B>C>"``, a reaction whose
            products are to be predicted); ``products`` is then ``()``.

    Returns:
        A :class:`Reaction`; ``mapped`` is the reaction SMILES as given.

    Raises:
        ReactionParseError: the text is not a str or is empty, it does not have exactly two
            reaction arrows, the reactant or product field is empty, a field has an empty
            component (``"A..B"``), or RDKit rejects a molecule (the reason names the field,
            the molecule's position and RDKit's message), or, when roles come from the atom
            maps, no left-hand molecule shares an atom-map number with the products.
    """
    fields = split_reaction_smiles(text)
    mapped = ">".join(fields)
    for field, part in ((_FIELDS[0], fields[0]), (_FIELDS[2], fields[2])):
        if not part and not (field == "products" and allow_empty_products):
            raise ReactionParseError(f"the {field} field is empty", mapped)
    reactant_mols, reagent_mols, product_mols = (
        parse_field(part, field, mapped) for part, field in zip(fields, _FIELDS)
    )
    product_maps = frozenset().union(*(atom_map_numbers(m) for m in product_mols))
    if split_reagents and product_maps:
        left = reactant_mols + reagent_mols
        reactant_mols = [m for m in left if atom_map_numbers(m) & product_maps]
        reagent_mols = [m for m in left if not atom_map_numbers(m) & product_maps]
        if not reactant_mols:
            raise ReactionParseError(
                "no molecule left of '>>' contributes a mapped atom to the products", mapped
            )
    return Reaction(
        reactants=tuple(canonical_smiles(m) for m in reactant_mols),
        reagents=tuple(canonical_smiles(m) for m in reagent_mols),
        products=tuple(canonical_smiles(m) for m in product_mols),
        mapped=mapped,
    )
