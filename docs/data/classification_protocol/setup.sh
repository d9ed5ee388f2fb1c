#!/usr/bin/env bash
# Recreate the classification protocol's working folders on a new machine from what is
# committed, so protocol.sh resumes where the committed parts and sweeps stand:
# ROOT/wt, a clean worktree of COMMIT (the commit every run of the protocol ran);
# ROOT/venv, a venv of that worktree on the packages of the checkout's own .venv;
# ROOT/tuned, the committed tuned configs and sweeps (a preset's swag.yaml only where the
# preset's part has landed, so the others are retuned); ROOT/parts, the committed parts.
# Usage (from the checkout, its .venv installed): ROOT=/work/cls bash setup.sh
set -euo pipefail
REPO=$(git rev-parse --show-toplevel)
ROOT=${ROOT:-/work/cls}
COMMIT=${COMMIT:-5849f8b}  # pima's part ran at 9c0927c, which loops on a diverged NGBoost fit
HERE=$REPO/docs/data/classification_protocol
mkdir -p "$ROOT/parts" "$ROOT/results" "$ROOT/tuned"
git -C "$REPO" worktree prune
[ -d "$ROOT/wt" ] || git -C "$REPO" worktree add "$ROOT/wt" "$COMMIT"
if [ ! -x "$ROOT/venv/bin/udora" ]; then
  "$REPO/.venv/bin/python" -m venv "$ROOT/venv"  # the interpreter of the packages it uses
  site=$(ls -d "$ROOT"/venv/lib/python3*/site-packages)
  ls -d "$REPO"/.venv/lib/python3*/site-packages > "$site/main_site.pth"
  "$ROOT/venv/bin/pip" install -q --no-deps --no-build-isolation -e "$ROOT/wt"
fi
cp -r "$REPO"/docs/data/tuned/classification/* "$ROOT/tuned/"
tar xzf "$ROOT/tuned/sweeps.tar.gz" -C "$ROOT/tuned"
rm -f "$ROOT/tuned/sweeps.tar.gz" "$ROOT/tuned/README.md"
for f in "$ROOT"/tuned/*/swag.yaml; do  # retuned (DEV-1) only where a part has landed
  p=$(basename "$(dirname "$f")")
  [ -f "$HERE/parts/$p/manifest.json" ] || rm "$f"
done
for d in "$HERE"/parts/*/; do [ -d "$d" ] && cp -r "$d" "$ROOT/parts/"; done
cp "$HERE/protocol.sh" "$ROOT/"
echo "ready: cd $ROOT && ROOT=$ROOT nohup setsid bash protocol.sh >> protocol.log 2>&1 &"
