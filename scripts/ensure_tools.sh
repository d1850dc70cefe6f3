#!/usr/bin/env bash
# System tools coopcode and its tests use: tmux (the TUI's end-to-end test in a real
# terminal); g++ and Python's headers (the embedded engine builds its fused one-token decode
# step with them, once per machine; without them a single stream runs the eager forward).
# As root, install what is missing from Debian's packages; otherwise say what is missing
# and carry on (the tests that need it skip with that reason).
set -uo pipefail
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
include=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
[ -n "$include" ] && [ -f "$include/Python.h" ] || missing+=(python3-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "ensure_tools: missing ${missing[*]} (not root: the tests that need them will skip)" >&2
    exit 0
fi
echo "ensure_tools: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
