# chemgraph: `make demo` (the DFT -> GW transfer recipe on its embedded data, offline) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: install test demo demo-gap lint docs benchmark clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt torch==2.13.0
	$(PIP) install -c constraints.txt -e ".[offline-data,qc,chembl,deepchem,dask,mapping,dev,docs]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

# DFT -> GW transfer learning (GW only / inductive / transductive) on the embedded GW labels.
# --overwrite: a second `make demo` replaces the first run's results in runs/demo.
demo: install
	$(PY) -m chemgraph recipe run dft_to_gw --out runs/demo --overwrite

demo-gap: install
	$(PY) -m chemgraph recipe run qm9_gap --out runs/demo_gap --overwrite

lint: install
	$(VENV)/bin/ruff check chemgraph tests benchmarks docs/*.py
	$(VENV)/bin/ruff format --check chemgraph tests benchmarks docs/*.py
	$(VENV)/bin/lint-imports  # the layer rule (pyproject.toml [tool.importlinter])

# The documentation site (Sphinx, offline) into docs/_build/html; warnings are errors, as in CI.
docs: install
	rm -rf docs/api/generated  # -E and this: every page is read again, so every warning shows
	OMP_NUM_THREADS=1 $(VENV)/bin/sphinx-build -b html -E -W --keep-going -q docs docs/_build/html
	$(PY) docs/check_search_text.py docs/_build/html  # search index and page sources: no HTML entities
	@echo "docs: open docs/_build/html/index.html"

benchmark: install
	$(PY) benchmarks/moleculenet_esa.py

clean:
	rm -rf $(VENV) runs .pytest_cache docs/_build docs/api/generated
