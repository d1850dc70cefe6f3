#!/usr/bin/env bash
# Issue 41's final runs: the chosen recipe (the `warm` candidate: the contract pair from the
# SFT warm start, per-agent reward `own`, aligned) with two seeds, and GRPO, one agent, with
# the same data, steps, group size, learning rate, tokens and a warm start of its own (the
# single agent fine-tuned on the same canonical code). 135 steps of 4 problems: each of
# compose:train's 179 problems seen 3 times. Trained in runs/divided/final-runs/ROW;
# resumable: rerun the same line. Once done, keep_checkpoint.sh copies it, with the adapters
# of the step chosen_step.py picks, into checkpoints/
# (compose-magrpo-0.5b, compose-magrpo-0.5b-seed1, compose-grpo-0.5b).
#   bash docs/divided/scripts/final.sh magrpo | magrpo-seed1 | grpo
# Each evaluation (steps 0, 45, 90, 135) keeps the adapters it measured
# (validation/step-N/adapters/), and the row is benched at the step with the highest val
# pass@1 (ties: the later step; chosen_step.py), chosen before any test bench; step 0 is the
# warm start.
# The GRPO row began without --keep-eval-adapters: its step-45 adapters were not kept (its
# step 0 is checkpoints/compose-sft-solo-0.5b).
# THREADS=2 when nothing runs beside it (default 1).
# A run not finished when a session ends is carried in git (carry_run.sh pack ... into
# docs/divided/carried/ROW); on a machine without its run folder this script unpacks it first.
set -u
cd "$(dirname "$0")/../../.."
row=$1; shift
pair=checkpoints/compose-sft-pair-0.5b
solo=checkpoints/compose-sft-solo-0.5b
case "$row" in
  magrpo)       out=runs/divided/final-runs/magrpo;       seed=0
                what=(--algo magrpo --scheme contract --joint aligned
                      --helper-adapter "$pair" --main-adapter "$pair") ;;
  magrpo-seed1) out=runs/divided/final-runs/magrpo-seed1; seed=1
                what=(--algo magrpo --scheme contract --joint aligned
                      --helper-adapter "$pair" --main-adapter "$pair") ;;
  grpo)         out=runs/divided/final-runs/grpo;         seed=0
                what=(--algo grpo --scheme single --main-adapter "$solo") ;;
  *) echo "final.sh: unknown row '$row' (magrpo, magrpo-seed1 or grpo)" >&2; exit 2 ;;
esac
threads=${THREADS:-1}
carried=docs/divided/carried/$row
if [ ! -f "$out/config.json" ] && [ -f "$carried/config.json" ]; then
  bash docs/divided/scripts/carry_run.sh unpack "$carried" "$out" || exit 1
fi
if [ -f "$out/config.json" ]; then
  exec .venv/bin/coopcode train --resume --out "$out" --threads "$threads" --sandbox docker \
    --keep-eval-adapters </dev/null
fi
exec .venv/bin/coopcode train "${what[@]}" --reward own --problems compose:train \
  --steps 135 --problems-per-step 4 -G 4 --lr 1e-4 --max-new-tokens 256 --seed "$seed" \
  --save-every 3 --micro-batch 2 --eval-every 45 --eval-problems compose:val --eval-n 2 --keep-eval-adapters \
  --threads "$threads" --sandbox docker --out "$out" "$@" </dev/null
