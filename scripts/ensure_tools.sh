#!/usr/bin/env bash
# System tools the test suite uses: tmux (the TUI's end-to-end test in a real terminal).
# As root, install what is missing from Debian's packages; otherwise say what is missing
# and carry on (the tests that need it skip with that reason).
set -uo pipefail
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "ensure_tools: missing ${missing[*]} (not root: the tests that need them will skip)" >&2
    exit 0
fi
echo "ensure_tools: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
