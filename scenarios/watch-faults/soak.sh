#!/usr/bin/env bash
# The watch's false-alarm soak (issue 65; not a CI test): builds the
# watch-faults lab under a name of its own, starts the six agents, runs
# `fleet watch` from the core router for MINUTES with nothing planted,
# optionally beside busy loops, and prints every incident it raised (the
# target is none) with how idle the machine's CPUs were.
#
#   sudo scenarios/watch-faults/soak.sh [--minutes 60] [--period 5s]
#        [--load none|busy] [--bin target/release/wirespeed] [--out DIR]
#
# --load busy runs one busy loop per CPU for the whole soak; with none,
# run your builds beside it by hand for a loaded soak. The history file
# and the watcher's output stay in --out (default a new /tmp directory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
minutes=60 period=5s load=none bin="$here/../../target/release/wirespeed" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --period) period=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "soak.sh: unknown argument $1 (see the head of this file)" >&2; exit 1 ;;
  esac
done
case "$load" in none|busy) ;; *) echo "soak.sh: --load none or busy, not $load" >&2; exit 1 ;; esac
[ "$(id -u)" = 0 ] || { echo "soak.sh: run as root (it builds namespaces)" >&2; exit 1; }
[ -x "$bin" ] || { echo "soak.sh: no wirespeed at $bin (cargo build --release, or --bin)" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/ws-soak.XXXXXX)}
mkdir -p "$out/state"
name="soak-p$$"
sed "0,/^name = .*/s//name = \"$name\"/" "$here/lab.toml" >"$out/lab.toml"
printf 'soak-key-0123456789abcdef0123456789\n' >"$out/key"
chmod 600 "$out/key"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$bin" lab down "$name" --state-dir "$out/state" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$bin" lab up "$out/lab.toml" --state-dir "$out/state" >/dev/null
for h in a b c d e f; do
  "$bin" lab exec "$name" "$h" --state-dir "$out/state" -- "$bin" agent --name "$h" \
    --http 0.0.0.0:5380 --bind 0.0.0.0 --key-file "$out/key" >"$out/agent-$h.log" 2>&1 &
  pids+=($!)
done
# Ready when every agent printed its listening line.
for _ in $(seq 100); do
  n=$( (grep -l listening "$out"/agent-*.log 2>/dev/null || true) | wc -l)
  [ "$n" = 6 ] && break
  sleep 0.1
done
[ "$n" = 6 ] || { echo "soak.sh: the agents did not start (see $out/agent-*.log)" >&2; exit 1; }
if [ "$load" = busy ]; then
  for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & pids+=($!); done
fi
cpu() { awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r idle0 total0 < <(cpu)
t0=$(date -u +%H:%M:%S)
"$bin" lab exec "$name" core --state-dir "$out/state" -- "$bin" fleet watch \
  --agents "$here/fleet.toml" --key-file "$out/key" --history "$out/soak.db" \
  --probe-period "$period" --for "${minutes}m" >"$out/watch.log" 2>&1
read -r idle1 total1 < <(cpu)
idle=$(( 100 * (idle1 - idle0) / (total1 - total0) ))
echo "soak $name: ${minutes} min from $t0 UTC, probes every $period, load $load, CPUs idle ${idle}%"
grep -E '^watched' "$out/watch.log" || true
"$bin" fleet history --db "$out/soak.db" --incidents --since "$((minutes + 5))m"
echo "history, watcher log and agent logs: $out"
