#!/usr/bin/env bash
# The figures of docs/k8s.md's support table: for each cluster fixture, a
# fresh two-node cluster (cluster.sh), one `wirespeed k8s run --network
# host,pod --workloads stream,rr` from the runner namespace (it reaches
# only the API server), and a markdown row of host vs pod figures. The
# clusters come up one after another on this machine with the same shape
# (two nodes, the same veths and bridge), so the rows differ in the
# fixture only. Root; build.sh, build.sh addons and build.sh --version
# 1.37 done; the wirespeed binary from $WIRESPEED_BIN or
# target/release/wirespeed.
#
#   k8s/testenv/compare-fixtures.sh [DURATION]    # default 5s per test
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ws=${WIRESPEED_BIN:-$repo/target/release/wirespeed}
dur=${1:-5s}
name=wscmp
out=$(mktemp -d)
trap '"$here/cluster.sh" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

fixtures=(
  "--version 1.37 --runtime containerd2 --cni flannel-vxlan --network-policy --dns"
  "--version 1.37 --runtime containerd2 --cni flannel-host-gw --network-policy --dns"
  "--version 1.37 --runtime containerd2 --cni bridge"
  "--version 1.34 --runtime containerd1 --cni bridge"
)
echo "| fixture | stream host / pod (Gbit/s) | pod vs host | rr host / pod (trans/s) | rr p50 host / pod (us) | rr p99 host / pod (us) |"
echo "|---|---|---|---|---|---|"
for f in "${fixtures[@]}"; do
  # shellcheck disable=SC2086
  WIRESPEED_BIN=$ws "$here/cluster.sh" up --name "$name" --nodes 2 $f >/dev/null 2>"$out/up.log" ||
    { cat "$out/up.log" >&2; exit 1; }
  # shellcheck disable=SC1091
  source "$("$here/cluster.sh" env --name "$name")"
  key=$out/key
  openssl rand -hex 16 >"$key"
  chmod 600 "$key"
  ip netns exec "$RUNNER_NETNS" "$ws" k8s run --kubeconfig "$RUNNER_KUBECONFIG" --image "$IMAGE" \
    --network host,pod --privileged-namespace --workloads stream,rr -d "$dur" --key-file "$key" \
    --out "$out/run.json" >"$out/run.log" 2>&1 || { cat "$out/run.log" >&2; exit 1; }
  jq -r --arg f "$f" '
    # --network host,pod: the host path, and the pod network'"'"'s (cross-node).
    def fig(w; m; k): (.comparison[] | select(.workload == w) | .modes[]
      | select(if m == "host" then .path == "host" else .path != "host" end) | .[k]);
    def r(x; d): (x * pow(10; d) | round) / pow(10; d);
    [ $f,
      "\(r(fig("stream"; "host"; "throughput_bps") / 1e9; 2)) / \(r(fig("stream"; "pod"; "throughput_bps") / 1e9; 2))",
      "\(r((fig("stream"; "pod"; "throughput_bps") / fig("stream"; "host"; "throughput_bps") - 1) * 100; 1))%",
      "\(fig("rr"; "host"; "transactions_per_s") | round) / \(fig("rr"; "pod"; "transactions_per_s") | round)",
      "\(r(fig("rr"; "host"; "p50_us"); 1)) / \(r(fig("rr"; "pod"; "p50_us"); 1))",
      "\(r(fig("rr"; "host"; "p99_us"); 1)) / \(r(fig("rr"; "pod"; "p99_us"); 1))"
    ] | "| `" + .[0] + "` | " + (.[1:] | join(" | ")) + " |"' "$out/run.json"
  "$here/cluster.sh" down --name "$name" >/dev/null 2>&1
done
