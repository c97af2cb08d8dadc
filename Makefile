# scratch2cuda: `make` lists the targets. Everything runs from the repository root, in .venv.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

STAGE ?= 2
WEEK ?=
THROUGH ?=
VARIANT ?=
GPUS ?=
# Without an NVIDIA GPU, stage 4's numba kernels run on numba's CUDA simulator (correct, slow: the
# grader then checks tiny sizes and gives no speed verdicts). Set NUMBA_ENABLE_CUDASIM to choose.
NUMBA_ENABLE_CUDASIM ?= $(if $(shell nvidia-smi -L 2>/dev/null),0,1)
export NUMBA_ENABLE_CUDASIM
# One rule for grade, train, bench and test: the learner's tier in workspace/ when it holds stage
# STAGE, else the repository's (the reference). IMPL=DIR takes DIR's; IMPL= (empty) the reference.
IMPL ?= $(if $(wildcard workspace/stage$(STAGE)_*),workspace,)
# `make test` takes every stage workspace/ holds (IMPL given: that folder, or none for IMPL=).
TEST_IMPL = $(if $(filter file,$(origin IMPL)),$(if $(wildcard workspace/stage*_* workspace/nn),workspace),$(IMPL))
# `make train`'s and `make export`'s network (S2C_NN, nn/__init__.py): workspace/nn when it exists;
# IMPL=DIR takes DIR/nn when DIR holds one, IMPL= the reference.
NN_IMPL = $(if $(filter file,$(origin IMPL)),$(if $(wildcard workspace/nn/__init__.py),workspace),$(IMPL))
# The stage is STAGE=N, never --stage in ARGS: IMPL follows STAGE.
NO_STAGE_IN_ARGS = @case " $(ARGS) " in *" --stage"*) \
	echo "make $@: give the stage as STAGE=N, not --stage in ARGS (IMPL follows STAGE)"; exit 2;; esac
# AGAINST=DIR (make grade only): compare also with your own earlier tier from DIR (the agree rows);
# the repository's tier still judges correctness, and the record goes to runs/grader/.
AGAINST ?=
NO_AGAINST = @if [ -n "$(AGAINST)" ]; then \
	echo "make $@: AGAINST=$(AGAINST) goes with make grade only (your tier against your earlier one)"; exit 2; fi
WORKSPACE ?= workspace
ARGS ?=
VARIANT_ARG = $(if $(VARIANT),--variant $(VARIANT))  # stage 4: numba or nvcc (default: every one)
# A command first builds the tiers it needs, each only when a source changed since its build (a
# fresh build costs a look at file times): make grade, bench and results its STAGE's tiers and
# those they are checked against, make train the one tier it trains on, the rest every tier.
BUILD_STALE = $(PY) -m tiers build --if-stale
BUILD_STAGE = $(BUILD_STALE) --stage $(STAGE) $(VARIANT_ARG)
# bench.epoch's sides: stage 3 beside stage 2 on the CPU at 1 and 2 threads; stage 4 alone against
# PyTorch on the same GPU (a CPU epoch beside it would say nothing new).
NN_BENCH = $(if $(filter 4,$(STAGE)),--stage 4 --threads 1 --models lenet5 fashion_cnn,--stage $(if $(filter 1 2,$(STAGE)),$(STAGE),2 $(STAGE)) --threads 1 2)

.PHONY: help setup build data test portability grade results bench train export serve race speedrun exercises exercises-index progress notebooks asan sanitize lint clean

help: ## list the targets
	@echo "scratch2cuda -- targets (run from the repository root):"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@echo
	@echo "variables: STAGE=1..4  WEEK=k (make grade: that week's ops; THROUGH=k: weeks 1..k's)  VARIANT=numba|nvcc  IMPL=DIR (default: workspace/ when it holds STAGE; IMPL= the reference)  ARGS='...'"
	@echo "           AGAINST=DIR (make grade: also against your own earlier stage in DIR, e.g. AGAINST=workspace)"
	@echo "           CKPT=FILE OUT=FILE (make export: the checkpoint, the ONNX file to write)"
	@echo "           CHECKPOINT='FILE ...' (make serve: the checkpoints to serve, float or int8)"
	@echo "           S2C_ARCH_FLAGS='-march=x86-64-v2' (the C tier's target; default -march=native)"

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	@touch $(STAMP)

# As a goal, setup also builds the tiers (those stale); as a prerequisite of a command, it is the
# venv alone: each command builds what it needs itself.
setup: $(STAMP) $(if $(filter setup,$(MAKECMDGOALS)),build) ## create .venv with the pinned dependencies and build the tiers

