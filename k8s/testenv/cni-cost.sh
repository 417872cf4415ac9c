#!/usr/bin/env bash
# Report 3 on a real cluster: what each pod network costs against host
# networking. For each CNI (flannel's vxlan backend: encapsulation;
# flannel's host-gw backend: direct routing; the bridge CNI with static
# routes: direct routing without flannel), a fresh two-node Kubernetes
# 1.37 cluster (cluster.sh; no NetworkPolicy, no DNS: one variable at a
# time), and from the runner namespace two `wirespeed k8s run --network
# host,pod` on the same node pair: bulk TCP (stream), and request/response
# at report 3's block sizes (rr, 4 KiB to 4 MiB, request = response, with
# --breakdown). Prints three markdown tables: each mode against the host
# network of its own cluster (throughput and transactions/s per block
# size), CPU per Gbit/s and per transaction on each side, and where a
# 4 KiB round trip is spent. Root; build.sh --version 1.37 and build.sh
# addons done; the wirespeed binary from $WIRESPEED_BIN or
# target/release/wirespeed. The runs' JSON stays in target/cni-cost/.
#
#   k8s/testenv/cni-cost.sh [DURATION] [REPEATS]    # default 3s, 3
#   k8s/testenv/cni-cost.sh --summary               # the tables of the last runs
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ws=${WIRESPEED_BIN:-$repo/target/release/wirespeed}
summary_only=
if [ "${1:-}" = --summary ]; then summary_only=1; shift; fi
dur=${1:-3s}
repeats=${2:-3}
name=wscni
out=$repo/target/cni-cost
mkdir -p "$out"
# Only a measuring run owns the cluster (--summary may run beside one).
[ -n "$summary_only" ] || trap '"$here/cluster.sh" down --name "$name" >/dev/null 2>&1 || true' EXIT

cnis=(flannel-vxlan flannel-host-gw bridge)
sizes=4k,64k,1m,4m

# k8s run from the runner namespace with the cluster's image and key.
run() {
  ip netns exec "$RUNNER_NETNS" "$ws" k8s run --kubeconfig "$RUNNER_KUBECONFIG" --image "$IMAGE" \
    --network host,pod --privileged-namespace -d "$dur" --repeats "$repeats" \
    --key-file "$out/key" "$@"
}

for cni in "${cnis[@]}"; do
  [ -z "$summary_only" ] || break
  WIRESPEED_BIN=$ws "$here/cluster.sh" up --name "$name" --nodes 2 --version 1.37 \
    --runtime containerd2 --cni "$cni" >/dev/null 2>"$out/up.log" ||
    { cat "$out/up.log" >&2; exit 1; }
  # shellcheck disable=SC1091
  source "$("$here/cluster.sh" env --name "$name")"
  openssl rand -hex 16 >"$out/key"
  chmod 600 "$out/key"
  run -w stream --out "$out/$cni-stream.json" >"$out/$cni-stream.log" 2>&1 ||
    { cat "$out/$cni-stream.log" >&2; exit 1; }
  run -w rr -s "$sizes" --breakdown --out "$out/$cni-rr.json" >"$out/$cni-rr.log" 2>&1 ||
    { cat "$out/$cni-rr.log" >&2; exit 1; }
  "$here/cluster.sh" down --name "$name" >/dev/null 2>&1
done

# jq over one CNI's two runs: the comparison's mode (host, or the pod
# network's cross-node path) of each workload.
summary() {
  jq -rn --arg cni "$1" --arg table "$2" \
    --slurpfile s "$out/$1-stream.json" --slurpfile r "$out/$1-rr.json" '
    def modes(w): [($s[0].comparison + $r[0].comparison)[] | select(.workload == w) | .modes[]];
    def mode(w; pod): modes(w) | map(select((.path == "host") != pod)) | .[0];
    def r(x; d): if x == null then "-" else ((x * pow(10; d) | round) / pow(10; d) | tostring) end;
    def pct(v): if v >= 0 then "+\(r(v; 1))" else r(v; 1) end;
    def vs(x; b): if x == null or b == null or b == 0 then "" else " (\(pct((x / b - 1) * 100))%)" end;
    def rrw: [($r[0].comparison[] | .workload)];
    def name(pod): if pod then $cni else "host network (\($cni) cluster)" end;
    def row(pod):
      [name(pod)]
      + [(mode("stream"; pod).throughput_bps / 1e9) as $x
         | (mode("stream"; false).throughput_bps / 1e9) as $b | "\(r($x; 2))\(if pod then vs($x; $b) else "" end)"]
      + [rrw[] as $w | (mode($w; pod).transactions_per_s) as $x
         | (mode($w; false).transactions_per_s) as $b | "\(r($x; 0))\(if pod then vs($x; $b) else "" end)"];
    def cpu(pod):
      [name(pod),
       "\(r(mode("stream"; pod).client_cpu_per_gbit; 1)) / \(r(mode("stream"; pod).server_cpu_per_gbit; 1))",
       (rrw[0] as $w | "\(r(mode($w; pod).client_cpu_us_per_trans; 1)) / \(r(mode($w; pod).server_cpu_us_per_trans; 1))"),
       (rrw[-1] as $w | "\(r(mode($w; pod).client_cpu_us_per_trans; 1)) / \(r(mode($w; pod).server_cpu_us_per_trans; 1))")];
    def segs(pod):
      [name(pod), r(mode(rrw[0]; pod).p50_us; 1),
       ([mode(rrw[0]; pod).segments[] | "\(.segment) \(r(.p50_us; 1))"] | join(", "))];
    if $table == "rate" then (row(false), row(true))
    elif $table == "cpu" then (cpu(false), cpu(true))
    else (segs(false), segs(true)) end
    | "| " + join(" | ") + " |"'
}

rr_labels=$(jq -r '[.comparison[].workload] | join(" | ")' "$out/${cnis[0]}-rr.json")
runs="$dur, $repeats repeats"
[ -z "$summary_only" ] || runs="as the stored runs were made"
echo "Throughput (stream) and transactions/s (rr per block size), each pod network against the host network of its own cluster ($runs, medians):"
echo
echo "| network | stream Gbit/s | $rr_labels |"
echo "|---|--:|$(printf -- '--:|%.0s' $(seq 1 4))"
for cni in "${cnis[@]}"; do summary "$cni" rate; done
echo
echo "CPU on each side (client / server): % of a core per Gbit/s (stream), us per transaction (rr, smallest and largest block):"
echo
echo "| network | stream | rr smallest | rr largest |"
echo "|---|--:|--:|--:|"
for cni in "${cnis[@]}"; do summary "$cni" cpu; done
echo
echo "Where the smallest block's round trip is spent at p50 (us, --breakdown):"
echo
echo "| network | round trip p50 | segments |"
echo "|---|--:|---|"
for cni in "${cnis[@]}"; do summary "$cni" segs; done
