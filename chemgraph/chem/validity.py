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
   product has no more atoms than the input (hydrogens are not counted here: rule 6 does);
5. it is not too strained to exist (:func:`strain_problem`): no double or aromatic bond that
   must be *trans* in a ring of fewer than 8 atoms (Bredt's rule in Wiseman's form: a
   bridgehead double bond is a trans-cycloalkene of its largest ring holding it, isolable from
   8 ring atoms; J. Bredt, Liebigs Ann. Chem. 437, 1 (1924); J. R. Wiseman, J. Am. Chem. Soc.
   89, 5966 (1967)), no triple bond in a ring of fewer than 8 atoms (cyclooctyne is the
   smallest isolable cycloalkyne: A. T. Blomquist, L. H. Liu, J. Am. Chem. Soc. 75, 2153
   (1953)), and no double or aromatic bond shared by a three-membered ring and another ring (a
   cyclopropene fused at its double bond, cyclopropabenzene: cyclopropene alone holds about 54
   kcal/mol of strain, K. B. Wiberg, Angew. Chem. Int. Ed. Engl. 25, 312 (1986), and a ring
   fused at its double bond adds more; such molecules are made only by dedicated routes, never
   as the outcome of the reactions a model predicts). Of the 69,999 readable recorded products
   of the USPTO-MIT validation and test splits the rule refuses 7, each an extraction error (a
   meta-bridged imide, fused oxirenes, anti-Bredt bicycles). RDKit keeps no
   E/Z label on a double bond in a ring of fewer than 8 atoms, so a written *trans* label there
   cannot occur; the rule covers the trans bonds a ring system forces;
6. when the product's atoms are mapped to the inputs (the reaction-centre model's candidates:
   :func:`redox_problem`), its oxidation level is balanced: the summed oxidation states of the
   product's atoms (IUPAC 2016 ionic approximation with Pauling electronegativities,
   :func:`oxidation_change`; an atom the product takes alone, such as a methyl, may come from
   any input atom of its element) are those the same atoms had in the inputs, unless a reducing
   agent (:data:`REDUCING_AGENTS`) among the reactants and reagents accounts for a lower sum (a
   reduction: the product gained hydrogens or electrons) or an oxidising agent
   (:data:`OXIDISING_AGENTS`) for a higher one (an oxidation). The product of a hydrogenation
   (methyl acrylate to methyl propanoate) or a hydrogenolysis (benzyl bromide to toluene) needs
   H2, a hydride or a metal; a dehydrogenation or C-H coupling (hexane to cycloheptane) needs an
   oxidant. Rules 1-5 need the product alone (:func:`product_problem`; both decoders of
   ``chemgraph react``); rule 6 needs the atom map, which the GRAT translator's generated graphs
   do not carry, so it applies to the reaction-centre model only.

Public API
----------
- :func:`product_problem` — why a product SMILES is not a valid product of given reactants, or
  None (rules 1-5).
- :func:`strain_problem` — rule 5 alone.
- :func:`oxidation_change`, :func:`redox_problem` — rule 6.
- :data:`REDUCING_AGENTS`, :data:`OXIDISING_AGENTS`, :class:`RedoxAgent` — the reagents that
  account for a reduction or an oxidation.
- :class:`ReactionInputs` — the reactant facts (elements, radicals, bare-atom fragments, redox
  agents) that the rules compare with, computed once per reaction.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rdkit import Chem

from chemgraph.chem.iteration import atom_list, bond_list

__all__ = [
    "OXIDISING_AGENTS",
    "PAULING_ELECTRONEGATIVITY",
    "REDUCING_AGENTS",
    "ReactionInputs",
    "RedoxAgent",
    "oxidation_change",
    "product_problem",
    "redox_problem",
    "strain_problem",
]


@dataclass(frozen=True)
class RedoxAgent:
    """A kind of reagent that accounts for a reduction or an oxidation.

    Attributes:
        name: what a chemist calls it (printed in the reason a candidate is refused).
        patterns: SMARTS that must *all* match the reactants and reagents (each anywhere:
            activated DMSO is DMSO plus an activator).
    """

    name: str
    patterns: tuple[str, ...]


