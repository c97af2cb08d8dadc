# scratch2cuda: `make` lists the targets. Everything runs from the repository root, in .venv.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

STAGE ?= 2
WEEK ?=
# `make grade` and `make train` use the learner workspace's tier when it exists, else the reference.
IMPL ?= $(if $(wildcard workspace/stage$(STAGE)_*),workspace,)
WORKSPACE ?= workspace
ARGS ?=

.PHONY: help setup build data test portability grade bench train exercises notebooks asan lint clean

help: ## list the targets
	@echo "scratch2cuda -- targets (run from the repository root):"
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@echo
	@echo "variables: STAGE=1..4  WEEK=k  IMPL=DIR (graded code: workspace or reference)  ARGS='...'"
	@echo "           S2C_ARCH_FLAGS='-march=x86-64-v2' (the C tier's target; default -march=native)"

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	@touch $(STAMP)

setup: $(STAMP) build ## create .venv with the pinned dependencies and build the C tier

build: $(STAMP) ## build the C tier's extension (cffi, -O3, OpenMP; target: S2C_ARCH_FLAGS)
	@if [ -f stage3_c/build.py ]; then $(PY) -m stage3_c.build; fi

data: $(STAMP) ## fetch and verify MNIST and Fashion-MNIST (downloads if not found locally)
	$(PY) -m datasets fetch mnist
	$(PY) -m datasets fetch fashion-mnist

test: setup ## run the project's tests (GPU checks run under the CUDA simulator)
	NUMBA_ENABLE_CUDASIM=$${NUMBA_ENABLE_CUDASIM:-1} $(PY) -m pytest -q $(ARGS)

# The suite must pass whatever the CPU: each C target (FMA or not, AVX-512, AVX2 or SSE only) and
# thread count sums in another order. Each run's log is kept in $TMPDIR; the default build is restored.
PORTABILITY_TARGETS := "-march=native" "-march=native -mno-fma" "-march=x86-64-v2"
portability: $(STAMP) ## run the tests on each C target (native, -mno-fma, x86-64-v2) at 1 and 2 threads
	@status=0; log=$${TMPDIR:-/tmp}/s2c-portability; \
	for arch in $(PORTABILITY_TARGETS); do \
		S2C_ARCH_FLAGS="$$arch" $(PY) -m stage3_c.build || exit 1; \
		for threads in 1 2; do \
			name="$$log$${arch// /}-$$threads.log"; \
			S2C_ARCH_FLAGS="$$arch" OMP_NUM_THREADS=$$threads NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -q -p no:cacheprovider $(ARGS) \
				>"$$name" 2>&1 || status=1; \
			echo "$$arch, OMP_NUM_THREADS=$$threads: $$(grep -E "(passed|failed)" "$$name" | tail -n 1) ($$name)"; \
		done; \
	done; \
	$(PY) -m stage3_c.build; \
	exit $$status

grade: setup ## grade a tier against the one before: make grade STAGE=2 [WEEK=7] [IMPL=workspace]
	$(PY) -m grader --stage $(STAGE) $(if $(WEEK),--week $(WEEK)) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

bench: setup ## benchmark a tier: ops and matmul ladder, then epochs against PyTorch (and stage 2): make bench STAGE=3
	$(PY) -m grader bench --stage $(STAGE) $(ARGS)
	@if $(PY) -c "import torch" 2>/dev/null; then \
		$(PY) -m nn.bench --stage $(if $(filter 1 2,$(STAGE)),$(STAGE),2 $(STAGE)) --threads 1 2 \
			--output curriculum/results/nn-bench-stage$(STAGE); \
	else echo "nn.bench skipped: it compares with PyTorch (pip install -r requirements-oracle.txt)"; fi

train: setup ## train a model with its recipe (nn/recipes.py), on the workspace's tier when there is one: make train ARGS='--model lenet5 --data mnist'
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

lint: $(STAMP) ## ruff over the project
	$(PY) -m ruff check .

clean: ## remove build outputs (keeps .venv and data)
	rm -rf stage3_c/_build workspace .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
