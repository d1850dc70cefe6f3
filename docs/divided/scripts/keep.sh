#!/usr/bin/env bash
# Keep a finished bench in docs: keep.sh RUN_FOLDER DEST. The samples are gzipped without a
# name or time in the header, so the same samples give the same bytes.
set -eu
src=$1; dest=$2
mkdir -p "$dest"
gzip -n -9 -c "$src/samples.jsonl" > "$dest/samples.jsonl.gz"
cp "$src/meta.json" "$src/summary.json" "$src/report.md" "$dest/"