REDUCING_AGENTS: tuple[RedoxAgent, ...] = (
    RedoxAgent("hydrogen", ("[#1]-[#1]",)),
    RedoxAgent("a boron, aluminium, silicon, tin, gallium or phosphorus hydride "
               "(NaBH4, NaBH3CN, NaBH(OAc)3, borane, LiAlH4, DIBAL, silanes, Bu3SnH, H3PO2)",
               ("[B,Al,Si,Sn,Ga,Ge,P;!H0]",)),
    RedoxAgent("hydride ions with aluminium or boron (LiAlH4, NaBH4 written as ions)",
               ("[#1-]", "[Al,B]")),
    RedoxAgent("a zero-valent metal (Li, Na, K, Mg, Ca, Zn, Fe, Sn, In, Al, Cu, Sm, Mn, Ti)",
               ("[Li,Na,K,Mg,Ca,Zn,Fe,Sn,In,Al,Cu,Sm,Mn,Ti;+0;X0]",)),
    RedoxAgent("a hydrogenation catalyst (Pd, Pt, Rh, Ru, Ir or Ni metal, PtO2): "
               "hydrogen is often left unwritten", ("[Pd,Pt,Rh,Ru,Ir,Ni;+0;X0]",)),
    RedoxAgent("Adams' catalyst (PtO2)", ("[Pt]~[#8]",)),
    RedoxAgent("Pearlman's catalyst (Pd(OH)2 on carbon, written as Pd2+ and hydroxide): "
               "hydrogen is often left unwritten", ("[Pd+2]", "[OH-]")),
    RedoxAgent("an organometallic (organolithium, Grignard, organozinc, cuprate) or carbanion",
               ("[#6]~[Li,Na,K,Mg,Zn,Cu,Al,Mn,Sm,In]",)),
    RedoxAgent("a carbanion", ("[#6-;!$([#6-]#*);!$([#6-]=*)]",)),
    RedoxAgent("a low-valent metal salt (SnCl2, TiCl3, SmI2, CrCl2)",
               ("[$([Sn;+0;X2]),Sn+2,$([Ti;+0;X3]),Ti+3,$([Sm;+0;X2]),Sm+2,$([Cr;+0;X2]),Cr+2]",)),
    RedoxAgent("hydrazine", ("[NX3;H2]-[NX3;H2]",)),
    RedoxAgent("formic acid or a formate (transfer hydrogenation)", ("[CX3;H1](=O)[OX2H1,OX1-]",)),
    RedoxAgent("a phosphine (PPh3: Staudinger, deoxygenation)",
               ("[PX3;+0;!$(P~[#7,#8,#16,F,Cl,Br,I])]",)),
    RedoxAgent("sulfite, bisulfite, metabisulfite, dithionite or sulfur dioxide",
               ("[$([SX3](=O)([OX1-,OX2H1])[!#6]),$([SX2](=O)=O)]",)),
    RedoxAgent("thiosulfate", ("[SX4;$(S=[SX1]),$(S-[SX1-,SX1H1])]",)),
)  # fmt: skip
"""Reagents that account for a reduction of the product's atoms (rule 6 of the module): the
hydrogen, hydride and electron sources of the textbook (e.g. J. Clayden, N. Greeves, S. Warren,
*Organic Chemistry*, 2nd ed., Oxford University Press 2012). Sodium, potassium and lithium
hydride act as bases and are not among them. Checked on the first 3,000 reactions of the
USPTO-MIT validation split (the shipped model's training data, no test reaction): 400 recorded
products are reductions by rule 6, and these patterns find an agent for 223 of them; most of
the others, read one by one, name no agent at all (patent extractions leave reagents out: a
nitro group reduced "in ethanol"). Before an atom taken alone could come from any input atom
of its element (:func:`oxidation_change`), 426 were: of the 18 more that name no agent, 14 are
methylations and methyl esters whose methyl the atom map takes from K2CO3 or a solvent."""

