# Two commands on a fresh machine with Python 3.11:  make repro  |  make test
# Both (re)create the local virtualenv .venv when pyproject.toml changed, then run.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Quiet, offline-friendly tools: no telemetry, no update checks.
export DVC_NO_ANALYTICS := 1
export MPLBACKEND := Agg

.PHONY: install test test-full repro params deps bench ui plots clean-venv

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11 not found (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The slow cases at full size (CI runs them reduced).
test-full: $(STAMP)
	SGG_EVAL_FULL=1 $(BIN)/python -m pytest -q

repro: $(STAMP) .dvc/plots_offline.html
	$(BIN)/sgg-eval params
	$(BIN)/dvc repro

# Offline template for `dvc plots show` (vega inlined from npm; .dvc/config points at it). Best effort:
# without npm, `make repro` still runs and `dvc plots show` falls back to DVC's CDN template.
.dvc/plots_offline.html:
	-@$(PYTHON) scripts/plots_template.py $@ || echo "note: npm unavailable; dvc plots show will load vega from a CDN"

params: $(STAMP)
	$(BIN)/sgg-eval params

# Rewrite each DVC stage's code deps to its script's import closure (tests/test_dvc_deps.py checks them).
deps: $(STAMP)
	$(BIN)/python scripts/dvc_deps.py

clean-venv:
	rm -rf $(VENV)

# Throughput of the full metric suite against a read floor measured in the same run.
bench: $(STAMP)
	$(BIN)/python scripts/bench.py

# The MLflow UI on the local store, bound to loopback only.
UI_PORT ?= 5000
ui: $(STAMP)
	@echo "MLflow UI: http://127.0.0.1:$(UI_PORT)  (Ctrl-C to stop)"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port $(UI_PORT)

# All plots as one offline HTML page (vega inlined from npm, no CDN): reports/plots/index.html
plots: $(STAMP) .dvc/plots_offline.html
	$(BIN)/dvc plots show -o reports/plots
