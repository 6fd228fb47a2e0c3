# The two commands that matter: `make demo` and `make test`.
# Each creates .venv if it is missing and installs the project into it first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-study test-all docs bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,docs]"
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pymc-dp demo

test: $(STAMP)
	$(PY) -m pytest -m "not slow and not study"

test-slow: $(STAMP)
	$(PY) -m pytest -m slow

# The full-size calibration study (about an hour on 2 cores); too long for CI.
test-study: $(STAMP)
	$(PY) -m pytest -m study

test-all: $(STAMP)
	$(PY) -m pytest

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/laplace_route.py
	$(PY) benchmarks/ops_efficiency.py
	$(PY) benchmarks/ops_tempering.py
	$(PY) benchmarks/private_mcmc.py
	$(PY) benchmarks/hellinger_release.py
	$(PY) benchmarks/warlogs_hmm.py

clean:
	rm -rf docs/_build docs/api/generated .pytest_cache build *.egg-info