OXIDISING_AGENTS: tuple[RedoxAgent, ...] = (
    RedoxAgent("oxygen or ozone", ("[$([OX1]=[OX1]),$([OX1]-[OX1]),$([#8+]=[#8])]",)),
    RedoxAgent("a peroxide (H2O2, mCPBA and other peracids, TBHP, Oxone, persulfate)",
               ("[OX2,OX1-;+0,-1]-[OX2,OX1-;+0,-1]",)),
    RedoxAgent("a chromium, manganese, osmium, ruthenium, rhenium, vanadium, molybdenum or "
               "tungsten oxide (CrO3, PCC, KMnO4, MnO2, OsO4, TPAP)",
               ("[Cr,Mn,Os,Ru,Re,V,Mo,W]~[#8]",)),
    RedoxAgent("a metal oxidant (Ag(I), Ce(IV), Pb(IV), Tl(III), Hg(II), Bi, Co, Cu(II), "
               "Fe(III), Pd(II))",
               ("[Ag,Ce,Pb,Tl,Hg,Bi,Co;!$([*;+0;X0])]",)),
    RedoxAgent("copper(II), iron(III) or palladium(II)",
               ("[Cu+2,Fe+3,Pd+2,$([Cu,Pd;X2](~[#8,Cl,Br])~[#8,Cl,Br]),$([Fe;X3])]",)),
    RedoxAgent("a halogen (Br2, I2, Cl2, ICl)",
               ("[$([Cl,Br,I]-[Cl,Br,I]),$([Cl,Br,I;+0;X0;H0])]",)),
    RedoxAgent("an N-halogen reagent (NBS, NCS, NIS, Selectfluor, NFSI, TCCA)",
               ("[#7]-[F,Cl,Br,I]",)),
    RedoxAgent("a halogen bonded to oxygen (hypochlorite, chlorite, periodate, IBX, "
               "Dess-Martin periodinane, PIDA)", ("[Cl,Br,I]~[#8]",)),
    RedoxAgent("a quinone (DDQ, chloranil, benzoquinone)",
               ("[#8]=[#6]1[#6]=,:[#6][#6](=[#8])[#6]=,:[#6]1",)),
    RedoxAgent("activated DMSO (Swern, Parikh-Doering, Pfitzner-Moffatt, Albright-Goldman)",
               ("[CH3][SX3](=O)[CH3]",
                "[$(ClC(=O)C(=O)Cl),$([SX3](=O)(=O)=O),$(C(=O)OC(=O)),$(N=C=N)]")),
    RedoxAgent("an amine N-oxide (NMO, TMAO)", ("[NX4+]-[OX1-]",)),
    RedoxAgent("a nitroxyl radical (TEMPO)", ("[#7]-[OX1;+0;H0]",)),
    RedoxAgent("nitric acid, a nitrate or a nitrite", (
        "[$([N+](=O)([O-])[OX2H1,OX1-]),$([NX2](=O)[OX1-,OX2H1]),$([NX2](=O)O[#6])]",)),
    RedoxAgent("selenium dioxide or a selenenyl halide", ("[Se]~[#8,Cl,Br]",)),
    RedoxAgent("sulfuryl chloride", ("[SX4](=O)(=O)(Cl)Cl",)),
    RedoxAgent("an oxaziridine (Davis)", ("[#8]1[#7][#6]1",)),
)  # fmt: skip
"""Reagents that account for an oxidation of the product's atoms (rule 6 of the module): the
oxidants of the textbook (Clayden et al., as for :data:`REDUCING_AGENTS`). A halogenation is
an oxidation of the carbon, so halogenating agents are among them. Checked on the same
reactions as :data:`REDUCING_AGENTS`: of 150 recorded oxidations, 79 name one of these."""

