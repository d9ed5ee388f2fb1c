#!/usr/bin/env bash
# Recreate the classification protocol's working folders on a new machine from what is
# committed, so protocol.sh resumes where the committed parts and sweeps stand:
# ROOT/wt, a clean worktree of COMMIT (the commit every run of the protocol ran);
# ROOT/venv, a venv of that worktree on the packages of the checkout's own .venv;
# ROOT/tuned, the committed tuned configs and sweeps (a preset's swag.yaml only where its
# sweep was rerun after DEV-1, so the others are retuned); ROOT/parts, the committed parts.
# Usage (from the checkout, its .venv installed): ROOT=/work/cls bash setup.sh
set -euo pipefail
REPO=$(git rev-parse --show-toplevel)
ROOT=${ROOT:-/work/cls}
COMMIT=${COMMIT:-9c0927c}
HERE=$REPO/docs/data/classification_protocol
mkdir -p "$ROOT/parts" "$ROOT/results" "$ROOT/tuned"
[ -d "$ROOT/wt" ] || git -C "$REPO" worktree add "$ROOT/wt" "$COMMIT"
if [ ! -x "$ROOT/venv/bin/udora" ]; then
  python3 -m venv "$ROOT/venv"
  site=$(ls -d "$ROOT"/venv/lib/python3*/site-packages)
  ls -d "$REPO"/.venv/lib/python3*/site-packages > "$site/main_site.pth"
  "$ROOT/venv/bin/pip" install -q --no-deps --no-build-isolation -e "$ROOT/wt"
fi
cp -r "$REPO"/docs/data/tuned/classification/* "$ROOT/tuned/"
tar xzf "$ROOT/tuned/sweeps.tar.gz" -C "$ROOT/tuned"
rm -f "$ROOT/tuned/sweeps.tar.gz" "$ROOT/tuned/README.md"
for f in "$ROOT"/tuned/*/swag.yaml; do
  p=$(basename "$(dirname "$f")")
  ls -d "$ROOT"/tuned/sweeps/"$p"-swag-nll-* >/dev/null 2>&1 || rm "$f"
done
for d in "$HERE"/parts/*/; do [ -d "$d" ] && cp -r "$d" "$ROOT/parts/"; done
cp "$HERE/protocol.sh" "$ROOT/"
echo "ready: cd $ROOT && nohup setsid bash protocol.sh >> protocol.log 2>&1 &"
