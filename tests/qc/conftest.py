import numpy as np
import pytest

from chemgraph.qc import QCMolecule


@pytest.fixture(scope="module")
def water() -> QCMolecule:
    """H2O at the experimental geometry: r(OH) = 0.9572 Å, angle HOH = 104.52°."""
    half = np.deg2rad(104.52) / 2
    r = 0.9572
    positions = [[0, 0, 0], [r * np.sin(half), 0, r * np.cos(half)],
                 [-r * np.sin(half), 0, r * np.cos(half)]]  # fmt: skip
    return QCMolecule("water", ("O", "H", "H"), positions)
