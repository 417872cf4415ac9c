#!/usr/bin/env bash
# A real multi-node Kubernetes cluster (1.34 or 1.37) on this one machine,
# for tests and CI: etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, and per node (a network namespace) containerd
# (1.6 from Debian, or 2.x built by build.sh addons) + runc, a CNI (the
# bridge plugin with static routes, or flanneld's vxlan or host-gw backend
# with the bridge plugin on its subnet), a kubelet and kube-proxy (iptables
# mode); optionally NetworkPolicy enforced on every node (kube-router's
# firewall) and CoreDNS behind the kube-dns Service; a registry the nodes
# pull from; the project's agent image built from the working tree and
# pushed there.
#
#   k8s/testenv/cluster.sh up [--name NAME] [--nodes N] [--zones Z1,Z1,Z2]
#                             [--version 1.34|1.37] [--runtime containerd1|containerd2]
#                             [--cni bridge|flannel-vxlan|flannel-host-gw]
#                             [--network-policy] [--dns]
#                             [--taint I=KEY=VALUE:EFFECT] [--no-image]
#                             [--unsafe-sysctls NAME,PREFIX*,...]
#                             [--dra-nics M] [--dra-no-place]
#   k8s/testenv/cluster.sh kubeconfig [--name NAME]   # path of the admin kubeconfig
#   k8s/testenv/cluster.sh image [--name NAME]        # the image reference nodes pull
#   k8s/testenv/cluster.sh env [--name NAME]          # path of the env file (addresses, pids)
#   k8s/testenv/cluster.sh down [--name NAME]         # remove everything `up` made
#   k8s/testenv/cluster.sh leftovers [--name NAME]    # list what of NAME is still on the host
#   k8s/testenv/cluster.sh api-stop|api-start [--name NAME]   # faults: the API server stopped, started again
#   k8s/testenv/cluster.sh node-down|node-up I [--name NAME]  # node I's kubelet stopped and link down; back
#
# NAME (default wsc; 1-8 of [a-z0-9], starting with a letter) prefixes
# every namespace, link, cgroup, node and directory the cluster makes, so
# clusters of different names run side by side. `up` first removes what
# an earlier `up` of the same name left (after a crash). Binaries come from
# build.sh (target/k8s-testenv/bin, or $KUBE_TESTENV_BIN); the wirespeed
# binary from $WIRESPEED_BIN, else target/release/wirespeed (built with
# cargo when missing). Needs root, Debian's containerd, runc,
# containernetworking-plugins and docker-registry, iproute2, iptables,
# openssl, curl, jq. State: target/k8s-cluster/NAME (or
# $KUBE_CLUSTER_ROOT/NAME); sockets and runtime state: /run/wsc/NAME.
#
# Topology: a bridge NAMEbr in the root namespace holds 10.K.0.1/24 (the
# API server, registry and root's view); node i is netns NAME-ni with eth0
# 10.K.0.(10+i) and pod CIDR 10.K.(100+i).0/24, static routes between
# nodes (no overlay, no masquerade); services 10.K.200.0/22. A runner
# namespace NAME-r reaches 10.K.1.1 (the API server's port) and nothing
# else: `env` names it as RUNNER_NETNS with RUNNER_KUBECONFIG.
#
# --dra-nics M gives every node M extra NICs for DRA: veths dra0..dra(M-1)
# in the node's namespace (dra J of node i holds 10.K.(60+J).(10+i)/24),
# their peers on a second bridge NAMEdbr (MTU 9000, no address: the nodes
# reach each other over it and nothing else), and one test DRA driver per
# node (dradriver/, built by `build.sh dradriver`; driver name dra.net)
# that publishes them in a ResourceSlice, is called by that node's kubelet
# to prepare and unprepare claims, and moves a prepared NIC into its pod
# (--dra-no-place: it only logs). Its log: logs/dradriver-nI.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tdir=${KUBE_TESTENV_DIR:-$repo/target/k8s-testenv}
abin=$tdir/addons/bin
croot=${KUBE_CLUSTER_ROOT:-$repo/target/k8s-cluster}
runroot=/run/wsc
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
COREDNS_IMAGE=registry.k8s.io/coredns/coredns:v1.15.0-wirespeed
NETPROBE_IMAGE=wirespeed.test/netprobe:dev
timeout=${KUBE_CLUSTER_TIMEOUT:-180}

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

cmd=${1:-}
[[ -n $cmd ]] || die "usage: cluster.sh up|down|kubeconfig|image|env|leftovers [--name NAME] ..."
shift
name=wsc
nodes=2
zones=
taints=()
unsafe_sysctls=
with_image=1
dra_nics=0
dra_place=1
kube_minor=1.34
runtime=containerd1
cni=bridge
netpol=
dns=
fault_node=
while (($#)); do
  case $1 in
    [0-9]*) fault_node=$1; shift ;;
    --name) name=${2:?--name needs a value}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --zones) zones=${2:?--zones needs a value}; shift 2 ;;
    --taint) taints+=("${2:?--taint needs I=KEY=VALUE:EFFECT}"); shift 2 ;;
    --no-image) with_image=; shift ;;
    --unsafe-sysctls) unsafe_sysctls=${2:?--unsafe-sysctls needs a list}; shift 2 ;;
    --dra-nics) dra_nics=${2:?--dra-nics needs a value}; shift 2 ;;
    --dra-no-place) dra_place=; shift ;;
    --version) kube_minor=${2:?--version needs 1.34 or 1.37}; shift 2 ;;
    --runtime) runtime=${2:?--runtime needs containerd1 or containerd2}; shift 2 ;;
    --cni) cni=${2:?--cni needs bridge, flannel-vxlan or flannel-host-gw}; shift 2 ;;
    --network-policy) netpol=1; shift ;;
    --dns) dns=1; shift ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ $name =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "--name '$name': 1-8 of [a-z0-9], starting with a letter"
[[ $nodes =~ ^[1-9]$ ]] || die "--nodes '$nodes': 1 to 9"
[[ -z $unsafe_sysctls || $unsafe_sysctls =~ ^[a-z0-9_.]+\*?(,[a-z0-9_.]+\*?)*$ ]] ||
  die "--unsafe-sysctls '$unsafe_sysctls': comma-separated sysctl names or prefixes ending in *"
[[ $dra_nics =~ ^[0-4]$ ]] || die "--dra-nics '$dra_nics': 0 to 4"
case $kube_minor in
  1.34) bin=${KUBE_TESTENV_BIN:-$tdir/bin} ;;
  1.37) bin=$tdir/1.37/bin ;;
  *) die "--version '$kube_minor': 1.34 or 1.37" ;;