PAULING_ELECTRONEGATIVITY: dict[str, float] = {
    "H": 2.20, "Li": 0.98, "Be": 1.57, "B": 2.04, "C": 2.55, "N": 3.04, "O": 3.44, "F": 3.98,
    "Na": 0.93, "Mg": 1.31, "Al": 1.61, "Si": 1.90, "P": 2.19, "S": 2.58, "Cl": 3.16,
    "K": 0.82, "Ca": 1.00, "Sc": 1.36, "Ti": 1.54, "V": 1.63, "Cr": 1.66, "Mn": 1.55,
    "Fe": 1.83, "Co": 1.88, "Ni": 1.91, "Cu": 1.90, "Zn": 1.65, "Ga": 1.81, "Ge": 2.01,
    "As": 2.18, "Se": 2.55, "Br": 2.96, "Rb": 0.82, "Sr": 0.95, "Y": 1.22, "Zr": 1.33,
    "Mo": 2.16, "Ru": 2.20, "Rh": 2.28, "Pd": 2.20, "Ag": 1.93, "Cd": 1.69, "In": 1.78,
    "Sn": 1.96, "Sb": 2.05, "Te": 2.10, "I": 2.66, "Cs": 0.79, "Ba": 0.89, "La": 1.10,
    "Ce": 1.12, "Sm": 1.17, "W": 2.36, "Re": 1.90, "Os": 2.20, "Ir": 2.20, "Pt": 2.28,
    "Au": 2.54, "Hg": 2.00, "Tl": 1.62, "Pb": 2.33, "Bi": 2.02,
}  # fmt: skip
"""Pauling electronegativities (CRC Handbook of Chemistry and Physics, "Electronegativity"
table, after A. L. Allred, J. Inorg. Nucl. Chem. 17, 215 (1961)); an element not listed counts
as a metal below hydrogen (:data:`_METAL_ELECTRONEGATIVITY`)."""

_METAL_ELECTRONEGATIVITY = 1.5
_HYDROGEN = PAULING_ELECTRONEGATIVITY["H"]


def _compiled(agents: tuple[RedoxAgent, ...]) -> list[tuple[str, list[Chem.Mol]]]:
    out = []
    for agent in agents:
        patterns = [Chem.MolFromSmarts(p) for p in agent.patterns]
        if any(p is None for p in patterns):  # a typo in the tables above
            raise ValueError(f"a pattern of {agent.name!r} is not SMARTS: {agent.patterns}")
        out.append((agent.name, patterns))
    return out


_REDUCING = _compiled(REDUCING_AGENTS)
_OXIDISING = _compiled(OXIDISING_AGENTS)


def _fragment_key(mol: Chem.Mol) -> str:
    """Canonical SMILES of a one-heavy-atom fragment without atom maps."""
    out = Chem.Mol(mol)
    for atom in atom_list(out):
        atom.SetAtomMapNum(0)
    return Chem.MolToSmiles(out)


@dataclass(frozen=True)
class ReactionInputs:
    """What the reactants and reagents of one reaction hold, for :func:`product_problem` and
    :func:`redox_problem`.

    Attributes:
        elements: heavy-atom count per element symbol (hydrogens not counted).
        radicals: ``(element symbol, radical electrons)`` of every radical atom in the input.
        bare_atoms: canonical SMILES (no atom maps) of the input's one-heavy-atom fragments
            (``"[Na+]"``, ``"O"``, ``"[Cl-]"``).
        reducing_agents, oxidising_agents: the names of the :data:`REDUCING_AGENTS` and
            :data:`OXIDISING_AGENTS` found among them.
    """

    elements: Counter
    radicals: frozenset[tuple[str, int]]
    bare_atoms: frozenset[str]
    reducing_agents: frozenset[str] = field(default_factory=frozenset)
    oxidising_agents: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_mols(cls, mols: Iterable[Chem.Mol]) -> ReactionInputs:
        """The facts of the given reactant and reagent molecules (sanitised RDKit molecules;
        a molecule of several fragments is split into them)."""
        mols = list(mols)
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

        def found(agents: list[tuple[str, list[Chem.Mol]]]) -> frozenset[str]:
            return frozenset(
                name
                for name, patterns in agents
                if all(any(m.HasSubstructMatch(p) for m in mols) for p in patterns)
            )

        return cls(
            elements, frozenset(radicals), frozenset(bare), found(_REDUCING), found(_OXIDISING)
        )

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
        None for a valid product (rules 1-5 of the module docstring), else a one-line reason:
        ``"not a molecule RDKit can sanitise"``, ``"empty product"``, ``"radical on C (1
        unpaired electron) the reactants do not have"``, ``"bare atom [Cl] the reactants do not
        have"``, ``"2 Br atoms but the reactants hold 1"`` or a :func:`strain_problem` reason.

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
    return strain_problem(mol)


_SMALLEST_TRANS_RING = 8
_SMALLEST_ALKYNE_RING = 8


