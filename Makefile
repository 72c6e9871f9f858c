# Liftlog — the two commands a fresh machine needs: `make demo` and `make test`.
# Each creates the virtual environment at .venv when missing and installs what it needs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST := $(PY) -m pytest

.PHONY: demo test fault bench bench-spark bench-compact bench-latency lint format clean-venv check-java

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory check-java
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing Liftlog and its dependencies into $(VENV) ..."
	@$(PY) -m pip install -q --upgrade pip
	@# compat: a path entry, so Spark's lookup of pyspark_* modules (pkgutil) finds pyspark_liftlog
	@$(PY) -m pip install -q -e ".[dev]" --config-settings editable_mode=compat
	@touch $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || { echo "error: Java 17 or newer is required (ZooKeeper and Spark run on it): apt-get install openjdk-17-jre-headless" >&2; exit 1; }
	@v=$$(java -version 2>&1 | head -1 | sed -E 's/.*version "([0-9]+).*/\1/'); \
	  if [ "$$v" -lt 17 ] 2>/dev/null; then echo "error: Java 17 or newer is required, found $$v" >&2; exit 1; fi

demo: $(STAMP)
	$(VENV)/bin/liftlog demo

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PYTEST) -q -m "not slow" tests

fault: $(STAMP)
	$(PYTEST) -q tests/fault

bench: $(STAMP)
	$(VENV)/bin/liftlog bench --json bench/results-latest.json

# batch reads through format("liftlog") beside Spark's Parquet scan of the same lake files (10M records)
bench-spark: $(STAMP)
	PYTHONPATH=. $(PY) bench/spark_read.py --json bench/results-spark-read.json

# Key compaction (a Spark job) beside plain Spark latest-per-key aggregations of the same files.
# Freshness: publish -> visible in a 1 s micro-batch, ack -> visible in the Delta table.
bench-latency: $(STAMP)
	PYTHONPATH=. $(PY) bench/stream_latency.py --json bench/results-latency.json

bench-compact: $(STAMP)
	$(PY) -m datasource.compaction.bench --rows 2000000 --rounds 3 --json bench/compaction-latest.json

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format liftlog spark_log ingest coordinator datasource tests bench

clean-venv:
	rm -rf $(VENV)
