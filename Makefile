# Two commands do all the set-up on a fresh machine:
#   make demo   - set up, then the trained contract pair solves a compose problem, each agent its part
#   make test   - set up, then run the whole test suite (what .ci/run calls)
# and one builds the documentation site: make docs (offline, into site/).
# Every step is idempotent: rerunning skips what is already in place.

VENV    := .venv
PY      := $(VENV)/bin/python
COOP    := $(VENV)/bin/coopcode
STAMP   := $(VENV)/.coopcode-installed

.PHONY: disk setup docker tools image model vllm-env demo demo-humaneval docs test test-fast bench table1 lint constraints clean

$(STAMP): pyproject.toml constraints.txt scripts/setup_venv.sh
	bash scripts/setup_venv.sh $(VENV)
	touch $(STAMP)

setup: $(STAMP)

# Enough free disk for what the job sets up and writes, or one clear line (scripts/ensure_disk.sh).
disk:
	bash scripts/ensure_disk.sh --for $(if $(filter test,$(MAKECMDGOALS)),test,demo)

docker:
	bash scripts/ensure_docker.sh

tools:
	bash scripts/ensure_tools.sh

image: setup docker
	@if docker info >/dev/null 2>&1; then $(COOP) sandbox build; \
	else echo "no Docker daemon: coopcode will use its process sandbox"; fi

model: setup
	$(COOP) models pull qwen2.5-coder-0.5b-instruct

# vLLM's CPU build in its own venv (.venv-vllm) for the vLLM and OpenAI-engine tests. A
# failure is recorded in .venv-vllm.failed and those tests skip with it; it never stops make.
vllm-env:
	bash scripts/setup_vllm.sh .venv-vllm

# The trained contract pair (checkpoints/compose-magrpo-0.5b: MAGRPO on compose:train, seed 0,
# the step its validation kept) on a compose:test problem it solves: the helper writes aux from
# its contract, main the entry point around it; the program, its tests, the verdict and "both
# needed". Greedy: the same answers each time. Exit 1 means the program failed a test: still a
# finished demo, not a broken make.
DEMO_PAIR    := checkpoints/compose-magrpo-0.5b
DEMO_PROBLEM := compose/median_of_incr_list
demo: disk image model tools
	$(COOP) solve $(DEMO_PROBLEM) --scheme contract --reward own \
		--helper-adapter $(DEMO_PAIR) --main-adapter $(DEMO_PAIR) || test $$? -eq 1

# The untrained sequential pair on a HumanEval-style problem file.
demo-humaneval: image model tools
	$(COOP) solve examples/below_zero.py || test $$? -eq 1

# The documentation site, offline, into site/: --strict fails on a broken link, a missing
# anchor or a page left out of the nav (mkdocs.yml; tests/test_docs.py runs it). The variable
# quiets the Material theme's notice about its successor, printed at every build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The suite runs on two workers (pytest-xdist; 19:22-20:22 of pytest in fresh-clone runs
# against ~31 min on one): most slow tests wait on a process, a container or a server more
# than they compute. The vLLM tests share one worker (one `vllm serve`); the tests marked
# serial (they stop the Docker daemon) run alone after the rest. TEST_WORKERS=1 runs one.
TEST_WORKERS ?= 2
XDIST := $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup)
test: disk image model tools vllm-env
	$(PY) -m pytest -q tests -m "not serial" $(XDIST) --durations=30 \
		--junitxml=runs/test-report.xml
	$(PY) -m pytest -q tests -m serial --durations=5 --junitxml=runs/test-report-serial.xml

test-fast: setup
	$(PY) -m pytest -q tests -m "not slow and not model"

bench: image model
	$(COOP) bench --k 1,3,5,10 --n 10 --out runs/bench-default

# The seed paper's Table 1 re-made: trains the GRPO and MAGRPO adapters (60 steps each) when
# they are not complete, benches the four rows in runs/table1/ (hours on a CPU; rerun resumes).
table1: image model
	$(COOP) paper-table --out runs/table1

lint: setup
	$(VENV)/bin/ruff check coopcode sandbox tui tests benchmarks
	$(VENV)/bin/mypy coopcode sandbox tui

# After upgrading a dependency on purpose and a green `make test`: pin what passed.
constraints: setup
	bash scripts/freeze_constraints.sh $(VENV)

clean:
	rm -rf $(VENV) .venv-vllm .venv-vllm.failed build *.egg-info
