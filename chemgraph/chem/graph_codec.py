"""Lossless molecule <-> labelled graph conversion (the graphs GRAT reads and writes).

A :class:`LabelledGraph` is a molecule as node labels and typed edges, nothing else: it is what
the GRAT decoder (Yoo et al. 2020, section 3.2) generates one node at a time, and what
:func:`graph_to_mol` turns back into a sanitised RDKit molecule and canonical SMILES.

Node label (:class:`AtomLabel`): element, formal charge, total hydrogen count, aromaticity,
isotope and tetrahedral chirality. Yoo et al. 2020 (section 4.2) kept only the element and lost
formal charges; with the charge and hydrogen count in the label, every USPTO-MIT test product
survives graph -> molecule -> canonical SMILES (``benchmarks/graph_round_trip.py``).

Edge label (bond class, :data:`BOND_CLASSES`): single, double, triple, aromatic, and double
bonds with cis/trans stereo.

Atom order: RDKit's canonical atom ranking, read in the order the canonical SMILES writes the
atoms (``_smilesAtomOutputOrder``: a depth-first walk from the lowest-ranked atom that breaks ties
by rank). Yoo et al. 2020 orders nodes as the SMILES does (Appendix B); the walk also puts bonded
atoms close together, so each new node of a decoded graph usually bonds to a recent one.

The labels are read from the molecule parsed back from its canonical SMILES, not from the input
molecule: they are then a function of the canonical SMILES alone, so the same molecule gives the
same graph whatever its atom order. Read from the input, they were not: symmetric atoms (the two
ring neighbours of a 1,4-disubstituted cyclohexane carbon) may be ranked either way round, and
for ring stereo both ways describe the molecule, with opposite chirality labels on both ring
atoms (``CO[C@@H]1CC[C@@]2(CC1)...`` written from another atom gave the other pair).

Stereo (kept; the seed's graphs drop it), in a form that needs no coordinates and survives any
rebuilding order:

* chirality: ``"@"`` / ``"@@"`` are RDKit's counter-clockwise / clockwise tags *relative to the
  atom's neighbours sorted by graph index* (not to the SMILES writing order); the graph -> molecule
  step adds the bonds so that each atom sees its neighbours in that order.
* double bonds: cis or trans of the lowest-indexed neighbour at each end (excluding the other end).

Only tetrahedral chirality and double-bond cis/trans are representable; other chiral tags
(square planar, allene-like ``CHI_OTHER``...) and dative/zero-order/other bond types raise
:class:`GraphEncodingError`. Radical electrons are not stored (SMILES does not write them either:
the hydrogen count fixes the molecule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rdkit import Chem, rdBase

from chemgraph.errors import ChemgraphError

__all__ = [
    "BOND_CLASSES",
    "NO_BOND",
    "AtomLabel",
    "GraphDecodingError",
    "GraphEncodingError",
    "LabelledGraph",
    "canonical_atom_order",
    "graph_to_mol",
    "graph_to_smiles",
    "mol_to_graph_labels",
    "round_trip_problem",
    "same_molecules",
    "smiles_to_graph_labels",
]

NO_BOND = 0
"""Bond class of an atom pair without a bond."""

BOND_CLASSES: tuple[str, ...] = (
    "none", "single", "double", "triple", "aromatic", "double_cis", "double_trans",
)  # fmt: skip
"""Bond classes by code: 0 no bond, 1 single, 2 double, 3 triple, 4 aromatic, 5 double bond whose
lowest-indexed neighbours are cis, 6 trans (see the module docstring)."""

_TYPE_TO_CLASS = {
    Chem.BondType.SINGLE: 1,
    Chem.BondType.DOUBLE: 2,
    Chem.BondType.TRIPLE: 3,
    Chem.BondType.AROMATIC: 4,
}
_CLASS_TO_TYPE = {code: bond_type for bond_type, code in _TYPE_TO_CLASS.items()}
_CLASS_TO_TYPE.update({5: Chem.BondType.DOUBLE, 6: Chem.BondType.DOUBLE})
_CIS, _TRANS = 5, 6
_CHIRAL_TAGS = {Chem.ChiralType.CHI_TETRAHEDRAL_CCW: 1, Chem.ChiralType.CHI_TETRAHEDRAL_CW: 2}
_TAG_OF_CODE = {1: Chem.ChiralType.CHI_TETRAHEDRAL_CCW, 2: Chem.ChiralType.CHI_TETRAHEDRAL_CW}
_KEEP_HYDROGENS = Chem.SmilesParserParams()
_KEEP_HYDROGENS.removeHs = False
_TOKEN = re.compile(r"^\[(\d*)(\*|[A-Za-z][a-z]?)(@@|@)?(H\d*)?([+-]\d*)?\]$")
_PERIODIC_TABLE = Chem.GetPeriodicTable()


class GraphEncodingError(ChemgraphError, ValueError):
    """A molecule holds something a :class:`LabelledGraph` cannot represent.

    Attributes:
        reason: e.g. ``"bond 3 has type DATIVE; representable: single, double, triple,
            aromatic"`` or ``"atom 0 has chiral tag CHI_SQUAREPLANAR; only tetrahedral
            chirality is representable"``.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class GraphDecodingError(ChemgraphError, ValueError):
    """A labelled graph is not a valid molecule (what an untrained decoder often produces).

    Attributes:
        reason: RDKit's sanitisation message (e.g. ``"Explicit valence for atom # 2 C, 5, is
            greater than permitted"``) or the structural problem (``"bond 0-0 joins an atom to
            itself"``).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True, order=True)
class AtomLabel:
    """The label of one node: everything RDKit needs to rebuild the atom.

    Attributes:
        element: atomic number (1-118; 0 for a dummy atom ``*``).
        formal_charge: formal charge (e).
        num_hydrogens: total attached hydrogens not present as nodes (implicit + explicit).
        aromatic: aromatic atom (lower-case symbol in SMILES).
        isotope: mass number, 0 = natural abundance.
        chirality: 0 none, 1 ``"@"`` (RDKit CCW), 2 ``"@@"`` (CW), relative to the neighbours
            sorted by graph index.
    """

    element: int
    formal_charge: int = 0
    num_hydrogens: int = 0
    aromatic: bool = False
    isotope: int = 0
    chirality: int = 0

    @property
    def token(self) -> str:
        """The label as a bracket atom, e.g. ``"[cH]"``, ``"[NH3+]"``, ``"[13CH3]"``,
        ``"[C@@H]"``, ``"[O-2]"`` (always bracketed, so every label has one spelling)."""
        symbol = _PERIODIC_TABLE.GetElementSymbol(self.element) if self.element else "*"
        if self.aromatic:
            symbol = symbol.lower()
        isotope = str(self.isotope) if self.isotope else ""
        chiral = ("", "@", "@@")[self.chirality]
        hydrogens = {0: "", 1: "H"}.get(self.num_hydrogens, f"H{self.num_hydrogens}")
        charge = f"{self.formal_charge:+d}" if abs(self.formal_charge) > 1 else ""
        charge = {1: "+", -1: "-"}.get(self.formal_charge, charge)
        return f"[{isotope}{symbol}{chiral}{hydrogens}{charge}]"

    @classmethod
    def from_token(cls, token: str) -> AtomLabel:
        """Inverse of :attr:`token`.

        Raises:
            ValueError: the text is not a token written by :attr:`token`.
        """
        match = _TOKEN.match(token)
        if match is None:
            raise ValueError(f"{token!r} is not an atom-label token such as '[cH]' or '[NH3+]'")
        isotope, symbol, chiral, hydrogens, charge = match.groups()
        aromatic = symbol[0].islower()
        element = 0 if symbol == "*" else _PERIODIC_TABLE.GetAtomicNumber(symbol.capitalize())
        return cls(
            element=element,
            formal_charge=int(charge + "1" * (len(charge) == 1)) if charge else 0,
            num_hydrogens=int(hydrogens[1:] or 1) if hydrogens else 0,
            aromatic=aromatic,
            isotope=int(isotope) if isotope else 0,
            chirality={None: 0, "@": 1, "@@": 2}[chiral],
        )


@dataclass(frozen=True)
class LabelledGraph:
    """A molecule as node labels and bond classes.

    Attributes:
        atoms: node labels in graph order.
        bonds: ``(i, j, bond_class)`` with ``i < j`` and ``bond_class`` in 1..6
            (:data:`BOND_CLASSES`), sorted.
    """

    atoms: tuple[AtomLabel, ...]
    bonds: tuple[tuple[int, int, int], ...]

    @property
    def num_atoms(self) -> int:
        return len(self.atoms)

    def bond_matrix(self) -> list[list[int]]:
        """``[n][n]`` bond classes (symmetric, 0 = no bond)."""
        matrix = [[NO_BOND] * self.num_atoms for _ in range(self.num_atoms)]
        for i, j, bond_class in self.bonds:
            matrix[i][j] = matrix[j][i] = bond_class
        return matrix


def canonical_atom_order(mol: Chem.Mol) -> list[int]:
    """Atom indices of ``mol`` in the order RDKit's canonical SMILES writes them.

    Atom-map numbers are ignored (they would change the ranking). Hydrogens kept as atoms count
    as atoms. Fragments come in the canonical SMILES's fragment order.
    """
    return _canonical_smiles(mol)[1]


def _canonical_smiles(mol: Chem.Mol) -> tuple[str, list[int]]:
    """RDKit's canonical SMILES of ``mol`` without atom maps, and its atom output order."""
    mol = _without_atom_maps(mol)
    smiles = Chem.MolToSmiles(mol)
    order = mol.GetProp("_smilesAtomOutputOrder").strip("[]").split(",")
    return smiles, [int(i) for i in order if i]


