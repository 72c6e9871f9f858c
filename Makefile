# Liftlog — the two commands a fresh machine needs: `make demo` and `make test`.
# Each creates the virtual environment at .venv when missing and installs what it needs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST := $(PY) -m pytest

PROTO := spark_log/liftbridge/api.proto

.PHONY: proto demo test test-slow test-secure fuzz fault fault-ha jepsen jepsen-random bench bench-spark bench-compact bench-latency bench-reassign bench-ha bench-lake bench-lake-tier bench-cursors bench-memory bench-groups bench-liftbridge bench-typed bench-typed-lake bench-secure bench-smoke lint format clean-venv check-java

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

# The Liftbridge gRPC modules beside $(PROTO), regenerated from it (they are committed, so
# installing needs no code generator): messages, the service, and their type stubs.
proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I . --plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy \
		--plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
		--python_out=. --mypy_out=. --grpc_python_out=. --mypy_grpc_out=. $(PROTO)

demo: $(STAMP)
	$(VENV)/bin/liftlog demo

# The integration fixtures run on the plain stack, or with LIFTLOG_TEST_STACK=secure on the
# secured one (docs/security.md#testing-on-the-secured-stack); `make test` re-runs this subset
# there: the REST API, the client, replication and the Spark source.
SECURE_SUBSET := tests/integration/api/test_rest_api.py tests/integration/produce/test_client.py \
	tests/integration/replication/test_replication.py tests/integration/spark/test_datasource_batch.py

# Tests run on TEST_WORKERS processes (pytest-xdist), a test file on one worker (module-scoped
# clusters are started once); each worker picks ports from a range of its own (tests/conftest.py).
# Three workers keep two cores busy: the tests wait on servers about as much as they compute.
TEST_WORKERS ?= 3
XDIST := -n $(TEST_WORKERS) --dist loadfile

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PYTEST) -q -m "not slow" $(XDIST) --durations=15 tests
	LIFTLOG_TEST_STACK=secure $(PYTEST) -q -m "not slow" $(XDIST) $(SECURE_SUBSET)

# The slow tier, which CI runs after make test: the HA faults, the REST fuzz, longer failover
# variants, the benchmark smokes, a notebook run twice on one cluster and one safe randomized
# Jepsen schedule of 45 s.
test-slow: $(STAMP)
	$(PYTEST) -q -m slow tests/integration tests/fault tests/notebooks
	$(PYTEST) -q -m slow tests/jepsen/test_random.py -k short

# The whole integration suite on the secured stack (tests that need the plain one are skipped).
test-secure: $(STAMP)
	LIFTLOG_TEST_STACK=secure $(PYTEST) -q -m "not slow" tests/integration

# Hostile input (docs/security.md#fuzzing): the decoders under hypothesis and the REST API under
# schemathesis (a live node, auth off, admin token, no credential), with many more cases than
# `make test` sends; FUZZ_EXAMPLES per property, FUZZ_API_EXAMPLES per REST operation.
FUZZ_EXAMPLES     ?= 5000
FUZZ_API_EXAMPLES ?= 300

fuzz: $(STAMP)
	LIFTLOG_FUZZ=deep LIFTLOG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) LIFTLOG_FUZZ_API_EXAMPLES=$(FUZZ_API_EXAMPLES) \
	  $(PYTEST) -q -s --hypothesis-show-statistics -m fuzz tests/unit tests/integration/api/test_api_fuzz.py

fault: $(STAMP)
	$(PYTEST) -q tests/fault

fault-ha: $(STAMP)
	$(PYTEST) -q tests/fault/test_ha_*.py

# Jepsen-style fault suite (docs/faults.md): every scenario safe and unsafe, then a safe randomized
# schedule of DURATION seconds and an unsafe one; SEED replays; the table is printed last.
DURATION ?= 600
SEED     ?=
RESULTS  ?= bench/results/jepsen
JEPSEN_ENV = LIFTLOG_JEPSEN_RESULTS=$(abspath $(RESULTS)) LIFTLOG_JEPSEN_DURATION=$(DURATION) LIFTLOG_JEPSEN_SEED=$(SEED)

jepsen: $(STAMP)
	@mkdir -p $(RESULTS)
	$(JEPSEN_ENV) $(PYTEST) -q -m slow tests/jepsen/test_scenarios.py tests/jepsen/test_random.py; \
	  status=$$?; $(PY) -m tests.support.jepsen.table $(RESULTS); exit $$status

# only the randomized schedule: `make jepsen-random SEED=<seed> DURATION=<s>` replays one
jepsen-random: $(STAMP)
	@mkdir -p $(RESULTS)
	$(JEPSEN_ENV) $(PYTEST) -q -m slow tests/jepsen/test_random.py -k long; \
	  status=$$?; $(PY) -m tests.support.jepsen.table $(RESULTS); exit $$status

