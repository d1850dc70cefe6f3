#!/usr/bin/env bash
# Carry an unfinished final run to the next machine in git, and back.
#   bash docs/divided/scripts/carry_run.sh pack runs/divided/final-runs/ROW docs/divided/carried/ROW
#   bash docs/divided/scripts/carry_run.sh unpack docs/divided/carried/ROW runs/divided/final-runs/ROW
#   bash docs/divided/scripts/carry_run.sh pack-bench runs/.../BENCH docs/.../carried/bench/BENCH
# A working session may start on a fresh machine that has only what was committed; runs/ is
# not. `pack` copies what `coopcode train --resume` needs: the run's record as keep_run.sh keeps
# it (config, metrics, manifest, step samples and each evaluation, gzipped), the adapters an
# evaluation kept where the step rule could still pick it (chosen_step.py --choosable; never
# step 0's: that is the warm start, which chosen_step.py takes from the config), and the newest
# trainer state (adapters, optimizer, schedule, RNG: ~105 MB for a pair). `unpack` puts them
# back into an empty run folder; final.sh calls it when its run folder has no config.json,
# and bench_final.sh for a bench carried as its samples so far (samples.jsonl.gz, meta.json).
# Once the run is kept in checkpoints/ (keep_checkpoint.sh), delete the carried folder.
set -eu
what=$1; src=$2; dest=$3
case "$what" in
  pack)
    state=$(ls -d "$src"/trainer_state/step-[0-9]* 2>/dev/null | sort | tail -1)
    [ -n "$state" ] || { echo "carry_run: $src has no saved trainer state" >&2; exit 1; }
    rm -rf "${dest:?}.partial"
    bash "$(dirname "$0")/keep_run.sh" "$src" "$dest.partial"  # the record, as docs keep one
    # The adapters of an evaluation the step rule can no longer pick are left behind. A run
    # that keeps its best validated step itself (manifest `kept`, --keep-step best) publishes
    # them from its evaluations: every evaluation's are carried, step 0's included.
    if grep -q '"last": "last"' "$src/manifest.json" 2>/dev/null; then
      choosable=$(ls -d "$src"/validation/step-*/adapters 2>/dev/null | sed 's#.*/step-0*\([0-9][0-9]*\)/adapters#\1#; s#^$#0#')
      keeps_best=1
    else
      choosable=$(.venv/bin/python "$(dirname "$0")/chosen_step.py" --choosable "$src" 2>/dev/null)
      keeps_best=0
    fi
    for step in $choosable; do
      v=$(printf '%s/validation/step-%06d' "$src" "$step")
      if { [ "$step" != 0 ] || [ "$keeps_best" = 1 ]; } && [ -d "$v/adapters" ]; then
        cp -r "$v/adapters" "$dest.partial/validation/$(basename "$v")/adapters"
      fi
    done
    mkdir -p "$dest.partial/trainer_state"
    cp -r "$state" "$dest.partial/trainer_state/"
    rm -rf "$dest"
    mv "$dest.partial" "$dest"
    echo "carried $src (state $(basename "$state")) in $dest: $(du -sh "$dest" | cut -f1)"
    ;;
  pack-bench)  # a bench stopped half-way: its samples so far, to resume from
    [ -f "$src/meta.json" ] && [ -s "$src/samples.jsonl" ] \
      || { echo "carry_run: $src holds no bench with samples" >&2; exit 1; }
    [ ! -f "$src/summary.json" ] || { echo "carry_run: $src has finished: keep it (keep.sh)" >&2; exit 1; }
    rm -rf "${dest:?}.partial" && mkdir -p "$dest.partial"
    cp "$src/meta.json" "$dest.partial/"
    gzip -c "$src/samples.jsonl" > "$dest.partial/samples.jsonl.gz"
    rm -rf "$dest" && mv "$dest.partial" "$dest"
    echo "carried bench $src ($(wc -l < "$src/samples.jsonl") samples) in $dest"
    ;;
  unpack)  # a training run (config.json) or a bench's samples so far (meta.json)
    [ -f "$src/config.json" ] || [ -f "$src/meta.json" ] \
      || { echo "carry_run: $src holds no carried run" >&2; exit 1; }
    if [ -f "$dest/config.json" ] || [ -f "$dest/samples.jsonl" ]; then
      echo "carry_run: $dest already holds a run; it is left as it is" >&2; exit 1
    fi
    mkdir -p "$dest"
    cp -r "$src/." "$dest/"
    find "$dest" -name '*.jsonl.gz' | while read -r gz; do
      gzip -d -c "$gz" > "${gz%.gz}" && rm "$gz"
    done
    from=$(ls "$dest/trainer_state" 2>/dev/null || echo "its samples so far")
    echo "unpacked $src into $dest: it resumes from $from"
    ;;
  *) echo "carry_run: pack RUN DEST, pack-bench BENCH DEST or unpack CARRIED RUN" >&2; exit 2 ;;
esac
