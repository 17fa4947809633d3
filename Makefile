# The Makefile is thinktax's public interface. Every target sets up .venv/ from the lock file first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
UV_VER  := 0.13.8
STAMP   := $(VENV)/.installed

.PHONY: run test dev bench lock clean venv

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

test: $(STAMP)
	$(BIN)/python -m pytest -q

dev: $(STAMP)
	$(BIN)/thinktax dev

bench: $(STAMP)
	$(BIN)/python -m thinktax.bench $(BENCH_ARGS)

# Re-resolve the pinned versions (needs the package index).
lock: $(STAMP)
	$(BIN)/uv pip compile --quiet --python-version 3.11 requirements.in -o requirements.lock

clean:
	rm -rf $(VENV) .thinktax landing warehouse/*.duckdb*

.PHONY: docs screenshot

# docs/warehouse.md, generated from the column comments in warehouse/comments.py (a test fails
# when it is stale).
docs: $(STAMP)
	$(BIN)/python -m thinktax.docs_gen

# docs/img/report.png: the demo's HTML report rendered by headless Chromium (Debian: apt-get
# install -y chromium). Runs the demo into .thinktax/screenshot/, never into ./landing.
SHOT := .thinktax/screenshot
screenshot: $(STAMP)
	DAGSTER_HOME=$(CURDIR)/$(SHOT)/dagster_home $(BIN)/thinktax demo --landing $(SHOT)/landing --warehouse $(SHOT)/thinktax.duckdb
	$(BIN)/thinktax report --warehouse $(SHOT)/thinktax.duckdb --out $(SHOT)/report.html --png docs/img/report.png
