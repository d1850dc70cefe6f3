#!/usr/bin/env bash
# Keep a finished training run in checkpoints/ as the committed runs are kept: its record
# (keep_run.sh: config, metrics, manifest, step samples and each validation, gzipped) and its
# adapters (helper/ and main/, or main/ alone for one agent), without trainer_state/.
#   bash docs/divided/scripts/keep_checkpoint.sh RUN_FOLDER checkpoints/NAME
set -eu
src=$1; dest=$2
bash "$(dirname "$0")/keep_run.sh" "$src" "$dest"
for role in helper main; do
  [ -d "$src/$role" ] && rm -rf "${dest:?}/$role" && cp -r "$src/$role" "$dest/$role"
done
true
