#!/usr/bin/env bash
# The CUDA path, run for real on a machine with a GPU (issue 42).
#
# Such a machine has PyTorch with CUDA but no network and no Docker, so coopcode and what its
# Python lacks travel with it, in a folder made here first and small enough for the device
# tool (64 MiB for the repository's tree and what it carries, together):
#
#   scripts/gpu_check.sh pack [DIR] [--python-version V]...
#       (here: .venv set up by `make`, `make model` done, the registries reachable) writes
#       DIR (default .gpu-check, git-ignored), then prints its size and what a device call
#       would send in all:
#         wheels/      coopcode's wheel and, as .venv pins them, every package in the
#                      dependency closure of coopcode, pytest and pytest-timeout except what
#                      scripts/gpu_check_base.txt says the machine brings (torch and its own
#                      needs, numpy, the compiled packages a PyTorch image holds): pure-Python
#                      wheels but for the four compiled ones the device's image lacks, those
#                      for each V (default: .venv's Python and the device's 3.12)
#         carry.txt    those packages, name==version a line
#         tiny-qwen2-spec.tar.gz   the tests' tiny model without its weights: its config and
#                      tokenizer files (2 MB; the weights, random, are made on the machine)
#
#   scripts/gpu_check.sh run [DIR] [--python PY] [--logs LOGDIR]
#       (the GPU machine, in the repository's root) installs the wheels into a folder of their
#       own with PY's pip (--no-index --no-deps: nothing fetched, nothing of PY's changed),
#       puts it first on PY's path, then runs the checks, one line each (PASS / FAIL / SKIP,
#       seconds, what it found):
#         torch      the torch version and the device it sees
#         install    coopcode and the carried packages, every requirement met on PY
#         tiny       the tiny model built from DIR/tiny-qwen2-spec.tar.gz
#         cuda-tests pytest -m cuda (the engine, its adapters and a training step on the GPU)
#         magrpo     coopcode train --algo magrpo, 2 steps on the tiny model
#         grpo       coopcode train --algo grpo, 2 steps on the tiny model
#         bench      coopcode bench --engine transformers on the tiny model (4 problems, n=2)
#       Programs run in the process sandbox (no Docker there). Without CUDA the device checks
#       run on the CPU and the CUDA tests are skipped, each said on its line. The whole run is
#       held to GPU_CHECK_BUDGET_S seconds (default 480). Each check's log is copied to
#       LOGDIR (on the device: --logs "$OUT"). Exit 0 when nothing failed.
#
# PY defaults to python3; its Python version must be one the wheels were packed for.
set -uo pipefail

usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || usage
MODE=$1; shift
DIR=$REPO/.gpu-check
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then DIR=$(realpath -m "$1"); shift; fi
HELPER=$REPO/scripts/gpu_check.py
SPEC=tiny-qwen2-spec.tar.gz

# -- pack ----------------------------------------------------------------------------------
if [ "$MODE" = pack ]; then
    PY="$REPO/.venv/bin/python"
    [ -x "$PY" ] || { echo "error: no $PY: run make first (the wheels are what .venv holds)"; exit 2; }
    PYVERS=()
    while [ $# -gt 0 ]; do
        case $1 in --python-version) PYVERS+=("$2"); shift 2 ;; *) usage ;; esac
    done
    if [ ${#PYVERS[@]} = 0 ]; then
        PYVERS=("$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')" 3.12)
    fi
    T0=$(date +%s)
    rm -rf "$DIR" && mkdir -p "$DIR/wheels" || exit 1
    "$PY" "$HELPER" carry "$REPO/scripts/gpu_check_base.txt" "${PYVERS[@]}" > "$DIR/carry.txt" \
        || { echo "error: the closure of coopcode's requirements"; exit 1; }
    # --no-deps: each package as pinned (resolving would pull torch, which peft needs).
    for v in $(printf '%s\n' "${PYVERS[@]}" | sort -u); do
        "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$v" \
            --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux_2_28_x86_64 --platform any \
            -r "$DIR/carry.txt" -d "$DIR/wheels" >"$DIR/pip.log" 2>&1 \
            || { cat "$DIR/pip.log"; echo "error: pip download for Python $v failed"; exit 1; }
    done
    rm -f "$DIR/pip.log"
    # coopcode's wheel from a copy of the working tree's package files (build/ may hold
    # modules deleted since, which setuptools would put in the wheel).
    SRC=$(mktemp -d) && trap 'rm -rf "$SRC"' EXIT
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard -- pyproject.toml \
        README.md coopcode sandbox tui | xargs -0 cp --parents -t "$SRC" 2>/dev/null)
    "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$DIR/wheels" "$SRC" \
        || { echo "error: building coopcode's wheel failed"; exit 1; }
    # The tiny model without its weights: build_tiny_model makes them on the machine.
    (cd "$REPO" && "$PY" -c "
from pathlib import Path
from coopcode.models.tiny import make_tiny_model
make_tiny_model(Path('$SRC') / 'tiny')") >/dev/null 2>&1 || { echo "error: the tiny model"; exit 1; }
    tar -czf "$DIR/$SPEC" -C "$SRC/tiny" --exclude 'model.safetensors' . || exit 1
    echo "packed for Python ${PYVERS[*]} in $DIR in $(( $(date +%s) - T0 ))s"
    "$PY" "$HELPER" sizes "$REPO" "$DIR"
    exit 0
fi
[ "$MODE" = run ] || usage

# -- run -----------------------------------------------------------------------------------
BASE_PY=python3 LOGS=
while [ $# -gt 0 ]; do
    case $1 in --python) BASE_PY=$2; shift 2 ;; --logs) LOGS=$2; shift 2 ;; *) usage ;; esac