esac
[[ $runtime == containerd[12] ]] || die "--runtime '$runtime': containerd1 or containerd2"
[[ $cni =~ ^(bridge|flannel-vxlan|flannel-host-gw)$ ]] || die "--cni '$cni': bridge, flannel-vxlan or flannel-host-gw"
dir=$croot/$name
run=$runroot/$name

# ---------------------------------------------------------------- queries

# Pids whose command line names this cluster's directories.
cluster_pids() {
  local p c
  for p in /proc/[0-9]*; do
    c=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    [[ $c == *"$dir/"* || $c == *"$run/"* ]] && echo "${p#/proc/}"
  done
  return 0
}
# Mount points under this cluster's directories, deepest first.
cluster_mounts() {
  awk -v a="$dir/" -v b="$run/" -v a0="$dir" -v b0="$run" \
    '{ m = $5; gsub(/\\040/, " ", m); if (index(m, a) == 1 || index(m, b) == 1 || m == a0 || m == b0) print length(m), m }' \
    /proc/self/mountinfo | sort -rn | cut -d' ' -f2-
}
cluster_netns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$name-(n[0-9]|r)\$" || true; }
# The root-namespace ends of the DRA NICs and their bridge.
dra_links() {
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
    grep -E "^${name}(dbr|n[0-9]d[0-9])\$" || true
}
cluster_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h ]] || continue
    find "$h" -maxdepth 1 -type d -name "$name-n[0-9]" 2>/dev/null
  done
}

leftovers() {
  local found=0 x
  for x in $(cluster_pids); do echo "process $x: $(tr '\0' ' ' 2>/dev/null <"/proc/$x/cmdline" | cut -c1-150)"; found=1; done
  while read -r x; do [[ -n $x ]] && { echo "mount $x"; found=1; }; done < <(cluster_mounts)
  for x in $(cluster_netns); do echo "netns $x"; found=1; done
  ip link show "${name}br" >/dev/null 2>&1 && { echo "link ${name}br"; found=1; }
  ip link show "${name}rh" >/dev/null 2>&1 && { echo "link ${name}rh"; found=1; }
  for x in $(dra_links); do echo "link $x"; found=1; done
  for x in $(cluster_cgroups); do echo "cgroup $x"; found=1; done
  [[ -e $dir ]] && { echo "dir $dir"; found=1; }
  [[ -e $run ]] && { echo "dir $run"; found=1; }
  return $((1 - found))
}

# ---------------------------------------------------------------- down

