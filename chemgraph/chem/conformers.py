"""3D conformers: RDKit ETKDGv3 embedding, then MMFF94 optimisation, seeded and reported.

The recipe is RDKit's standard one (Riniker & Landrum, J. Chem. Inf. Model. 2015, 55, 2562 for
ETKDG; Wang, Witek, Landrum & Riniker, J. Chem. Inf. Model. 2020, 60, 2044 for v3; Halgren,
J. Comput. Chem. 1996, 17, 490 for MMFF94): hydrogens are added, ``N`` conformers are embedded
with ``rdDistGeom.ETKDGv3()`` and a fixed random seed, then each is relaxed with
``rdForceFieldHelpers.MMFFOptimizeMoleculeConfs``. One thread is used for both steps, so
parallelism belongs to the caller (one molecule per worker process) and a seed gives the same
coordinates bit for bit on every run.

Embedding attempts, in this order (:data:`EMBEDDING_ATTEMPTS`): ETKDGv3 from RDKit's default
start (coordinates from the eigenvectors of a random distance matrix), then, when that gives no
conformer, ETKDGv3 from random coordinates (``useRandomCoords=True``), which RDKit's
documentation advises for large and flexible molecules: the eigenvector start fails on long
chains such as a C100 alkane, PEG-30 or a triglyceride, which embed from random coordinates.
Each attempt uses the same seed. ``timeout`` bounds each attempt with RDKit's own
``EmbedParameters.timeout`` (seconds per fragment); ``chemgraph featurize`` bounds the whole
conformer step of a record (all attempts and MMFF94) with its per-record limit
(``--record-timeout``, default 60 s).

Nothing prints: RDKit's log output is blocked or captured while a molecule is processed.
A molecule that cannot be embedded at all (no attempt gives a conformer) raises
:class:`~chemgraph.chem.MoleculeParseError`; everything short of that (fewer conformers than
asked, MMFF94 without parameters for the molecule, an optimisation that has not converged) is
returned as a readable problem next to the coordinates.

Public API
----------
- :class:`ConformerResult` — the molecule with its conformers, MMFF94 energies and problems.
- :func:`embed_conformers` — ETKDGv3 + MMFF94 for one molecule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from rdkit import Chem
from rdkit.Chem import rdDistGeom, rdForceFieldHelpers

from chemgraph.chem.parse import MoleculeParseError, rdkit_log_capture

__all__ = ["EMBEDDING_ATTEMPTS", "MMFF94_ELEMENTS", "ConformerResult", "embed_conformers"]

EMBEDDING_ATTEMPTS: tuple[str, ...] = ("eigenvector start", "random coordinates")
"""The ETKDGv3 embedding attempts of :func:`embed_conformers`, in the order they are tried."""

MMFF94_ELEMENTS: frozenset[str] = frozenset(
    ["H", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Br", "I"]
    + ["Li", "Na", "K", "Mg", "Ca", "Fe", "Zn", "Cu"]  # as the ions MMFF94 types
)
"""Elements that have MMFF94 atom types (Halgren 1996): organic elements plus a few ions.

