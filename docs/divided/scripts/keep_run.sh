#!/usr/bin/env bash
# Keep a training run's record in docs (not its adapters): keep_run.sh RUN_FOLDER DEST.
# config.json, metrics.jsonl, manifest.json, the step samples (gzipped) and each validation's
# summary, meta and samples (gzipped): every candidate figure can be recomputed from them.
set -eu
src=$1; dest=$2
mkdir -p "$dest"
cp "$src/config.json" "$src/metrics.jsonl" "$dest/"
[ -f "$src/manifest.json" ] && cp "$src/manifest.json" "$dest/"
[ -f "$src/samples.jsonl" ] && gzip -n -9 -c "$src/samples.jsonl" > "$dest/samples.jsonl.gz"
for v in "$src"/validation/step-*; do
  [ -d "$v" ] || continue
  d="$dest/validation/$(basename "$v")"
  mkdir -p "$d"
  cp "$v/summary.json" "$v/meta.json" "$d/"
  gzip -n -9 -c "$v/samples.jsonl" > "$d/samples.jsonl.gz"
done
