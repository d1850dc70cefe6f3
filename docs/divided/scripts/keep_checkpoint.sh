#!/usr/bin/env bash
# Keep a finished final run in checkpoints/ as the committed runs are kept: its record
# (keep_run.sh: config, metrics, manifest, step samples and each validation, gzipped) and the
# adapters of the step the rule picks (chosen_step.py: the evaluation step with the highest
# val pass@1, ties to the later one; step 0 is the warm start), helper/ and main/ (main/
# alone for one agent), without trainer_state/. chosen_step.json says which step they are
# and where they came from, and manifest.json's step is set to it; the run's own last
# adapters are not kept unless chosen.
#   bash docs/divided/scripts/keep_checkpoint.sh RUN_FOLDER checkpoints/NAME
set -eu
src=$1; dest=$2
here=$(dirname "$0")
read -r step adapters < <(.venv/bin/python "$here/chosen_step.py" "$src")
[ -n "${adapters:-}" ] || { echo "keep_checkpoint: no step chosen for $src" >&2; exit 1; }
bash "$here/keep_run.sh" "$src" "$dest"
for role in helper main; do
  rm -rf "${dest:?}/$role"
  [ -d "$adapters/$role" ] && cp -r "$adapters/$role" "$dest/$role"
done
[ -d "$dest/main" ] || { echo "keep_checkpoint: $adapters has no main/ adapter" >&2; exit 1; }
printf '{"step": %d, "adapters_from": "%s"}\n' "$step" "$adapters" > "$dest/chosen_step.json"
# The manifest's step is the step its adapters are at (checkpoints/README.md): the chosen one;
# total_steps stays the run's length, so `coopcode checkpoints list` shows e.g. "45/135".
.venv/bin/python - "$dest/manifest.json" "$step" <<'PY'
import json, sys
path, step = sys.argv[1], int(sys.argv[2])
manifest = json.load(open(path))
manifest["step"] = step
open(path, "w").write(json.dumps(manifest, indent=2) + "\n")
PY
echo "kept $src in $dest: the adapters of step $step ($adapters)"
