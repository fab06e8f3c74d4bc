"""RDKit 2D descriptors, by name, in RDKit's own order.

The ``rdkit2d`` preset is RDKit's descriptor list ``rdkit.Chem.Descriptors.descList``: every
``(name, function)`` pair, computed in list order — the same functions and order as
``Descriptors.CalcMolDescriptors``, without building a dict per molecule — with one change:
``Ipc`` is replaced, at its place in the list, by ``Ipc_log1p`` = ``ln(1 + Ipc)``. Column names
are otherwise RDKit's descriptor names unchanged (``"MaxAbsEStateIndex"``, …, ``"MolWt"``, …,
``"TPSA"``, …, ``"fr_urea"``). The list depends on the RDKit version (217 descriptors in RDKit
2026.09; releases add some), so :meth:`RDKitDescriptors.to_dict` records the RDKit version and
the column names, and :meth:`RDKitDescriptors.from_dict` refuses a saved list that differs from
the running RDKit's.

Why ``Ipc`` is log-transformed: Bonchev's information content of the characteristic polynomial
grows exponentially with size (aspirin 730, penicillin G 1.3e5, a 200-carbon chain 3.4e56), so
raw values swamp any scaling and overflow float32 (max 3.4e38) when a model casts them;
``ln(1 + Ipc)`` is 6.6, 11.8 and 130.2 for those, 0 for a molecule with ``Ipc == 0`` (methane),
and ``expm1`` gives RDKit's value back. ``AvgIpc`` (an entropy, at most log2 of the number of
coefficients) stays as it is.
Both are slow on large molecules (RDKit builds the characteristic polynomial in O(n⁴): about
30 s each at 500 heavy atoms, hours at 3,000); ``chemgraph featurize`` bounds that with its
per-record time limit (``--record-timeout``).

Missing values: a descriptor that raises for a molecule (e.g. ``SPS`` of ``[H][H]``: division by
zero), returns ``None``, NaN or ±inf is stored as NaN; featurizing never raises for a valid
``Chem.Mol``. Known NaNs: the eight ``BCUT2D_*`` of single atoms (``[Na+]``) and of molecules
with atoms that have no Gasteiger or Crippen parameters — metal complexes and organometallics
such as cisplatin ``[NH3][Pt]([NH3])(Cl)Cl``, ferrocene or ``C[Hg]C``; the four
``*PartialCharge`` descriptors of such metals (cisplatin, ``C[Hg]C``). Other large finite values
are kept as they are: scale them before learning.

Descriptors are computed on a copy of each molecule (some RDKit descriptors cache properties
such as Gasteiger charges on the atoms) with RDKit's logging blocked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import rdkit
from rdkit import Chem, rdBase
from rdkit.Chem import Descriptors

__all__ = [
    "DESCRIPTOR_PRESETS",
    "RDKitDescriptors",
    "parse_descriptors",
]


def _ipc_log1p(mol: Chem.Mol) -> float:
    """``ln(1 + Ipc)``: RDKit's ``Ipc`` on a scale a model can use (see the module docstring)."""
    return math.log1p(Descriptors.Ipc(mol))


_DESC_LIST: tuple[tuple[str, Any], ...] = tuple(
    ("Ipc_log1p", _ipc_log1p) if name == "Ipc" else (name, function)
    for name, function in Descriptors.descList
)


@dataclass(frozen=True)
class RDKitDescriptors:
    """The RDKit 2D descriptor list (preset ``"rdkit2d"``): ``float64 [D]`` per molecule.

    ``D = len(rdkit.Chem.Descriptors.descList)`` (217 on RDKit 2026.09); column ``j`` is
    ``descList[j]``, named ``column_names[j]`` (RDKit's name), except that ``Ipc`` is
    ``Ipc_log1p`` = ``ln(1 + Ipc)``. See the module docstring for why, and for the NaN policy.
    """

    name: ClassVar[str] = "rdkit2d"

    def __len__(self) -> int:
        return len(_DESC_LIST)

    @property
    def column_names(self) -> tuple[str, ...]:
        """RDKit's descriptor names in list order (``Ipc`` as ``Ipc_log1p``), e.g.
        ``("MaxAbsEStateIndex", ...)``."""
        return tuple(name for name, _ in _DESC_LIST)

    @property
    def dtype(self) -> np.dtype:
        """``float64``."""
        return np.dtype(np.float64)

    def _fill(self, mol: Chem.Mol, out: np.ndarray) -> None:
        mol = Chem.Mol(mol)
        for j, (_, function) in enumerate(_DESC_LIST):
            try:
                value = function(mol)
                value = math.nan if value is None else float(value)
            except Exception:  # any RDKit/Python failure of one descriptor -> NaN
                value = math.nan
            out[j] = value if math.isfinite(value) else math.nan

    def __call__(self, mol: Chem.Mol) -> np.ndarray:
        """Descriptors of one molecule: ``float64 [D]`` (NaN where a descriptor fails)."""
        return self.featurize([mol])[0]

    def featurize(self, mols: Iterable[Chem.Mol]) -> np.ndarray:
        """Descriptors of a batch: ``float64 [N, D]``, row order kept, NaN where a descriptor
        fails for a molecule.

        Raises:
            ValueError: an entry of ``mols`` is ``None``.
        """
        mols = list(mols)
        out = np.empty((len(mols), len(self)), dtype=np.float64)
        with rdBase.BlockLogs():
            for i, mol in enumerate(mols):
                if mol is None:
                    raise ValueError(
                        f"mols[{i}] is None; parse failures must be removed before featurizing"
                    )
                self._fill(mol, out[i])
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"name": "rdkit2d", "length": D, "dtype": "float64", "rdkit_version": "2026.09.1",
        "column_names": [...]}``."""
        return {
            "name": self.name,
            "length": len(self),
            "dtype": self.dtype.name,
            "rdkit_version": rdkit.__version__,
            "column_names": list(self.column_names),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RDKitDescriptors:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: the name is not ``"rdkit2d"``, or the saved ``column_names`` (or
                ``length``) differ from the running RDKit's list (the message gives both RDKit
                versions and the names that differ).
        """
        if d.get("name", cls.name) != cls.name:
            raise ValueError(f"descriptor dict has name {d.get('name')!r}, expected {cls.name!r}")
        current = cls()
        saved_names = d.get("column_names")
        differs = saved_names is not None and tuple(saved_names) != current.column_names
        if differs or ("length" in d and int(d["length"]) != len(current)):
            missing = sorted(set(saved_names or ()) - set(current.column_names))
            added = sorted(set(current.column_names) - set(saved_names or ()))
            raise ValueError(
                f"descriptor list {cls.name!r} was saved with RDKit {d.get('rdkit_version')} "
                f"({d.get('length')} columns) but RDKit {rdkit.__version__} has {len(current)} "
                f"columns (missing now: {missing[:10]}, new: {added[:10]}); featurise again"
            )
        return current


#: Descriptor presets by name (read-only).
DESCRIPTOR_PRESETS: Mapping[str, type[RDKitDescriptors]] = MappingProxyType(
    {"rdkit2d": RDKitDescriptors}
)


def parse_descriptors(name: str) -> RDKitDescriptors:
    """The descriptor set called ``name`` (the ``--descriptors`` option): ``"rdkit2d"``.

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in DESCRIPTOR_PRESETS:
        raise ValueError(
            f"unknown descriptor set {name!r}; valid: {', '.join(sorted(DESCRIPTOR_PRESETS))}"
        )
    return DESCRIPTOR_PRESETS[key]()