def strain_problem(mol: Chem.Mol) -> str | None:
    """Why ``mol`` (sanitised) is too strained to be a reaction's product, or None (rule 5
    of the module docstring).

    A double or aromatic ring bond ``a=b`` is planar: each of ``a``'s two other ring
    neighbours is *cis* to one of ``b``'s and *trans* to the other. When ``a`` (or ``b``) has
    two ring neighbours besides the bond (a bridgehead or ring-fusion atom), some pair of
    neighbours across the bond must be trans; the ring through such a pair is a
    trans-cycloalkene ring of the size of its shortest path. The molecule takes the
    arrangement whose trans rings are largest; when even then one has fewer than 8 atoms the
    bond breaks Bredt's rule (bicyclo[2.2.1]hept-1-ene: 6; bicyclo[3.3.1]non-1-ene, isolable:
    8). Fused aromatic rings (naphthalene, indole) have no trans pair in a ring at all.

    Returns:
        None, or ``"anti-Bredt double bond (trans in a 6-membered ring)"``, ``"triple bond in
        a 7-membered ring"`` or ``"double bond shared by a three-membered ring and another
        ring (a fused cyclopropene)"``.
    """
    rings = mol.GetRingInfo()
    planar = []
    for bond in bond_list(mol):
        if not bond.IsInRing():
            continue
        kind, index = bond.GetBondType(), bond.GetIdx()
        if kind == Chem.BondType.TRIPLE:
            size = rings.MinBondRingSize(index)
            if size < _SMALLEST_ALKYNE_RING:
                return f"triple bond in a {size}-membered ring"
        elif kind in (Chem.BondType.DOUBLE, Chem.BondType.AROMATIC):
            if rings.MinBondRingSize(index) == 3 and rings.NumBondRings(index) > 1:
                return (
                    "double bond shared by a three-membered ring and another ring (a fused "
                    "cyclopropene)"
                )
            planar.append(bond)
    for bond in planar:
        size = _largest_trans_ring(mol, bond)
        if size < _SMALLEST_TRANS_RING:
            return f"anti-Bredt double bond (trans in a {size}-membered ring)"
    return None


def _ring_neighbours(atom: Chem.Atom, other: int) -> list[int]:
    return [
        b.GetOtherAtomIdx(atom.GetIdx())
        for b in atom.GetBonds()
        if b.IsInRing() and b.GetOtherAtomIdx(atom.GetIdx()) != other
    ]


def _largest_trans_ring(mol: Chem.Mol, bond: Chem.Bond) -> float:
    """The size of the smallest ring through a trans pair of ring neighbours across the
    planar ``bond``, in the arrangement that makes it largest (inf: no ring needs a trans
    pair)."""
    a, b = bond.GetBeginAtom(), bond.GetEndAtom()
    left = _ring_neighbours(a, b.GetIdx())
    right = _ring_neighbours(b, a.GetIdx())
    if max(len(left), len(right)) < 2 or min(len(left), len(right)) < 1:
        return float("inf")  # each side's ring neighbour can be cis to the other's
    left, right = left[:2], right[:2]
    blocked = {a.GetIdx(), b.GetIdx()}
    size = {(c, d): _ring_size(mol, c, d, blocked) for c in left for d in right}
    if len(left) == 1 or len(right) == 1:  # the lone neighbour is trans to one of the two
        return max(size.values())
    (c1, c2), (d1, d2) = left, right
    return max(min(size[c1, d2], size[c2, d1]), min(size[c1, d1], size[c2, d2]))


def _ring_size(mol: Chem.Mol, start: int, end: int, blocked: set[int]) -> float:
    """Atoms of the smallest ring ``start``-a=b-``end`` closed by a path that avoids
    ``blocked`` (the bond's atoms a, b); inf when there is none."""
    if start == end:
        return 3
    seen, queue = {start} | blocked, deque([(start, 0)])
    while queue:
        atom, steps = queue.popleft()
        for neighbour in mol.GetAtomWithIdx(atom).GetNeighbors():
            k = neighbour.GetIdx()
            if k == end:
                return steps + 1 + 3
            if k not in seen:
                seen.add(k)
                queue.append((k, steps + 1))
    return float("inf")


