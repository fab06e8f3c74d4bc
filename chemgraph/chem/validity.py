"""Is a predicted reaction product one a chemist would accept? The one place that says so.

RDKit sanitises a methyl radical (``[CH3]``), a chlorine atom (``[Cl]``) or a hydroxyl radical
(``[OH]``) without complaint: each is a valid *molecule*. As the answer to "what does this
reaction give" none is: a product is **valid** here only when

1. it parses and sanitises with RDKit and is not empty;
2. no atom carries radical electrons unless the reactants hold the same radical (same element,
   same number of radical electrons, e.g. TEMPO's oxygen);
3. no fragment is a bare atom (one heavy atom, with or without hydrogens and charge) unless the
   reactants or reagents hold that same fragment (``[Na+]`` from sodium hydride is fine, ``[Cl]``
   or ``[CH3]`` from nowhere is not);
4. its heavy atoms are accounted for by the reactants and reagents: for every element, the
   product has no more atoms than the input (hydrogens are not counted: hydrogen sources such as
   H2 are often not written in reaction SMILES).

Public API
----------
- :func:`product_problem` — why a product SMILES is not a valid product of given reactants, or
  None.
- :class:`ReactionInputs` — the reactant facts (elements, radicals, bare-atom fragments) that
  :func:`product_problem` compares with, computed once per reaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rdkit import Chem

from chemgraph.chem.iteration import atom_list

__all__ = ["ReactionInputs", "product_problem"]


def _fragment_key(mol: Chem.Mol) -> str:
    """Canonical SMILES of a one-heavy-atom fragment without atom maps."""
    out = Chem.Mol(mol)
    for atom in atom_list(out):
        atom.SetAtomMapNum(0)
    return Chem.MolToSmiles(out)


@dataclass(frozen=True)
class ReactionInputs:
    """What the reactants and reagents of one reaction hold, for :func:`product_problem`.

    Attributes:
        elements: heavy-atom count per element symbol (hydrogens not counted).
        radicals: ``(element symbol, radical electrons)`` of every radical atom in the input.
        bare_atoms: canonical SMILES (no atom maps) of the input's one-heavy-atom fragments
            (``"[Na+]"``, ``"O"``, ``"[Cl-]"``).
    """

    elements: Counter
    radicals: frozenset[tuple[str, int]]
    bare_atoms: frozenset[str]

    @classmethod
    def from_mols(cls, mols: Iterable[Chem.Mol]) -> ReactionInputs:
        """The facts of the given reactant and reagent molecules (sanitised RDKit molecules;
        a molecule of several fragments is split into them)."""
        elements: Counter = Counter()
        radicals, bare = set(), set()
        for mol in mols:
            for atom in atom_list(mol):
                if atom.GetAtomicNum() > 1:
                    elements[atom.GetSymbol()] += 1
                if atom.GetNumRadicalElectrons():
                    radicals.add((atom.GetSymbol(), atom.GetNumRadicalElectrons()))
            for fragment in Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False):
                if fragment.GetNumHeavyAtoms() <= 1:
                    bare.add(_fragment_key(fragment))
        return cls(elements, frozenset(radicals), frozenset(bare))

    @classmethod
    def from_smiles(cls, smiles: Iterable[str]) -> ReactionInputs:
        """The facts of reactant and reagent SMILES (``'.'``-joined fragments allowed).

        Raises:
            ValueError: RDKit cannot parse one of them.
        """
        mols = []
        for text in smiles:
            mol = Chem.MolFromSmiles(text)
            if mol is None:
                raise ValueError(f"cannot parse reactant SMILES {text!r}")
            mols.append(mol)
        return cls.from_mols(mols)


def product_problem(product: str | Chem.Mol, inputs: ReactionInputs) -> str | None:
    """Why ``product`` is not a valid product of a reaction with these inputs, or None.

    Args:
        product: product SMILES (``'.'``-joined fragments allowed) or a sanitised RDKit
            molecule.
        inputs: the reaction's reactants and reagents (:meth:`ReactionInputs.from_smiles`).

    Returns:
        None for a valid product (rules in the module docstring), else a one-line reason:
        ``"not a molecule RDKit can sanitise"``, ``"empty product"``, ``"radical on C (1
        unpaired electron) the reactants do not have"``, ``"bare atom [Cl] the reactants do not
        have"`` or ``"2 Br atoms but the reactants hold 1"``.

    Example: with inputs ``CC(=O)O`` and ``OCC``, ``"CCOC(C)=O"`` gives None, ``"[CH3]"``
    gives the radical reason, ``"CCBr"`` the atom-count reason.
    """
    mol = Chem.MolFromSmiles(product) if isinstance(product, str) else product
    if mol is None:
        return "not a molecule RDKit can sanitise"
    if mol.GetNumAtoms() == 0:
        return "empty product"
    atoms = atom_list(mol)
    for atom in atoms:
        unpaired = atom.GetNumRadicalElectrons()
        if unpaired and (atom.GetSymbol(), unpaired) not in inputs.radicals:
            plural = "s" if unpaired > 1 else ""
            return (
                f"radical on {atom.GetSymbol()} ({unpaired} unpaired electron{plural}) the "
                "reactants do not have"
            )
    for fragment in Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False):
        if fragment.GetNumHeavyAtoms() <= 1:
            key = _fragment_key(fragment)
            if key not in inputs.bare_atoms:
                return f"bare atom {key} the reactants do not have"
    counts = Counter(a.GetSymbol() for a in atoms if a.GetAtomicNum() > 1)
    for element, count in sorted(counts.items()):
        if count > inputs.elements.get(element, 0):
            plural = "s" if count > 1 else ""
            return (
                f"{count} {element} atom{plural} but the reactants hold "
                f"{inputs.elements.get(element, 0)}"
            )
    return None
