"""Molecular fingerprints through RDKit's own generators, never re-implemented.

Three fingerprints, each a small frozen dataclass:

- :class:`MorganFingerprint` (spec ``morgan``): ``rdFingerprintGenerator.GetMorganGenerator``
  with RDKit's default (ECFP-like) atom invariants; radius 2 is ECFP4.
- :class:`FeatureMorganFingerprint` (spec ``featmorgan``): the same generator with
  ``rdFingerprintGenerator.GetMorganFeatureAtomInvGen()`` invariants (FCFP-like: donor,
  acceptor, aromatic, halogen, basic, acidic); radius 2 is FCFP4.
- :class:`MACCSFingerprint` (spec ``maccs``): ``rdkit.Chem.MACCSkeys.GenMACCSKeys``, 167 bits,
  bit ``i`` is MACCS key ``i`` (bit 0 is unused, always 0).

Every fingerprint has ``name``, ``len()``, ``column_names``, ``dtype``, ``__call__(mol)`` (one
molecule, ``[len]``), ``featurize(mols)`` (a batch, ``[N, len]``), ``spec`` (the string that
:func:`parse_fingerprint` turns back into an equal object) and ``to_dict()`` /
``from_dict()`` (for manifests and checkpoints; :func:`fingerprint_from_dict` dispatches on the
``"kind"`` key).

Values:

- bits (``counts`` off, and MACCS): ``uint8`` 0/1, RDKit's ``GetFingerprintAsNumPy``;
- counts (``counts`` on, Morgan only): ``uint32``, how many times the folded environment occurs,
  RDKit's ``GetCountFingerprintAsNumPy`` (no count simulation).

Spec strings (the ``--fingerprint`` option of ``chemgraph featurize``)::

    morgan                              radius 2, 2048 bits (ECFP4)
    morgan:radius=3,size=1024           radius 3, 1024 bits
    morgan:radius=2,size=2048,counts    uint32 counts instead of bits
    morgan:chirality                    chirality included in the atom invariants
    featmorgan:radius=2,size=2048       feature-Morgan (FCFP4); same options as morgan
    maccs                               MACCS keys (no options)

Options are comma separated; ``counts`` and ``chirality`` are flags (``counts=true`` /
``counts=false`` are accepted too). Column names are ``<name>_<bit>``, the bit index zero-padded
to the width of the largest index: ``morgan_r2_2048_0000`` … ``morgan_r2_2048_2047``,
``morgan_r2_2048_counts_0000`` …, ``featmorgan_r2_2048_0000`` …, ``maccs_000`` … ``maccs_166``.

The generator object is built once per fingerprint object and reused for every molecule; it is
not pickled (it is rebuilt after unpickling, e.g. in a worker process).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np
import rdkit
from rdkit import Chem
from rdkit.Chem import MACCSkeys, rdFingerprintGenerator

__all__ = [
    "FINGERPRINT_KINDS",
    "FeatureMorganFingerprint",
    "Fingerprint",
    "MACCSFingerprint",
    "MorganFingerprint",
    "fingerprint_from_dict",
    "parse_fingerprint",
]

_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")


def _column_names(name: str, size: int) -> tuple[str, ...]:
    width = len(str(size - 1))
    return tuple(f"{name}_{i:0{width}d}" for i in range(size))


def _as_mol_list(mols: Iterable[Chem.Mol]) -> list[Chem.Mol]:
    mols = list(mols)
    for i, mol in enumerate(mols):
        if mol is None:
            raise ValueError(
                f"mols[{i}] is None; parse failures must be removed before featurizing"
            )
    return mols


class _PicklableGenerator:
    """Mixin: drop the cached RDKit generator when pickling (it is rebuilt on first use)."""

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


@dataclass(frozen=True)
class MorganFingerprint(_PicklableGenerator):
    """Morgan (ECFP-like) fingerprint from ``rdFingerprintGenerator.GetMorganGenerator``.

    ``radius=2`` is ECFP4 (diameter 4). Atom invariants are RDKit's default Morgan invariants
    (``GetMorganAtomInvGen``: atomic number, heavy degree, total H count, formal charge, isotope
    change, ring membership), optionally with chirality.

    Attributes:
        radius: number of Morgan iterations (>= 0).
        size: folded length in bits (>= 1), ``fpSize``.
        counts: ``False``: ``uint8`` bits; ``True``: ``uint32`` counts.
        chirality: ``includeChirality`` (CIP codes in the invariants).

    ``featurize(mols)`` is ``uint8 [N, size]`` (bits) or ``uint32 [N, size]`` (counts); row ``i``
    equals ``GetFingerprintAsNumPy(mols[i])`` / ``GetCountFingerprintAsNumPy(mols[i])`` of the
    same generator.
    """

    radius: int = 2
    size: int = 2048
    counts: bool = False
    chirality: bool = False

    kind: ClassVar[str] = "morgan"

    def __post_init__(self) -> None:
        for key, minimum in (("radius", 0), ("size", 1)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(
                    f"{self.kind}: {key} must be an integer >= {minimum}, got {value!r}"
                )
        for key in ("counts", "chirality"):
            if not isinstance(getattr(self, key), bool):
                raise ValueError(f"{self.kind}: {key} must be a bool, got {getattr(self, key)!r}")

    # -- identity ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``<kind>_r<radius>_<size>`` + ``_chiral`` + ``_counts``, e.g. ``morgan_r2_2048``."""
        name = f"{self.kind}_r{self.radius}_{self.size}"
        if self.chirality:
            name += "_chiral"
        if self.counts:
            name += "_counts"
        return name

    @property
    def spec(self) -> str:
        """The full spec string, e.g. ``"morgan:radius=2,size=2048,counts"``."""
        options = [f"radius={self.radius}", f"size={self.size}"]
        if self.counts:
            options.append("counts")
        if self.chirality:
            options.append("chirality")
        return f"{self.kind}:{','.join(options)}"

    @property
    def dtype(self) -> np.dtype:
        """``uint32`` for counts, ``uint8`` for bits."""
        return np.dtype(np.uint32 if self.counts else np.uint8)

    def __len__(self) -> int:
        return self.size

    @property
    def column_names(self) -> tuple[str, ...]:
        """``<name>_<bit>`` for every bit, e.g. ``morgan_r2_2048_0000`` … ``_2047``."""
        return _column_names(self.name, self.size)

    # -- computation ------------------------------------------------------------------------
    def _atom_invariants(self) -> Any:
        return None

    @functools.cached_property
    def _generator(self) -> Any:
        kwargs: dict[str, Any] = {
            "radius": self.radius,
            "fpSize": self.size,
            "includeChirality": self.chirality,
        }
        invariants = self._atom_invariants()
        if invariants is not None:
            kwargs["atomInvariantsGenerator"] = invariants
        return rdFingerprintGenerator.GetMorganGenerator(**kwargs)

    def __call__(self, mol: Chem.Mol) -> np.ndarray:
        """Fingerprint of one molecule: ``uint8 [size]`` bits or ``uint32 [size]`` counts."""
        if self.counts:
            return self._generator.GetCountFingerprintAsNumPy(mol)
        return self._generator.GetFingerprintAsNumPy(mol)

    def featurize(self, mols: Iterable[Chem.Mol]) -> np.ndarray:
        """Fingerprints of a batch: ``uint8 [N, size]`` or ``uint32 [N, size]``, row order kept.

        Raises:
            ValueError: an entry of ``mols`` is ``None``.
        """
        mols = _as_mol_list(mols)
        out = np.empty((len(mols), self.size), dtype=self.dtype)
        compute = (
            self._generator.GetCountFingerprintAsNumPy
            if self.counts
            else self._generator.GetFingerprintAsNumPy
        )
        for i, mol in enumerate(mols):
            out[i] = compute(mol)
        return out

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain types: ``kind``, the parameters, ``name``, ``length``, ``dtype``,
        ``rdkit_version``."""
        return {
            "kind": self.kind,
            "radius": self.radius,
            "size": self.size,
            "counts": self.counts,
            "chirality": self.chirality,
            "name": self.name,
            "length": len(self),
            "dtype": self.dtype.name,
            "rdkit_version": rdkit.__version__,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MorganFingerprint:
        """Inverse of :meth:`to_dict` (``name``, ``length``, ``dtype``, ``rdkit_version`` are
        informative and ignored; missing parameters take their defaults).

        Raises:
            ValueError: ``d["kind"]`` is not this class's kind, or a parameter is invalid.
        """
        _check_kind(cls.kind, d)
        params = {k: d[k] for k in ("radius", "size", "counts", "chirality") if k in d}
        return cls(**params)


@dataclass(frozen=True)
class FeatureMorganFingerprint(MorganFingerprint):
    """Feature-Morgan (FCFP-like) fingerprint: :class:`MorganFingerprint` with RDKit's
    ``rdFingerprintGenerator.GetMorganFeatureAtomInvGen()`` atom invariants (pharmacophoric
    classes donor, acceptor, aromatic, halogen, basic, acidic, as in RDKit's
    ``useFeatures=True``). Spec name ``featmorgan``; ``radius=2`` is FCFP4. Same attributes,
    dtypes and column naming as :class:`MorganFingerprint` (``featmorgan_r2_2048_0000`` …).
    """

    kind: ClassVar[str] = "featmorgan"

    def _atom_invariants(self) -> Any:
        return rdFingerprintGenerator.GetMorganFeatureAtomInvGen()


@dataclass(frozen=True)
class MACCSFingerprint:
    """MACCS keys from ``rdkit.Chem.MACCSkeys.GenMACCSKeys``: ``uint8 [167]`` bits.

    Column ``i`` is MACCS key ``i`` as RDKit numbers them (``MACCSkeys.smartsPatts[i]``); RDKit
    keeps bit 0 unused (always 0) so that keys 1-166 keep their published numbers. Columns
    ``maccs_000`` … ``maccs_166``.
    """

    kind: ClassVar[str] = "maccs"
    size: ClassVar[int] = 167

    @property
    def name(self) -> str:
        """``"maccs"``."""
        return "maccs"

    @property
    def spec(self) -> str:
        """``"maccs"``."""
        return "maccs"

    @property
    def counts(self) -> bool:
        """Always ``False`` (bits)."""
        return False

    @property
    def dtype(self) -> np.dtype:
        """``uint8``."""
        return np.dtype(np.uint8)

    def __len__(self) -> int:
        return self.size

    @property
    def column_names(self) -> tuple[str, ...]:
        """``maccs_000`` … ``maccs_166``."""
        return _column_names(self.name, self.size)

    def __call__(self, mol: Chem.Mol) -> np.ndarray:
        """MACCS keys of one molecule: ``uint8 [167]``."""
        bits = MACCSkeys.GenMACCSKeys(mol).ToBitString()
        return np.frombuffer(bits.encode("ascii"), dtype=np.uint8) - np.uint8(48)

    def featurize(self, mols: Iterable[Chem.Mol]) -> np.ndarray:
        """MACCS keys of a batch: ``uint8 [N, 167]``, row order kept.

        Raises:
            ValueError: an entry of ``mols`` is ``None``.
        """
        mols = _as_mol_list(mols)
        # One bit string per molecule ("0101..."), joined and decoded in one numpy pass: this
        # is faster than DataStructs.ConvertToNumpyArray per row.
        text = "".join(MACCSkeys.GenMACCSKeys(mol).ToBitString() for mol in mols)
        out = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - np.uint8(48)
        return out.reshape(len(mols), self.size)

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "maccs", "name": "maccs", "length": 167, "dtype": "uint8",
        "rdkit_version": ...}``."""
        return {
            "kind": self.kind,
            "name": self.name,
            "length": len(self),
            "dtype": self.dtype.name,
            "rdkit_version": rdkit.__version__,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MACCSFingerprint:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``d["kind"]`` is not ``"maccs"``.
        """
        _check_kind(cls.kind, d)
        return cls()


Fingerprint = MorganFingerprint | FeatureMorganFingerprint | MACCSFingerprint
"""Any fingerprint object of this module."""

_CLASSES: dict[str, type] = {
    "morgan": MorganFingerprint,
    "featmorgan": FeatureMorganFingerprint,
    "maccs": MACCSFingerprint,
}

#: Fingerprint kinds accepted by :func:`parse_fingerprint` and :func:`fingerprint_from_dict`.
FINGERPRINT_KINDS: tuple[str, ...] = tuple(_CLASSES)

_MORGAN_OPTIONS = "radius=INT (default 2), size=INT (default 2048), counts, chirality"


def _check_kind(kind: str, d: Mapping[str, Any]) -> None:
    if d.get("kind", kind) != kind:
        raise ValueError(f"fingerprint dict has kind {d.get('kind')!r}, expected {kind!r}")


def _parse_int(kind: str, key: str, value: str, token: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"fingerprint {kind!r}: bad option {token!r}: {key} must be an integer"
        ) from None


def _parse_flag(kind: str, key: str, value: str | None, token: str) -> bool:
    if value is None or value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(
        f"fingerprint {kind!r}: bad option {token!r}: {key} is a flag (write {key!r} or "
        f"{key}=true/false)"
    )


def parse_fingerprint(spec: str) -> Fingerprint:
    """Turn a spec string into a fingerprint object.

    ``"KIND[:OPTION,OPTION,...]"``, KIND one of ``morgan``, ``featmorgan``, ``maccs``; options
    (Morgan kinds only) ``radius=INT``, ``size=INT``, ``counts``, ``chirality``. Whitespace
    around tokens is ignored; kinds and keys are case-insensitive. See the module docstring for
    examples. ``parse_fingerprint(fp.spec) == fp`` for every fingerprint ``fp``.

    Examples:
        >>> parse_fingerprint("morgan:radius=2,size=2048,counts")
        MorganFingerprint(radius=2, size=2048, counts=True, chirality=False)
        >>> parse_fingerprint("maccs")
        MACCSFingerprint()

    Raises:
        ValueError: unknown kind, unknown or repeated option, bad value, or options given to
            ``maccs``; the message names the bad token and lists the valid choices.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(
            f"empty fingerprint spec {spec!r}; valid kinds: {', '.join(FINGERPRINT_KINDS)}"
        )
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in _CLASSES:
        raise ValueError(
            f"unknown fingerprint kind {kind!r} in {spec!r}; valid kinds: "
            f"{', '.join(FINGERPRINT_KINDS)} (e.g. 'morgan:radius=2,size=2048,counts', 'maccs')"
        )
    tokens = [t.strip() for t in rest.split(",")] if rest.strip() else []
    if kind == "maccs":
        if tokens:
            raise ValueError(f"fingerprint 'maccs' takes no options, got {tokens[0]!r} in {spec!r}")
        return MACCSFingerprint()
    params: dict[str, Any] = {}
    for token in tokens:
        if not token:
            raise ValueError(
                f"empty option in fingerprint spec {spec!r}; options: {_MORGAN_OPTIONS}"
            )
        key, eq, value = token.partition("=")
        key = key.strip().lower()
        value_or_none = value.strip() if eq else None
        if key in params:
            raise ValueError(f"fingerprint {kind!r}: option {key!r} given twice in {spec!r}")
        if key in ("radius", "size"):
            if value_or_none is None:
                raise ValueError(
                    f"fingerprint {kind!r}: bad option {token!r}: write {key}=INT; "
                    f"options: {_MORGAN_OPTIONS}"
                )
            params[key] = _parse_int(kind, key, value_or_none, token)
        elif key in ("counts", "chirality"):
            params[key] = _parse_flag(kind, key, value_or_none, token)
        else:
            raise ValueError(
                f"fingerprint {kind!r}: unknown option {token!r}; options: {_MORGAN_OPTIONS}"
            )
    return _CLASSES[kind](**params)


def fingerprint_from_dict(d: Mapping[str, Any]) -> Fingerprint:
    """The fingerprint saved by ``fp.to_dict()`` (dispatch on ``d["kind"]``).

    Raises:
        ValueError: no or unknown ``"kind"``, or ``"length"`` (when present) differing from the
            rebuilt fingerprint's length.
    """
    kind = d.get("kind")
    if kind not in _CLASSES:
        raise ValueError(
            f"fingerprint dict needs 'kind' in {', '.join(FINGERPRINT_KINDS)}, got {kind!r}"
        )
    fp = _CLASSES[kind].from_dict(d)
    if "length" in d and int(d["length"]) != len(fp):
        raise ValueError(f"fingerprint dict says length {d['length']}, but {fp.spec} has {len(fp)}")
    return fp
