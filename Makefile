# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Where `make run` / `make dev` listen: `make run PORT=8731`, `make run HOST=0.0.0.0` (then set
# ALLOWED_HOSTS to the names assessors type).
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run dev test system-packages install install-dev bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

# Migrate, load the generated demo, start a Celery worker (filesystem broker unless
# REDIS_URL is set) and gunicorn (config/gunicorn.py, several threaded processes: serves a
# team of assessors on the embedded SQLite); Ctrl-C stops both.
# Static files are collected with hashed names and gzip copies (STATIC_HASHED=1), so browsers
# cache them for a year and a repeat visit loads only the page and its API calls.
run: export STATIC_HASHED = 1
run: $(VENV)/.installed
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo
	$(BIN)/python manage.py serve_with_worker $(HOST):$(PORT)

# The same with Django's development server, which reloads on code changes, and DEBUG on (one
# process: for development, not for a team).
dev: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo
	DEBUG=1 $(BIN)/python manage.py serve_with_worker --dev $(HOST):$(PORT)

# The Debian packages the suite needs (redis-server, postgresql, chromium): installed when
# missing if run as root, else the one command to run is printed and make stops.
system-packages:
	.ci/system-packages

# The suite in three parts (tests/suite.py says how they share the two cores): everything but
# the `alone` tests on the embedded SQLite over TEST_PROCESSES processes (pytest-xdist; an idle
# process takes queued tests from a busy one); the database-specific tests (marked `postgresql`:
# raw SQL, vendor branches, row locks; tests/test_database_specific.py keeps the selection whole)
# again on a throwaway PostgreSQL server over POSTGRESQL_PROCESSES (tests/conftest.py fails this
# part if it skipped a test or ran too few); and the `alone` tests one at a time (they assert
# wall-clock bounds over several processes of their own, which a neighbouring test would skew).
# The PostgreSQL part runs beside the `alone` part at the lowest CPU and disk priority: the
# `alone` tests keep a core idle most of the time, which it fills. Four processes on the two
# cores: many tests wait on servers, workers or a browser (the first part took 5:52 over three,
# 6:34 over two; later 8:01 over three, 7:16 over four).
TEST_PROCESSES ?= 4
# The PostgreSQL part is short: a third test database to migrate costs more than it saves
# (227 tests: 0:46 over two processes, 0:59 over three).
POSTGRESQL_PROCESSES ?= 2
# The suite starts many Python processes (servers, workers, children): with bytecode caching off
# (PYTHONDONTWRITEBYTECODE set, as on some CI images; an empty value leaves caching on) each one
# compiles the application again and pytest rewrites every test module again. One BLAS thread
# per process: several test processes share two cores, where BLAS's own threads only contend
# (numeric tests: -13 %).
test: export PYTHONDONTWRITEBYTECODE =
test: export OPENBLAS_NUM_THREADS = 1
test: export OMP_NUM_THREADS = 1
test: export TEST_PROCESSES := $(TEST_PROCESSES)
test: export POSTGRESQL_PROCESSES := $(POSTGRESQL_PROCESSES)
test: $(VENV)/.installed-dev system-packages
	$(BIN)/python -m tests.suite

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/bench_core.py

# Style (ruff) and types (mypy with the Django and DRF plugins, settings in pyproject.toml).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
