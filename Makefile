# One-command setup: every target creates .venv (if missing) and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
JOBS   ?= 2

# Compiled bytecode goes to one ignored folder, also where the environment says not to write any
# (PYTHONDONTWRITEBYTECODE): every deployment test starts a Python process per party, and compiling the
# package again in each took a fifth of a small deployment's CPU time.
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/.pycache

.PHONY: demo test typecheck declarations docs test-bounds test-slow test-browser ray bench clean

# The environment's installer is uv (from the registry, into the environment), and pip if uv is missing or fails: the
# test dependencies took 19.3 s with pip from a warm pip cache here and 4.1 s with uv from a cold one, a twelfth of
# `make test`'s budget on a fresh clone. Neither byte-compiles what it installs (pip: --no-compile took the install
# from 25 to 17 s); the modules a run imports are compiled once, into PYTHONPYCACHEPREFIX.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv \
		|| echo "uv could not be installed from the registry: installing with pip (slower)"

PIP_INSTALL := sh -c '"$$0" -m uv --version >/dev/null 2>&1 && "$$0" -m uv pip install --quiet --python "$$0" "$$@" \
	|| { echo "installing with pip (uv is missing or failed)"; exec "$$0" -m pip install --quiet --no-compile "$$@"; }' \
	$(BIN)/python

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[test]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[test,bench]'
	touch $@

## demo: the vertical paper's Fig. 4: central vs partial vs federated LinUCB / LinTS, then the report
demo: $(VENV)/.installed-test
	$(BIN)/privbandits run vertical-fig4 --jobs $(JOBS)

## test: lint, then the default (fast) test suite with mypy on src/ beside it (fails on any type error)
# mypy takes about 12 s of CPU with no cache (.mypy_cache; under 1 s with it): run at the lowest priority beside the
# tests, it uses the CPU they leave idle (their start, the last tests of a worker) instead of adding its own time;
# its report is printed after theirs.
test: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks docs/_tools
	@typed=$$(mktemp); nice -n 19 $(BIN)/mypy > $$typed 2>&1 & mypy=$$!; \
	$(BIN)/python -m pytest -n $(JOBS) --dist worksteal; tests=$$?; \
	wait $$mypy; checked=$$?; echo "mypy:"; cat $$typed; rm -f $$typed; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

## typecheck: mypy on src/ and the tests' typed surface (settings in pyproject.toml's [tool.mypy]); ends with the count of errors
typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

## declarations: rewrite what is generated from the options the classes declare: the input-requirement tables
## of docs/requirements.md and the light snapshot of the protocols' options that configs and deployment files read
## (src/privbandits/declared.py)
declarations: $(VENV)/.installed-test
	$(BIN)/python -m privbandits.experiments.requirements docs/requirements.md
	$(BIN)/python -m privbandits.experiments.config_snapshot

## test-bounds: the default suite with every dependency at its lowest declared version, at the newest
## the ranges allow, and the newest on Python 3.13/3.12 where installed (fresh environments in .bounds/)
test-bounds:
	PYTHON=$(PYTHON) JOBS=$(JOBS) .ci/test-bounds

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[docs]'
	touch $@

## docs: the docs site (mkdocs-material) into site-docs/, in strict mode: a warning (a broken link or anchor, a
## page outside the nav, a docstring mkdocstrings cannot parse) or a failing tutorial (their code runs in the
## build) fails it. Open site-docs/index.html. NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2, not a warning.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site-docs

$(VENV)/.installed-ray: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[test,ray]'
	touch $@

## ray: install the optional Ray extra (distributed sweeps: privbandits run NAME --executor ray)
ray: $(VENV)/.installed-ray
	@$(BIN)/python -c "import ray; print('ray', ray.__version__, 'installed; use --executor ray')"

$(VENV)/.installed-browser: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[test,browser]'
	touch $@

## test-browser: the results site and the docs site (built first by `make docs`) in headless Chromium (installs
## Debian's chromium and playwright); screenshots in test-output/
test-browser: $(VENV)/.installed-browser docs
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -q chromium; } \
		|| echo "chromium could not be installed (needs root and Debian's packages); the browser test will skip"
	$(BIN)/python -m pytest -m browser

## test-slow: only the tests marked slow (exit code 5 = none collected yet)
test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(JOBS) -m slow || [ $$? -eq 5 ]

## bench: speed against peer libraries and the vertical protocol's costs (installs the bench extra)
bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/linear_speed.py
	$(BIN)/python benchmarks/vertical_overhead.py
	$(BIN)/python benchmarks/vertical_alternatives.py

clean:
	rm -rf $(VENV) .bounds results .pytest_cache .pycache .mypy_cache
