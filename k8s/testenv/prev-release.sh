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
# PREV_RELEASE_SHARE_TARGET=1 (.ci/run sets it, after the test build):
# build in the checkout's own target/ so every dependency of the same
# version and features is reused (95 s instead of 498 s cold on 2 cores).
# Cargo's hash of a path crate does not include its path, so PREV's
# workspace crates are given another codegen-units (15): their artifacts
# then sit beside the checkout's instead of replacing them (which made
# the next `cargo test` rebuild the whole workspace). Cargo still copies
# PREV's binary to target/release/wirespeed: the checkout's is put back.
# Not inside `cargo test` (the upgrade tests build it when missing): the
# outer cargo holds target/'s lock, so that build keeps its own dir.
target=$out/target
own=()
if [[ ${PREV_RELEASE_SHARE_TARGET:-} == 1 ]]; then
  target=$repo/target
  for m in "$out"/src/crates/*/Cargo.toml; do
    name=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$m" | awk 'NR == 1')
    own+=(--config "profile.release.package.\"$name\".codegen-units=15")
  done
  saved=$out/current-wirespeed
  if [[ -e $target/release/wirespeed ]]; then
    cp -p "$target/release/wirespeed" "$saved"
    # Put back also when the build fails.
    trap 'mv "$saved" "$target/release/wirespeed"' EXIT
  fi
fi
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build "${own[@]}" --release --locked -p wirespeed \
  --manifest-path "$out/src/Cargo.toml" --target-dir "$target" >&2
cp "$target/release/wirespeed" "$bin.tmp"
mv "$bin.tmp" "$bin"
git -C "$repo" worktree remove --force "$out/src"
rm -rf "$out/target"
echo "prev-release.sh: built ${PREV:0:7} in $((SECONDS - t0)) s" >&2
echo "$bin"