build: $(STAMP) ## build the tiers whose sources changed since their build (the registry's build steps: the C tier, target S2C_ARCH_FLAGS; the nvcc library when nvcc exists); IMPL=workspace: your copies (your .cu files compile, GPU or not)
	$(BUILD_STALE) $(if $(filter command line,$(origin IMPL)),--impl $(IMPL))

data: $(STAMP) ## fetch and verify MNIST and Fashion-MNIST (downloads if not found locally)
	$(PY) -m datasets fetch mnist
	$(PY) -m datasets fetch fashion-mnist

# `make test` without ARGS: every test but the timed ones on every core (pytest-xdist, a test file
# per worker), then the timed ones (marker `timing`) alone, so that no other test slows them.
# TEST_FLAGS go to both runs (CI: --durations=25). With ARGS: one pytest run of exactly those.
TEST_CORES ?= $(shell nproc)
TEST_FLAGS ?=
RUN_TESTS = S2C_IMPL=$(TEST_IMPL) $(PY) -m pytest -q $(TEST_FLAGS)
test: setup ## run the project's tests (on every core, then the timed ones alone); ARGS='-m week07' runs one week's
	@$(BUILD_STALE)
	@if [ -z "$(strip $(ARGS))" ]; then \
		echo "make test: every test but the timed ones, on $(TEST_CORES) cores"; \
		$(RUN_TESTS) -n $(TEST_CORES) --dist loadfile -m 'not timing' || exit $$?; \
		echo "make test: the timed tests (-m timing), alone"; \
		$(RUN_TESTS) -m timing; exit $$?; \
	fi; \
	$(RUN_TESTS) $(ARGS) || { status=$$?; [ $$status = 5 ] || exit $$status; \
		case " $(ARGS) " in *" -m week"*) \
			echo "make test: no test for this week: it has no exercises of its own (EXERCISES.md lists each week's;" \
				"weeks 17 and 18 have none). Its page's \"Done when\" says how you know you are done."; exit 0;; esac; \
		echo "make test: no test matches ARGS (pytest's exit status 5)"; exit 5; }

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

grade: setup ## grade a tier against the one before: make grade STAGE=2 [WEEK=7 | THROUGH=8] [IMPL=workspace] [AGAINST=workspace]
	$(NO_STAGE_IN_ARGS)
	@$(BUILD_STAGE)
	$(PY) -m grader --stage $(STAGE) $(VARIANT_ARG) $(if $(WEEK),--week $(WEEK)) $(if $(THROUGH),--through $(THROUGH)) $(if $(IMPL),--impl $(IMPL)) $(if $(AGAINST),--against-impl $(AGAINST)) $(ARGS)

results: setup ## rewrite the committed grader records of the repository's tier (stage 4: and every op against PyTorch): make results STAGE=3
	$(NO_AGAINST)
	@$(BUILD_STAGE)
	$(PY) -m grader --stage $(STAGE) --results
	$(PY) -m grader bench --stage $(STAGE) --results
	$(if $(filter 4,$(STAGE)),$(PY) -m bench.ops_vs_pytorch --results)

bench: setup ## benchmark a tier: ops and matmul ladder (stage 4: every op against PyTorch's too), then epochs against PyTorch (and stage 2): make bench STAGE=3 [IMPL=workspace]
	$(NO_STAGE_IN_ARGS)
	$(NO_AGAINST)
	@$(BUILD_STAGE)
	$(PY) -m grader bench --stage $(STAGE) $(VARIANT_ARG) $(if $(IMPL),--impl $(IMPL)) $(ARGS)
	$(if $(filter 4,$(STAGE)),$(PY) -m bench.ops_vs_pytorch $(VARIANT_ARG) $(if $(IMPL),--impl $(IMPL)))
	@if $(PY) -c "import torch" 2>/dev/null; then \
		$(PY) -m bench.epoch $(NN_BENCH) \
			$(if $(IMPL),--impl $(IMPL)) --output $(if $(IMPL),$(IMPL)/results,curriculum/results)/nn-bench-stage$(STAGE); \
	else echo "bench.epoch skipped: it compares with PyTorch (pip install -r requirements-oracle.txt)"; fi

train: setup ## train a model with its recipe (nn/recipes.py): make train STAGE=2 [IMPL=] [GPUS=N] ARGS='--model lenet5 --data mnist'
	$(NO_STAGE_IN_ARGS)
	$(NO_AGAINST)
	@$(BUILD_STAGE) --no-references
	S2C_NN=$(NN_IMPL) $(PY) -m nn.train --stage $(STAGE) $(VARIANT_ARG) $(if $(IMPL),--impl $(IMPL)) $(if $(GPUS),--gpus $(GPUS)) $(ARGS)