def _permutation_is_odd(values: list[int]) -> bool:
    """Whether sorting ``values`` (distinct) takes an odd number of swaps (inversion parity)."""
    inversions = sum(a > b for k, a in enumerate(values) for b in values[k + 1 :])
    return inversions % 2 == 1


def _canonical_form(mol: Chem.Mol) -> tuple[Chem.Mol, list[int]]:
    """``mol`` parsed back from its canonical SMILES (atoms in canonical order, explicit H
    atoms kept), and the index in ``mol`` of each of its atoms.

    Raises:
        GraphEncodingError: RDKit cannot read its canonical SMILES back (no USPTO-MIT test
            product does this).
    """
    smiles, order = _canonical_smiles(mol)
    with rdBase.BlockLogs():
        canonical = Chem.MolFromSmiles(smiles, _KEEP_HYDROGENS)
    if canonical is None or canonical.GetNumAtoms() != len(order):
        raise GraphEncodingError(f"RDKit cannot read back its canonical SMILES {smiles}")
    return canonical, order


def mol_to_graph_labels(mol: Chem.Mol) -> LabelledGraph:
    """The labelled graph of a sanitised molecule, atoms in canonical order.

    Args:
        mol: a sanitised RDKit molecule (e.g. :func:`chemgraph.chem.mol_from_smiles`); atom
            maps are ignored; several fragments make one graph with several components.

    Returns:
        A :class:`LabelledGraph` with ``mol.GetNumAtoms()`` nodes; equal for every atom order
        of one molecule (module docstring).

    Raises:
        GraphEncodingError: a bond type other than single/double/triple/aromatic, or a chiral
            tag other than tetrahedral (the reason names the atom or bond index in ``mol``).
    """
    canonical, order = _canonical_form(mol)
    atoms = []
    for index, atom in enumerate(canonical.GetAtoms()):
        tag = atom.GetChiralTag()
        chirality = 0
        if tag in _CHIRAL_TAGS:
            chirality = _CHIRAL_TAGS[tag]
            if _permutation_is_odd([b.GetOtherAtomIdx(index) for b in atom.GetBonds()]):
                chirality = 3 - chirality
        elif tag != Chem.ChiralType.CHI_UNSPECIFIED:
            raise GraphEncodingError(
                f"atom {order[index]} has chiral tag {tag}; only tetrahedral chirality is "
                "representable"
            )
        atoms.append(
            AtomLabel(
                element=atom.GetAtomicNum(),
                formal_charge=atom.GetFormalCharge(),
                num_hydrogens=atom.GetTotalNumHs(),
                aromatic=atom.GetIsAromatic(),
                isotope=atom.GetIsotope(),
                chirality=chirality,
            )
        )
    bonds = []
    for bond in canonical.GetBonds():
        i, j = sorted((bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()))
        if bond.GetBondType() not in _TYPE_TO_CLASS:
            index = mol.GetBondBetweenAtoms(order[i], order[j]).GetIdx()
            raise GraphEncodingError(
                f"bond {index} has type {bond.GetBondType()}; representable: single, double, "
                "triple, aromatic"
            )
        bond_class = _TYPE_TO_CLASS[bond.GetBondType()]
        cis = _double_bond_cis(canonical, bond)
        if cis is not None:
            bond_class = _CIS if cis else _TRANS
        bonds.append((i, j, bond_class))
    return LabelledGraph(atoms=tuple(atoms), bonds=tuple(sorted(bonds)))