def _electronegativity(atom: Chem.Atom) -> float:
    return PAULING_ELECTRONEGATIVITY.get(atom.GetSymbol(), _METAL_ELECTRONEGATIVITY)


def _electron_sink(atom: Chem.Atom) -> bool:
    """Whether ``atom`` is bonded to a more electronegative atom (a carboxyl, carbonyl or
    trihalomethyl carbon): the fragment it leaves with can take a bond's electrons or give
    them up (CO2, an aldehyde, a haloform anion)."""
    own = _electronegativity(atom)
    return any(_electronegativity(n) > own for n in atom.GetNeighbors())


def _diazo_shift(atom: Chem.Atom) -> int:
    """The change of ``atom``'s oxidation state when a diazo group, which RDKit writes
    ``C=[N+]=[N-]``, is counted in its ``[C-]-[N+]#N`` form: -2 for the carbon, +1 for each
    nitrogen (0 for any other atom). In that form the carbon holds the electron pair it keeps
    when N2 leaves (a methyl ester from diazomethane or TMS-diazomethane is no reduction)."""
    symbol = atom.GetSymbol()
    if symbol not in ("C", "N") or atom.GetDegree() > 3:
        return 0
    for bond in atom.GetBonds():
        if bond.GetBondType() != Chem.BondType.DOUBLE:
            continue
        other = bond.GetOtherAtom(atom)
        if symbol == "C" and _is_diazo_nitrogen(other):
            return -2
        if symbol == "N" and atom.GetFormalCharge() == 1 and _is_diazo_nitrogen(atom):
            return 1
        if symbol == "N" and atom.GetFormalCharge() == -1 and _is_diazo_nitrogen(other):
            return 1
    return 0


def _is_diazo_nitrogen(atom: Chem.Atom) -> bool:
    """``atom`` is the middle nitrogen of ``C=[N+]=[N-]``."""
    if atom.GetSymbol() != "N" or atom.GetFormalCharge() != 1 or atom.GetDegree() != 2:
        return False
    ends = sorted(
        (b.GetOtherAtom(atom).GetSymbol(), b.GetOtherAtom(atom).GetFormalCharge())
        for b in atom.GetBonds()
        if b.GetBondType() == Chem.BondType.DOUBLE
    )
    return ends == [("C", 0), ("N", -1)]


def oxidation_change(
    inputs: Chem.Mol, edited: Chem.Mol, atoms: Sequence[int]
) -> tuple[float, float]:
    """How the summed oxidation states of ``atoms`` change from ``inputs`` to ``edited``.

    Oxidation states by the ionic approximation (IUPAC Recommendations 2016: P. Karen, P.
    McArdle, J. Takats, Pure Appl. Chem. 88, 831): each bond's electrons go to the more
    electronegative atom (:data:`PAULING_ELECTRONEGATIVITY`), the formal charge counts, and a
    bond between equally electronegative atoms gives nothing. Bonds among ``atoms`` cancel in
    the sum, so the change comes from their hydrogens, charges and the bonds they lose to the
    atoms that leave. A lost bond between equally electronegative atoms whose leaving atom is
    bonded to a more electronegative one (the C-C bond a decarboxylation, a retro-aldol or a
    haloform reaction cuts) may leave its electrons with either side: its order is the
    change's uncertainty (a C-C bond cut between two plain carbons, as in the hydrogenolysis
    of an alkane, is not: the product then gained hydrogen). So is half of each aromatic bond
    cut to a different element (its order, 1.5, splits the electrons unevenly). A diazo group
    is counted in its ``[C-]-[N+]#N`` form (:func:`_diazo_shift`).

    An atom the product takes alone (none of its input neighbours is a product atom: the
    methyl of a methylation, a chloride) brings nothing of its source along, so which input
    atom of its element it came from is the atom map's choice, not the chemistry's: USPTO-MIT's
    maps take the methyl of an iodomethane methylation from the K2CO3 beside it (a carbonate
    carbon, +4, that would become a methyl, -2, a "reduction" by 6), and a model trained on
    them does too. Such an atom counts with the input state, among its own and those of the
    input atoms of its element that are not product atoms nor bonded to one, that brings the
    change closest to zero (the methyl of iodomethane, -2: no change).

    Args:
        inputs: the input molecule, hydrogen counts explicit (:func:`chemgraph.chem.
            reaction_edits.prepare_inputs`).
        edited: the input with the edits applied (:func:`chemgraph.chem.reaction_edits.
            apply_edits`), same atom indices.
        atoms: the product's atoms (whole fragments of ``edited``).

    Returns:
        ``(change, uncertainty)``: negative changes are reductions (methyl acrylate to methyl
        propanoate: -2), positive ones oxidations (an alcohol to its aldehyde: +2).
    """
    chosen = set(atoms)
    change = uncertainty = 0.0
    alone = []  # the input states each atom taken alone may have had
    for k in chosen:
        state, _ = _oxidation_state(edited.GetAtomWithIdx(k), chosen, losing=False)
        source = inputs.GetAtomWithIdx(k)
        before, doubt = _oxidation_state(source, chosen, losing=True)
        change += state - before
        uncertainty += doubt
        if not any(n.GetIdx() in chosen for n in source.GetNeighbors()):
            others = _source_states(inputs, source.GetAtomicNum(), chosen)
            alone.append((before, others | {before}))
    if not alone:
        return change, uncertainty
    # re-source the atoms taken alone: every sum of their possible input states
    shifts = {0.0}
    for before, states in alone:
        shifts = {s + before - other for s in shifts for other in states}
    return change + min(shifts, key=lambda s: (abs(change + s), abs(s))), uncertainty


