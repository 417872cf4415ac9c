#!/usr/bin/env bash
# Packages a wirespeed binary as a krew plugin: an archive holding it as
# `kubectl-wirespeed`, and the manifest (wirespeed.yaml, from
# wirespeed.yaml.in) naming the archive's URL and SHA-256.
#
#   contrib/krew/package.sh --binary target/dist/wirespeed --version v0.1.0 \
#     --base-url https://example.org/releases/v0.1.0 --out dist/krew
#
# Writes OUT/wirespeed-VERSION-linux-ARCH.tar.gz and OUT/wirespeed.yaml.
# Install it without an index: `kubectl krew install
# --manifest=OUT/wirespeed.yaml --archive=OUT/wirespeed-...tar.gz`.
set -euo pipefail
die() { echo "package.sh: $*" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin= version= base= out= arch=
while (($#)); do
  case $1 in
    --binary) bin=${2:?}; shift 2 ;;
    --version) version=${2:?}; shift 2 ;;
    --base-url) base=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --arch) arch=${2:?}; shift 2 ;;
    *) die "usage: package.sh --binary FILE --version vX.Y.Z --base-url URL --out DIR [--arch amd64|arm64]" ;;
  esac
done
[[ -n $bin && -n $version && -n $base && -n $out ]] || die "--binary, --version, --base-url and --out are required"
[[ -x $bin ]] || die "$bin is not an executable"
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "--version $version: krew wants vMAJOR.MINOR.PATCH"
if [[ -z $arch ]]; then
  case $(od -An -j18 -N2 -tu2 "$bin" | tr -d ' ') in # ELF e_machine
    62) arch=amd64 ;;
    183) arch=arm64 ;;
    *) die "$bin: not an x86-64 or aarch64 ELF binary (pass --arch)" ;;
  esac
fi
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$bin" "$stage/kubectl-wirespeed"
name="wirespeed-$version-linux-$arch.tar.gz"
tar -C "$stage" --owner=0 --group=0 --mtime=@0 -czf "$out/$name" kubectl-wirespeed
sha=$(sha256sum "$out/$name" | cut -d' ' -f1)
platform="  - selector:
      matchLabels:
        os: linux
        arch: $arch
    uri: ${base%/}/$name
    sha256: $sha
    bin: kubectl-wirespeed
    files:
    - from: kubectl-wirespeed
      to: ."
awk -v v="$version" -v p="$platform" '{ gsub(/@VERSION@/, v); if ($0 == "@PLATFORMS@") print p; else print }' \
  "$here/wirespeed.yaml.in" >"$out/wirespeed.yaml"
echo "$out/wirespeed.yaml"
echo "$out/$name"