def _double_bond_cis(mol: Chem.Mol, bond: Chem.Bond) -> bool | None:
    """Whether the lowest-indexed neighbours of a stereo double bond are cis; None if no stereo.

    RDKit's E/Z (legacy perception) and cis/trans labels both refer to the bond's two stereo
    atoms; each end whose reference neighbour differs from its stereo atom flips the relation.
    """
    stereo = bond.GetStereo()
    if stereo in (Chem.BondStereo.STEREOZ, Chem.BondStereo.STEREOCIS):
        cis = True
    elif stereo in (Chem.BondStereo.STEREOE, Chem.BondStereo.STEREOTRANS):
        cis = False
    else:
        return None
    stereo_atoms = list(bond.GetStereoAtoms())
    ends = (bond.GetBeginAtomIdx(), bond.GetEndAtomIdx())
    for end, other, stereo_atom in zip(ends, reversed(ends), stereo_atoms):
        candidates = [n.GetIdx() for n in mol.GetAtomWithIdx(end).GetNeighbors()]
        reference = min(n for n in candidates if n != other)
        if reference != stereo_atom:
            cis = not cis
    return cis


def smiles_to_graph_labels(smiles: str) -> LabelledGraph:
    """:func:`mol_to_graph_labels` of a SMILES string.

    Raises:
        chemgraph.chem.MoleculeParseError: RDKit cannot read the SMILES.
        GraphEncodingError: see :func:`mol_to_graph_labels`.
    """
    from chemgraph.chem.parse import mol_from_smiles

    return mol_to_graph_labels(mol_from_smiles(smiles))


