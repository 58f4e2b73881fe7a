# The one task runner of statestream; CI runs `make test` (.ci/run), which lints first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
STATESTREAM := .venv/bin/statestream

.PHONY: help setup demo test lint services-up services-status services-down clean

help:
	@echo "make setup            install .venv, the JVM jars and mosquitto/influxdb (idempotent)"
	@echo "make demo             the whole pipeline live on the local services; Ctrl-C stops it"
	@echo "make test             lint, start the services and run the whole test suite"
	@echo "make lint             ruff check + ruff format --check + mypy (type check of src/)"
	@echo "make docs             build the docs site into site/ (mkdocs build --strict); make docs-serve serves it"
	@echo "make services-up | services-status | services-down"
	@echo "make clean            stop the services and delete .statestream (data, logs, checkpoints)"

setup:
	@bash scripts/setup.sh

demo: setup
	$(STATESTREAM) demo

test: setup lint
	@bash scripts/test.sh

.PHONY: docs docs-serve
docs: setup
	.venv/bin/mkdocs build --strict

docs-serve: setup
	.venv/bin/mkdocs serve

lint: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/ruff format --check src tests benchmarks
	.venv/bin/mypy

services-up: setup
	$(STATESTREAM) services up

services-status:
	$(STATESTREAM) services status

services-down:
	@if [[ -x $(STATESTREAM) ]]; then $(STATESTREAM) services down; fi

clean: services-down
	rm -rf .statestream .pytest_cache .ruff_cache .mypy_cache .hypothesis spark-warehouse test-artifacts
