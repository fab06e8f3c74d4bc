"""Reaction centres: the bond edits of an atom-mapped reaction, and products from edits.

A reaction centre is the set of atom pairs whose bond changes (Jin et al. 2017, "Predicting
Organic Reaction Outcomes with Weisfeiler-Lehman Network", NeurIPS, arXiv:1709.04555; Coley et
al. 2019, "A graph-convolutional neural network model for the prediction of chemical
reactivity", Chem. Sci. 10, 370, doi:10.1039/C8SC04228D). Atoms are those of the *input*: all
molecules left of ``>>`` (reactants and reagents) as one RDKit molecule, in the order they are
written; an edit is ``(i, j, c)`` with atom indices ``i < j`` and ``c`` the new bond class
(:data:`BOND_CLASSES`: 0 no bond, 1 single, 2 double, 3 triple, 4 aromatic).

The atom maps give bond changes only. :func:`apply_edits` derives the hydrogen counts and formal
charges that follow, atom by atom, from the change of the atom's bond-order sum:

* hydrogens are conserved: an atom that gains bond order loses as many hydrogens, one that
  loses bond order gains them;
* an atom that gains a bond with no hydrogen left: an anion becomes neutral (an alkoxide or
  carboxylate forming a bond), a neutral S reaching 4 or 6 bonds or P reaching 5 stays neutral
  (sulfoxides, sulfones), another neutral N, P or S becomes a cation (a quaternised amine, a
  pyridine N-oxide, a phosphonium or sulfonium salt), an aromatic N takes the hydrogen of a
  ring [nH] instead when there is one (azole tautomers);
* a metal left with no bond is a by-product's and may stay bare (a Grignard's magnesium);
* products with a metal counter-ion get their carboxylic acids deprotonated
  (:func:`product_smiles`);
* an atom that loses bond order while positive becomes neutral first (a nitro group or an
  N-oxide reduced, a quaternary ammonium cleaved);
* a neutral oxygen left with one bond and no hydrogen next to a cation is an anion (the N-oxide
  and nitro oxygen);
* a new aromatic nitrogen may carry one hydrogen or none (pyrrole- or pyridine-like: azole
  tautomers): the form RDKit can kekulise is kept, hydrogen-free first;
* stereochemistry is kept where no bond changes: an edited atom loses its tetrahedral label and
  a double bond at an edited atom its E/Z label (the edits do not say the configuration a
  reaction makes or changes: an SN2 or Mitsunobu inversion, a new stereocentre), so those
  centres are left unassigned rather than given whatever label RDKit's neighbour order
  implies.

The result is sanitised by RDKit; an edit set that gives no sanitisable molecule gives None.
On the ``uspto_mit_valid`` reactions the edits derived by :func:`reaction_edits` give back the
recorded product for most reactions; of the others, most give a charge or tautomer form of it.

Public API
----------
- :data:`BOND_CLASSES`, :func:`bond_class` — bond classes and the class of an RDKit bond.
- :class:`MappedReaction`, :func:`mapped_reaction` — an atom-mapped reaction SMILES as input
  molecule, product molecule and the atoms of the product.
- :func:`reaction_edits` — the edits between the input and the recorded product.
- :func:`apply_edits` — the input molecule with edits applied (sanitised), or None.
- :func:`product_smiles` — canonical SMILES of chosen fragments of an edited molecule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rdkit import Chem, rdBase

from chemgraph.chem.iteration import atom_list
from chemgraph.chem.reactions import (
    ReactionParseError,
    canonical_smiles,
    parse_field,
    split_reaction_smiles,
)

__all__ = [
    "BOND_CLASSES",
    "Edit",
    "MappedReaction",
    "apply_edits",
    "bond_class",
    "mapped_reaction",
    "prepare_inputs",
    "product_smiles",
    "reaction_edits",
]

BOND_CLASSES = ("none", "single", "double", "triple", "aromatic")
"""Bond classes of edits and of the reaction-centre model, by index."""

_BOND_TYPES = {
    1: Chem.BondType.SINGLE,
    2: Chem.BondType.DOUBLE,
    3: Chem.BondType.TRIPLE,
    4: Chem.BondType.AROMATIC,
}
_CLASS_OF_TYPE = {kind: index for index, kind in _BOND_TYPES.items()} | {Chem.BondType.DATIVE: 1}
_ORDER = (0.0, 1.0, 2.0, 3.0, 1.5)
_HALOGENS = ("F", "Cl", "Br", "I")
_HYPERVALENT = {"S": (4.0, 6.0), "P": (5.0,)}
_ORGANIC = frozenset({"H", "B", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Se", "Br", "I"})

Edit = tuple[int, int, int]
"""``(i, j, c)``: atoms ``i < j`` of the input molecule get bond class ``c``."""


def bond_class(bond: Chem.Bond | None) -> int:
    """Index in :data:`BOND_CLASSES` of an RDKit bond (None = no bond, 0). A dative bond
    (RDKit's sanitisation writes some bonds to metals so) is single.

    Raises:
        ValueError: a bond type outside single, double, triple and aromatic (dative, ...).
    """
    if bond is None:
        return 0
    index = _CLASS_OF_TYPE.get(bond.GetBondType())
    if index is None:
        raise ValueError(f"bond type {bond.GetBondType()} is not one of {BOND_CLASSES[1:]}")
    return index


@dataclass(frozen=True)
class MappedReaction:
    """An atom-mapped reaction: the input molecule and the recorded product.

    Attributes:
        inputs: every molecule left of ``>>`` (reactant and reagent fields) as one sanitised
            RDKit molecule, atoms in the order written.
        product: the product field as one sanitised molecule; None when it is empty.
        product_atoms: indices of the input atoms whose map numbers occur in the product.
        reagent_atoms: indices of the input atoms written in the reagent field
            (``reactants>reagents>``); empty when that field is empty (USPTO-MIT writes its
            reagents among the reactants, so nothing is known of them then).
    """

    inputs: Chem.Mol
    product: Chem.Mol | None
    product_atoms: frozenset[int]
    reagent_atoms: frozenset[int] = frozenset()

    @property
    def product_smiles(self) -> str:
        """Canonical SMILES of the recorded product (``""`` when there is none)."""
        return canonical_smiles(self.product) if self.product is not None else ""


def mapped_reaction(text: str) -> MappedReaction:
    """Parse a reaction SMILES; reactant and reagent fields both become the input.

    Atom maps are optional for prediction (an empty or unmapped product field); training needs
    every product atom mapped to an input atom.

    Raises:
        ReactionParseError: the text is not a reaction SMILES, a field does not parse, the
            reactants field is empty (even with reagents: there is nothing to react), or a
            product atom is unmapped or mapped to no input atom.
    """
    reactants, reagents, products = split_reaction_smiles(text)
    if not reactants:  # reagents alone: nothing to react
        raise ReactionParseError("the reactants field is empty", text)
    left = ".".join(part for part in (reactants, reagents) if part)
    inputs = Chem.MolFromSmiles(left)
    if inputs is None:
        # name the molecule and RDKit's reason (a ring bond may also join two molecules)
        for field, part in (("reactants", reactants), ("reagents", reagents)):
            parse_field(part, field, text)
        raise ReactionParseError("RDKit cannot parse the reactants and reagents", text)
    reagent_atoms: frozenset[int] = frozenset()
    if reactants and reagents:  # the reagent field's atoms follow the reactants' as written
        alone = Chem.MolFromSmiles(reactants)
        if alone is not None:
            reagent_atoms = frozenset(range(alone.GetNumAtoms(), inputs.GetNumAtoms()))
    product = None
    atoms: frozenset[int] = frozenset()
    if products:
        product = Chem.MolFromSmiles(products)
        if product is None:
            raise ReactionParseError("RDKit cannot parse the products", text)
        index = {a.GetAtomMapNum(): a.GetIdx() for a in inputs.GetAtoms() if a.GetAtomMapNum()}
        maps = [a.GetAtomMapNum() for a in product.GetAtoms()]
        if maps and all(maps):
            missing = [m for m in maps if m not in index]
            if missing:
                raise ReactionParseError(f"product atom maps {missing[:5]} not in the input", text)
            atoms = frozenset(index[m] for m in maps)
    return MappedReaction(inputs, product, atoms, reagent_atoms)


def reaction_edits(reaction: MappedReaction) -> tuple[Edit, ...]:
    """The bond edits that turn the input into the recorded product (sorted).

    A pair of input atoms is edited when both are in the product and their bond class differs
    between input and product, or when one is in the product, the other is not, and they are
    bonded in the input (the bond to a leaving group breaks).

    Raises:
        ValueError: the product is missing or not fully mapped, or holds a bond type outside
            :data:`BOND_CLASSES`.
    """
    if reaction.product is None or not reaction.product_atoms:
        raise ValueError("the reaction has no fully atom-mapped product")
    inputs, product = reaction.inputs, reaction.product
    index = {a.GetAtomMapNum(): a.GetIdx() for a in inputs.GetAtoms() if a.GetAtomMapNum()}
    new: dict[tuple[int, int], int] = {}
    for bond in product.GetBonds():
        i = index[bond.GetBeginAtom().GetAtomMapNum()]
        j = index[bond.GetEndAtom().GetAtomMapNum()]
        new[min(i, j), max(i, j)] = bond_class(bond)
    edits = set()
    for bond in inputs.GetBonds():
        i, j = sorted((bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()))
        inside = (i in reaction.product_atoms) + (j in reaction.product_atoms)
        if inside == 0:
            continue
        after = new.get((i, j), 0)
        if after != bond_class(bond):
            edits.add((i, j, after))
    for (i, j), after in new.items():
        if inputs.GetBondBetweenAtoms(i, j) is None:
            edits.add((i, j, after))
    return tuple(sorted(edits))


def _bond_sum(atom: Chem.Atom) -> float:
    return sum(_ORDER[bond_class(b)] for b in atom.GetBonds())


_PREPARED = "chemgraph_prepared_inputs"


def prepare_inputs(inputs: Chem.Mol) -> Chem.Mol:
    """A copy of the input molecule ready for many :func:`apply_edits` calls: hydrogen counts
    explicit, atom maps cleared (one pass over the atoms instead of one per edit set)."""
    out = Chem.RWMol(inputs)
    for atom in atom_list(out):
        atom.SetNumExplicitHs(atom.GetTotalNumHs())
        atom.SetNoImplicit(True)
        atom.SetAtomMapNum(0)
    out = out.GetMol()  # keeps the sanitised input's ring information
    out.SetBoolProp(_PREPARED, True)
    return out


def apply_edits(inputs: Chem.Mol, edits: Iterable[Edit]) -> Chem.Mol | None:
    """The input molecule with the edits applied and hydrogens and charges derived.

    Args:
        inputs: the sanitised input molecule (:attr:`MappedReaction.inputs`), or its
            :func:`prepare_inputs` copy (faster for many edit sets).
        edits: ``(i, j, c)`` edits (:data:`Edit`); a pair may appear once.

    Returns:
        The sanitised edited molecule (all fragments, reagents included; atom ``k`` is input
        atom ``k``), or None when RDKit cannot sanitise or kekulise it, or an atom would be
        left with a radical. Rules for hydrogens and charges: module docstring.
    """
    if not inputs.HasProp(_PREPARED):
        inputs = prepare_inputs(inputs)
    if _over_valence(inputs, edits):
        return None
    mol = Chem.RWMol(inputs)
    rings = inputs.GetRingInfo().AtomRings()
    touched: dict[int, float] = {}
    for i, j, after in edits:
        for k in (i, j):
            if k not in touched:
                touched[k] = _bond_sum(mol.GetAtomWithIdx(k))
        if mol.GetBondBetweenAtoms(i, j) is not None:
            mol.RemoveBond(i, j)
        if after:
            mol.AddBond(i, j, _BOND_TYPES[after])
            if after == 4:
                mol.GetBondBetweenAtoms(i, j).SetIsAromatic(True)
                mol.GetAtomWithIdx(i).SetIsAromatic(True)
                mol.GetAtomWithIdx(j).SetIsAromatic(True)
    new_aromatic_nitrogens, charge_change, leaving_halogens = [], 0, []
    for k, before in touched.items():
        atom = mol.GetAtomWithIdx(k)
        delta = _bond_sum(atom) - before
        hydrogens, charge = atom.GetNumExplicitHs(), atom.GetFormalCharge()
        first = charge
        if (
            delta < 0 < charge
            or (delta > 0 > charge)
            or (delta > 0 and charge > 0 and atom.GetSymbol() == "C")
        ):
            # a cation losing a bond, an anion or a carbocation forming one: neutralised first
            used = min(abs(charge), int(abs(delta)))
            charge -= used if charge > 0 else -used
            delta += used if delta < 0 else -used
        left = hydrogens - delta
        if atom.GetIsAromatic() and atom.GetSymbol() == "C" and delta in (-1, 1):
            # lactam <-> lactim, thione <-> thiol: a ring nitrogen's H moves instead
            if delta < 0 or left < 0:
                partner = _ring_nitrogen(rings, mol, k, delta < 0, touched)
                if partner is not None:
                    partner.SetNumExplicitHs(partner.GetNumExplicitHs() + int(delta))
                    left = hydrogens if delta < 0 else 0
        if left < 0:
            hypervalent = _HYPERVALENT.get(atom.GetSymbol(), ())
            if charge == 0 and _bond_sum(atom) in hypervalent:
                pass  # a sulfoxide, sulfone or P(V): no charge
            elif atom.GetSymbol() in ("N", "P", "S") and charge == 0:
                partner = None
                if atom.GetIsAromatic():  # azole tautomer: a ring [nH] gives up its H
                    partner = _ring_nitrogen(rings, mol, k, True, touched)
                if partner is not None:
                    partner.SetNumExplicitHs(partner.GetNumExplicitHs() - 1)
                else:
                    charge = 1  # quaternised
            left = 0
        atom.SetNumExplicitHs(int(round(left)) if left >= 0.5 or left == 0 else 0)
        atom.SetFormalCharge(int(charge))
        charge_change += charge - first
        if atom.GetSymbol() in _HALOGENS and atom.GetDegree() == 0 and delta < 0:
            leaving_halogens.append(atom)
        if atom.GetIsAromatic() and not any(b.GetIsAromatic() for b in atom.GetBonds()):
            atom.SetIsAromatic(False)
        if atom.GetSymbol() == "N" and atom.GetIsAromatic():
            new_aromatic_nitrogens.append(k)
    for atom in leaving_halogens[: max(0, charge_change)]:  # the counter-ion of a new cation
        atom.SetNumExplicitHs(0)
        atom.SetFormalCharge(-1)
    for k in touched:
        atom = mol.GetAtomWithIdx(k)
        if (
            atom.GetSymbol() == "O"
            and atom.GetFormalCharge() == 0
            and atom.GetDegree() == 1
            and atom.GetNumExplicitHs() == 0
            and _bond_sum(atom) == 1
            and atom.GetNeighbors()[0].GetFormalCharge() > 0
        ):
            atom.SetFormalCharge(-1)
    edited_bonds = {b.GetIdx(): b for k in touched for b in mol.GetAtomWithIdx(k).GetBonds()}
    for k in touched:  # the model cannot say the configuration of a centre it changes
        mol.GetAtomWithIdx(k).SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED)
    for bond in edited_bonds.values():  # only bonds at edited atoms can have changed
        if bond.GetIsAromatic() and bond.GetBondType() != Chem.BondType.AROMATIC:
            bond.SetIsAromatic(False)
        if bond.GetBondType() == Chem.BondType.DOUBLE:  # its E/Z, and the single bonds' marks
            bond.SetStereo(Chem.BondStereo.STEREONONE)
            for end in (bond.GetBeginAtom(), bond.GetEndAtom()):
                for single in end.GetBonds():
                    single.SetBondDir(Chem.BondDir.NONE)
    result = _sanitised(mol, touched)
    if result is None and new_aromatic_nitrogens:  # azole tautomer: one nitrogen takes the H
        for k in new_aromatic_nitrogens:
            trial = Chem.RWMol(mol)
            atom = trial.GetAtomWithIdx(k)
            atom.SetNumExplicitHs(1 - min(1, atom.GetNumExplicitHs()))
            result = _sanitised(trial, touched)
            if result is not None:
                break
    return result


_MAX_BOND_SUM = {"C": 4.0, "N": 4.0, "O": 3.0}
"""Largest bond-order sum RDKit accepts for a neutral input C, N or O after the rules below
(a nitrogen may be quaternised, N+; oxonium O+ is the most an oxygen can be)."""


def _over_valence(inputs: Chem.Mol, edits: Iterable[Edit]) -> bool:
    """True when the edits give a neutral non-aromatic C, N or O of ``inputs`` bonded to
    non-metals only a bond-order sum above :data:`_MAX_BOND_SUM`: RDKit's sanitisation would
    refuse it, so :func:`apply_edits` need not build the molecule (a shortcut, same result).
    Aromatic atoms are left out (an aromatic N whose ring [nH] gives up its H stays neutral,
    and RDKit writes it as an N-oxide or azide), and so are atoms at metals (RDKit makes such
    a bond dative, which its valence does not count)."""
    partners: dict[int, dict[int, int]] = {}
    for i, j, after in edits:
        partners.setdefault(i, {})[j] = after
        partners.setdefault(j, {})[i] = after
    for k, edited in partners.items():
        atom = inputs.GetAtomWithIdx(k)
        limit = _MAX_BOND_SUM.get(atom.GetSymbol())
        if limit is None or atom.GetFormalCharge() or atom.GetIsAromatic() or 4 in edited.values():
            continue
        if any(inputs.GetAtomWithIdx(j).GetSymbol() not in _ORGANIC for j in edited):
            continue
        total = 0.0
        for bond in atom.GetBonds():
            kind = bond.GetBondType()
            if kind == Chem.BondType.DATIVE or bond.GetOtherAtom(atom).GetSymbol() not in _ORGANIC:
                break
            if bond.GetOtherAtomIdx(k) not in edited:
                total += _ORDER[bond_class(bond)]
        else:
            if total + sum(_ORDER[after] for after in edited.values()) > limit:
                return True
    return False


def _ring_nitrogen(
    rings: Sequence[Sequence[int]],
    mol: Chem.RWMol,
    k: int,
    with_hydrogen: bool,
    touched: dict[int, float],
) -> Chem.Atom | None:
    """An untouched, neutral aromatic nitrogen in a ring of atom ``k`` (of the input) with a
    hydrogen (``with_hydrogen``) or, else, with none and two neighbours; None if there is none."""
    for ring in rings:
        if k not in ring:
            continue
        for index in ring:
            atom = mol.GetAtomWithIdx(index)
            if index == k or index in touched or atom.GetSymbol() != "N":
                continue
            if not atom.GetIsAromatic() or atom.GetFormalCharge():
                continue
            hydrogens = atom.GetNumExplicitHs()
            if (hydrogens > 0) if with_hydrogen else (hydrogens == 0 and atom.GetDegree() == 2):
                return atom
    return None


def _sanitised(mol: Chem.RWMol, touched: Iterable[int]) -> Chem.Mol | None:
    """The sanitised copy of ``mol``; None when RDKit refuses it or an edited non-metal atom is
    left with unpaired electrons (untouched reagents keep theirs: ``[Na]``, ``[Pd]``; the
    products are checked again by :func:`chemgraph.chem.validity.product_problem`)."""
    out = Chem.Mol(mol)
    try:
        with rdBase.BlockLogs():  # a refused candidate is expected, not news for stderr
            Chem.SanitizeMol(out)
    except (Chem.rdchem.MolSanitizeException, RuntimeError, ValueError):
        return None
    for k in touched:
        atom = out.GetAtomWithIdx(k)
        if atom.GetNumRadicalElectrons() and atom.GetSymbol() in _ORGANIC:
            return None  # a metal left bare (Mg of a Grignard reagent) is a by-product's
    return out


def product_smiles(edited: Chem.Mol, atoms: Sequence[int]) -> str | None:
    """Canonical SMILES (no atom maps, stereo kept) of the fragments of ``edited`` that hold
    any of ``atoms``; None when RDKit cannot read the fragments back. Fragments that carry a
    net positive charge (a metal counter-ion) get as many carboxylic acids deprotonated (the
    salt as USPTO writes it: ``RC(=O)[O-].[Na+]``)."""
    wanted = set(atoms)
    fragments = Chem.GetMolFrags(edited, asMols=False, sanitizeFrags=False)
    chosen = sorted(k for fragment in fragments if wanted & set(fragment) for k in fragment)
    if not chosen:
        return None
    text = Chem.MolFragmentToSmiles(edited, atomsToUse=chosen, canonical=False)
    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(text)
    if mol is None:
        return None
    return canonical_smiles(_salt_balanced(mol))


def _salt_balanced(mol: Chem.Mol) -> Chem.Mol:
    """``mol`` with as many carboxylic acids deprotonated as its cations need (a product
    written with its counter-ion, ``RC(=O)[O-].[Na+]``); unchanged when it is neutral."""
    excess = Chem.GetFormalCharge(mol)
    if excess <= 0:
        return mol
    out = Chem.RWMol(mol)
    for atom in atom_list(out):
        if excess == 0:
            break
        if atom.GetSymbol() != "O" or atom.GetFormalCharge() or atom.GetTotalNumHs() != 1:
            continue
        carbon = atom.GetNeighbors()[0] if atom.GetDegree() == 1 else None
        if carbon is None or carbon.GetSymbol() != "C":
            continue
        if any(
            b.GetBondType() == Chem.BondType.DOUBLE and b.GetOtherAtom(carbon).GetSymbol() == "O"
            for b in carbon.GetBonds()
        ):
            atom.SetNumExplicitHs(0)
            atom.SetNoImplicit(True)
            atom.SetFormalCharge(-1)
            excess -= 1
    try:
        with rdBase.BlockLogs():
            Chem.SanitizeMol(out)
    except (Chem.rdchem.MolSanitizeException, RuntimeError, ValueError):
        return mol
    return out.GetMol()
