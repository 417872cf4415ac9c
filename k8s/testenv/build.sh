#!/usr/bin/env bash
# Build a real Kubernetes (etcd and every component) and the cluster
# add-ons from their upstream Go module sources (through the Go module
# proxy) into a cache directory, for tests and CI.
#
#   k8s/testenv/build.sh                  # Kubernetes 1.34 -> target/k8s-testenv/bin/
#   k8s/testenv/build.sh --version 1.37   # Kubernetes 1.37 -> target/k8s-testenv/1.37/bin/
#   k8s/testenv/build.sh addons           # containerd 2, flannel, kube-router, CoreDNS
#                                         #   -> target/k8s-testenv/addons/bin/
#   k8s/testenv/build.sh dradriver        # only the test DRA driver
#   k8s/testenv/build.sh tools            # helm, the krew manifest validator,
#                                         #   dashcheck, the Prometheus Operator's
#                                         #   CRDs -> target/k8s-testenv/tools/
#   KUBE_TESTENV_DIR=/x build.sh          # -> /x/bin/ (and /x/1.37/bin, /x/addons/bin)
#
# A version's bin/ holds etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kube-proxy, kubelet (a real cluster: cluster.sh),
# pause (the sandbox image's one binary, from the module's C source) and
# dradriver (the test DRA driver of dradriver/, for cluster.sh --dra-nics);
# 1.37's also kubectl (what `kubectl wirespeed` is tested through).
# addons/bin holds containerd, containerd-shim-runc-v2 and ctr (containerd
# 2, cluster.sh --runtime containerd2), flanneld (--cni flannel-*),
# kube-router (its NetworkPolicy firewall only: --network-policy) and
# coredns (cluster DNS).
#
# Does nothing when the binaries and a version stamp naming the versions
# below are already there; the driver and the add-ons have stamps of their
# own, so changing one never rebuilds the Kubernetes binaries. The Go
# module cache and build cache are the user's (GOMODCACHE, GOCACHE: set
# them to move them), so CI keeps them between runs. Needs Go >= 1.26
# (etcd 3.6.16 says `go 1.26.0`) and the module proxy; nothing else from
# the network. See README.md beside this.
set -euo pipefail

# The Kubernetes versions this fixture builds, by minor. 1.34: the newest
# v1.34 patch that the proxy serves AND whose checksum the checksum
# database (sum.golang.org, through the proxy) knows: v1.34.11 and
# v1.34.12 are served but their sumdb lookups are 404 here, so they cannot
# be verified. 1.37: the newest the proxy serves (2026-11-28). Bump with
# care: every published k8s.io/* staging module must exist at v0.MINOR.N
# too (the build says which one does not).
declare -A KUBE_VERSIONS=([1.34]=v1.34.10 [1.37]=v1.37.2)
# Newest etcd v3.6 patch the proxy serves (Kubernetes 1.34 itself pins the
# etcd client at v3.6.4; the server is wire compatible across 3.6.x).
ETCD_VERSION=v3.6.16
# Bump when the recipe changes so cached binaries are rebuilt.
RECIPE=2
# The add-ons (build.sh addons), each the newest the proxy serves.
# kube-router stands in for sigs.k8s.io/kube-network-policies, which
# needs the nftables `queue` expression (CONFIG_NFT_QUEUE) that this
# kernel lacks ("Could not process rule: No such file or directory"):
# kube-router enforces NetworkPolicy with iptables and ipsets instead.
# v2.1.0 is the only version served; its reported flaws are in parts this
# fixture does not run (BGP routing, the service proxy).
CONTAINERD_VERSION=v2.4.2
FLANNEL_VERSION=v0.28.10
KUBE_ROUTER_VERSION=v2.1.0
COREDNS_VERSION=v1.15.0
ADDONS_RECIPE=1
# The install tools (build.sh tools): what the chart, the kubectl plugin
# and the monitoring files are tested with, each the newest the proxy
# serves. The Prometheus Operator's CRDs come from its module's example/
# directory (the operator itself is not run: its Prometheus image cannot
# be pulled here).
HELM_VERSION=v3.22.0
KREW_VERSION=v0.4.3
PROMETHEUS_OPERATOR_VERSION=v0.85.0
TOOLS_RECIPE=2

