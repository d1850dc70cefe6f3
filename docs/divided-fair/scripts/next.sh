#!/usr/bin/env bash
# The fair round's CPU work, in PLAN.md's order, each piece done once: rerun to go on from
# where the last stopped (every run and bench it starts is resumable; a piece already done is
# skipped). Start it in the background with a log; stop it with pause.sh (which carries what
# is unfinished into git); it stops at the first piece that does not finish.
#   1. the candidates not yet finished (candidate.sh), each record kept in candidates/NAME;
#   2. the recipe, chosen on their validation by candidates/choose_recipe.py -> recipe.txt;
#   3. seed 0's finals (final.sh magrpo-seed0, grpo-seed0), each benched (bench_final.sh);
#   4. the untrained baselines sequential and contract on compose:test;
#   5. seeds 1 and 2 likewise (3.);
#   6. the untrained plan baseline and the two warm starts on compose:test.
# Each finished bench is kept in docs/divided-fair/ (keep.sh), each final's training record
# in runs/ROW (keep_run.sh) and its kept adapters in checkpoints/compose-fair-ROW-0.5b
# (keep_checkpoint.sh): commit them, and read 20 samples of each final by hand. At a session's
# end, pause.sh stops it and carries an unfinished final into git (docs/divided-fair/carried).
#   bash docs/divided-fair/scripts/next.sh >> runs/logs/fair-round.log 2>&1 &
set -u
cd "$(dirname "$0")/../../.."
here=docs/divided-fair
scripts=$here/scripts
export THREADS=${THREADS:-2}

say() { echo "next.sh $(date -u +%H:%M:%S): $*"; }
finished_run() {  # a run's folder (or its kept record) whose run ended and kept a step
  .venv/bin/python docs/divided-fair/run_record.py finished "$1"
}
bench_done() { [ -f "$1/summary.json" ]; }
keep_bench() {  # RUN_FOLDER DEST
  bench_done "$2" || bash docs/divided/scripts/keep.sh "$1" "$2" || return
  rm -rf "$here/carried/bench/${1#runs/divided-fair/}"  # carried while unfinished: kept now
}
# benches pause.sh carried from another machine, put back where runs/ has none: they resume
for carried in "$here"/carried/bench/*/ "$here"/carried/bench/*/*/; do
  [ -f "$carried/samples.jsonl.gz" ] || continue
  part=${carried#"$here"/carried/bench/}
  [ -f "runs/divided-fair/$part/samples.jsonl" ] \
    || bash docs/divided/scripts/carry_run.sh unpack "${carried%/}" "runs/divided-fair/${part%/}" || exit
done

for name in no-kl one-lr; do
  src=runs/divided-fair/candidates/$name
  if ! finished_run "$here/candidates/$name"; then
    finished_run "$src" || { say "candidate $name"; bash "$scripts/candidate.sh" "$name"; }
    finished_run "$src" || { say "stopped: candidate $name has not finished"; exit 1; }
    bash docs/divided/scripts/keep_run.sh "$src" "$here/candidates/$name" || exit
  fi
done

if [ ! -f "$here/recipe.txt" ]; then
  chosen=$(.venv/bin/python "$here/candidates/choose_recipe.py" --name) || exit
  bash "$scripts/candidate.sh" "$chosen" --options > "$here/recipe.txt" || exit
  say "recipe: $chosen ($(cat "$here/recipe.txt"))"
fi

trained_in_git() {  # ROW: its finished record and kept adapters in git (runs/ may be gone)
  finished_run "$here/runs/$1" && [ -d "checkpoints/compose-fair-$1-0.5b/main" ]
}
kept_whole() {  # ROW: trained, and its benches kept in git too
  local row=$1
  trained_in_git "$row" && bench_done "$here/final/$row" && bench_done "$here/humaneval/$row" \
    && { [ "${row%%-*}" = grpo ] || bench_done "$here/final/$row-main"; }
}

final() {  # ROW: train, keep the record, bench at the kept step, keep the benches
  local row=$1 run=runs/divided-fair/final-runs/$1
  kept_whole "$row" && return 0
  if ! trained_in_git "$row"; then  # else bench what git holds, wherever it was trained
    finished_run "$run" || { say "final $row"; bash "$scripts/final.sh" "$row"; }
    finished_run "$run" || { say "stopped: final $row has not finished"; exit 1; }
    finished_run "$here/runs/$row" || bash docs/divided/scripts/keep_run.sh "$run" "$here/runs/$row" || exit
    [ -d "checkpoints/compose-fair-$row-0.5b/main" ] \
      || bash "$scripts/keep_checkpoint.sh" "$run" "checkpoints/compose-fair-$row-0.5b" || exit
  fi
  rm -rf "$here/carried/$row"  # carried between machines (pause.sh) while unfinished: kept now
  if ! bench_done "runs/divided-fair/humaneval/$row"; then
    say "bench $row"; bash "$scripts/bench_final.sh" "$row"
    bench_done "runs/divided-fair/humaneval/$row" || { say "stopped: bench $row"; exit 1; }
  fi
  keep_bench "runs/divided-fair/final/$row" "$here/final/$row" || exit
  [ "${row%%-*}" = grpo ] || keep_bench "runs/divided-fair/final/$row-main" "$here/final/$row-main" || exit
  keep_bench "runs/divided-fair/humaneval/$row" "$here/humaneval/$row" || exit
}

final magrpo-seed0
final grpo-seed0

baseline() {  # SCHEME: the untrained model on compose:test, benched once and kept
  local scheme=$1
  if ! bench_done "$here/baselines/$scheme"; then
    bench_done "runs/divided-fair/$scheme" || { say "baseline $scheme"; bash "$scripts/baselines.sh" "$scheme"; }
    bench_done "runs/divided-fair/$scheme" || { say "stopped: baseline $scheme"; exit 1; }
    keep_bench "runs/divided-fair/$scheme" "$here/baselines/$scheme" || exit
  fi
}
baseline sequential
baseline contract
# Seeds 1 and 2 before the plan baseline and the warm benches (order changed 2026-12-07,
# RECORD "Tenth session"): on an AVX2-only CPU the round outlasts many sessions, and the
# seeds are what the goal asks first. No figure depends on the order.
for seed in 1 2; do
  final "magrpo-seed$seed"
  final "grpo-seed$seed"
done
baseline plan
for warm in pair solo; do
  if ! bench_done "$here/warm/$warm"; then
    bench_done "runs/divided-fair/warm/$warm" || { say "warm-$warm"; bash "$scripts/bench_final.sh" "warm-$warm"; }
    bench_done "runs/divided-fair/warm/$warm" || { say "stopped: warm-$warm"; exit 1; }
    keep_bench "runs/divided-fair/warm/$warm" "$here/warm/$warm" || exit
  fi
done

say "the round's CPU work is done: table.py, then read 20 samples of each final"
