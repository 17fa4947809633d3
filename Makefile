# The Makefile is thinktax's public interface. Every target sets up .venv/ from the lock file first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
UV_VER  := 0.13.8
STAMP   := $(VENV)/.installed

.PHONY: run test check lint dev bench lock clean venv

venv: $(STAMP)

# uv installs ~150 pinned wheels in ~20 s; bytecode is compiled at install because this
# machine sets PYTHONDONTWRITEBYTECODE (cold Great Expectations import: ~10 s -> ~4 s).
$(STAMP): requirements.lock pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "uv==$(UV_VER)"
	$(BIN)/uv pip sync --quiet --python $(BIN)/python --compile-bytecode requirements.lock
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/thinktax demo

# Two worker processes (pytest-xdist), each test file whole in one of them (its module fixtures
# built once), the longest files first (tests/conftest.py, LONGEST_FILES; xdist's own order, most
# tests first, is turned off); TEST_WORKERS=0 runs in this process (docs/performance.md, "The test suite").
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST)

# The fast tier for the inner loop (issue 27): unit, parser and SQL-model fixture tests; no JVM,
# no Postgres, no validator venv, nothing marked slow (markers in pyproject.toml, given in
# tests/conftest.py by what a test needs). `make test` stays the whole suite and CI's command.
CHECK_MARKERS := not slow and not spark and not postgres and not venv
check: lint
	$(BIN)/python -m pytest -q $(XDIST) -m "$(CHECK_MARKERS)"

# Ruff (pyproject.toml [tool.ruff]) and mypy, strict on the engine seam and the staging contract
# ([tool.mypy]); tests/test_lint.py runs the same in `make test`.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

dev: $(STAMP)
	$(BIN)/thinktax dev

bench: $(STAMP)
	$(BIN)/python -m tools.bench $(BENCH_ARGS)

# Re-resolve the pinned versions (needs the package index).
lock: $(STAMP)
	$(BIN)/uv pip compile --quiet --python-version 3.11 requirements.in -o requirements.lock

