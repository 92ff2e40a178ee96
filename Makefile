# Two commands on a fresh machine: `make serve` and `make test`. Each bootstraps .venv when it is
# missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make serve` needs only the package; `make test` and the rest need the test extra too.
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed

.PHONY: serve test check bench clean

# uv installs what pip would, downloading in parallel: a fresh virtualenv with the test extra
# (about 730 MB) took 285 s with pip and 110 s with uv here, a few seconds once uv's cache holds it.
UV := $(BIN)/python -m uv pip install --quiet --python $(BIN)/python

$(SERVE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(UV) -e .
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(UV) -e '.[test]'
	touch $(STAMP)

# Python may be told not to cache bytecode (PYTHONDONTWRITEBYTECODE): then every kubelite process
# compiles the package from source, ~0.5 s of each start (and of each of the test suite's
# servers). compileall writes the caches anyway, once; Python still reads them.
COMPILE := $(BIN)/python -m compileall -q src

serve: $(SERVE_STAMP)
	$(COMPILE)
	$(BIN)/kubelite serve --data-dir ./kubelite-data

# Every test (the etcd backend's and the HA tests start their own etcd), then the API server
# tests again over etcd instead of SQLite (but for the modules no store takes part in:
# tests/server/conftest.py's STORE_INDEPENDENT_MODULES). Four workers (pytest-xdist), even on two cores: the
# tests spend much of their time waiting (on watches, kubectl, webhooks, timeouts), and each
# worker has one API server in its own process that its tests share, a namespace each
# (tests/server/conftest.py). The HA tests, which kill etcd members and time elections, run
# alone.
test: $(STAMP)
	$(COMPILE)
	$(BIN)/python -m pytest -n 4 --ignore=tests/ha --durations=25
	$(BIN)/python -m pytest tests/ha
	$(BIN)/python -m pytest -n 4 tests/server --storage-backend etcd --durations=25

check: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/storage.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
