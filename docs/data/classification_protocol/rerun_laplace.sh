#!/usr/bin/env bash
# Rerun laplace and fsp_laplace on finished presets at a commit with their basis-free
# classification draws (docs/data/classification_protocol/README.md, "Finishing the
# release", step 0), in place: their run folders of the 5849f8b bench move to
# ROOT/replaced/P (kept, not scored), the bench reruns them at FIX into ROOT/results/P (the
# same oracle arrays, checked there), and the part is rebuilt from the folder, so its rows
# hold both commits (the manifest lists them). Land each part again with land.sh.
# Usage: ROOT=/work/cls FIX=<commit> PRESETS="pima vehicle" bash rerun_laplace.sh
set -euo pipefail
REPO=$(git rev-parse --show-toplevel)
ROOT=${ROOT:-/work/cls}
FIX=${FIX:?the commit to rerun at}
WT=${WT:-$ROOT/wt-fix}
VENV=${VENV:-$ROOT/venv-fix}
export UDORA_DATA_DIR=${UDORA_DATA_DIR:-/work/shared/data}
METHODS=laplace,fsp_laplace
FLOOR="pima vehicle"
[ -d "$WT" ] || git -C "$REPO" worktree add "$WT" "$FIX"
[ "$(git -C "$WT" rev-parse HEAD)" = "$(git -C "$REPO" rev-parse "$FIX")" ] || {
  echo "$WT is not at $FIX" >&2; exit 1; }
if [ ! -x "$VENV/bin/udora" ]; then
  "$REPO/.venv/bin/python" -m venv "$VENV"
  site=$(ls -d "$VENV"/lib/python3*/site-packages)
  ls -d "$REPO"/.venv/lib/python3*/site-packages > "$site/main_site.pth"
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation -e "$WT"
fi
cd "$WT"
for P in $PRESETS; do
  [ -f "$ROOT/parts/$P/manifest.json" ] || { echo "== $P: no part yet" >&2; continue; }
  echo "== $P rerun $(date -u +%FT%TZ)"
  t0=$(date +%s)
  for m in laplace fsp_laplace; do  # the old runs move aside once (a rerun resumes)
    if [ -d "$ROOT/results/$P/$P/$m" ] && [ ! -d "$ROOT/replaced/$P/$m" ]; then
      mkdir -p "$ROOT/replaced/$P"
      mv "$ROOT/results/$P/$P/$m" "$ROOT/replaced/$P/$m"
    fi
  done
  "$VENV/bin/udora" bench --presets "$P" --seeds 0,1,2 --methods "$METHODS" --tuned "$ROOT/tuned" \
    --jobs 2 --cpus-per-run 1 --timeout 10800 --out "$ROOT/results/$P"
  if [[ " $FLOOR " == *" $P "* ]]; then
    for s in 1 2 3; do
      "$VENV/bin/udora" bench --presets "$P" --seeds 0 --methods "$METHODS" --tuned "$ROOT/tuned" \
        --set method_seed=$s --jobs 2 --cpus-per-run 1 --timeout 10800 --out "$ROOT/results/$P"
    done
  fi
  rm -rf "$ROOT/parts/$P.tmp"
  "$VENV/bin/udora" release build "$ROOT/results/$P" --out "$ROOT/parts/$P.tmp"
  rm -rf "$ROOT/parts/$P"
  mv "$ROOT/parts/$P.tmp" "$ROOT/parts/$P"
  echo "$P rerun $(( $(date +%s) - t0 )) seconds" >> "$ROOT/rerun_times.txt"
  echo "== $P rerun done $(date -u +%FT%TZ)"
done
