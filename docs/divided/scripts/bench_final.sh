#!/usr/bin/env bash
# Bench a finished final run once, as the baselines were benched (baselines.sh: n=10, T=0.8,
# the defaults otherwise), each into runs/divided/final/ and resumable (rerun to continue):
#   - compose:test with the trained agents (the pair under `contract`; GRPO's one agent
#     under `single`)                                   -> runs/divided/final/ROW
#   - a pair's main agent alone on compose:test (`single`) -> runs/divided/final/ROW-main
#   - the trained main agent alone on humaneval:test (`single`: HumanEval has no contracts),
#     to pair with the untrained single model there (docs/coop/samples/single, benched
#     with the same settings: no reward named, 384 new tokens)
#                                                       -> runs/divided/humaneval/ROW
# Then keep.sh copies each into docs/divided/final/ (and docs/divided/humaneval/).
#   bash docs/divided/scripts/bench_final.sh magrpo | magrpo-seed1 | grpo
set -u
cd "$(dirname "$0")/../../.."
row=$1
case "$row" in
  magrpo)       run=checkpoints/compose-magrpo-0.5b ;;
  magrpo-seed1) run=checkpoints/compose-magrpo-0.5b-seed1 ;;
  grpo)         run=checkpoints/compose-grpo-0.5b ;;
  *) echo "bench_final.sh: unknown row '$row' (magrpo, magrpo-seed1 or grpo)" >&2; exit 2 ;;
esac
# A bench stopped by a session's end is carried in git as its samples so far
# (docs/divided/carried/bench/final/ROW/: samples.jsonl.gz and meta.json); on a machine
# without the run folder it is restored here first (carry_run.sh unpack) and resumes.
for part in "final/$row" "final/$row-main" "humaneval/$row"; do
  carried=docs/divided/carried/bench/$part
  if [ -f "$carried/samples.jsonl.gz" ] && [ ! -f "runs/divided/$part/samples.jsonl" ]; then
    bash docs/divided/scripts/carry_run.sh unpack "$carried" "runs/divided/$part" || exit 1
  fi
done
bench() { .venv/bin/coopcode bench --n 10 --k 1,3,5,10 --sandbox docker "$@" </dev/null; }
if [ "$row" = grpo ]; then
  bench --problems compose:test --reward own --scheme single --main-adapter "$run" --out "runs/divided/final/$row" || exit
else
  bench --problems compose:test --reward own --scheme contract --helper-adapter "$run" --main-adapter "$run" \
    --out "runs/divided/final/$row" || exit
  bench --problems compose:test --reward own --scheme single --main-adapter "$run" \
    --out "runs/divided/final/$row-main" || exit
fi
bench --problems humaneval:test --scheme single --main-adapter "$run" --max-new-tokens 384 \
  --out "runs/divided/humaneval/$row"