done
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
START=$(now_ms)
BUDGET=${GPU_CHECK_BUDGET_S:-480}  # 8 minutes for everything
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
FAILED=0
finish() {
    if [ -n "$LOGS" ]; then mkdir -p "$LOGS" && cp "$WORK"/*.log "$LOGS"/ 2>/dev/null; fi
    [ "$FAILED" = 0 ] && rm -rf "$WORK"  # the logs stay when a check failed
}
trap finish EXIT

left() { echo $(( BUDGET - ($(now_ms) - START) / 1000 )); }
line() {  # STATUS NAME MILLISECONDS WHAT
    printf '%-4s %-10s %4d.%ds  %s\n' "$1" "$2" $(( $3 / 1000 )) $(( $3 % 1000 / 100 )) "$4"
    [ "$1" = FAIL ] && FAILED=1
    return 0
}
# check NAME COMMAND...: runs it within what is left of the budget; its log in $WORK/NAME.log
check() {
    local name=$1; shift
    local t0; t0=$(now_ms)
    if [ "$(left)" -le 5 ]; then TAKEN=0; echo "not run: the ${BUDGET}s budget is spent" >"$WORK/$name.log"; return 1; fi
    timeout "$(left)" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    TAKEN=$(( $(now_ms) - t0 ))
    [ $rc = 124 ] && echo "stopped: the ${BUDGET}s budget ran out" >>"$WORK/$name.log"
    return $rc
}
tail1() { grep -v '^\s*$' "$WORK/$1.log" | tail -1 | cut -c1-400; }

[ -d "$DIR/wheels" ] && [ -f "$DIR/carry.txt" ] && [ -f "$DIR/$SPEC" ] \
    || { echo "error: $DIR holds no packed check: make it with scripts/gpu_check.sh pack"; exit 2; }

# torch: what the machine's Python brings.
if check torch "$BASE_PY" -c '
import torch
cuda = torch.cuda.is_available()
where = torch.cuda.get_device_name(0) if cuda else "no CUDA device"
built = torch.version.cuda or "none"
print(f"torch {torch.__version__}, built for CUDA {built}: {where}")
raise SystemExit(0 if cuda else 3)'; then
    CUDA=1; line PASS torch "$TAKEN" "$(tail1 torch)"
elif grep -q "^torch " "$WORK/torch.log"; then
    CUDA=0; line PASS torch "$TAKEN" "$(tail1 torch) (the device checks run on the CPU)"
else
    line FAIL torch "$TAKEN" "no torch in $BASE_PY: $(tail1 torch)"; exit 1
fi

# install: the carried wheels into a folder of their own that goes first on the path. No
# venv (the machine's Python may lack ensurepip), nothing of the machine's Python changed,
# and --no-deps: what the machine brings is its own; `verify` then checks every requirement.
SITE="$WORK/site"
export DIR SITE BASE_PY HELPER
install_coopcode() {
    "$BASE_PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir \
        --disable-pip-version-check --no-warn-script-location --target "$SITE" \
        --find-links "$DIR/wheels" -r "$DIR/carry.txt" "$(ls "$DIR"/wheels/coopcode-*.whl | head -1)" \
        || return 1
    cd "$SITE/.." && PYTHONPATH="$SITE" "$BASE_PY" "$HELPER" verify "$SITE"
}
export -f install_coopcode  # timeout runs programs: the function runs in a bash of its own
if check install bash -c install_coopcode; then
    line PASS install "$TAKEN" "$(tail1 install) (--no-index: from $(basename "$DIR")/wheels only)"
elif [ -f "$SITE/coopcode/__init__.py" ]; then
    line FAIL install "$TAKEN" "$(tail1 install)"  # installed, a requirement unmet: go on
else
    line FAIL install "$TAKEN" "$(tail1 install)"; exit 1
fi
export PYTHONPATH="$SITE" COOPCODE_CACHE="$WORK/cache" PYTHONUNBUFFERED=1
TINY="$WORK/tiny-qwen2"

# tiny: the tests' tiny model, its random weights made here from the carried spec.
build_tiny() {
    mkdir -p "$WORK/spec" && tar -xzf "$DIR/$SPEC" -C "$WORK/spec" || return 1
    cd "$WORK" && "$BASE_PY" -c "
import sys
from pathlib import Path
from coopcode.models.tiny import build_tiny_model
d = build_tiny_model(Path(sys.argv[1]), Path(sys.argv[2]))
size = sum(p.stat().st_size for p in d.iterdir()) / 2**20
print(f'the tiny model built from the spec: {size:.0f} MB (random weights, seed 0)')" "$TINY" "$WORK/spec"
}
export -f build_tiny; export WORK TINY SPEC
if check tiny bash -c build_tiny; then
    line PASS tiny "$TAKEN" "$(tail1 tiny)"
else
    line FAIL tiny "$TAKEN" "$(tail1 tiny)"; exit 1
fi
export COOPCODE_TINY_MODEL="$TINY"

# cuda-tests: what the suite marks as needing CUDA, from the files that use the mark. From
# the checkout's root, as the suite is run (its tests import `tests.` helpers), so the
# checkout's coopcode comes first here (the wheel's source; the carried packages under it).
# Only those files: the rest of the suite is the CPU's. Only the plugin the suite needs: the
# machine's own pytest plugins are for its own pytest.
CUDA_FILES=$(cd "$REPO" && grep -rlE 'pytest\.mark\.cuda' tests --include='test_*.py' | sort)
PYTEST=(env -C "$REPO" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "$BASE_PY" -m pytest -p pytest_timeout
        -p no:cacheprovider -q -m cuda $CUDA_FILES)
if [ "$CUDA" = 1 ]; then
    if check cuda-tests "${PYTEST[@]}"; then
        line PASS cuda-tests "$TAKEN" "$(grep -E 'passed|failed' "$WORK/cuda-tests.log" | tail -1)"
    else
        line FAIL cuda-tests "$TAKEN" "$(grep -E 'passed|failed|error|budget' "$WORK/cuda-tests.log" | tail -1)"
    fi
else
    if check cuda-tests "${PYTEST[@]}" --collect-only; then
        n=$(grep -c '::' "$WORK/cuda-tests.log")
        line SKIP cuda-tests "$TAKEN" "$n CUDA-marked tests collected, not run: no CUDA device"
    else
        line FAIL cuda-tests "$TAKEN" "collecting them: $(grep -E 'error|budget' "$WORK/cuda-tests.log" | tail -1)"
    fi
fi

DEVICE=$([ "$CUDA" = 1 ] && echo cuda || echo cpu)
device_note() {  # the device a run's log says its model loaded on
    grep -oE "\((bfloat16|float32|float16), (cuda[:0-9]*|cpu)\)" "$WORK/$1.log" | head -1
}
for algo in magrpo grpo; do
    # From $WORK: the installed coopcode runs, not the checkout's.
    if check "$algo" env -C "$WORK" "$BASE_PY" -m coopcode train --algo "$algo" --model "$TINY" \
            --steps 2 --group-size 2 --max-new-tokens 16 --problems humaneval:train --limit 2 \
            --sandbox process --out "$WORK/runs/$algo"; then
        found=$(device_note "$algo")
        if [ "$CUDA" = 1 ] && [[ "$found" != *cuda* ]]; then
            line FAIL "$algo" "$TAKEN" "ran on ${found:-an unknown device}, not the GPU"
        else
            line PASS "$algo" "$TAKEN" "2 steps on $DEVICE $found: $(tail1 "$algo")"
        fi
    else
        line FAIL "$algo" "$TAKEN" "$(tail1 "$algo")"
    fi
done

if check bench env -C "$WORK" "$BASE_PY" -m coopcode bench --engine transformers --model "$TINY" \
        --limit 4 --n 2 --k 1,2 --max-new-tokens 32 --sandbox process --out "$WORK/runs/bench"; then
    line PASS bench "$TAKEN" "8 samples on $DEVICE $(device_note bench): $(tail1 bench)"
else
    line FAIL bench "$TAKEN" "$(tail1 bench)"
fi

TOTAL=$(( ($(now_ms) - START) / 1000 ))
if [ "$FAILED" = 0 ]; then
    echo "all checks passed in ${TOTAL}s (budget ${BUDGET}s)$([ "$CUDA" = 1 ] || echo '; CUDA checks skipped: no CUDA device')"
else
    echo "some checks failed (${TOTAL}s); each check's log is kept in $WORK$([ -n "$LOGS" ] && echo " and copied to $LOGS")"
fi
exit "$FAILED"
