#!/usr/bin/env bash
# Keep a finished run of this round in checkpoints/: its record (keep_run.sh: config,
# metrics, manifest, step samples and each validation, gzipped) and its adapters, helper/
# and main/ (main/ alone for one agent): the step the run itself kept (manifest.json
# `kept`; a warm start keeps its last step), without trainer_state/ or last/.
#   bash docs/divided-fair/scripts/keep_checkpoint.sh RUN_FOLDER checkpoints/NAME
set -eu
src=$1; dest=$2
bash "$(dirname "$0")/../../divided/scripts/keep_run.sh" "$src" "$dest"
for role in helper main; do
  rm -rf "${dest:?}/$role"
  [ -d "$src/$role" ] && cp -r "$src/$role" "$dest/$role"
done
[ -d "$dest/main" ] || { echo "keep_checkpoint: $src has no main/ adapter" >&2; exit 1; }