clean:
	rm -rf $(VENV) .thinktax var landing warehouse/*.duckdb*

.PHONY: docs screenshot

# docs/warehouse.md, generated from the column comments in warehouse/comments.py, and
# docs/staging.md, from the staging contract in sources/contract.py (a test fails when either is stale).
docs: $(STAMP)
	$(BIN)/python -m tools.docs_gen
	$(BIN)/python -m sources.contract docs/staging.md

# docs/img/report.png: the demo's HTML report rendered by headless Chromium (Debian: apt-get
# install -y chromium). Runs the demo into var/screenshot/, never into ./landing.
SHOT := var/screenshot
screenshot: $(STAMP)
	DAGSTER_HOME=$(CURDIR)/$(SHOT)/dagster_home $(BIN)/thinktax demo --landing $(SHOT)/landing --warehouse $(SHOT)/thinktax.duckdb
	$(BIN)/thinktax report --warehouse $(SHOT)/thinktax.duckdb --out $(SHOT)/report.html --png docs/img/report.png

.PHONY: focus-venv focus-validate

# The FinOps Foundation's focus-validator 2.2.1 needs Python 3.12, so it gets its own venv
# (.thinktax/focus-venv) from the pins in tools/focus-validator.txt; PY312 is found on PATH or
# under pyenv. `make focus-validate FOCUS_FILE=out/focus_costs_2026-06.parquet` runs it offline
# (docs/bi.md); tests/commands/test_focus_validator.py makes the same venv itself.
PY312      ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python) $(shell python3.12 -c "import sys; print(sys.executable)" 2>/dev/null))
FOCUS_VENV := .thinktax/focus-venv
focus-venv: $(FOCUS_VENV)/.installed
$(FOCUS_VENV)/.installed: tools/focus-validator.txt
	@test -n "$(PY312)" || { echo "focus-validator needs Python 3.12: set PY312=/path/to/python3.12"; exit 2; }
	$(PY312) -m venv $(FOCUS_VENV)
	$(FOCUS_VENV)/bin/python -m pip install --quiet -r tools/focus-validator.txt
	cp tools/focus-validator.txt $@

# run from the package folder: 2.2.1 opens its bundled currency list by a relative path.
# FOCUS_VERSION / FOCUS_RULES: another requirements model, e.g. FOCUS_VERSION=1.3 FOCUS_RULES=tools/focus-rules
# once a model-1.3*.json is vendored there (none is: docs/bi.md, "FOCUS 1.3"); the package holds only 1.2.0.1.
FOCUS_VERSION ?= 1.2.0.1
FOCUS_RULES   ?=
focus-validate: $(FOCUS_VENV)/.installed
	@test -n "$(FOCUS_FILE)" || { echo "usage: make focus-validate FOCUS_FILE=path/to/focus_costs_YYYY-MM.parquet"; exit 2; }
	cd $(FOCUS_VENV)/lib/python3.12/site-packages && $(CURDIR)/$(FOCUS_VENV)/bin/focus-validator \
	    --data-file $(abspath $(FOCUS_FILE)) --validate-version $(FOCUS_VERSION) --block-download \
	    $(if $(FOCUS_RULES),--rule-set-path $(abspath $(FOCUS_RULES)))

.PHONY: connect-server

# A local Spark Connect server (pyspark 4.0.5's jars from tools/spark-connect.txt in .thinktax/connect-venv,
# a full JDK 17+ such as Debian's openjdk-17-jdk-headless) on sc://127.0.0.1:$(CONNECT_PORT), until Ctrl-C:
# `thinktax run --engine spark --spark-remote sc://127.0.0.1:15002` then runs through it (docs/operations.md).
CONNECT_PORT      ?= 15002
CONNECT_WAREHOUSE ?= $(CURDIR)/var/connect/spark-warehouse
connect-server: $(STAMP)
	$(BIN)/python tools/spark_connect.py --port $(CONNECT_PORT) --warehouse $(CONNECT_WAREHOUSE)

.PHONY: bi bi-serve bi-venv bi-lock bi-screenshots

# Apache Superset over the published warehouse (issue 45, docs/bi.md "Superset"): its own venv
# (.thinktax/superset-venv, Python 3.11, pins in tools/superset.txt: Superset pins SQLAlchemy 1.4),
# its metadata DB under var/superset/, the dashboards imported from bi/superset/. WAREHOUSE is the one
# setting (default: where `make run` publishes). `make bi` is idempotent: run it again after editing
# bi/superset/. THINKTAX_BI_PASSWORD sets the admin password when the user is first created (else one
# is generated and printed once).
SUPERSET_VENV := .thinktax/superset-venv
BI_HOME       ?= var/superset
BI_PORT       ?= 8088
WAREHOUSE     ?= $(or $(THINKTAX_WAREHOUSE),var/thinktax.duckdb)
bi-venv: $(SUPERSET_VENV)/.installed
$(SUPERSET_VENV)/.installed: tools/superset.txt $(STAMP)
	$(PY) -m venv $(SUPERSET_VENV)
	$(BIN)/uv pip sync --quiet --python $(SUPERSET_VENV)/bin/python --compile-bytecode tools/superset.txt
	cp tools/superset.txt $@

bi: $(SUPERSET_VENV)/.installed
	$(SUPERSET_VENV)/bin/python tools/superset_bi.py provision --home $(BI_HOME) --warehouse $(WAREHOUSE)

# http://127.0.0.1:$(BI_PORT)/ until Ctrl-C (user admin)
bi-serve: $(SUPERSET_VENV)/.installed
	$(SUPERSET_VENV)/bin/python tools/superset_bi.py serve --home $(BI_HOME) --port $(BI_PORT)

# Re-resolve tools/superset.txt from tools/superset.in (needs the package index).
bi-lock: $(STAMP)
	{ echo "# Generated from tools/superset.in by 'make bi-lock' (uv pip compile, Python 3.11): the pins of .thinktax/superset-venv."; \
	  $(BIN)/uv pip compile --quiet --no-header --python-version 3.11 tools/superset.in; } > tools/superset.txt.new
	mv tools/superset.txt.new tools/superset.txt

# docs/img/superset-*.png: the browser test's own screenshots of the eight dashboards (tests/bi/test_superset.py
# on its small demo), copied into docs/img/ (needs Debian's chromium: .ci/ensure-chromium).
bi-screenshots: $(SUPERSET_VENV)/.installed
	THINKTAX_BI_SHOTS=$(CURDIR)/docs/img $(BIN)/python -m pytest -q -p no:cacheprovider tests/bi/test_superset.py