die() { echo "build.sh: $*" >&2; exit 1; }

minor=1.34
mode=all
while (($#)); do
  case $1 in
    --version) minor=${2:?--version needs 1.34 or 1.37}; shift 2 ;;
    all | dradriver | addons | tools) mode=$1; shift ;;
    *) die "usage: build.sh [--version 1.34|1.37] [all|dradriver|addons|tools]" ;;
  esac
done
[[ -n ${KUBE_VERSIONS[$minor]:-} ]] || die "--version '$minor': one of ${!KUBE_VERSIONS[*]}"
KUBE_VERSION=${KUBE_VERSIONS[$minor]}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=${KUBE_TESTENV_DIR:-$repo/target/k8s-testenv}
want="kubernetes=$KUBE_VERSION etcd=$ETCD_VERSION recipe=$RECIPE"

command -v go >/dev/null || die "go not found: install Go >= 1.26"
gov=$(go env GOVERSION)
[[ $gov =~ ^go1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= 26)) ||
  die "$gov is too old: etcd $ETCD_VERSION needs Go >= 1.26 (GOTOOLCHAIN=local: no toolchain download)"
mkdir -p "$root"
root=$(cd "$root" && pwd)
# 1.34, the default, keeps the directory it always had.
if [[ $minor == 1.34 ]]; then bin=$root/bin; else bin=$root/$minor/bin; fi
stamp=$bin/VERSIONS

secs() { date +%s; }
# `go mod download -json M@V` -> value of one string field.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p"; }
# download M@V: `go mod download -json` in $src (the caller's), or die
# with its error.
download() {
  local out err
  out=$(cd "$src" && go mod download -json "$1") || { echo "$out" >&2; die "cannot download $1"; }
  err=$(json_field Error <<<"$out")
  [[ -z $err ]] || die "cannot download $1: $err"
  printf '%s\n' "$out"
}
# module_copy M@V DEST: a writable copy of module M@V at DEST, without
# go.work and vendor/ (vendor/ would turn on -mod=vendor); prints
# download's JSON.
module_copy() {
  local info dir
  info=$(download "$1")
  dir=$(json_field Dir <<<"$info")
  [[ -d $dir ]] || die "$1: no module dir"
  cp -r "$dir" "$2"
  chmod -R u+w "$2"
  rm -rf "$2/go.work" "$2/go.work.sum" "$2/vendor"
  printf '%s\n' "$info"
}