def graph_to_mol(graph: LabelledGraph) -> Chem.Mol:
    """Rebuild and sanitise the RDKit molecule of a labelled graph.

    Each atom gets its label's element, charge, isotope, aromatic flag and exactly its
    hydrogen count (no implicit hydrogens are added). Bonds are added in the order of their
    higher, then lower, atom index, so every atom lists its neighbours in ascending index order,
    the order the chirality labels refer to. Double-bond stereo is set as cis/trans of the
    lowest-indexed neighbours, then RDKit assigns stereochemistry (removing labels on atoms and
    bonds that are not stereocentres).

    Raises:
        GraphDecodingError: a bond out of range, joining an atom to itself, given twice or of
            class 0; RDKit's sanitisation failure (valence, kekulisation); a cis/trans label on a
            double bond without a neighbour at each end.
    """
    mol = Chem.RWMol()
    for label in graph.atoms:
        atom = Chem.Atom(label.element)
        atom.SetFormalCharge(label.formal_charge)
        atom.SetNumExplicitHs(label.num_hydrogens)
        atom.SetNoImplicit(True)
        atom.SetIsAromatic(label.aromatic)
        atom.SetIsotope(label.isotope)
        mol.AddAtom(atom)
    seen = set()
    for i, j, bond_class in sorted(graph.bonds, key=lambda b: (max(b[:2]), min(b[:2]))):
        if not (0 <= i < graph.num_atoms and 0 <= j < graph.num_atoms) or i == j:
            raise GraphDecodingError(f"bond {i}-{j} is out of range or joins an atom to itself")
        if (min(i, j), max(i, j)) in seen or bond_class not in _CLASS_TO_TYPE:
            raise GraphDecodingError(f"bond {i}-{j} is repeated or has bad class {bond_class}")
        seen.add((min(i, j), max(i, j)))
        mol.AddBond(i, j, _CLASS_TO_TYPE[bond_class])
        if bond_class == 4:
            mol.GetBondBetweenAtoms(i, j).SetIsAromatic(True)
    for index, label in enumerate(graph.atoms):
        if label.chirality:
            mol.GetAtomWithIdx(index).SetChiralTag(_TAG_OF_CODE[label.chirality])
    for i, j, bond_class in graph.bonds:
        if bond_class in (_CIS, _TRANS):
            references = []
            for end, other in ((i, j), (j, i)):
                others = [n.GetIdx() for n in mol.GetAtomWithIdx(end).GetNeighbors()]
                others = [n for n in others if n != other]
                if not others:
                    raise GraphDecodingError(f"cis/trans double bond {i}-{j} lacks a neighbour")
                references.append(min(others))
            bond = mol.GetBondBetweenAtoms(i, j)
            bond.SetStereoAtoms(*references)
            bond.SetStereo(
                Chem.BondStereo.STEREOCIS if bond_class == _CIS else Chem.BondStereo.STEREOTRANS
            )
    with rdBase.BlockLogs():
        try:
            Chem.SanitizeMol(mol)
        except Exception as error:  # RDKit raises several exception types for sanitisation
            raise GraphDecodingError(str(error).strip() or type(error).__name__) from None
        out = mol.GetMol()
        Chem.SetDoubleBondNeighborDirections(out)
        Chem.AssignStereochemistry(out, cleanIt=True, force=True)
    return out