# make export: the checkpoint to export (required) and the ONNX file to write (default: beside it)
CKPT ?=
OUT ?= $(if $(CKPT),$(dir $(CKPT))model.onnx)
export: setup ## write a trained checkpoint as an ONNX graph (nn/export.py), checked: make export CKPT=runs/lenet5-mnist-stage2/best.npz [OUT=lenet5.onnx]
	@if [ -z "$(CKPT)" ]; then echo "make export: give the checkpoint, e.g. make export CKPT=runs/lenet5-mnist-stage2/best.npz"; exit 2; fi
	S2C_NN=$(NN_IMPL) $(PY) -m nn.export --checkpoint $(CKPT) --out $(OUT) $(ARGS)

# make serve: the checkpoints to serve (required; several separated by spaces), on STAGE
CHECKPOINT ?=
serve: setup ## serve trained checkpoints over HTTP, with the draw-a-digit page (nn/serve/): make serve CHECKPOINT=runs/lenet5-mnist-stage2/best.npz [STAGE=3] [ARGS='--port 8080']
	$(NO_STAGE_IN_ARGS)
	$(NO_AGAINST)
	@if [ -z "$(CHECKPOINT)" ]; then echo "make serve: give the checkpoint, e.g. make serve CHECKPOINT=runs/lenet5-mnist-stage2/best.npz"; exit 2; fi
	@$(BUILD_STAGE) --no-references
	$(PY) -m nn.serve $(foreach path,$(CHECKPOINT),--checkpoint $(path)) --stage $(STAGE) $(VARIANT_ARG) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

race: setup ## GPU: one training epoch, nvcc variant vs PyTorch, op by op and as CUDA graphs (bench/race.py); runs/race.{json,md}
	@$(BUILD_STALE) --stage 4 --variant nvcc --no-references
	$(PY) -m bench.race --output runs/race $(ARGS)

speedrun: setup ## GPU: MNIST to 99% test accuracy on the nvcc variant, 5 seeds, timed (bench/speedrun.py); runs/speedrun.{json,md}
	@$(BUILD_STALE) --stage 4 --variant nvcc --no-references
	$(PY) -m bench.speedrun --output runs/speedrun $(ARGS)

exercises: $(STAMP) ## write the learner workspace (solutions become stubs): make exercises [WORKSPACE=dir] [ARGS=--force]
	$(PY) -m tools.exercises --out $(WORKSPACE) $(ARGS)

exercises-index: $(STAMP) ## rewrite EXERCISES.md, the list of exercises, from the solution markers and the contract
	$(PY) -m tools.exercise_index --write

progress: setup ## which exercises of your workspace pass, per week and tier (quick grader run): make progress [IMPL=dir] [ARGS='--stages 4']
	@$(BUILD_STALE)
	$(PY) -m tools.progress $(if $(TEST_IMPL),--impl $(TEST_IMPL)) $(ARGS)

notebooks: setup ## run the curriculum notebooks; the copies with their figures go to runs/notebooks/
	@$(BUILD_STALE)
	$(PY) -m tools.notebooks --out runs/notebooks $(ARGS)

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

sanitize: setup ## stage 4 under compute-sanitizer (memcheck, racecheck, synccheck), GPU machine only: make sanitize STAGE=4 [VARIANT=nvcc] [WEEK=16 | THROUGH=18]
	@$(BUILD_STAGE)
	$(PY) -m grader.sanitize --stage $(STAGE) $(VARIANT_ARG) $(if $(WEEK),--week $(WEEK)) $(if $(THROUGH),--through $(THROUGH)) $(if $(IMPL),--impl $(IMPL)) $(ARGS)

lint: $(STAMP) ## ruff over the project
	$(PY) -m ruff check .

# The repository's own code folders (a package's __init__.py, and tests/): `make clean` looks only
# there, never in workspace/ or any other folder a learner's tiers live in.
CODE_DIRS = $(patsubst %/__init__.py,%,$(wildcard */__init__.py)) tests

clean: ## remove build outputs: the C tier's extension and _build/, the nvcc library, __pycache__ of the repository's code, .pytest_cache, .ruff_cache (never workspace/, .venv or data)
	rm -rf stage3_c/_build stage3_c/_s2c_native*.so stage3_c/_s2c_native*.c .pytest_cache .ruff_cache \
		*/nvcc_impl/_build
	find $(CODE_DIRS) -name __pycache__ -prune -exec rm -rf {} +
