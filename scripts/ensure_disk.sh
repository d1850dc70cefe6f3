#!/usr/bin/env bash
# Enough free disk for what `make` is about to set up and run, or one clear line and exit 1.
# A full disk otherwise shows up late and far from its cause: a pip install or a test that
# dies on "No space left on device" minutes in (a CI run did, at the very end, writing its
# report). What each part takes, measured on a fresh clone (2026-12-06): .venv 2.0 GB,
# .venv-vllm 3.4 GB, the model in ~/.cache/coopcode 1.2 GB, the sandbox image 0.2 GB; the
# suite's own files (containers, runs, adapters, pytest's folders) stay under 2 GB.
#   bash scripts/ensure_disk.sh [--for test|demo]
set -uo pipefail
cd "$(dirname "$0")/.."
job=test
[ "${1:-}" = --for ] && job=${2:-test}
need=2048                                      # the job's own files
[ -f .venv/.coopcode-installed ] || need=$((need + 2560))
[ "$job" = test ] && { [ -d .venv-vllm ] || [ -f .venv-vllm.failed ] || need=$((need + 3584)); }
cache=${COOPCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coopcode}  # coopcode.core.paths.cache_dir
[ -f "$cache/models/qwen2.5-coder-0.5b-instruct/coopcode-model.json" ] || need=$((need + 1280))
free=$(df -Pm . | awk 'NR == 2 {print $4}')
gb() { echo "$(($1 / 1024)).$((($1 % 1024) * 10 / 1024))"; }  # MB -> GB, one decimal, cut
if [ "$free" -lt "$need" ]; then
  echo "coopcode: $(gb "$free") GB free on this disk; make $job needs about $(gb "$need") GB (free some, e.g. old clones' .venv folders, then rerun)" >&2
  exit 1
fi
