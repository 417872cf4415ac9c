#!/usr/bin/env bash
# lab.sh up MTU | down: the two namespaces (zcA 10.77.0.1, zcB 10.77.0.2) and
# one veth pair rxzc.py and busypoll.py run over (docs/benchmarks.md, issue 32).
set -e
if [ "$1" = up ]; then
  ip netns add zcA; ip netns add zcB
  ip link add zcv0 netns zcA type veth peer name zcv1 netns zcB
  ip -n zcA addr add 10.77.0.1/24 dev zcv0; ip -n zcB addr add 10.77.0.2/24 dev zcv1
  ip -n zcA link set zcv0 mtu $2 up; ip -n zcB link set zcv1 mtu $2 up
  ip -n zcA link set lo up; ip -n zcB link set lo up
else
  ip netns del zcA || true; ip netns del zcB || true
fi