kill_pids() { # SIGNAL PID...
  local sig=$1
  shift
  (($#)) && kill "-$sig" "$@" 2>/dev/null || true
}
# Stop every process of the cluster: kubelets first (they restart pods),
# then containerd and its shims, then whatever still runs in the nodes'
# cgroups (the pods' processes), then the control plane.
stop_processes() {
  local p pat i a0
  # One scan of /proc: each process of the cluster with its program name.
  local -A prog=()
  for p in $(cluster_pids); do
    # A process can exit between the scan and this read (kube-proxy's
    # iptables, a shim's child): under pipefail the failed read ended
    # down silently with every process still running (2026-12-03).
    a0=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | head -1) || continue
    prog[$p]=${a0##*/}
  done
  for pat in kubelet dradriver kube-router flanneld kube-proxy containerd containerd-shim kube-controller-manager kube-scheduler docker-registry kube-apiserver etcd; do
    local pids=()
    for p in "${!prog[@]}"; do
      if [[ ${prog[$p]} == "$pat"* ]]; then
        pids+=("$p")
        unset "prog[$p]"
      fi
    done
    kill_pids TERM "${pids[@]}"
    for ((i = 0; i < 50 && ${#pids[@]}; i++)); do
      local alive=()
      for p in "${pids[@]}"; do [[ -e /proc/$p && $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) != Z ]] && alive+=("$p"); done
      pids=("${alive[@]}")
      ((${#pids[@]})) && sleep 0.1
    done
    kill_pids KILL "${pids[@]}"
    if [[ $pat == containerd-shim ]]; then kill_cgroup_procs; fi
  done
  # Anything left that names the cluster (a crashed run's stragglers).
  kill_pids KILL $(cluster_pids)
  kill_cgroup_procs
}
kill_cgroup_procs() {
  local c f i
  for ((i = 0; i < 20; i++)); do
    local any=
    for c in $(cluster_cgroups); do
      while read -r f; do
        # A cgroup can go while it is read: not an error.
        { while read -r p; do [[ -n $p ]] && { kill -KILL "$p" 2>/dev/null || true; any=1; }; done <"$f"; } 2>/dev/null || true
      done < <(find "$c" -name cgroup.procs 2>/dev/null)
    done
    [[ -n $any ]] || return 0
    sleep 0.1
  done
}
# Each kubelet keeps its pods' logs in its node's dir (podLogsDir): in the
# shared default, /var/log/pods, kubelets removed each other's pod logs as
# orphans within minutes (reading a pod's log then failed with "lstat
# .../0.log"). /var/log/containers is hard-coded and shared: remove this
# cluster's dangling links, and what a cluster made before podLogsDir left
# in /var/log/pods (by pod UID, the kubelets' pod dirs).
remove_pod_logs() {
  local uid l
  for uid in $(ls "$dir"/nodes/*/kubelet/pods 2>/dev/null | grep -E '^[0-9a-f-]{36}$' || true); do
    rm -rf /var/log/pods/*_"$uid"
  done
  for l in /var/log/containers/*.log; do
    [[ -L $l && ! -e $l ]] && rm -f "$l"
  done
  return 0
}
# Host-wide sysctls the kubelet sets at start (setupKernelTunables): saved
# before the first cluster on this machine starts, written back when the
# last one goes.
HOST_SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
save_host_state() {
  mkdir -p "$runroot"
  if [[ ! -e $runroot/host-sysctls ]]; then
    local k
    for k in "${HOST_SYSCTLS[@]}"; do echo "$k $(cat "/proc/sys/$k")"; done >"$runroot/host-sysctls.new"
    mv "$runroot/host-sysctls.new" "$runroot/host-sysctls"
    [[ -e /var/lib/kubelet ]] || touch "$runroot/made-var-lib-kubelet"
  fi
}
last_cluster() { [[ -z "$(find "$runroot" -mindepth 1 -maxdepth 1 -type d ! -name "$name" 2>/dev/null)" ]]; }
restore_host_state() {
  last_cluster || return 0
  if [[ -f $runroot/host-sysctls ]]; then
    local k v
    while read -r k v; do echo "$v" >"/proc/sys/$k" 2>/dev/null || log "could not restore $k=$v"; done <"$runroot/host-sysctls"
    rm -f "$runroot/host-sysctls"
  fi
  if [[ -e $runroot/made-var-lib-kubelet ]]; then
    rm -rf /var/lib/kubelet
    rm -f "$runroot/made-var-lib-kubelet"
  fi
  rmdir "$runroot" 2>/dev/null || true
}

down() {
  local t0 m i c
  t0=$(date +%s%N)
  stop_processes
  for ((i = 0; i < 5; i++)); do
    local left=0
    while read -r m; do
      [[ -n $m ]] || continue
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
      left=1
    done < <(cluster_mounts)
    ((left)) || break
  done
  for m in $(cluster_netns); do ip netns del "$m" 2>/dev/null || true; done
  ip link del "${name}br" 2>/dev/null || true
  ip link del "${name}rh" 2>/dev/null || true
  # A DRA NIC the driver had moved into a pod goes with its peer here.
  for m in $(dra_links); do ip link del "$m" 2>/dev/null || true; done
  # Cgroups: children before parents, in every hierarchy.
  for c in $(cluster_cgroups); do
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  remove_pod_logs
  rm -rf "$dir" "$run"
  restore_host_state
  if leftovers >/dev/null; then
    leftovers >&2
    die "down: some of cluster $name is left (above)"
  fi
  log "cluster $name down in $(ms_since "$t0") ms"
}

# ---------------------------------------------------------------- up

need() {
  local b
  for b in "$@"; do command -v "$b" >/dev/null || die "$b not found (.ci/run installs it)"; done
}
check_prereqs() {
  (($(id -u) == 0)) || die "needs root (network namespaces, cgroups, containerd)"
  need containerd runc ctr nsenter ip iptables openssl curl jq docker-registry gzip sha256sum
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback && -x /usr/lib/cni/portmap ]] ||
    die "CNI plugins missing in /usr/lib/cni (Debian: containernetworking-plugins)"
  local b
  for b in etcd kube-apiserver kube-scheduler kube-controller-manager kube-proxy kubelet pause; do
    [[ -x $bin/$b ]] || die "$bin/$b missing: run k8s/testenv/build.sh --version $kube_minor first"
  done
  local addons=()
  [[ $runtime == containerd2 ]] && addons+=(containerd containerd-shim-runc-v2 ctr)
  [[ $cni == flannel-* ]] && addons+=(flanneld)
  if [[ -n $netpol ]]; then
    addons+=(kube-router)
    need ipset
    [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] ||
      die "--network-policy needs br_netfilter (bridged pod traffic through iptables): modprobe br_netfilter"
    [[ -x $tdir/bin/netprobe ]] || die "$tdir/bin/netprobe missing: run k8s/testenv/build.sh addons first"
  fi
  [[ -n $dns ]] && { addons+=(coredns); need python3; }
  for b in "${addons[@]}"; do
    [[ -x $abin/$b ]] || die "$abin/$b missing: run k8s/testenv/build.sh addons first"
  done
}
# ctr for this cluster's containerd (Debian's, or containerd 2's own).
ctr_() {
  if [[ $runtime == containerd2 ]]; then "$abin/ctr" "$@"; else ctr "$@"; fi
}

# The cluster's /16: 10.K.0.0/16 with K from the name, the first one no
# address or route on this machine uses.
pick_net() {
  local k i
  # 10.100-149: no lab file or test of this repo uses them.
  k=$((100 + $(cksum <<<"$name" | cut -d' ' -f1) % 50))
  for ((i = 0; i < 50; i++)); do
    if [[ -z "$(ip -4 route show to match "10.$k.0.1" | grep -v '^default')" &&
      -z "$(ip -4 addr show | grep " 10\.$k\.")" ]]; then
      K=$k
      return 0
    fi
    k=$((100 + (k - 100 + 1) % 50))
  done
  die "no free 10.K.0.0/16 found"
}

# free_port: sets $port_ to a free port in 20000-31999.
# shellcheck source=lib.sh
source "$here/lib.sh"

# wait_for WHAT PID CMD...: run CMD until it succeeds while PID lives.
wait_for() {
  local what=$1 pid=$2 deadline=$((SECONDS + timeout))
  shift 2
  while ((SECONDS < deadline)); do
    [[ -z $pid ]] || kill -0 "$pid" 2>/dev/null || die "$what exited (log: $(logof "$what"))"
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what not ready within ${timeout}s (log: $(logof "$what"))"
}
logof() { echo "$dir/logs/${1%% *}.log"; }

# start NAME NETNS|- CMD...: a daemon, its log in logs/NAME.log, pid file.
start() {
  local n=$1 ns=$2
  shift 2
  if [[ $ns == - ]]; then
    setsid "$@" </dev/null >"$dir/logs/$n.log" 2>&1 &
  else
    setsid nsenter --net="/var/run/netns/$ns" -- "$@" </dev/null >"$dir/logs/$n.log" 2>&1 &
  fi
  echo $! >"$dir/pids/$n"
  last_pid=$!
}

certs() {
  local c=$dir/pki
  mkdir -p "$c"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.crt" -days 30 \
    -subj "/CN=wirespeed-testenv-$name-ca" 2>/dev/null
  leaf "$c" apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:10.$K.0.1,IP:10.$K.1.1,IP:127.0.0.1,IP:10.$K.200.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  leaf "$c" kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  chmod 600 "$c"/*.key
}
leaf() { # DIR NAME SUBJECT EXT
  openssl req -newkey rsa:2048 -nodes -keyout "$1/$2.key" -out "$1/$2.csr" -subj "$3" 2>/dev/null
  openssl x509 -req -in "$1/$2.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" -CAcreateserial \
    -out "$1/$2.crt" -days 30 -extfile <(echo "$4") 2>/dev/null
}

# kubeconfig FILE SERVER TOKEN
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$dir/pki/ca.crt")
users:
- name: user
  user:
    token: $3
contexts:
- name: $name
  context:
    cluster: $name
    user: user
current-context: $name
EOF
  chmod 600 "$1"
}

tokens() {
  local i
  : >"$dir/pki/tokens.csv"
  tok() { # USER GROUPS -> token
    local t
    t=$(openssl rand -hex 24)
    printf '%s,%s,%s,"%s"\n' "$t" "$1" "$1" "$2" >>"$dir/pki/tokens.csv"
    echo "$t"
  }
  ADMIN_TOKEN=$(tok wirespeed-admin system:masters)
  SCHED_TOKEN=$(tok system:kube-scheduler "")
  CM_TOKEN=$(tok system:kube-controller-manager "")
  PROXY_TOKEN=$(tok system:kube-proxy "")
  for ((i = 1; i <= nodes; i++)); do
    eval "NODE_TOKEN_$i=\$(tok system:node:$name-n$i system:nodes)"
  done
  chmod 600 "$dir/pki/tokens.csv"
}

network() {
  local i j
  ip link add "${name}br" type bridge
  ip addr add "10.$K.0.1/24" dev "${name}br"
  ip link set "${name}br" up
  for ((i = 1; i <= nodes; i++)); do
    local ns=$name-n$i
    ip netns add "$ns"
    ip link add "${name}n${i}h" type veth peer name eth0 netns "$ns"
    ip link set "${name}n${i}h" master "${name}br" up
    ip -n "$ns" addr add "10.$K.0.$((10 + i))/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "10.$K.0.1"
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    # NetworkPolicy between pods on one bridge needs bridged packets to
    # pass iptables (kube-router's rules), as on every real node.
    [[ -n $netpol ]] && ip netns exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=1
    # bridge: static routes between the nodes' pod CIDRs (flannel adds
    # its own from the leases; the root's routes follow them: flannel_wire).
    [[ $cni == bridge ]] || continue
    ip route add "10.$K.$((100 + i)).0/24" via "10.$K.0.$((10 + i))"
    for ((j = 1; j <= nodes; j++)); do
      ((j == i)) && continue
      ip -n "$ns" route add "10.$K.$((100 + j)).0/24" via "10.$K.0.$((10 + j))"
    done
  done
  # The runner's namespace: one /30 to the root namespace, no other route.
  ip netns add "$name-r"
  ip link add "${name}rh" type veth peer name eth0 netns "$name-r"
  ip addr add "10.$K.1.1/30" dev "${name}rh"
  ip link set "${name}rh" up
  ip -n "$name-r" addr add "10.$K.1.2/30" dev eth0
  ip -n "$name-r" link set lo up
  ip -n "$name-r" link set eth0 up
  if ((dra_nics)); then dra_network; fi
}

# The nodes' extra NICs for DRA: veth dra J in node i, its peer on the
# bridge NAMEdbr; the peers and the bridge take jumbo frames, so a claim
# that sets a larger MTU on its NIC still carries traffic.
dra_network() {
  local i j
  ip link add "${name}dbr" type bridge
  ip link set "${name}dbr" mtu 9000 up
  for ((i = 1; i <= nodes; i++)); do
    for ((j = 0; j < dra_nics; j++)); do
      local peer=${name}n${i}d$j
      ip link add "$peer" mtu 9000 type veth peer name "dra$j" netns "$name-n$i"
      ip link set "$peer" master "${name}dbr" up
      ip -n "$name-n$i" addr add "10.$K.$((60 + j)).$((10 + i))/24" dev "dra$j"
      ip -n "$name-n$i" link set "dra$j" up
    done
  done
}

control_plane() {
  # flannel's kube subnet manager takes each node's spec.podCIDR, which the
  # controller-manager allocates from the cluster CIDR.
  local cm_cidrs=()
  [[ $cni == flannel-* ]] && cm_cidrs=(--allocate-node-cidrs --cluster-cidr "10.$K.64.0/18" --node-cidr-mask-size 24)
  free_port
  local etcd_port=$port_ peer
  free_port
  peer=$port_
  start etcd - "$bin/etcd" --name "$name" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "$name=http://127.0.0.1:$peer" --unsafe-no-fsync --log-level warn
  wait_for etcd "$last_pid" sh -c "curl -s --noproxy '*' http://127.0.0.1:$etcd_port/health | grep -q '\"health\":\"true\"'"
  free_port
  API_PORT=$port_
  start kube-apiserver - "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 0.0.0.0 --advertise-address "10.$K.0.1" --secure-port "$API_PORT" \
    --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
    --client-ca-file "$dir/pki/ca.crt" \
    --kubelet-client-certificate "$dir/pki/kubelet-client.crt" --kubelet-client-key "$dir/pki/kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
    --token-auth-file "$dir/pki/tokens.csv" --authorization-mode Node,RBAC \
    --service-cluster-ip-range "10.$K.200.0/22" --allow-privileged=true \
    --enable-admission-plugins NodeRestriction
  API=https://10.$K.0.1:$API_PORT
  wait_for kube-apiserver "$last_pid" curl -sf --noproxy '*' --cacert "$dir/pki/ca.crt" \
    -H "Authorization: Bearer $ADMIN_TOKEN" "$API/readyz"
  kubeconfig "$dir/kubeconfig" "$API" "$ADMIN_TOKEN"
  kubeconfig "$dir/kubeconfig-runner" "https://10.$K.1.1:$API_PORT" "$ADMIN_TOKEN"
  kubeconfig "$dir/scheduler.kubeconfig" "$API" "$SCHED_TOKEN"
  kubeconfig "$dir/controller-manager.kubeconfig" "$API" "$CM_TOKEN"
  kubeconfig "$dir/kube-proxy.kubeconfig" "$API" "$PROXY_TOKEN"
  start kube-scheduler - "$bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --leader-elect=false --secure-port 0
  start kube-controller-manager - "$bin/kube-controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" \
    --leader-elect=false --secure-port 0 --use-service-account-credentials \
    --service-account-private-key-file "$dir/pki/sa.key" --root-ca-file "$dir/pki/ca.crt" \
    --cluster-signing-cert-file "$dir/pki/ca.crt" --cluster-signing-key-file "$dir/pki/ca.key" \
    "${cm_cidrs[@]}"
}

registry() {
  free_port
  REG=10.$K.0.1:$port_
  mkdir -p "$dir/registry"
  cat >"$dir/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $dir/registry}
  delete: {enabled: true}
http:
  addr: $REG
EOF
  start docker-registry - docker-registry serve "$dir/registry.yml"
  wait_for docker-registry "$last_pid" curl -sf --noproxy '*' "http://$REG/v2/"
}

# $dir/pause.tar: an OCI image-layout tar of the pause binary, for
# `ctr images import`.
pause_image() { binary_image "$dir/pause.tar" "$PAUSE_IMAGE" "$bin/pause" 65535:65535; }

# binary_image OUT REF BINARY USER: OUT, an OCI image-layout tar of one
# static binary (/NAME, the entrypoint) named REF, for `ctr images import`.
binary_image() {
  local out=$1 ref=$2 exe=${3##*/} user=$4 w
  w=$dir/image-$exe
  rm -rf "$w"
  mkdir -p "$w/rootfs" "$w/blobs/sha256"
  cp "$3" "$w/rootfs/$exe"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$w/rootfs" -cf "$w/layer.tar" "$exe"
  local diff_id layer_gz layer_sz cfg cfg_d cfg_sz man man_d man_sz
  diff_id=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  gzip -n -c "$w/layer.tar" >"$w/layer.tar.gz"
  layer_gz=$(sha256sum "$w/layer.tar.gz" | cut -d' ' -f1)
  layer_sz=$(stat -c %s "$w/layer.tar.gz")
  mv "$w/layer.tar.gz" "$w/blobs/sha256/$layer_gz"
  cfg=$(jq -cn --arg d "sha256:$diff_id" --arg e "/$exe" --arg u "$user" '{architecture:"amd64",os:"linux",
    config:{Entrypoint:[$e],User:$u},rootfs:{type:"layers",diff_ids:[$d]}}')
  printf '%s' "$cfg" >"$w/cfg"
  cfg_d=$(sha256sum "$w/cfg" | cut -d' ' -f1)
  cfg_sz=$(stat -c %s "$w/cfg")
  mv "$w/cfg" "$w/blobs/sha256/$cfg_d"
  man=$(jq -cn --arg c "sha256:$cfg_d" --argjson cs "$cfg_sz" --arg l "sha256:$layer_gz" --argjson ls "$layer_sz" \
    '{schemaVersion:2,mediaType:"application/vnd.oci.image.manifest.v1+json",
      config:{mediaType:"application/vnd.oci.image.config.v1+json",digest:$c,size:$cs},
      layers:[{mediaType:"application/vnd.oci.image.layer.v1.tar+gzip",digest:$l,size:$ls}]}')
  printf '%s' "$man" >"$w/man"
  man_d=$(sha256sum "$w/man" | cut -d' ' -f1)
  man_sz=$(stat -c %s "$w/man")
  mv "$w/man" "$w/blobs/sha256/$man_d"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  jq -cn --arg d "sha256:$man_d" --argjson s "$man_sz" --arg n "$ref" --arg t "${ref##*:}" \
    '{schemaVersion:2,manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json",digest:$d,size:$s,
      platform:{architecture:"amd64",os:"linux"},
      annotations:{"io.containerd.image.name":$n,"org.opencontainers.image.ref.name":$t}}]}' >"$w/index.json"
  tar -C "$w" -cf "$out" oci-layout index.json blobs
}

cgroup_root() { # NODE: /NODE in every v1 hierarchy, cpuset filled from the parent
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h && $h != */unified/ ]] || continue
    mkdir -p "$h$1"
  done
  if [[ -d /sys/fs/cgroup/cpuset ]]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$1/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$1/cpuset.mems"
  fi
}

node() { # I
  local i=$1 node=$name-n$i nd=$dir/nodes/n$i rd=$run/n$i
  local ip=10.$K.0.$((10 + i)) tokvar=NODE_TOKEN_$i
  mkdir -p "$nd/cni" "$nd/kubelet" "$nd/kubelet-certs" "$nd/containerd" "$rd"
  cgroup_root "$node"
  containerd_config "$nd" "$rd"
  [[ $cni == bridge ]] && cni_config "$nd" "10.$K.$((100 + i)).0/24" "0.0.0.0/0" 1500
  if [[ $runtime == containerd2 ]]; then
    # Its own shim first in PATH (Debian's is containerd 1.6's).
    start "containerd-n$i" "$node" env PATH="$abin:$PATH" "$abin/containerd" --config "$nd/containerd.toml"
  else
    start "containerd-n$i" "$node" containerd --config "$nd/containerd.toml"
  fi
  wait_for "containerd-n$i" "$last_pid" ctr_ -a "$rd/containerd.sock" version
  local img
  for img in "$dir/pause.tar" ${dns:+"$dir/coredns.tar"} ${netpol:+"$dir/netprobe.tar"}; do
    # (containerd 2's ctr warns of cgroup v1 on every call: kept out.)
    ctr_ -a "$rd/containerd.sock" -n k8s.io images import --no-unpack "$img" >"$dir/logs/import.log" 2>&1 ||
      die "cannot import ${img##*/} on $node: $(cat "$dir/logs/import.log")"
  done
  kubeconfig "$nd/kubelet.kubeconfig" "$API" "${!tokvar}"
  local labels="wirespeed.dev/test-cluster=$name"
  if [[ -n $zones ]]; then
    local z
    z=$(cut -d, -f"$i" <<<"$zones")
    [[ -n $z ]] && labels+=",topology.kubernetes.io/zone=$z,topology.kubernetes.io/region=${z%-*}"
  fi
  local t taint_list=
  for t in "${taints[@]}"; do
    [[ ${t%%=*} == "$i" ]] && taint_list+="${taint_list:+,}${t#*=}"
  done
  cat >"$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
cgroupRoot: /$node
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$rd/containerd.sock
podLogsDir: $nd/pod-logs
enforceNodeAllocatable: [pods]
resolvConf: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {nodefs.available: "1%", imagefs.available: "1%", memory.available: "100Mi"}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/pki/ca.crt}
authorization: {mode: Webhook}
registerWithTaints: [$(taint_yaml "$taint_list")]
allowedUnsafeSysctls: [${unsafe_sysctls//,/, }]
EOF
  # Pods resolve through CoreDNS's Service (kube-dns, 10.K.200.10).
  [[ -n $dns ]] && printf 'clusterDomain: cluster.local\nclusterDNS: [10.%s.200.10]\n' "$K" >>"$nd/kubelet.yaml"
  start "kubelet-n$i" "$node" "$bin/kubelet" --config "$nd/kubelet.yaml" --kubeconfig "$nd/kubelet.kubeconfig" \
    --root-dir "$nd/kubelet" --cert-dir "$nd/kubelet-certs" --hostname-override "$node" --node-ip "$ip" \
    --node-labels "$labels" --v 1
  # Under NetworkPolicy, kube-proxy as its default: a Service keeps the
  # client pod's address (masquerading every Service packet would hide
  # the pod behind its node's address from the policy).
  local masq_all=true
  [[ -z $netpol ]] || masq_all=false
  cat >"$nd/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $dir/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: 10.$K.64.0/18
hostnameOverride: $node
bindAddress: $ip
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {masqueradeAll: $masq_all}
EOF
  start "kube-proxy-n$i" "$node" "$bin/kube-proxy" --config "$nd/kube-proxy.yaml"
  if [[ $cni == flannel-* ]]; then
    # flanneld as its DaemonSet runs it: the kube subnet manager (leases
    # are node annotations), masquerade for traffic leaving the pod network.
    mkdir -p "$nd/flannel"
    jq -cn --arg n "10.$K.64.0/18" --arg b "${cni#flannel-}" '{Network:$n,EnableIPv4:true,Backend:{Type:$b}}' \
      >"$nd/flannel/net-conf.json"
    # Its subnet manager exits when the node has no podCIDR yet (the
    # kubelet registers the node, then the controller manager assigns
    # one): wait for it, where the DaemonSet would restart flanneld.
    wait_for "node $node's podCIDR" "$(cat "$dir/pids/kubelet-n$i")" node_has_cidr "$node"
    start "flanneld-n$i" "$node" env NODE_NAME="$node" "$abin/flanneld" --kube-subnet-mgr \
      --kubeconfig-file "$dir/kubeconfig" --iface eth0 --ip-masq \
      --subnet-file "$nd/flannel/subnet.env" --net-config-path "$nd/flannel/net-conf.json"
  fi
  if ((dra_nics)); then
    # The admin's kubeconfig: the driver publishes ResourceSlices and
    # writes claim status (DraNet has a ClusterRole for both).
    start "dradriver-n$i" "$node" "$drabin" --node "$node" --kubeconfig "$dir/kubeconfig" \
      --kubelet-dir "$nd/kubelet" --cri "$rd/containerd.sock" --nic-prefix dra \
      --place="$([[ -n $dra_place ]] && echo true || echo false)"
  fi
}
# containerd_head VERSION SNAPSHOTTER: what both config versions share
# (this node's root, state and sockets; the snapshotters that cannot run
# here, SNAPSHOTTER among them, and tracing off; the opt plugin's
# directory, which is /opt/containerd on the host otherwise). Uses nd, rd.
containerd_head() {
  local p=io.containerd.snapshotter.v1
  cat <<EOF
version = $1
root = "$nd/containerd"
state = "$rd/state"
disabled_plugins = ["$p.$2", "$p.btrfs", "$p.devmapper", "$p.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$rd/containerd.sock"
[ttrpc]
  address = "$rd/containerd.sock.ttrpc"
[debug]
  address = "$rd/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$nd/opt"
EOF
}
# containerd_config NODEDIR RUNDIR: the node's containerd.toml, version 2
# for containerd 1.6, version 3 (with CDI and NRI on) for containerd 2.
containerd_config() {
  local nd=$1 rd=$2
  if [[ $runtime == containerd1 ]]; then
    containerd_head 2 aufs >"$nd/containerd.toml"
    cat >>"$nd/containerd.toml" <<EOF
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$nd/cni"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REG"]
    endpoint = ["http://$REG"]
EOF
    return 0
  fi
  # containerd 2: registries through hosts.toml (the mirrors table is gone).
  mkdir -p "$nd/certs.d/$REG" "$nd/cdi" "$nd/nri/conf.d" "$nd/nri/plugins"
  printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REG" "$REG" \
    >"$nd/certs.d/$REG/hosts.toml"
  containerd_head 3 erofs >"$nd/containerd.toml"
  cat >>"$nd/containerd.toml" <<EOF
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$PAUSE_IMAGE'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '$nd/certs.d'
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = true
  cdi_spec_dirs = ['$nd/cdi']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '$nd/cni'
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = '$rd/nri.sock'
  plugin_path = '$nd/nri/plugins'
  plugin_config_path = '$nd/nri/conf.d'
EOF
}
# cni_config NODEDIR SUBNET ROUTE MTU: the bridge plugin on SUBNET (pods
# route ROUTE through the bridge), host-local addresses, portmap.
cni_config() {
  cat >"$1/cni/10-$name.conflist.new" <<EOF
{"cniVersion": "0.4.0", "name": "$name", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true, "mtu": $4,
   "ipam": {"type": "host-local", "dataDir": "$1/ipam",
            "ranges": [[{"subnet": "$2"}]], "routes": [{"dst": "$3"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
EOF
  mv "$1/cni/10-$name.conflist.new" "$1/cni/10-$name.conflist"
}
# flannel: once flanneld on node I has its lease (subnet.env), the bridge
# plugin is configured on that subnet with flannel's MTU (what flannel's
# own CNI plugin does), and the root namespace (the API server, which
# proxies to pods) gets a route to it via the node. Sets POD_CIDR_I.
flannel_wire() { # I
  local i=$1 nd=$dir/nodes/n$1 f sub mtu
  f=$nd/flannel/subnet.env
  wait_for "flanneld-n$i" "$(cat "$dir/pids/flanneld-n$i")" test -s "$f"
  sub=$(sed -n 's/^FLANNEL_SUBNET=//p' "$f")
  mtu=$(sed -n 's/^FLANNEL_MTU=//p' "$f")
  [[ $sub =~ ^10\.$K\.([0-9]+)\.1/24$ ]] || die "flanneld-n$i: unexpected FLANNEL_SUBNET '$sub' in $f"
  sub=10.$K.${BASH_REMATCH[1]}.0/24
  # isDefaultGateway, as flannel's own plugin sets it: a default route.
  cni_config "$nd" "$sub" 0.0.0.0/0 "$mtu"
  ip route replace "$sub" via "10.$K.0.$((10 + i))"
  eval "POD_CIDR_$i=$sub"
}
# post PATH JSON: create an object as the admin (fails on any error).
post() {
  curl -sf --noproxy '*' --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H 'Content-Type: application/json' -X POST --data-binary "$2" "$API$1" >/dev/null ||
    die "cannot create $(jq -r '.kind + " " + .metadata.name' <<<"$2") ($1)"
}
# Cluster DNS as kubeadm installs it: CoreDNS (the image of one static
# binary build.sh built) as a Deployment in kube-system with its RBAC and
# Corefile, behind the kube-dns Service at 10.K.200.10 that the kubelets
# name as clusterDNS. No upstream: names outside the cluster get SERVFAIL.
cluster_dns() {
  local ns=/api/v1/namespaces/kube-system corefile
  corefile='.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loop
    reload
}'
  post $ns/serviceaccounts '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"coredns"}}'
  post /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
    "metadata":{"name":"system:coredns"},"rules":[
      {"apiGroups":[""],"resources":["endpoints","services","pods","namespaces"],"verbs":["list","watch"]},
      {"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["list","watch"]}]}'
  post /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1",
    "kind":"ClusterRoleBinding","metadata":{"name":"system:coredns"},
    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:coredns"},
    "subjects":[{"kind":"ServiceAccount","name":"coredns","namespace":"kube-system"}]}'
  post $ns/configmaps "$(jq -cn --arg c "$corefile" '{apiVersion:"v1",kind:"ConfigMap",
    metadata:{name:"coredns"},data:{Corefile:$c}}')"
  post /apis/apps/v1/namespaces/kube-system/deployments "$(jq -cn --arg img "$COREDNS_IMAGE" '{
    apiVersion:"apps/v1",kind:"Deployment",
    metadata:{name:"coredns",labels:{"k8s-app":"kube-dns"}},
    spec:{replicas:1,selector:{matchLabels:{"k8s-app":"kube-dns"}},
      template:{metadata:{labels:{"k8s-app":"kube-dns"}},
        spec:{serviceAccountName:"coredns",priorityClassName:"system-cluster-critical",dnsPolicy:"Default",
          tolerations:[{operator:"Exists"}],
          containers:[{name:"coredns",image:$img,imagePullPolicy:"Never",args:["-conf","/etc/coredns/Corefile"],
            ports:[{name:"dns",containerPort:53,protocol:"UDP"},{name:"dns-tcp",containerPort:53,protocol:"TCP"}],
            readinessProbe:{httpGet:{path:"/ready",port:8181},periodSeconds:1},
            livenessProbe:{httpGet:{path:"/health",port:8080},periodSeconds:10},
            securityContext:{allowPrivilegeEscalation:false,readOnlyRootFilesystem:true,
              capabilities:{add:["NET_BIND_SERVICE"],drop:["ALL"]}},
            volumeMounts:[{name:"config",mountPath:"/etc/coredns",readOnly:true}]}],
          volumes:[{name:"config",configMap:{name:"coredns"}}]}}}}')"
  post $ns/services "$(jq -cn --arg ip "10.$K.200.10" '{apiVersion:"v1",kind:"Service",
    metadata:{name:"kube-dns",labels:{"k8s-app":"kube-dns"}},
    spec:{selector:{"k8s-app":"kube-dns"},clusterIP:$ip,
      ports:[{name:"dns",port:53,protocol:"UDP"},{name:"dns-tcp",port:53,protocol:"TCP"}]}}')"
  wait_for "CoreDNS Ready" "" dns_ready
  wait_for "CoreDNS answering through the kube-dns Service" "" dns_answers
}
dns_ready() {
  api /apis/apps/v1/namespaces/kube-system/deployments/coredns | jq -e '.status.readyReplicas == 1' >/dev/null
}
# The A record of kubernetes.default from node 1 through the Service IP
# (kube-proxy's DNAT), over UDP, as a pod's resolver asks.
dns_answers() {
  ip netns exec "$name-n1" python3 "$here/dnsq.py" "10.$K.200.10" kubernetes.default.svc.cluster.local |
    grep -qx "10.$K.200.1"
}
# kube-router's NetworkPolicy firewall alone on node I (no BGP routing,
# no service proxy: flannel or the bridge routes, kube-proxy serves),
# started once its Node object exists (it reads it at start).
netpol_node() { # I
  local i=$1
  start "kube-router-n$i" "$name-n$i" "$abin/kube-router" --run-firewall=true --run-router=false \
    --run-service-proxy=false --enable-cni=false --kubeconfig "$dir/kubeconfig" \
    --hostname-override "$name-n$i" --service-cluster-ip-range "10.$K.200.0/22" \
    --health-port 0 --metrics-port 0 --v 1
  wait_for "kube-router-n$i" "$last_pid" netpol_ready "$i"
}
# kube-router on node I has its NetworkPolicy chains in place.
netpol_ready() {
  ip netns exec "$name-n$1" iptables -S KUBE-ROUTER-FORWARD >/dev/null 2>&1
}
taint_yaml() { # K=V:E,... -> {key: K, value: V, effect: E}, ...
  local t out=
  [[ -n $1 ]] || return 0
  IFS=, read -ra ts <<<"$1"
  for t in "${ts[@]}"; do
    [[ $t =~ ^([^=:]+)(=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$ ]] || die "--taint '$t': use I=KEY=VALUE:EFFECT"
    out+="${out:+, }{key: \"${BASH_REMATCH[1]}\", value: \"${BASH_REMATCH[3]}\", effect: ${BASH_REMATCH[4]}}"
  done
  echo "$out"
}

api() { curl -sf --noproxy '*' --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$API$1"; }
nodes_ready() {
  local n
  n=$(api /api/v1/nodes | jq '[.items[] | select(.status.conditions[]? | .type == "Ready" and .status == "True")] | length')
  ((n == nodes))
}
# leases_renewed_since T: every node's Lease in kube-node-lease was
# renewed after T (UTC, seconds precision): the kubelets reach the API.
leases_renewed_since() {
  local n
  n=$(api /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases |
    jq --arg t "$1" '[.items[] | select(.spec.renewTime[0:19] > $t)] | length')
  ((n >= nodes))
}
node_has_cidr() { api "/api/v1/nodes/$1" | jq -e '.spec.podCIDR != null' >/dev/null; }
default_sa() { api /api/v1/namespaces/default/serviceaccounts/default >/dev/null; }
# NODE's driver is registered with its kubelet and its ResourceSlice is
# published with every DRA NIC.
dra_ready() {
  grep -q "registered with the kubelet" "$dir/logs/dradriver-$1.log" || return 1
  local n
  n=$(api "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=$name-$1" |
    jq '[.items[] | select(.spec.driver == "dra.net") | .spec.devices[]] | length')
  ((n == dra_nics))
}

image() {
  local ws=${WIRESPEED_BIN:-$repo/target/release/wirespeed} out
  if [[ ! -x $ws ]]; then
    log "building $ws (cargo build --release -p wirespeed)"
    (cd "$repo" && cargo build --release -p wirespeed >&2) || die "cargo build failed"
  fi
  out=$("$ws" k8s image build --binary "$ws" --push "$REG/wirespeed:dev" --plain-http) ||
    die "cannot build and push the agent image to $REG"
  IMAGE=$(grep -o "$REG/wirespeed[^ ]*@sha256:[0-9a-f]*" <<<"$out" | tail -1)
  [[ -n $IMAGE ]] || die "the image build printed no REF@sha256:DIGEST: $out"
}

up() {
  local t0 i
  t0=$(date +%s%N)
  check_prereqs
  if ((dra_nics)); then
    "$here/build.sh" dradriver >&2 || die "cannot build the test DRA driver (k8s/testenv/build.sh dradriver)"
    drabin=$tdir/bin/dradriver
  fi
  if leftovers >/dev/null; then
    log "removing what an earlier cluster $name left"
    down
  fi
  mkdir -p "$dir/logs" "$dir/pids" "$run"
  touch "$dir/.k8s-cluster"
  save_host_state
  ok=
  # KUBE_CLUSTER_KEEP_FAILED=1 leaves a failed cluster up to look at (down removes it).
  trap 'if [[ -z $ok ]]; then log "up failed; logs in $dir/logs (kept in $dir.failed-logs)"; rm -rf "$dir.failed-logs"; cp -r "$dir/logs" "$dir.failed-logs" 2>/dev/null; [[ -n ${KUBE_CLUSTER_KEEP_FAILED:-} ]] || down; fi' EXIT
  trap 'exit 130' INT TERM HUP
  pick_net
  certs
  tokens
  network
  control_plane
  registry
  pause_image
  [[ -z $dns ]] || binary_image "$dir/coredns.tar" "$COREDNS_IMAGE" "$abin/coredns" 0:0
  [[ -z $netpol ]] || binary_image "$dir/netprobe.tar" "$NETPROBE_IMAGE" "$tdir/bin/netprobe" 65534:65534
  for ((i = 1; i <= nodes; i++)); do node "$i"; done
  for ((i = 1; i <= nodes; i++)); do
    if [[ $cni == flannel-* ]]; then flannel_wire "$i"; else eval "POD_CIDR_$i=10.$K.$((100 + i)).0/24"; fi
  done
  wait_for "nodes Ready ($nodes)" "" nodes_ready
  wait_for "the default ServiceAccount" "" default_sa
  if [[ -n $netpol ]]; then
    for ((i = 1; i <= nodes; i++)); do netpol_node "$i"; done
  fi
  [[ -z $dns ]] || cluster_dns
  if ((dra_nics)); then
    for ((i = 1; i <= nodes; i++)); do
      wait_for "dradriver-n$i" "$(cat "$dir/pids/dradriver-n$i")" dra_ready "n$i"
    done
  fi
  IMAGE=
  [[ -z $with_image ]] || image
  cat >"$dir/env" <<EOF
NAME=$name
VERSION=$("$bin/kube-apiserver" --version | awk '{print $2}')
RUNTIME=$runtime
CNI=$cni
NETWORK_POLICY=${netpol:+kube-router}
DNS=${dns:+10.$K.200.10}
NETPROBE_IMAGE=${netpol:+$NETPROBE_IMAGE}
KUBECONFIG=$dir/kubeconfig
SERVER=$API
TOKEN=$ADMIN_TOKEN
CA=$dir/pki/ca.crt
REGISTRY=$REG
IMAGE=$IMAGE
NODES="$(for ((i = 1; i <= nodes; i++)); do printf '%s ' "$name-n$i"; done)"
NODE_NETNS="$(for ((i = 1; i <= nodes; i++)); do printf '%s ' "$name-n$i"; done)"
NODE_IPS="$(for ((i = 1; i <= nodes; i++)); do printf '%s ' "10.$K.0.$((10 + i))"; done)"
POD_CIDRS="$(for ((i = 1; i <= nodes; i++)); do v=POD_CIDR_$i; printf '%s ' "${!v}"; done)"
SERVICE_CIDR=10.$K.200.0/22
RUNNER_NETNS=$name-r
RUNNER_KUBECONFIG=$dir/kubeconfig-runner
DRA_NICS=$dra_nics
DRA_NIC_NETS="$(for ((j = 0; j < dra_nics; j++)); do printf '%s ' "10.$K.$((60 + j)).0/24"; done)"
DRA_LOGS="$(for ((i = 1; i <= nodes && dra_nics; i++)); do printf '%s ' "$dir/logs/dradriver-n$i.log"; done)"
EOF
  [[ -n $IMAGE ]] && echo "$IMAGE" >"$dir/image"
  ok=1
  log "cluster $name up in $(ms_since "$t0") ms: $nodes node(s) Ready ($kube_minor, $runtime, $cni${netpol:+, policy}${dns:+, DNS}), API $API"
  echo "$dir/kubeconfig"
}

# ---------------------------------------------------------------- faults
# For the fault tests: a daemon stopped (its command line kept) and
# started again from it; a node taken off the network.

# load_env: $API, $ADMIN_TOKEN and the node count of a cluster that is up.
load_env() {
  [[ -f $dir/env ]] || die "cluster $name is not up"
  API=$(sed -n 's/^SERVER=//p' "$dir/env")
  ADMIN_TOKEN=$(sed -n 's/^TOKEN=//p' "$dir/env")
  nodes=$(sed -n 's/^NODES="\(.*\)"$/\1/p' "$dir/env" | wc -w)
}

# stop_daemon NAME: keeps its command line, SIGTERM (SIGKILL after 10 s).
stop_daemon() {
  local n=$1 pid i
  pid=$(cat "$dir/pids/$n" 2>/dev/null) || die "no daemon $n in cluster $name"
  kill -0 "$pid" 2>/dev/null || die "$n (pid $pid) is not running"
  cp "/proc/$pid/cmdline" "$dir/pids/$n.cmd"
  kill -TERM "$pid"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# start_daemon NAME NETNS|-: starts NAME again from its kept command line.
start_daemon() {
  local n=$1 ns=$2 args=()
  [[ -f $dir/pids/$n.cmd ]] || die "$n was not stopped by cluster.sh"
  mapfile -d '' args <"$dir/pids/$n.cmd"
  mv -f "$dir/logs/$n.log" "$dir/logs/$n.log.$(date +%s)" 2>/dev/null || true
  start "$n" "$ns" "${args[@]}"
  rm -f "$dir/pids/$n.cmd"
}

node_index() {
  [[ ${1:-} =~ ^[0-9]+$ ]] && ((${1} >= 1 && ${1} <= nodes)) || die "node index '${1:-}': 1 to $nodes"
}

faults() {
  (($(id -u) == 0)) || die "needs root"
  load_env
  case $cmd in
    api-stop) stop_daemon kube-apiserver ;;
    api-start) # back when every kubelet has renewed its node Lease since
      local since
      since=$(date -u +%Y-%m-%dT%H:%M:%S)
      start_daemon kube-apiserver -
      wait_for kube-apiserver "$last_pid" api /readyz
      wait_for "every node's Lease renewed" "$last_pid" leases_renewed_since "$since"
      wait_for "nodes Ready ($nodes)" "$last_pid" nodes_ready
      ;;
    node-down) # the node's kubelet stopped and its link down: lost to the cluster
      node_index "$fault_node"
      stop_daemon "kubelet-n$fault_node"
      ip -n "$name-n$fault_node" link set eth0 down
      ;;
    node-up)
      node_index "$fault_node"
      ip -n "$name-n$fault_node" link set eth0 up
      start_daemon "kubelet-n$fault_node" "$name-n$fault_node"
      wait_for "kubelet-n$fault_node" "$last_pid" nodes_ready
      ;;
  esac
  log "$cmd${fault_node:+ $fault_node}: done"
}

case $cmd in
  up) up ;;
  api-stop | api-start | node-down | node-up) faults ;;
  down)
    (($(id -u) == 0)) || die "needs root"
    down
    ;;
  kubeconfig) [[ -f $dir/kubeconfig ]] && echo "$dir/kubeconfig" || die "cluster $name is not up" ;;
  env) [[ -f $dir/env ]] && echo "$dir/env" || die "cluster $name is not up" ;;
  image) [[ -s $dir/image ]] && cat "$dir/image" || die "cluster $name has no image (up with --no-image, or not up)" ;;
  leftovers) # exit 1, listing them, when anything of NAME is left
    if leftovers; then exit 1; fi
    ;;
  *) die "unknown command '$cmd': up, down, kubeconfig, image, env, leftovers, api-stop, api-start, node-down, node-up" ;;
esac
