#!/usr/bin/env bash
# What the device tool would send of this repository, and a way to send less for one call.
#
# The device tool (a lent GPU machine) copies the repository's tree, tracked files and
# untracked ones git does not ignore, plus the paths a call carries: 64 MiB in all. The
# committed adapters' weights (checkpoints/*/{helper,main}/adapter_model.safetensors, 17.6 MB
# each) alone are far over it, and so is a run carried in git (docs/divided/carried/,
# docs/divided-fair/carried/: its trainer.pt and adapters); the GPU check needs none of
# them. So, in a session with a device and nobody else committing:
#
#   scripts/device_tree.sh size     # what a call would send now (tree only), in MiB
#   scripts/device_tree.sh hide     # take the weights out of the index and ignore them locally
#   (the device call: scripts/gpu_check.sh's, see BENCHMARKS "The CUDA path")
#   scripts/device_tree.sh show     # put them back exactly as they were
#
# `hide` only changes the index and .git/info/exclude (never a file, never a commit); it
# refuses while anything else is staged, and `show` undoes it. Do not commit in between: the
# weights would be committed as deleted.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
EXCLUDE=.git/info/exclude
BEGIN="# device_tree.sh hide: begin"
END="# device_tree.sh hide: end"

weights() {  # the tracked adapter weight files, and a carried run's trainer state
    git ls-files -- 'checkpoints/*/helper/adapter_model.safetensors' \
        'checkpoints/*/main/adapter_model.safetensors' \
        'docs/*/carried/*adapter_model.safetensors' 'docs/*/carried/*trainer.pt'
}

tree_bytes() {  # tracked (in the index) and untracked-not-ignored files that exist
    { git ls-files -z; git ls-files -z --others --exclude-standard; } |
        xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}'
}

mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

case "${1:-size}" in
    size)
        echo "the tree a device call sends: $(mib "$(tree_bytes)") MiB (limit 64 MiB with what it carries)"
        ;;
    hide)
        if grep -qF "$BEGIN" "$EXCLUDE" 2>/dev/null; then
            echo "already hidden: run '$0 show' first" >&2; exit 2
        fi
        if ! git diff --cached --quiet; then
            echo "something is staged: commit or unstage it first (hide must not mix with it)" >&2
            exit 2
        fi
        mapfile -t files < <(weights)
        [ "${#files[@]}" -gt 0 ] || { echo "no tracked adapter weights to hide"; exit 0; }
        { echo "$BEGIN"; printf '/%s\n' "${files[@]}"; echo "$END"; } >> "$EXCLUDE"
        git rm -q --cached -- "${files[@]}"
        echo "hid ${#files[@]} weight files from the index; the tree a call sends: $(mib "$(tree_bytes)") MiB"
        echo "after the device call: $0 show"
        ;;
    show)
        if ! grep -qF "$BEGIN" "$EXCLUDE" 2>/dev/null; then
            echo "nothing hidden"; exit 0
        fi
        mapfile -t files < <(sed -n "/^$BEGIN\$/,/^$END\$/p" "$EXCLUDE" | grep '^/' | sed 's|^/||')
        sed -i "/^$BEGIN\$/,/^$END\$/d" "$EXCLUDE"
        git reset -q -- "${files[@]}"
        echo "restored ${#files[@]} weight files to the index; the tree a call sends: $(mib "$(tree_bytes)") MiB"
        ;;
    *)
        echo "usage: $0 size | hide | show" >&2; exit 2
        ;;
esac