bench: $(STAMP)
	$(VENV)/bin/liftlog bench --json bench/results/liftlog-bench.json

# Every benchmark script with tiny sizes (figures present, nothing lost, no process left),
# including the Spark-based lake smokes that `make test` leaves out (about 3 minutes).
bench-smoke: $(STAMP)
	$(PYTEST) -q tests/integration/bench/test_bench_smoke.py

# batch reads through format("liftlog") beside Spark's Parquet scan of the same lake files (10M records)
bench-spark: $(STAMP)
	$(PY) bench/spark_read.py --json bench/results/spark-read.json

# Freshness: publish -> visible in a 1 s micro-batch, ack -> visible in the Delta table.
bench-latency: $(STAMP)
	$(PY) bench/stream_latency.py --json bench/results/latency.json

# Reassigning a 1 GB partition to a new broker while an acks=all publisher runs.
bench-reassign: $(STAMP)
	$(PY) bench/reassign.py --size-mb 1024 --runs 3 --json bench/results/reassign.json

# HA recovery: kill -9 of a NATS server -> first ack; ZooKeeper quorum lost and restored ->
# first stream create and first ack (median and spread over the runs)
bench-ha: $(STAMP)
	$(PY) bench/ha_recovery.py --runs 3 --json bench/results/ha-recovery.json

# Acked ingest (per-message, producer batches, ack latency) on the plain stack beside the
# `liftlog standalone --secure` one, in one run through the real client; 3 runs, median and
# spread (about 2 minutes on 2 cores).
bench-secure: $(STAMP)
	$(PY) bench/secure_ingest.py --runs 3 --json bench/results/secure.json

# Cursor commits (REST through the client, __cursors on 3 nodes, acks=all) beside JetStream
# key-value puts on the same nats-server: commits/s with 16 writers, sequential p50/p99.
bench-cursors: $(STAMP)
	$(PY) bench/cursor_commits.py --runs 3 --json bench/results/cursors.json

# A node's RSS (idle, peak, settled) under 200 MB of producer batches with the lake exporting,
# its default settings beside those before the memory bounds; 3 runs (about 4 minutes).
bench-memory: $(STAMP)
	$(PY) bench/node_memory.py --runs 3 --json bench/results/node-memory.json

# Consumer group rebalances on three nodes: a join, a leave and a SIGKILLed member, each timed
# until the coordinator says stable; the records a kill delivered again beside those after its
# last commit. 3 runs, median and spread (about a minute on 2 cores).
bench-groups: $(STAMP)
	$(PY) bench/group_rebalance.py --runs 3 --json bench/results/groups.json

# Key compaction (a Spark job) beside plain Spark latest-per-key aggregations of the same files.
bench-compact: $(STAMP)
	$(PY) bench/compaction.py --rows 2000000 --rounds 3 --json bench/results/compaction.json

# A local lake beside an s3:// lake on the embedded SeaweedFS, in one run each: export
# throughput, format("liftlog") reads (native Parquet of the local files as the peer) and
# compaction; 3 runs per figure, median and spread (about 8 minutes on 2 cores).
bench-lake: $(STAMP)
	$(PY) bench/lake_export.py --records 1000000 --batch-sizes 10000,100000 --runs 3 --json bench/results/lake-export.json
	$(PY) bench/spark_read_lake.py --records 4000000 --runs 3 --json bench/results/lake-read.json
	$(PY) bench/compact_s3.py --rows 2000000 --runs 3 --json bench/results/lake-compact.json

# REST reads (Arrow and JSON) of 200,000 records from the lake tier (below the local log
# start, served from the Delta table by the node) beside as many from the local log, in one
# run; 3 runs, median and spread (about a minute on 2 cores).
bench-lake-tier: $(STAMP)
	$(PY) bench/lake_tier_read.py --records 200000 --runs 3 --json bench/results/lake-tier.json

# Liftbridge's gRPC API (unary Publish, PublishAsync with 256 in flight, Subscribe) beside the
# same work over NATS and REST on one stack, with ack latency p50/p99.
bench-liftbridge: $(STAMP)
	$(PY) bench/liftbridge_api.py --runs 3 --json bench/results/liftbridge.json

bench-typed: $(STAMP)
	$(PY) bench/typed_publish.py --runs 3 --json bench/results/typed_publish.json

bench-typed-lake: $(STAMP)
	$(PY) bench/typed_lake.py --runs 3 --json bench/results/typed_lake.json

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format liftlog spark_log ingest coordinator datasource tests bench

clean-venv:
	rm -rf $(VENV)
