#!/usr/bin/env bash
# Start a throw-away etcd + kube-apiserver (built by build.sh) for a test.
#
#   k8s/testenv/start.sh DIR     # DIR must not exist, or be empty
#   ... DIR/kubeconfig, DIR/env (SERVER, TOKEN, CA, ...) ...
#   k8s/testenv/stop.sh DIR      # kills both, removes DIR
#
# etcd listens on 127.0.0.1 (client and peer port free, picked here) with
# its data in DIR/etcd; kube-apiserver serves https://127.0.0.1:PORT with
# RBAC on, a static admin token (group system:masters), a service-account
# key made with openssl and a serving certificate it makes itself in
# DIR/certs. Waits for etcd's /health and the API server's /readyz (at most
# KUBE_TESTENV_TIMEOUT seconds, default 60). On any failure it prints the
# logs' tails, kills what it started and removes DIR (KUBE_TESTENV_KEEP=1
# keeps DIR for a post-mortem). Extra kube-apiserver flags:
# KUBE_APISERVER_EXTRA_ARGS="--v=2 ...". Binaries: $KUBE_TESTENV_BIN, else
# $KUBE_TESTENV_DIR/bin, else target/k8s-testenv/bin.
set -euo pipefail

die() { echo "start.sh: $*" >&2; exit 1; }
(($# == 1)) || die "usage: start.sh DIR"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${KUBE_TESTENV_BIN:-${KUBE_TESTENV_DIR:-$repo/target/k8s-testenv}/bin}
timeout=${KUBE_TESTENV_TIMEOUT:-60}
[[ $timeout =~ ^[0-9]+$ ]] || die "KUBE_TESTENV_TIMEOUT must be whole seconds, not '$timeout'"
for b in etcd kube-apiserver; do
  [[ -x $bin/$b ]] || die "$bin/$b missing: run k8s/testenv/build.sh first"
done
for c in openssl curl ss base64; do
  command -v "$c" >/dev/null || die "$c not found"
done

dir=$1
if [[ -e $dir ]]; then
  [[ -d $dir && -z "$(ls -A "$dir")" ]] || die "$dir exists and is not an empty directory"
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
touch "$dir/.k8s-testenv" # stop.sh only removes a dir carrying this mark

t_start=$EPOCHREALTIME
etcd_pid=
api_pid=
ok=
on_exit() {
  [[ -z $ok ]] || return 0
  for log in etcd kube-apiserver; do
    if [[ -s $dir/$log.log ]]; then
      echo "---- last lines of $dir/$log.log" >&2
      tail -n 25 "$dir/$log.log" >&2
    fi
  done
  "$here/stop.sh" "$dir" >&2 || true
}
trap on_exit EXIT
trap 'exit 130' INT TERM HUP

# free_port: sets $port_ to a free port in 20000-31999.
# shellcheck source=lib.sh
source "$here/lib.sh"

curl_() { curl --noproxy '*' -s --max-time 2 "$@"; }
alive() { kill -0 "$1" 2>/dev/null; }
deadline=$((SECONDS + timeout))

# Wait until URL answers "ok"/{"health":"true"} (grep pattern $3) while PID
# lives; returns 1 if PID dies, 2 on timeout.
wait_ready() {
  local pid=$1 pattern=$2
  shift 2
  while ((SECONDS < deadline)); do
    alive "$pid" || return 1
    if curl_ "$@" | grep -q "$pattern"; then return 0; fi
    sleep 0.2
  done
  return 2
}

openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
token=$(openssl rand -hex 24)
# token,user,uid,"groups"
printf '%s,wirespeed-admin,wirespeed-admin,"system:masters"\n' "$token" >"$dir/tokens.csv"
chmod 600 "$dir/sa.key" "$dir/tokens.csv"

# ---- etcd (retry with other ports if one was taken under our feet)
for attempt in 1 2 3; do
  free_port
  etcd_port=$port_
  free_port
  peer_port=$port_
  "$bin/etcd" --name testenv --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "testenv=http://127.0.0.1:$peer_port" \
    --unsafe-no-fsync --log-level warn \
    </dev/null >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  echo "$etcd_pid" >"$dir/etcd.pid"
  rc=0
  wait_ready "$etcd_pid" '"health":"true"' "http://127.0.0.1:$etcd_port/health" || rc=$?
  ((rc == 0)) && break
  ((rc == 1)) || die "etcd not healthy within ${timeout}s"
  grep -q 'address already in use' "$dir/etcd.log" && ((attempt < 3)) || die "etcd exited"
  rm -rf "$dir/etcd"
done
t_etcd=$EPOCHREALTIME

# ---- kube-apiserver
for attempt in 1 2 3; do
  free_port
  port=$port_
  # shellcheck disable=SC2086 # KUBE_APISERVER_EXTRA_ARGS is a word list
  "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
    --cert-dir "$dir/certs" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" \
    --token-auth-file "$dir/tokens.csv" \
    --authorization-mode RBAC \
    --service-cluster-ip-range 10.96.0.0/16 \
    --allow-privileged=true \
    --endpoint-reconciler-type none \
    ${KUBE_APISERVER_EXTRA_ARGS:-} \
    </dev/null >"$dir/kube-apiserver.log" 2>&1 &
  api_pid=$!
  echo "$api_pid" >"$dir/kube-apiserver.pid"
  rc=0
  wait_ready "$api_pid" '^ok$' -k -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" || rc=$?
  ((rc == 0)) && break
  ((rc == 1)) || die "kube-apiserver not ready within ${timeout}s"
  grep -q 'address already in use' "$dir/kube-apiserver.log" && ((attempt < 3)) || die "kube-apiserver exited"
done
t_ready=$EPOCHREALTIME

# The serving certificate it made (certs/apiserver.crt) is the leaf
# (SANs 127.0.0.1, kubernetes.default.svc, ...) followed by the
# self-signed CA that signed it: DIR/ca.crt is that last certificate alone,
# the one clients should trust.
ca=$dir/ca.crt
[[ -s $dir/certs/apiserver.crt ]] || die "no serving certificate in $dir/certs"
awk '/BEGIN CERTIFICATE/ { buf = "" } { buf = buf $0 "\n" } /END CERTIFICATE/ { last = buf }
     END { printf "%s", last }' "$dir/certs/apiserver.crt" >"$ca"
curl_ --cacert "$ca" -H "Authorization: Bearer $token" -o /dev/null -f "https://127.0.0.1:$port/readyz" ||
  die "$ca does not verify https://127.0.0.1:$port"

cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $(base64 -w0 <"$ca")
users:
- name: wirespeed-admin
  user:
    token: $token
contexts:
- name: testenv
  context:
    cluster: testenv
    user: wirespeed-admin
current-context: testenv
EOF
chmod 600 "$dir/kubeconfig"
cat >"$dir/env" <<EOF
SERVER=https://127.0.0.1:$port
TOKEN=$token
CA=$ca
KUBECONFIG=$dir/kubeconfig
ETCD=http://127.0.0.1:$etcd_port
ETCD_PID=$etcd_pid
APISERVER_PID=$api_pid
EOF
chmod 600 "$dir/env"
ok=1
ms() { echo $(((${1/./} - ${2/./}) / 1000)); }
echo "k8s testenv ready in $(ms "$t_ready" "$t_start") ms (etcd $(ms "$t_etcd" "$t_start") ms): https://127.0.0.1:$port, KUBECONFIG=$dir/kubeconfig"
