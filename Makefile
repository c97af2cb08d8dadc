# scratch2cuda: `make` lists the targets. Everything runs from the repository root, in .venv.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

STAGE ?= 2
WEEK ?=
# One rule for grade, train, bench and test: the learner's tier in workspace/ when it holds stage
# STAGE, else the repository's (the reference). IMPL=DIR takes DIR's; IMPL= (empty) the reference.
IMPL ?= $(if $(wildcard workspace/stage$(STAGE)_*),workspace,)
# `make test` takes every stage workspace/ holds (IMPL given: that folder, or none for IMPL=).
TEST_IMPL = $(if $(filter file,$(origin IMPL)),$(if $(wildcard workspace/stage*_*),workspace),$(IMPL))
# The stage is STAGE=N, never --stage in ARGS: IMPL follows STAGE.
NO_STAGE_IN_ARGS = @case " $(ARGS) " in *" --stage"*) \
	echo "make $@: give the stage as STAGE=N, not --stage in ARGS (IMPL follows STAGE)"; exit 2;; esac
WORKSPACE ?= workspace
ARGS ?=

.PHONY: help setup build data test grade results bench train exercises notebooks asan sanitize lint clean

help: ## list the targets
	@echo "scratch2cuda -- targets (run from the repository root):"
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@echo
	@echo "variables: STAGE=1..4  WEEK=k  IMPL=DIR (default: workspace/ when it holds STAGE; IMPL= the reference)  ARGS='...'"

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	@touch $(STAMP)

setup: $(STAMP) build ## create .venv with the pinned dependencies and build the C tier

build: $(STAMP) ## build the tiers that need it (the registry's build steps: the C tier's cffi extension)
	$(PY) -m tiers build

data: $(STAMP) ## fetch and verify MNIST and Fashion-MNIST (downloads if not found locally)
	$(PY) -m datasets fetch mnist
	$(PY) -m datasets fetch fashion-mnist

test: setup ## run the project's tests; the week tests check your workspace/ tiers (GPU checks under the CUDA simulator)
	S2C_IMPL=$(TEST_IMPL) NUMBA_ENABLE_CUDASIM=$${NUMBA_ENABLE_CUDASIM:-1} $(PY) -m pytest -q $(ARGS)

grade: setup ## grade a tier against the one before: make grade STAGE=2 [WEEK=7] [IMPL=workspace]
	$(NO_STAGE_IN_ARGS)
	$(PY) -m grader --stage $(STAGE) $(if $(WEEK),--week $(WEEK)) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

results: setup ## rewrite the committed grader records of the repository's tier: make results STAGE=3
	$(PY) -m grader --stage $(STAGE) --results
	$(PY) -m grader bench --stage $(STAGE) --results

bench: setup ## benchmark a tier: ops and matmul ladder, then epochs against PyTorch (and stage 2): make bench STAGE=3 [IMPL=workspace]
	$(NO_STAGE_IN_ARGS)
	$(PY) -m grader bench --stage $(STAGE) $(if $(IMPL),--impl $(IMPL)) $(ARGS)
	@if $(PY) -c "import torch" 2>/dev/null; then \
		$(PY) -m nn.bench --stage $(if $(filter 1 2,$(STAGE)),$(STAGE),2 $(STAGE)) --threads 1 2 \
			$(if $(IMPL),--impl $(IMPL)) --output $(if $(IMPL),$(IMPL)/results,curriculum/results)/nn-bench-stage$(STAGE); \
	else echo "nn.bench skipped: it compares with PyTorch (pip install -r requirements-oracle.txt)"; fi

train: setup ## train a model with its recipe (nn/recipes.py): make train STAGE=2 [IMPL=] ARGS='--model lenet5 --data mnist'
	$(NO_STAGE_IN_ARGS)
	$(PY) -m nn.train --stage $(STAGE) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

exercises: $(STAMP) ## write the learner workspace (solutions become stubs): make exercises [WORKSPACE=dir] [ARGS=--force]
	$(PY) -m tools.exercises --out $(WORKSPACE) $(ARGS)

notebooks: setup ## execute the curriculum notebooks and keep their outputs
	$(PY) -m pytest -q --nbmake --overwrite curriculum/notebooks

asan: $(STAMP) ## build the C tier with AddressSanitizer, run its tests and grader under it, rebuild
	$(PY) -m stage3_c.build --asan
	status=0; \
	asan="ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2 LSAN_OPTIONS=suppressions=$(CURDIR)/stage3_c/lsan.supp LD_PRELOAD=$$(gcc -print-file-name=libasan.so)"; \
	env $$asan $(PY) -m pytest -q -p no:cacheprovider tests/test_stage3_c.py tests/test_stage3_fuzz.py tests/test_stage3_matmul.py || status=1; \
	env $$asan $(PY) -m grader --stage 3 --quick --json $${TMPDIR:-/tmp}/grade-stage3-asan.json || status=1; \
	$(PY) -m stage3_c.build; \
	if [ $$status = 0 ]; then echo "make asan: clean (no AddressSanitizer or LeakSanitizer report)"; \
	else echo "make asan: FAILED (see the reports above)"; fi; \
	exit $$status

sanitize: setup ## stage 4 under compute-sanitizer (memcheck, racecheck, synccheck), GPU machine only: make sanitize STAGE=4
	$(PY) -m grader.sanitize --stage $(STAGE) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

lint: $(STAMP) ## ruff over the project
	$(PY) -m ruff check .

# The repository's own code folders (a package's __init__.py, and tests/): `make clean` looks only
# there, never in workspace/ or any other folder a learner's tiers live in.
CODE_DIRS = $(patsubst %/__init__.py,%,$(wildcard */__init__.py)) tests

clean: ## remove build outputs: the C tier's extension and _build/, __pycache__ of the repository's code, .pytest_cache, .ruff_cache (never workspace/, .venv or data)
	rm -rf stage3_c/_build stage3_c/_s2c_native*.so stage3_c/_s2c_native*.c .pytest_cache .ruff_cache
	find $(CODE_DIRS) -name __pycache__ -prune -exec rm -rf {} +
