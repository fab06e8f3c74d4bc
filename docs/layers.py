"""The layer picture of ``docs/architecture.md`` ("Layers"), drawn from the imports.

Each of chemgraph's packages is placed on the row of its longest chain of imports down to a
package that imports no other (the bottom modules, ``chemgraph/_*.py`` and the other top-level
modules, are left out: every layer may import them). Packages on one row do not import one
another; the wings ``library``, ``reactions`` and ``transfer`` share a row.

``python docs/layers.py`` rewrites ``docs/layers.png``; ``tests/test_architecture.py`` checks
that the rows it computes are the layers of the import contract in ``pyproject.toml``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import grimp

PICTURE = Path(__file__).with_name("layers.png")


def package_imports() -> dict[str, set[str]]:
    """``{package: the other packages it imports}`` for every sub-package of chemgraph (short
    names, e.g. ``"transfer"``), imports under ``TYPE_CHECKING`` left out."""
    graph = grimp.build_graph("chemgraph", exclude_type_checking_imports=True)
    packages = sorted(
        name.split(".")[1]
        for name in graph.modules
        if name.count(".") == 1 and graph.find_children(name)
    )
    imports = {}
    for package in packages:
        found = set()
        for other in packages:
            if other != package and graph.direct_import_exists(
                importer=f"chemgraph.{package}", imported=f"chemgraph.{other}", as_packages=True
            ):
                found.add(other)
        imports[package] = found
    return imports


def layer_rows(imports: dict[str, set[str]]) -> list[list[str]]:
    """The packages by row, bottom first: row ``k`` holds the packages whose longest chain of
    imports down to a package that imports none is ``k`` long.

    Raises:
        ValueError: an import cycle between packages (no layering exists).
    """

    @cache
    def height(package: str, path: tuple[str, ...] = ()) -> int:
        if package in path:
            raise ValueError(f"import cycle: {' -> '.join((*path, package))}")
        below = imports[package]
        return 1 + max((height(other, (*path, package)) for other in below), default=-1)

    rows: list[list[str]] = []
    for package in sorted(imports):
        level = height(package)
        rows += [[] for _ in range(level + 1 - len(rows))]
        rows[level].append(package)
    return rows


def draw(rows: list[list[str]], path: Path = PICTURE) -> None:
    """A PNG of ``rows``: one row of boxes per layer, the top layer first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = max(len(row) for row in rows)
    figure, axes = plt.subplots(figsize=(2.2 * width + 1, 0.62 * len(rows) + 0.6))
    for level, row in enumerate(rows):
        for position, package in enumerate(row):
            x = position + (width - len(row)) / 2
            axes.add_patch(
                plt.Rectangle((x + 0.05, level + 0.12), 0.9, 0.76, facecolor="#dbe8f5",
                              edgecolor="#2f5d8a")
            )  # fmt: skip
            axes.text(x + 0.5, level + 0.5, package, ha="center", va="center", fontsize=11)
    axes.set_xlim(0, width)
    axes.set_ylim(0, len(rows))
    axes.axis("off")
    axes.set_title(
        "chemgraph's layers, from its imports: each package imports only from rows below it",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    rows = layer_rows(package_imports())
    for level, row in reversed(list(enumerate(rows))):
        print(f"{level:2d}  {' | '.join(row)}")
    draw(rows)
    print(f"wrote {PICTURE}")
