#!/usr/bin/env bash
# issue32.sh ROUNDS SECS: every row of issue 32 in one run, on one quiet
# machine, each script's rounds interleaved: receive without copying
# (rxzc.py, veth MTU 61492), busy-poll rr (busypoll.py), the
# request/response rows against their bare C floors (floors.py), four bbr
# flows on one thread against iperf3 and the C floor (bbr4.py), and
# io_uring against epoll (uring.py, loopback). Needs root; builds the C
# probes into /tmp; WIRESPEED is the binary. Output: the scripts' tables,
# in that order, with the load before and after each.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-10}; SECS=${2:-3}
export WIRESPEED=${WIRESPEED:-$PWD/target/dist/wirespeed}
for t in gcc ethtool iperf3 sockperf python3; do
  command -v "$t" >/dev/null || { echo "issue32.sh needs $t (apt-get install $t)" >&2; exit 1; }
done
gcc -O2 -pthread -o /tmp/pair bench/probe/pair.c
gcc -O2 -o /tmp/pingpong bench/probe/pingpong.c
gcc -O2 -o /tmp/crr bench/probe/crr.c
export PAIR=/tmp/pair
servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done; bash bench/probe/lab.sh down >/dev/null 2>&1 || true; }
trap cleanup EXIT
serve_in_zcB() {
  ip netns exec zcB "$WIRESPEED" serve --port 5300 >/dev/null 2>&1 & servers+=($!)
  for _ in $(seq 100); do ip netns exec zcA bash -c 'exec 3<>/dev/tcp/10.77.0.2/5300' 2>/dev/null && return; sleep 0.1; done
  echo "wirespeed serve in zcB did not answer" >&2; exit 1
}
load() { echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "## rx-zerocopy (veth MTU 61492)"; load
bash bench/probe/lab.sh up 61492; serve_in_zcB
python3 bench/probe/rxzc.py "$ROUNDS" "$SECS"; load
cleanup; servers=()

echo "## busy-poll rr (veth MTU 1500)"; load
bash bench/probe/lab.sh up 1500; serve_in_zcB
python3 bench/probe/busypoll.py "$ROUNDS" "$SECS"; load
kill "${servers[@]}"; servers=()

echo "## request/response against the bare C floors"; load
python3 bench/probe/floors.py "$ROUNDS" "$SECS"; load

echo "## four bbr flows on one thread (veth MTU 1500)"; load
serve_in_zcB
python3 bench/probe/bbr4.py "$ROUNDS" "$SECS"; load
cleanup; servers=()

echo "## io_uring against epoll (loopback, pinned)"; load
"$WIRESPEED" serve --port 15201 >/dev/null 2>&1 & servers+=($!)
for _ in $(seq 100); do bash -c 'exec 3<>/dev/tcp/127.0.0.1/15201' 2>/dev/null && break; sleep 0.1; done
python3 bench/probe/uring.py "$ROUNDS" "$SECS" 15201; load