Used only to name the likely culprit in a problem message; whether MMFF94 can handle a molecule
is decided by RDKit (``MMFFHasAllMoleculeParams``), which also rejects unusual environments of
these elements (e.g. hypervalent atoms without an MMFF94 type)."""


@dataclass
class ConformerResult:
    """Conformers of one molecule, as returned by :func:`embed_conformers`.

    Attributes:
        mol: the input molecule with explicit hydrogens added (``Chem.AddHs``: the input's atoms
            keep their indices, hydrogens are appended after them) and one RDKit conformer per
            embedded geometry, coordinates in Å. Read them with
            ``mol.GetConformer(conformer_ids[k]).GetPositions()``.
        conformer_ids: RDKit conformer ids of the embedded conformers, in embedding order.
        energies: MMFF94 energy (kcal/mol) of each conformer after optimisation, ``None`` where
            it was not optimised (``optimize=False``, MMFF94 without parameters).
        converged: whether each conformer's MMFF94 optimisation converged within
            ``max_iterations``; ``None`` where it was not optimised.
        attempt: the embedding attempt that gave the conformers (:data:`EMBEDDING_ATTEMPTS`).
        problems: human-readable problems, empty when everything worked. Molecule-level ones
            (``"ETKDGv3 embedded 3 of 10 conformers"``, ``"MMFF94 has no parameters for this
            molecule (no MMFF94 atom type for element(s) B); conformers are ETKDGv3 geometries,
            not optimised"``) come first, then per-conformer ones prefixed with
            ``"conformer <id>: "`` (``"conformer 2: MMFF94 optimisation did not converge in
            500 iterations"``).

    Iterating gives ``(mol, problems)``, so ``mol, problems = embed_conformers(mol)`` works.
    """

    mol: Chem.Mol
    conformer_ids: list[int] = field(default_factory=list)
    energies: list[float | None] = field(default_factory=list)
    converged: list[bool | None] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    attempt: str = EMBEDDING_ATTEMPTS[0]

    @property
    def num_conformers(self) -> int:
        """Number of embedded conformers (``len(conformer_ids)``)."""
        return len(self.conformer_ids)

    def __iter__(self) -> Iterator[Chem.Mol | list[str]]:
        return iter((self.mol, self.problems))


def _mmff_missing_reason(mol: Chem.Mol) -> str:
    elements = sorted({a.GetSymbol() for a in mol.GetAtoms()} - MMFF94_ELEMENTS)
    if elements:
        detail = f"no MMFF94 atom type for element(s) {', '.join(elements)}"
    else:
        detail = "an atom environment without an MMFF94 atom type"
    return (
        f"MMFF94 has no parameters for this molecule ({detail}); "
        "conformers are ETKDGv3 geometries, not optimised"
    )


def embed_conformers(
    mol: Chem.Mol,
    num_conformers: int = 1,
    seed: int = 0,
    optimize: bool = True,
    max_iterations: int = 500,
    timeout: float | None = None,
) -> ConformerResult:
    """Embed 3D conformers with ETKDGv3 and optimise them with MMFF94.

    Steps: ``Chem.AddHs(mol, addCoords=True)``; ``rdDistGeom.EmbedMultipleConfs`` with
    ``rdDistGeom.ETKDGv3()`` parameters (``randomSeed=seed``, one thread, RDKit's other defaults:
    chirality enforced, no RMS pruning), and when that embeds nothing, again with
    ``useRandomCoords=True`` (:data:`EMBEDDING_ATTEMPTS`); then, when ``optimize`` and
    ``rdForceFieldHelpers.MMFFHasAllMoleculeParams`` agree, ``MMFFOptimizeMoleculeConfs``
    (``mmffVariant="MMFF94"``, ``maxIters=max_iterations``, one thread).

    Args:
        mol: a sanitised RDKit molecule, e.g. from :func:`~chemgraph.chem.mol_from_smiles`. It is
            not modified. Existing conformers are ignored (replaced by the embedded ones).
        num_conformers: how many conformers to embed (>= 1).
        seed: ETKDG random seed. The same seed gives identical coordinates on every run and
            machine with the same RDKit version; a negative seed means unseeded (RDKit's ``-1``).
        optimize: relax each conformer with MMFF94; ``False`` keeps the ETKDGv3 geometries.
        max_iterations: MMFF94 optimiser iterations per conformer (RDKit's ``maxIters``).
        timeout: seconds each embedding attempt may take per fragment (RDKit's
            ``EmbedParameters.timeout``, rounded up to whole seconds); ``None``: no limit.

    Returns:
        A :class:`ConformerResult`: the molecule with hydrogens and ``1 <= n <= num_conformers``
        conformers (Å), their MMFF94 energies (kcal/mol) and convergence, and the problems met.

    Raises:
        MoleculeParseError: no attempt embedded a conformer; ``reason`` is ``"ETKDGv3 could not
            embed a conformer (seed <seed>, <n> atoms with hydrogens; tried eigenvector start,
            random coordinates)"``, plus RDKit's messages when it gave any.
            Happens for geometrically impossible input, e.g. cyclopropyne ``"C1#CC1"`` or
            norbornane with contradictory bridgehead stereo ``"C1C[C@@H]2CC[C@@H]1C2"``.
        ValueError: ``num_conformers < 1`` or ``max_iterations < 1``.
    """
    if num_conformers < 1:
        raise ValueError(f"num_conformers must be >= 1, got {num_conformers}")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    if mol is None or mol.GetNumAtoms() == 0:
        raise MoleculeParseError("ETKDGv3 could not embed a conformer: the molecule has no atoms")

    mol_h = Chem.AddHs(mol, addCoords=True)
    messages: list[str] = []
    for attempt in EMBEDDING_ATTEMPTS:
        params = rdDistGeom.ETKDGv3()
        params.randomSeed = int(seed) if seed >= 0 else -1
        params.numThreads = 1
        params.useRandomCoords = attempt == "random coordinates"
        if timeout is not None:
            params.timeout = max(1, math.ceil(timeout))
        with rdkit_log_capture() as log:
            ids = list(rdDistGeom.EmbedMultipleConfs(mol_h, num_conformers, params))
        messages += log.lines
        if ids:
            break
    if not ids:
        reason = (
            f"ETKDGv3 could not embed a conformer (seed {params.randomSeed}, "
            f"{mol_h.GetNumAtoms()} atoms with hydrogens; tried {', '.join(EMBEDDING_ATTEMPTS)})"
        )
        if messages:
            reason += ": " + "; ".join(dict.fromkeys(messages))
        raise MoleculeParseError(reason, Chem.MolToSmiles(mol))

    result = ConformerResult(
        mol=mol_h,
        conformer_ids=ids,
        energies=[None] * len(ids),
        converged=[None] * len(ids),
        attempt=attempt,
    )
    if len(ids) < num_conformers:
        result.problems.append(f"ETKDGv3 embedded {len(ids)} of {num_conformers} conformers")
    if not optimize:
        return result

    with rdkit_log_capture():
        has_params = rdForceFieldHelpers.MMFFHasAllMoleculeParams(mol_h)
    if not has_params:
        result.problems.append(_mmff_missing_reason(mol_h))
        return result

    with rdkit_log_capture():
        outcome = rdForceFieldHelpers.MMFFOptimizeMoleculeConfs(
            mol_h, numThreads=1, maxIters=max_iterations, mmffVariant="MMFF94"
        )
    # One (status, energy) per conformer, in conformer order: status 0 converged, 1 needs more
    # iterations, -1 the force field could not be set up.
    for k, (cid, (status, energy)) in enumerate(zip(ids, outcome)):
        if status == -1:
            result.problems.append(f"conformer {cid}: MMFF94 force field could not be set up")
            continue
        result.energies[k] = float(energy)
        result.converged[k] = status == 0
        if status != 0:
            result.problems.append(
                f"conformer {cid}: MMFF94 optimisation did not converge in "
                f"{max_iterations} iterations"
            )
    return result