def graph_to_smiles(graph: LabelledGraph) -> str:
    """RDKit canonical (isomeric) SMILES of :func:`graph_to_mol`.

    Raises:
        GraphDecodingError: see :func:`graph_to_mol`.
    """
    return Chem.MolToSmiles(graph_to_mol(graph))


def same_molecules(smiles_a: str, smiles_b: str) -> bool:
    """Whether two canonical SMILES hold the same molecules, in any fragment order.

    ``"CCO.[Na+]"`` and ``"[Na+].CCO"`` are the same; both strings must already be RDKit
    canonical SMILES (as :func:`graph_to_smiles` and :func:`chemgraph.chem.canonical_smiles`
    write them), so each fragment is compared as text.
    """
    return sorted(smiles_a.split(".")) == sorted(smiles_b.split("."))


def round_trip_problem(mol: Chem.Mol) -> str | None:
    """Why ``mol`` does not survive molecule -> graph -> molecule -> canonical SMILES, or None.

    Compares :func:`graph_to_smiles` of :func:`mol_to_graph_labels` with the canonical SMILES of
    ``mol`` itself (atom maps removed).

    Returns:
        ``None`` when the two SMILES are equal; otherwise ``"encode: <reason>"``,
        ``"decode: <reason>"`` or ``"changed: <expected> -> <got>"``.
    """
    expected = Chem.MolToSmiles(_without_atom_maps(mol))
    try:
        graph = mol_to_graph_labels(mol)
    except GraphEncodingError as error:
        return f"encode: {error.reason}"
    try:
        got = graph_to_smiles(graph)
    except GraphDecodingError as error:
        return f"decode: {error.reason}"
    return None if got == expected else f"changed: {expected} -> {got}"


def _without_atom_maps(mol: Chem.Mol) -> Chem.Mol:
    if not any(atom.GetAtomMapNum() for atom in mol.GetAtoms()):
        return mol
    mol = Chem.Mol(mol)
    for atom in mol.GetAtoms():
        atom.SetAtomMapNum(0)
    return mol
