#!/usr/bin/env bash
# Copy a finished preset's part into the checkout for a commit: its release part
# (results.parquet, curves.json.gz, manifest.json), the records of the sampled oracles its
# runs were scored on (the arrays' SHA-256, build seconds, diagnostics), its retuned swag and
# ngboost_bag configs, every sweep's trial records, and its by-size meta-evaluation rows.
# Usage: ROOT=/work/cls bash land.sh PRESET
set -euo pipefail
REPO=$(git rev-parse --show-toplevel)
ROOT=${ROOT:-/work/cls}
P=$1
HERE=$REPO/docs/data/classification_protocol
[ -f "$ROOT/parts/$P/manifest.json" ] || { echo "no part of $P yet" >&2; exit 1; }
mkdir -p "$HERE/parts/$P/oracle"
cp "$ROOT"/parts/"$P"/{results.parquet,curves.json.gz,manifest.json} "$HERE/parts/$P/"
cp "$ROOT"/results/"$P"/oracle/*.json "$HERE/parts/$P/oracle/"
grep "^$P " "$ROOT/times.txt" > "$HERE/parts/$P/times.txt" || echo "$P: no times recorded" >&2
if [ -f "$ROOT/rerun_times.txt" ]; then  # rerun_laplace.sh's, when it reran this preset
  grep "^$P rerun " "$ROOT/rerun_times.txt" | tail -1 >> "$HERE/parts/$P/times.txt" || true
fi
for m in swag ngboost_bag; do  # sweep paths relative to the tuned folder, as committed
  sed "s|$ROOT/tuned/||" "$ROOT/tuned/$P/$m.yaml" > "$REPO/docs/data/tuned/classification/$P/$m.yaml"
done
tar czf "$REPO/docs/data/tuned/classification/sweeps.tar.gz" -C "$ROOT/tuned" --sort=name \
  --mtime=2026-01-01 --owner=0 --group=0 --exclude=.udora-lock --exclude='.inflight-*' \
  --warning=no-file-changed sweeps || [ $? -eq 1 ]  # 1: a sweep running beside changed a
  # file meanwhile (its records are written whole, by rename; a trial without one reruns)
# The meta-evaluation by number of evaluation points rescores each run's stored class
# probabilities, which go with this machine: `udora meta` computes this preset's rows now
# (each cell's subsets depend on that cell only, so the parts' rows are the release's, and
# `udora release build` carries them into the release's meta_by_size.csv).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$REPO/.venv/bin/udora" meta "$ROOT/results/$P" --out "$tmp" --boot 1 --jobs 1 > /dev/null
cp "$tmp/meta_by_size.csv" "$HERE/parts/$P/meta_by_size.csv"
