#!/usr/bin/env bash
# The classification release's protocol, one preset at a time, each preset finished and
# built into its own release part (rows, curves, manifest) before the next starts, so a
# part survives the machine: tune swag (DEV-1) and ngboost_bag (10 trials, seed 100),
# refit every method at seeds 0, 1, 2, the noise floor on two presets, build the part.
# Resumable: tune and bench skip what is done; a built part is not rebuilt.
# Every run on one core with one thread (--cpus-per-run 1), on any machine.
# Usage: ROOT=/work/cls UDORA=ROOT/venv/bin/udora [PRESETS="P ..."] [METHODS=a,b] bash protocol.sh
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")" && pwd)}  # default: the folder setup.sh copied it to
UDORA=${UDORA:-$ROOT/venv/bin/udora}
export UDORA_DATA_DIR=${UDORA_DATA_DIR:-/work/shared/data}
cd "${WT:-$ROOT/wt}"   # the clean worktree: every run records its commit
METHODS=${METHODS:-blr_logistic,catboost_ps,catboost_ve,deup,edl,fsp_laplace,gp_approx,gp_oracle,laplace,ngboost_bag,nn_bagging,nn_dropout,nn_ensemble,swag}
PRESETS=${PRESETS:-pima credit_default vehicle phoneme electricity spambase eeg_eye_state magic banknote satimage dry_bean pendigits segment letter}
FLOOR="pima vehicle"   # the noise floor: method_seed 1, 2, 3 on task seed 0
for P in $PRESETS; do
  if [ -f "$ROOT/parts/$P/manifest.json" ]; then echo "== $P: part built"; continue; fi
  echo "== $P tune $(date -u +%FT%TZ)"
  t0=$(date +%s)
  "$UDORA" tune --presets "$P" --methods swag,ngboost_bag --trials 10 --seed 100 --jobs 2 --cpus-per-run 1 --timeout 3600 --out "$ROOT/tuned"
  t1=$(date +%s)
  echo "== $P bench $(date -u +%FT%TZ)"
  "$UDORA" bench --presets "$P" --seeds 0,1,2 --methods "$METHODS" --tuned "$ROOT/tuned" --jobs 2 --cpus-per-run 1 --timeout 10800 --out "$ROOT/results/$P"
  t2=$(date +%s)
  if [[ " $FLOOR " == *" $P "* ]]; then
    for m in 1 2 3; do
      "$UDORA" bench --presets "$P" --seeds 0 --methods "$METHODS" --tuned "$ROOT/tuned" --set method_seed=$m --jobs 2 --cpus-per-run 1 --timeout 10800 --out "$ROOT/results/$P"
    done
  fi
  t3=$(date +%s)
  "$UDORA" release build "$ROOT/results/$P" --out "$ROOT/parts/$P.tmp"
  mv "$ROOT/parts/$P.tmp" "$ROOT/parts/$P"
  echo "$P tune $((t1-t0)) bench $((t2-t1)) floor $((t3-t2)) seconds" >> "$ROOT/times.txt"
  echo "== $P done $(date -u +%FT%TZ)"
done