def _oxidation_state(atom: Chem.Atom, chosen: set[int], losing: bool) -> tuple[float, float]:
    """``atom``'s oxidation state (ionic approximation, :func:`oxidation_change`) and, when
    ``losing`` (``atom`` is an input atom), the uncertainty its bonds to atoms outside
    ``chosen`` add as the product loses them."""
    own = _electronegativity(atom)
    state = (
        atom.GetFormalCharge()
        + atom.GetTotalNumHs() * ((own < _HYDROGEN) - (own > _HYDROGEN))
        + _diazo_shift(atom)
    )
    uncertainty = 0.0
    for bond in atom.GetBonds():
        other = bond.GetOtherAtom(atom)
        theirs = _electronegativity(other)
        order = bond.GetBondTypeAsDouble()
        if losing and other.GetIdx() not in chosen:  # a bond the product loses
            if theirs == own and _electron_sink(other):
                uncertainty += order
            elif bond.GetIsAromatic():
                uncertainty += 0.5
        state += order * ((theirs > own) - (theirs < own))
    return state, uncertainty


def _source_states(inputs: Chem.Mol, element: int, chosen: set[int]) -> set[float]:
    """The oxidation states of the input atoms of ``element`` that an atom map could give
    a product atom taken alone: outside ``chosen`` and not bonded to it."""
    return {
        _oxidation_state(atom, chosen, losing=False)[0]
        for atom in atom_list(inputs)
        if atom.GetAtomicNum() == element
        and atom.GetIdx() not in chosen
        and not any(n.GetIdx() in chosen for n in atom.GetNeighbors())
    }


def redox_problem(
    inputs: Chem.Mol, edited: Chem.Mol, atoms: Sequence[int], facts: ReactionInputs
) -> str | None:
    """Why the product ``atoms`` of ``edited`` are not balanced (rule 6 of the module
    docstring), or None.

    Args:
        inputs, edited, atoms: as :func:`oxidation_change` takes them.
        facts: the reaction's :class:`ReactionInputs` (its redox agents).

    Returns:
        None when the oxidation-state change is within its uncertainty, or the reactants and
        reagents hold a reducing agent (a reduction) or an oxidising agent (an oxidation);
        else ``"a reduction (oxidation states down by 2) with no reducing agent among the
        reactants and reagents"`` or the same for an oxidation.
    """
    change, uncertainty = oxidation_change(inputs, edited, atoms)
    if abs(change) <= uncertainty + 1e-9:
        return None
    if change < 0:
        if facts.reducing_agents:
            return None
        return (
            f"a reduction (oxidation states down by {-change:g}) with no reducing agent among "
            "the reactants and reagents"
        )
    if facts.oxidising_agents:
        return None
    return (
        f"an oxidation (oxidation states up by {change:g}) with no oxidising agent among the "
        "reactants and reagents"
    )