# The test DRA driver (dradriver/, a Go module of its own): its stamp is
# a hash of its sources and the Go version, apart from VERSIONS, so a
# driver change rebuilds only the driver (a few seconds with a warm Go
# build cache).
build_dradriver() {
  local src=$here/dradriver want_d t0
  want_d="dradriver=$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16) $(go env GOVERSION)"
  exec 8>"$root/.dradriver.lock"
  flock -w 600 8 || die "another build.sh holds $root/.dradriver.lock for 10 min; giving up"
  if [[ -x $bin/dradriver && -f $bin/dradriver.stamp && "$(cat "$bin/dradriver.stamp")" == "$want_d" ]]; then
    echo "dradriver up to date in $bin ($want_d)"
    return 0
  fi
  t0=$(secs)
  mkdir -p "$bin"
  (
    cd "$src"
    GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false -mod=readonly" \
      go build -ldflags="-s -w" -o "$bin/dradriver.new" .
  ) || die "dradriver build failed"
  mv -f "$bin/dradriver.new" "$bin/dradriver"
  echo "$want_d" >"$bin/dradriver.stamp"
  echo "built dradriver in $bin in $(($(secs) - t0))s"
}
# netprobe/ (standard library only): the TCP and DNS probe the
# NetworkPolicy test runs as a pod (cluster.sh --network-policy imports
# its image); stamped like the driver, beside it in $root/bin.
build_netprobe() {
  local src=$here/netprobe want_p pbin=$root/bin
  want_p="netprobe=$(cd "$src" && cat go.mod ./*.go | sha256sum | cut -c1-16) $(go env GOVERSION)"
  if [[ -x $pbin/netprobe && "$(cat "$pbin/netprobe.stamp" 2>/dev/null)" == "$want_p" ]]; then
    echo "netprobe up to date in $pbin"
  else
    mkdir -p "$pbin"
    (cd "$src" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false -mod=readonly" \
      go build -ldflags="-s -w" -o "$pbin/netprobe.new" .) || die "netprobe build failed"
    mv -f "$pbin/netprobe.new" "$pbin/netprobe"
    echo "$want_p" >"$pbin/netprobe.stamp"
    echo "built netprobe in $pbin"
  fi
}

# The add-ons, each built in a writable copy of its own module (its go.mod
# and go.sum as its authors pinned them; vendor/ and go.work dropped) into
# $root/addons/bin, stamped with their versions.
ADDON_BINS=(containerd containerd-shim-runc-v2 ctr flanneld kube-router coredns)
build_addons() {
  local abin=$root/addons/bin want_a t0 src new
  want_a="containerd=$CONTAINERD_VERSION flannel=$FLANNEL_VERSION kube-router=$KUBE_ROUTER_VERSION coredns=$COREDNS_VERSION recipe=$ADDONS_RECIPE"
  exec 7>"$root/.addons.lock"
  flock -w 1800 7 || die "another build.sh holds $root/.addons.lock for 30 min; giving up"
  local b ok=1
  for b in "${ADDON_BINS[@]}"; do [[ -x $abin/$b ]] || ok=; done
  if [[ -n $ok && -f $abin/VERSIONS && "$(cat "$abin/VERSIONS")" == "$want_a" ]]; then
    echo "add-ons up to date in $abin ($want_a)"
    return 0
  fi
  t0=$(secs)
  src=$root/addons/src
  new=$root/addons/bin.new
  chmod -R u+w "$src" 2>/dev/null || true
  rm -rf "$src" "$new"
  mkdir -p "$src" "$new"
  (
    export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false"
    addon() { # [--cgo] [--drop-import PKG] MODULE@VERSION DIR PKG... (-o $new/)
      local drop= cgo=0
      if [[ $1 == --cgo ]]; then cgo=1; shift; fi
      if [[ $1 == --drop-import ]]; then drop=$2; shift 2; fi
      local m=$1 d=$src/$2
      shift 2
      module_copy "$m" "$d" >/dev/null
      if [[ -n $drop ]]; then
        grep -q "\"$drop\"" "$d/main.go" || die "$m: main.go does not import $drop"
        sed -i "\#\"$drop\"#d" "$d/main.go"
      fi
      (cd "$d" && CGO_ENABLED=$cgo go build -p 2 -mod=mod -ldflags="-s -w" -o "$new/" "$@") || die "$m build failed"
      echo "built $m ($*) at $(($(secs) - t0))s"
    }
    # containerd 2: its CRI with CDI and NRI built in; its own runc shim
    # (the containerd the cluster starts puts addons/bin first in PATH).
    addon "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" containerd \
      ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr
    # flannel links every backend into one binary; its Tencent Cloud VPC
    # backend needs an SDK version the module proxy does not serve, so that
    # one import is dropped from main.go (vxlan and host-gw are untouched).
    # Its udp backend is C (cgo), as in flannel's own release build.
    addon --cgo --drop-import github.com/flannel-io/flannel/pkg/backend/tencentvpc \
      "github.com/flannel-io/flannel@$FLANNEL_VERSION" flannel .
    mv "$new/flannel" "$new/flanneld"
    addon "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION" kube-router ./cmd/kube-router
    addon "github.com/coredns/coredns@$COREDNS_VERSION" coredns .
  )
  mkdir -p "$abin"
  for b in "${ADDON_BINS[@]}"; do mv -f "$new/$b" "$abin/"; done
  echo "$want_a" >"$abin/VERSIONS"
  chmod -R u+w "$src" 2>/dev/null || true
  rm -rf "$src" "$new"
  "$abin/containerd" --version
  echo "add-ons built in $abin in $(($(secs) - t0))s"
}
# The install tools into $root/tools: bin/helm (helm.sh/helm/v3's
# cmd/helm, version stamped as its Makefile does), bin/validate-krew-manifest
# and bin/krew (krew's own manifest validator, and krew to install the
# plugin from its manifest and archive), bin/dashcheck (dashcheck/: Grafana's
# Foundation SDK decoding the dashboard strictly) and crds/ (the
# ServiceMonitor, PodMonitor and PrometheusRule CRDs), stamped apart.
build_tools() {
  local tdir=$root/tools want_t t0 src new d
  want_t="helm=$HELM_VERSION krew=$KREW_VERSION prometheus-operator=$PROMETHEUS_OPERATOR_VERSION"
  want_t+=" dashcheck=$(cd "$here/dashcheck" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16) recipe=$TOOLS_RECIPE"
  exec 6>"$root/.tools.lock"
  flock -w 1200 6 || die "another build.sh holds $root/.tools.lock for 20 min; giving up"
  if [[ -x $tdir/bin/helm && -f $tdir/VERSIONS && "$(cat "$tdir/VERSIONS")" == "$want_t" ]]; then
    echo "tools up to date in $tdir ($want_t)"
    return 0
  fi
  t0=$(secs)
  src=$root/tools-src
  new=$root/tools.new
  chmod -R u+w "$src" 2>/dev/null || true
  rm -rf "$src" "$new"
  mkdir -p "$src" "$new/bin" "$new/crds"
  (
    export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false"
    module_copy "helm.sh/helm/v3@$HELM_VERSION" "$src/helm" >/dev/null
    (cd "$src/helm" && go build -p 2 -mod=mod -o "$new/bin/helm" \
      -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" ./cmd/helm) ||
      die "helm $HELM_VERSION build failed"
    echo "built helm at $(($(secs) - t0))s"
    module_copy "sigs.k8s.io/krew@$KREW_VERSION" "$src/krew" >/dev/null
    (cd "$src/krew" && go build -mod=mod -ldflags="-s -w" -o "$new/bin/" ./cmd/krew ./cmd/validate-krew-manifest) ||
      die "krew $KREW_VERSION build failed"
    (cd "$here/dashcheck" && go build -mod=readonly -ldflags="-s -w" -o "$new/bin/dashcheck" .) ||
      die "dashcheck build failed"
    d=$(json_field Dir <<<"$(download "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")")
    for c in servicemonitors podmonitors prometheusrules; do
      cp "$d/example/prometheus-operator-crd/monitoring.coreos.com_$c.yaml" "$new/crds/" ||
        die "no $c CRD in prometheus-operator $PROMETHEUS_OPERATOR_VERSION"
    done
  )
  chmod -R u+w "$new"
  rm -rf "$tdir"
  mv "$new" "$tdir"
  echo "$want_t" >"$tdir/VERSIONS"
  chmod -R u+w "$src" 2>/dev/null || true
  rm -rf "$src"
  "$tdir/bin/helm" version --short
  echo "tools built in $tdir in $(($(secs) - t0))s"
}
if [[ $mode == tools ]]; then
  build_tools
  exit 0
fi
if [[ $mode == dradriver ]]; then
  build_dradriver
  exit 0
fi
if [[ $mode == addons ]]; then
  build_addons
  build_netprobe
  exit 0
fi

# One build at a time per cache dir (two CI jobs, or a test and a human).
exec 9>"$root/.build.lock"
flock -w 1800 9 || die "another build.sh holds $root/.build.lock for 30 min; giving up"

KUBE_CMDS=(kube-apiserver kube-scheduler kube-controller-manager kube-proxy kubelet)
# kubectl with the newest only: `kubectl wirespeed` is tested through it.
[[ $minor == 1.34 ]] || KUBE_CMDS+=(kubectl)
ALL_BINS=(etcd "${KUBE_CMDS[@]}" pause)
up_to_date() {
  local b
  for b in "${ALL_BINS[@]}"; do [[ -x $bin/$b ]] || return 1; done
  [[ -f $stamp ]] && [[ "$(cat "$stamp")" == "$want" ]]
}
if up_to_date; then
  echo "k8s testenv up to date in $bin ($want)"
  build_dradriver
  exit 0
fi

# Reproducible, small, static binaries; no toolchain downloads; no go.work;
# no VCS stamping (the copy lives inside this repo's git tree).
export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false"

src=$root/src
new=$root/bin.new
cleanup() { chmod -R u+w "$src" 2>/dev/null || true; rm -rf "$src" "$new"; }
trap cleanup EXIT
cleanup
mkdir -p "$src" "$new"


total0=$(secs)

# ---- etcd: a scratch module that requires the server module, whose root
# package is etcd's main.
t0=$(secs)
mkdir -p "$src/etcd"
(
  cd "$src/etcd"
  go mod init wirespeed.test/k8s-testenv/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -ldflags="-s -w" -o "$new/etcd" go.etcd.io/etcd/server/v3
) || die "etcd $ETCD_VERSION build failed"
etcd_secs=$(($(secs) - t0))
echo "built etcd $ETCD_VERSION in ${etcd_secs}s"

# ---- kube-apiserver: a writable copy of the k8s.io/kubernetes module.
# Its go.mod replaces every k8s.io/X with ./staging/src/k8s.io/X, which the
# module zip lacks (nested modules are cut out of a module zip): point each
# at the published k8s.io/X v0.34.N instead. The sample-* modules are
# examples linked into no binary; the proxy does not serve all their
# versions, so they are dropped rather than resolved. go.work names the
# missing staging dirs and vendor/ holds only an OWNERS file (it would turn
# on -mod=vendor): both go.
t0=$(secs)
kube=$src/kubernetes
info=$(module_copy "k8s.io/kubernetes@$KUBE_VERSION" "$kube")
infofile=$(json_field Info <<<"$info")

staging_version=v0.${KUBE_VERSION#v1.}
edits=()
while read -r path; do
  case $path in
    k8s.io/sample-*) edits+=("-dropreplace=$path" "-droprequire=$path") ;;
    *) edits+=("-replace=$path=$path@$staging_version") ;;
  esac
done < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*#\1#p' "$kube/go.mod")
((${#edits[@]} > 0)) || die "no ./staging replace lines in k8s.io/kubernetes@$KUBE_VERSION go.mod"
(cd "$kube" && go mod edit "${edits[@]}")
if grep -q '=> \./staging' "$kube/go.mod"; then die "a ./staging replace survived the rewrite"; fi

# Version info as Kubernetes' own build sets it (hack/lib/version.sh), so
# /version says v1.34.N; the build date is the module's (reproducible).
build_date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$infofile")
kminor=${KUBE_VERSION#v1.}
kminor=${kminor%%.*}
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kminor"
  ldflags+=" -X $pkg.buildDate=${build_date:-1970-01-01T00:00:00Z}"
done
# One `go build` of all commands shares every common package's compile.
# -p 2: two compiles at a time keeps the peak memory (the controller-manager
# link needs about 1.9 GB) well inside a 2-core, 24 GiB machine.
pkgs=()
for c in "${KUBE_CMDS[@]}"; do pkgs+=("./cmd/$c"); done
(
  cd "$kube"
  go build -p 2 -mod=mod -ldflags="$ldflags" -o "$new/" "${pkgs[@]}"
) || die "kubernetes $KUBE_VERSION build failed (${KUBE_CMDS[*]})"
kube_secs=$(($(secs) - t0))
echo "built ${KUBE_CMDS[*]} $KUBE_VERSION in ${kube_secs}s"

# The pause binary the sandbox image runs: Kubernetes' own C source,
# static, so the image needs nothing else.
command -v gcc >/dev/null || die "gcc not found: needed for the pause binary"
gcc -Os -static -Wall -DVERSION="\"$KUBE_VERSION-wirespeed\"" -o "$new/pause" \
  "$kube/build/pause/linux/pause.c" || die "pause build failed"
strip "$new/pause" 2>/dev/null || true

# awk reads all of it: head would leave etcd a closed pipe, and under
# pipefail its SIGPIPE (exit 141) ended the build after every binary was
# built (2026-12-08).
"$new/etcd" --version | awk 'NR == 1'
for c in "${KUBE_CMDS[@]}"; do
  if [[ $c == kubectl ]]; then "$new/$c" version --client; else "$new/$c" --version; fi
done
mkdir -p "$bin"
for b in "${ALL_BINS[@]}"; do mv -f "$new/$b" "$bin/"; done
echo "$want" >"$stamp"
(cd "$bin" && ls -l "${ALL_BINS[@]}")
echo "k8s testenv built in $bin in $(($(secs) - total0))s (etcd ${etcd_secs}s, kubernetes ${kube_secs}s)"
build_dradriver
