# tpbench — the two commands of a fresh machine are `make run` and `make test`; the rest are
# the steps they are made of.
BUILD ?= build
JOBS ?= $(shell nproc)
TPBENCH := $(BUILD)/tpbench

.PHONY: all deps configure build run test fuzz fuzz-long micro baseline gate ab-gate clean

# The regression baseline: a small CPU sweep of the data-parallel strategies the committed
# baseline holds, N = 1..4, two batch sizes, three repeats. `make baseline` records it (and its
# report); CI's gate reruns it and compares. (torch_ddp, torch_dp, model_parallel and pipeline
# are not in it yet: the gate would run them and compare nothing.)
BASELINE_SWEEP := sweep --strategies single,param_server,ring_all_reduce,allreduce,ddp,data_parallel \
  --n_gpus 1..4 --batch_size 32,128 --epochs 2 \
  --train_size 4096 --test_size 1000 --repeat 3
# Timing changes fail the gate only beyond this slowdown; see docs/reports.md, "Choosing the
# timing bound".
GATE_THRESHOLD ?= 3.0

all: build

deps:
	@bash scripts/install-deps.sh

# ccache (installed by deps) keeps every object, so that the A/B gate's build of the baseline
# revision (scripts/ab-gate.sh) recompiles only what changed since; paths are hashed relative to
# this directory, so the base's worktree under $(BUILD) hits the same entries.
export CCACHE_BASEDIR := $(CURDIR)
configure: deps
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on CPU with the embedded defaults: a training sweep of every strategy on
# synthetic data, then the allreduce benchmark over 2..4 ranks. Each rerun replaces its results
# (--overwrite; without it tpbench refuses an existing --out).
run: build
	@mkdir -p results
	$(TPBENCH) sweep --strategies all --n_gpus 1,2 --batch_size 64 --epochs 2 --train_size 8192 \
	  --out results/sweep-cpu.json --overwrite
	$(TPBENCH) allreduce --n_gpus 2..4 --bytes 4K..16M --out results/allreduce-cpu.json --overwrite

# Every test, $(JOBS) at a time, except those that run alone afterwards: the one that checks the
# whole machine for leftover rank processes (a neighbouring test's ranks would count) and the
# pipeline bubble's, whose idle time a busy neighbour would inflate, and the busy-machine test,
# whose spinning processes would slow a neighbour. Tests that fail beside others
# are rerun alone once, with their output (scripts/ctest-rerun-failed.sh): failing again fails
# make test; passing alone is printed as FLAKY, with the first failure's output above it.
SERIAL_TESTS := ^(Cli\.KilledRankIsReportedAndNothingIsLeftBehind|Cpu/PipelineBubble\..*|PipelineBubbleSanity\..*|MachineLoadCli\..*)$$
test: build
	@cd $(BUILD) && { ctest --output-on-failure --timeout 600 -j $(JOBS) -E '$(SERIAL_TESTS)' || \
	  bash $(CURDIR)/scripts/ctest-rerun-failed.sh .; } && \
	  ctest --output-on-failure --timeout 600 -R '$(SERIAL_TESTS)'

# Fuzzing (docs/fuzzing.md): every target of tests/fuzz (clang, libFuzzer, ASan + UBSan, built
# in $(FUZZ_BUILD)) for FUZZ_SECONDS each, then a sample of their inputs through tpbench's own
# command line (exit 0 or 2 naming the file). CI runs `make fuzz`; `make fuzz-long` runs 10 min each.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
FUZZ_CLI_SAMPLE ?= 5
fuzz: build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_CLI_SAMPLE=$(FUZZ_CLI_SAMPLE) bash scripts/fuzz-cli-check.sh $(TPBENCH)

fuzz-long:
	@$(MAKE) fuzz FUZZ_SECONDS=600 FUZZ_CLI_SAMPLE=50

# Micro-benchmarks of the sum kernel and the shm transport (Google Benchmark JSON beside).
micro: build
	@mkdir -p results
	$(BUILD)/bench/tpbench_micro --benchmark_out=results/micro-cpu.json --benchmark_out_format=json

baseline: build
	$(TPBENCH) $(BASELINE_SWEEP) --out results/baseline-cpu.json --overwrite
	$(TPBENCH) report results/baseline-cpu.json -o reports/baseline-cpu
	bash scripts/report-screenshot.sh reports/baseline-cpu

# Reruns the baseline sweep and compares: accuracy/loss changes and failed points fail, timings
# only beyond GATE_THRESHOLD, judged at the baseline machine's speed (--scale_by_sgemm: the
# baseline may come from another machine). Exit 3 on regression.
gate: build
	@mkdir -p $(BUILD)/gate
	$(TPBENCH) $(BASELINE_SWEEP) --out $(BUILD)/gate/sweep.json --overwrite
	$(TPBENCH) compare results/baseline-cpu.json $(BUILD)/gate/sweep.json --threshold $(GATE_THRESHOLD) --scale_by_sgemm

# The same-machine A/B gate (docs/reports.md, "The A/B gate"): the baseline revision's tpbench,
# built beside this one, and this one run on a small suite in interleaved rounds; timings judged
# per round pair. Exit 3 on a regression; 2 in a clone that lacks the base revision (a shallow
# one), unless TPB_AB_ALLOW_SKIP=1 makes that a SKIPPED line (CI does not set it).
ab-gate: build
	@bash scripts/ab-gate.sh

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
