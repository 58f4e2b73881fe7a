# The one task runner of statestream; CI runs `make test` (.ci/run), which lints first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
STATESTREAM := .venv/bin/statestream

# the library (statestream.join, statestream.spark): also type-checked as Python 3.10, its oldest
LIBRARY := src/statestream/__init__.py src/statestream/__main__.py src/statestream/errors.py \
	src/statestream/codecs src/statestream/join src/statestream/spark

.PHONY: help setup demo test test-library lint services-up services-status services-down clean

help:
	@echo "make setup            install .venv, the JVM jars and mosquitto/influxdb (idempotent)"
	@echo "make demo             the whole pipeline live on the local services; Ctrl-C stops it"
	@echo "make test             lint, start the services, run the whole test suite, then make test-library"
	@echo "make test-library     the library without the pipeline: Python 3.10 + PySpark 4.0, 3.13 + 4.3"
	@echo "make lint             ruff check + ruff format --check + mypy (src/; the library as Python 3.10 too)"
	@echo "make docs             build the docs site into site/ (mkdocs build --strict); make docs-serve serves it"
	@echo "make services-up | services-status | services-down"
	@echo "make clean            stop the services and delete .statestream (data, logs, checkpoints)"

setup:
	@bash scripts/setup.sh

demo: setup
	$(STATESTREAM) demo

test: setup lint
	@bash scripts/test.sh
	@bash scripts/test_library.sh

test-library: setup
	@bash scripts/test_library.sh

.PHONY: docs docs-serve
docs: setup
	.venv/bin/mkdocs build --strict

docs-serve: setup
	.venv/bin/mkdocs serve

lint: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/ruff format --check src tests benchmarks
	.venv/bin/mypy
	.venv/bin/mypy --python-version 3.10 --follow-imports silent $(LIBRARY)

services-up: setup
	$(STATESTREAM) services up

services-status:
	$(STATESTREAM) services status

services-down:
	@if [[ -x $(STATESTREAM) ]]; then $(STATESTREAM) services down; fi

clean: services-down
	rm -rf .statestream .pytest_cache .ruff_cache .mypy_cache .hypothesis spark-warehouse test-artifacts
