#!/usr/bin/env bash
# Pause the round at a session's end and carry what is unfinished into git: the next session
# may start on another machine whose runs/ is empty (2026-12-06: grpo-seed0's first 16 steps
# were lost so).
#   1. next.sh is stopped (no new piece starts); the training or bench under way is stopped
#      and waited for: a training run by SIGINT (it saves its state at the end of the step),
#      a bench by SIGTERM (it closes its sandbox and exits; the samples it wrote are kept, the
#      ones in flight are drawn again with the same seeds when it resumes). Not SIGINT for a
#      bench: one started from a script's background job inherits SIGINT ignored, and as
#      every Unix program does, keeps ignoring it (2026-12-07: a bench went on for minutes);
#      training sets its own SIGINT handler whatever it inherited;
#   2. each bench not finished is carried as its samples so far into
#      docs/divided-fair/carried/bench/PATH (PATH under runs/divided-fair/), and each final
#      run not finished is packed into docs/divided-fair/carried/ROW
#      (docs/divided/scripts/carry_run.sh: its record, its evaluations' adapters, its newest
#      trainer state); next.sh and final.sh unpack them where runs/ has none.
# Then commit docs/divided-fair/carried/.
#   bash docs/divided-fair/scripts/pause.sh
set -u
cd "$(dirname "$0")/../../.."
working='coopcode (train|bench) '
pkill -f 'docs/divided-fair/scripts/next.sh' && echo "pause: next.sh stopped"
pkill -INT -f 'coopcode train ' && echo "pause: interrupted a training run; waiting for its save"
pkill -TERM -f 'coopcode bench ' && echo "pause: stopped a bench"
for _ in $(seq 900); do
  pgrep -f "$working" >/dev/null || break
  sleep 1
done
if pgrep -f "$working" >/dev/null; then
  echo "pause: a run is still going after 15 minutes: $(pgrep -af "$working" | head -1)" >&2
  exit 1
fi
# A bench stopped half-way is carried as its samples so far (meta.json, samples.jsonl.gz);
# next.sh puts it back where runs/ has none, and it resumes from its next sample.
find runs/divided-fair -name meta.json -not -path '*/final-runs/*' -not -path '*/candidates/*' 2>/dev/null |
  while read -r meta; do
    bench=$(dirname "$meta")
    [ -f "$bench/summary.json" ] || [ ! -s "$bench/samples.jsonl" ] && continue
    bash docs/divided/scripts/carry_run.sh pack-bench "$bench" \
      "docs/divided-fair/carried/bench/${bench#runs/divided-fair/}" || exit
  done || exit
for run in runs/divided-fair/final-runs/*/; do
  [ -f "$run/config.json" ] || continue
  .venv/bin/python docs/divided-fair/run_record.py finished "$run" && continue
  bash docs/divided/scripts/carry_run.sh pack "${run%/}" "docs/divided-fair/carried/$(basename "$run")" || exit
done
