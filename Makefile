# The two commands that matter: `make demo` and `make test`.
# Each creates the venv if it is missing and installs the project into it first, with
# exactly the package versions of the target's committed lock file (locks/TARGET.txt).
#
# Targets (Python + the PyMC line it runs):
#   py312  Python 3.12, PyMC 6 / ArviZ 1   - the primary target, chosen when Python 3.12 is present
#   py311  Python 3.11, PyMC 5.28 / ArviZ 0.23 - the secondary target:  make test TARGET=py311
PRIMARY := $(shell tools/find-python 3.12 >/dev/null 2>&1 && echo py312 || echo py311)
TARGET ?= $(PRIMARY)
PYTHON_VERSION_py312 := 3.12
PYTHON_VERSION_py311 := 3.11
PYTHON ?= $(shell tools/find-python $(PYTHON_VERSION_$(TARGET)))
# The primary target lives in .venv, any other in .venv-TARGET.
VENV ?= $(if $(filter $(PRIMARY),$(TARGET)),.venv,.venv-$(TARGET))
LOCK := locks/$(TARGET).txt
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS ?= test,docs,blas,warlogs

.PHONY: demo test test-secondary test-slow test-release test-calibration test-study test-all test-nutpie docs bench lock canary python clean

python:
	@test -n "$(PYTHON)" || { echo "No Python $(PYTHON_VERSION_$(TARGET)) found for target $(TARGET) (tried PATH and pyenv); install it or pass PYTHON=/path/to/python$(PYTHON_VERSION_$(TARGET))." >&2; exit 1; }

$(STAMP): pyproject.toml $(LOCK) | python
	@$(PY) -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$(PYTHON_VERSION_$(TARGET))'.split('.'))))" 2>/dev/null \
		|| { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet -c $(LOCK) pip setuptools wheel
	$(PY) -m pip install --quiet -c $(LOCK) -e ".[$(EXTRAS)]"
	$(PY) tools/link_blas.py
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pymc-dp demo $(DEMO_ARGS)

# Both cores: pytest-xdist workers steal tests from each other, so a long test at the end
# does not leave a core idle. XDIST= overrides (XDIST="-n 0" runs in one process).
XDIST ?= -n 2 --dist worksteal
# The slowest tests are listed at the end of each run, so that CI's log says where its time goes.
DURATIONS ?= --durations=40 --durations-min=10
test: $(STAMP)
	$(PY) -m pytest $(XDIST) $(DURATIONS) -m "not slow and not study and not calibration and not release_check" $(TESTS)

# The secondary target (Python 3.11, PyMC 5.28 / ArviZ 0.23), in .venv-py311: a representative
# subset of what meets PyMC, PyTensor or ArviZ where their versions differ - the release and
# scan of traces, ledger files and their signatures, the CLI and the demo, the NUTS sampler's
# choice, model rewrites (regression recognition, the Laplace route, PyTensor 2's batched group
# ops), step methods and the accounting and noise libraries. Sized to a few minutes with cold
# compile caches (PyMC 5 compiles C): the routes' and families' numerical checks run on the
# primary. `make test TARGET=py311` runs the whole default suite there.
SECONDARY_TESTS ?= tests/test_trace.py tests/test_leaks.py tests/test_cli.py tests/test_laplace_route.py \
	tests/test_regression_recognition.py tests/test_step_contract.py tests/test_step_methods.py \
	tests/test_ledger_integrity.py tests/test_ledger_failure.py tests/test_accounting.py \
	tests/test_noise_sources.py tests/test_secure_default.py tests/test_nuts_sampler.py \
	tests/test_nutpie_cache.py tests/test_warlogs_demo.py \
	tests/test_grouped_release.py::test_the_groups_joins_diagonals_and_own_entries_compile_batched_not_as_a_loop_over_groups
test-secondary:
	$(MAKE) test TARGET=py311 TESTS="$(SECONDARY_TESTS)"

test-slow: $(STAMP)
	$(PY) -m pytest $(XDIST) $(DURATIONS) -m slow

# nuts_sampler="nutpie" on the routes that accept it: installs the optional extra (pinned by the
# lock) and runs the tests marked nutpie. The default suite runs PyMC's NUTS either way.
test-nutpie: $(STAMP)
	$(PY) -m pip install --quiet -c $(LOCK) -e ".[nutpie]"
	$(PY) -m pytest $(XDIST) -m nutpie tests/test_nuts_sampler.py

# Breadth past CI's time (75 tests, 10 min 48 s on 2 cores with warm caches): the broken twins of the slower audit
# targets, which show the audit's power against a halved noise (CI runs every mechanism's own audit in
# test-slow; a twin changes only with its target's neighbours, statistic or run count), and the whole
# likelihood catalogue sampled beside plain PyMC (make test plans all of it and samples one of each kind).
# Run it before a release and after any change to an audit target or the ops route.
test-release: $(STAMP)
	$(PY) -m pytest $(XDIST) $(DURATIONS) -m release_check

# Coverage studies of the noise-aware releases at a size that tells an honest interval from an
# over-confident one (tens of releases each; about half an hour on 2 cores, past CI's time): run
# them before a release and after any change to a noise-aware likelihood or its sampler.
test-calibration: $(STAMP)
	$(PY) -m pytest $(XDIST) $(DURATIONS) -m calibration

# The full-size calibration study (about an hour on 2 cores); too long for CI.
test-study: $(STAMP)
	$(PY) -m pytest $(XDIST) -m study

test-all: $(STAMP)
	$(PY) -m pytest

# Notebooks are executed unless docs/notebook_cache.py's cache holds a clean run of the same
# code against the same library (make test-slow fills it); then every page must have been written.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html
	@for page in index api $$(ls notebooks | sed -n 's/\.ipynb$$//p' | sed 's|^|notebooks/|'); do \
		test -s docs/_build/html/$$page.html || { echo "docs: $$page.html was not written" >&2; exit 1; }; \
	done; echo "docs: every page and notebook is in docs/_build/html"

bench: $(STAMP)
	$(PY) -m pip install --quiet -c $(LOCK) -e ".[bench]"
	$(PY) benchmarks/speed.py
	$(PY) benchmarks/run.py
	$(PY) benchmarks/laplace_route.py
	$(PY) benchmarks/ops_efficiency.py
	$(PY) benchmarks/ops_tempering.py
	$(PY) benchmarks/private_mcmc.py
	$(PY) benchmarks/hellinger_release.py
	$(PY) benchmarks/warlogs_hmm.py
	$(PY) benchmarks/blas.py
	$(PY) benchmarks/peers.py
	$(PY) benchmarks/likelihoods.py
	$(PY) benchmarks/utility.py

# Re-resolve the newest releases pyproject.toml allows and rewrite the lock of every
# target whose Python is here (make lock TARGETS=py312 for one).
TARGETS ?= py312 py311
lock:
	@for t in $(TARGETS); do \
		v=$$(case $$t in py312) echo 3.12;; py311) echo 3.11;; esac); \
		p=$$(tools/find-python $$v) || { echo "skip $$t: no Python $$v here"; continue; }; \
		tools/lock $$t $$p || exit 1; \
	done

# The newest releases the version ranges allow (not the lock), on a quick subset of the
# tests: tells which package release breaks what before a lock refresh meets it.
canary: | python
	$(PYTHON) tools/canary.py --target $(TARGET) --python $(PYTHON)

clean:
	rm -rf docs/_build docs/api/generated .pytest_cache build *.egg-info
