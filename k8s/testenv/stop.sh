#!/usr/bin/env bash
# Stop what start.sh DIR started and remove DIR.
#
#   k8s/testenv/stop.sh DIR
#
# Sends SIGTERM to kube-apiserver, then etcd, waits at most 10 s for each,
# then SIGKILL. A pid is only signalled while its command line still names
# DIR (no stranger that reused the pid is hit). DIR is only removed when it
# carries start.sh's mark (.k8s-testenv). Safe to run twice.
set -euo pipefail

die() { echo "stop.sh: $*" >&2; exit 1; }
(($# == 1)) || die "usage: stop.sh DIR"
dir=$1
[[ -e $dir ]] || exit 0
[[ -d $dir ]] || die "$dir is not a directory"
dir=$(cd "$dir" && pwd)
[[ -e $dir/.k8s-testenv ]] || die "$dir was not made by start.sh (no .k8s-testenv mark); not touching it"

# Is PID alive and started by start.sh for this DIR?
ours() {
  local pid=$1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/"
}

failed=
for name in kube-apiserver etcd; do
  pidfile=$dir/$name.pid
  [[ -f $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      ours "$pid" || break
      # A child of ours (start.sh's failure path) turns zombie: still
      # listed in /proc but with an empty cmdline, so `ours` says no.
      sleep 0.1
    done
    if ours "$pid"; then
      echo "stop.sh: $name ($pid) ignored SIGTERM for 10 s; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        ours "$pid" || break
        sleep 0.1
      done
      ours "$pid" && { echo "stop.sh: $name ($pid) survived SIGKILL" >&2; failed=1; }
    fi
  fi
  rm -f "$pidfile"
done
[[ -z $failed ]] || die "processes left running; $dir kept"
rm -rf "$dir"
