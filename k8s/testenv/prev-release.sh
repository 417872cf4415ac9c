#!/usr/bin/env bash
# The previous release's wirespeed binary, for the rolling-upgrade and
# cross-version tests (issue 44, item 5): the pinned commit PREV of this
# repository, checked out in a detached worktree and built with cargo, cached in
# target/prev-release/PREV/wirespeed (a no-op when it is there). Prints
# the binary's path on stdout; cargo's output goes to stderr.
#
#   k8s/testenv/prev-release.sh
#
# PREV is the last commit that landed before the protocol versions were
# stated (fleet=2, control=1 on the wire, stating nothing): the release
# users upgrade from. Bump it to the last landed release when a new one
# changes the wire. Built without LTO and with 16 codegen units: the
# tests need it to work, not to set records, and that halves the cold
# build on two cores. Needs the commit in the clone (a shallow clone
# lacks it: `git fetch --unshallow`).
set -euo pipefail

PREV=0c16c41dcd81f62c75a2fd285e5488c76d33895c

repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/target/prev-release/$PREV
bin=$out/wirespeed
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ -x $bin ]]; then
  echo "$bin"
  exit 0
fi
if ! git -C "$repo" cat-file -e "$PREV^{commit}" 2>/dev/null; then
  echo "prev-release.sh: commit $PREV is not in this clone (a shallow clone? git fetch --unshallow)" >&2
  exit 1
fi
t0=$SECONDS
# A detached worktree, so the build stamps PREV as its commit (`--version`,
# the image's revision label), not the checkout's HEAD.
git -C "$repo" worktree remove --force "$out/src" 2>/dev/null || true
rm -rf "$out/src" "$out/target"
git -C "$repo" worktree prune
git -C "$repo" worktree add --quiet --detach "$out/src" "$PREV" >&2
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --release --locked -p wirespeed \
  --manifest-path "$out/src/Cargo.toml" --target-dir "$out/target" >&2
cp "$out/target/release/wirespeed" "$bin.tmp"
mv "$bin.tmp" "$bin"
git -C "$repo" worktree remove --force "$out/src"
rm -rf "$out/target"
echo "prev-release.sh: built ${PREV:0:7} in $((SECONDS - t0)) s" >&2
echo "$bin"
