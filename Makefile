# chemgraph: `make demo` (train ESA on real QM9, offline) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: install test demo lint benchmark clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -c constraints.txt torch==2.13.0
	$(PIP) install -c constraints.txt -e ".[offline-data,chembl,deepchem,dask,dev]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

demo: install
	$(PY) -m chemgraph.recipes.qm9_gap_demo --out runs/demo

lint: install
	$(VENV)/bin/ruff check chemgraph tests benchmarks
	$(VENV)/bin/ruff format --check chemgraph tests benchmarks

benchmark: install
	$(PY) benchmarks/moleculenet_esa.py

clean:
	rm -rf $(VENV) runs .pytest_cache
