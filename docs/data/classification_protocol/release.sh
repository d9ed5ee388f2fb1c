#!/usr/bin/env bash
# Build the classification release from the 14 landed parts and regenerate its pages:
# release/classification/ (rows, curves, by-size meta rows, manifest; tuned configs),
# docs/leaderboard_classification.md, docs/classification.md (the findings, by the rules
# committed before) and the meta-evaluation in docs/data/meta_classification/ (meta.md its page).
# Usage (repository root, the checkout's .venv): bash docs/data/classification_protocol/release.sh
# A dry run on the parts landed so far: ALLOW_MISSING=1 OUT=/tmp/rel DOCS=/tmp/docs bash ...
set -euo pipefail
REPO=$(git rev-parse --show-toplevel)
cd "$REPO"
UDORA=${UDORA:-$REPO/.venv/bin/udora}
HERE=docs/data/classification_protocol
OUT=${OUT:-release/classification}
DOCS=${DOCS:-docs}
PRESETS="banknote credit_default eeg_eye_state electricity magic phoneme pima spambase dry_bean letter pendigits satimage segment vehicle"
parts=()
for P in $PRESETS; do
  if [ -f "$HERE/parts/$P/manifest.json" ]; then
    parts+=("$HERE/parts/$P")
  elif [ -z "${ALLOW_MISSING:-}" ]; then
    echo "no part of $P yet (ALLOW_MISSING=1 for a dry run)" >&2
    exit 1
  fi
done
"$UDORA" release build "${parts[@]}" --out "$OUT"
rm -rf "$OUT/tuned"  # the configs the runs read, sweep paths relative to the tuned folder
for part in "${parts[@]}"; do
  P=$(basename "$part")
  mkdir -p "$OUT/tuned/$P"
  cp docs/data/tuned/classification/"$P"/*.yaml "$OUT/tuned/$P/"
done
mkdir -p "$DOCS"
"$UDORA" release page "$OUT" --docs "$DOCS"
"$UDORA" release claims "$OUT" --docs "$DOCS"
"$UDORA" meta "$OUT" --out "$DOCS/data/meta_classification"
