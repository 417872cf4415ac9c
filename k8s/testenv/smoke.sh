#!/usr/bin/env bash
# Smoke test of the k8s testenv: a real kube-apiserver + etcd serving
# resource.k8s.io/v1 (DRA) with RBAC. Uses curl only (no kubectl).
#
#   k8s/testenv/smoke.sh          # starts a testenv in a temp dir, checks, stops it
#   k8s/testenv/smoke.sh DIR      # checks a testenv that start.sh DIR started
#
# Exits non-zero at the first failed check; always stops what it started.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok   $*"; }

own=
if (($# == 0)); then
  dir=$(mktemp -d /tmp/wirespeed-k8s-smoke.XXXXXX)
  own=1
  trap '"$here/stop.sh" "$dir"' EXIT
  trap 'exit 130' INT TERM HUP
  "$here/start.sh" "$dir"
elif (($# == 1)); then
  dir=$1
else
  echo "usage: smoke.sh [DIR]" >&2
  exit 2
fi
[[ -f $dir/env ]] || fail "$dir/env missing: is a testenv running there?"
# shellcheck source=/dev/null
source "$dir/env"
: "${SERVER:?}" "${TOKEN:?}" "${CA:?}"

out=$(mktemp)
trap 'rm -f "$out"; [[ -z $own ]] || "$here/stop.sh" "$dir"' EXIT

# api [-t TOKEN] METHOD PATH [CONTENT-TYPE BODY] -> $code, body in $out
api() {
  local tok=$TOKEN
  if [[ $1 == -t ]]; then
    tok=$2
    shift 2
  fi
  local method=$1 path=$2 args=()
  [[ -z $tok ]] || args+=(-H "Authorization: Bearer $tok")
  if (($# > 2)); then args+=(-H "Content-Type: $3" --data-binary "$4"); fi
  code=$(curl --noproxy '*' -sS --max-time 20 --cacert "$CA" -o "$out" -w '%{http_code}' \
    -X "$method" "${args[@]}" "$SERVER$path") || fail "curl $method $path"
}
# apply PATH YAML: server-side apply (creates or updates)
apply() { api PATCH "$1?fieldManager=wirespeed-smoke&fieldValidation=Strict" application/apply-patch+yaml "$2"; }
expect() { # CODE WHAT
  [[ $code == "$1" ]] || { cat "$out" >&2; echo >&2; fail "$2: HTTP $code, expected $1"; }
}
# field NAME: the first string value of "NAME" in $out (common JSON escapes undone)
field() {
  grep -oE '"'"$1"'": *"([^"\\]|\\.)*"' "$out" | awk 'NR == 1' | sed -E 's/^"[^"]*": *"//; s/"$//; s/\\"/"/g; s/\\u003c/</g; s/\\u003e/>/g; s/\\u0026/\&/g; s/\\n/ /g'
}

ns=wirespeed-smoke
other=wirespeed-other

api GET /version
expect 200 "GET /version"
pass "server version $(field gitVersion)"

api GET /apis
expect 200 "GET /apis"
grep -q '"groupVersion": *"resource.k8s.io/v1"' "$out" || fail "resource.k8s.io/v1 not served"
pass "resource.k8s.io served, versions: $(grep -oE '"groupVersion": *"resource.k8s.io/[^"]*"' "$out" | sed -E 's#.*/(.*)"#\1#' | sort -u | tr '\n' ' ')"
api GET /apis/resource.k8s.io/v1
expect 200 "GET /apis/resource.k8s.io/v1"
for r in deviceclasses resourceclaims resourceclaimtemplates resourceslices; do
  grep -q "\"name\": *\"$r\"" "$out" || fail "resource.k8s.io/v1 lacks $r"
done
pass "resource.k8s.io/v1 has deviceclasses, resourceclaims, resourceclaimtemplates, resourceslices"

# RBAC is on: anonymous may read /version but not list namespaces.
api -t "" GET /api/v1/namespaces
expect 403 "anonymous list namespaces"
pass "RBAC on: anonymous list namespaces -> 403"

for n in $ns $other; do
  apply "/api/v1/namespaces/$n" "apiVersion: v1
kind: Namespace
metadata:
  name: $n"
  expect 201 "apply namespace $n"
done
pass "namespaces $ns, $other created by server-side apply"

apply /apis/resource.k8s.io/v1/deviceclasses/wirespeed-dranet 'apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: wirespeed-dranet
spec:
  selectors:
  - cel:
      expression: device.driver == "dra.net"'
expect 201 "apply DeviceClass"
pass "DeviceClass wirespeed-dranet created"

rct='apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: wirespeed-nic
  namespace: '$ns'
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly:
          deviceClassName: wirespeed-dranet
          count: 1
          selectors:
          - cel:
              expression: device.attributes["gce.dra.net"].networkName.startsWith("rdma-") && device.attributes["dra.net"].rdma == true
      config:
      - requests: ["nic"]
        opaque:
          driver: dra.net
          parameters:
            interface:
              mtu: 8896
              gsoMaxSize: 65536
              groMaxSize: 65536'
apply "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaimtemplates/wirespeed-nic" "$rct"
expect 201 "apply ResourceClaimTemplate"
rv=$(field resourceVersion)
apply "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaimtemplates/wirespeed-nic" "$rct"
expect 200 "re-apply ResourceClaimTemplate"
[[ $(field resourceVersion) == "$rv" ]] || fail "re-applying the same ResourceClaimTemplate changed it"
pass "ResourceClaimTemplate created; re-applying it is a no-op (resourceVersion $rv kept)"

# A broken CEL selector is rejected with the CEL compiler's message.
apply /apis/resource.k8s.io/v1/deviceclasses/wirespeed-broken 'apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: wirespeed-broken
spec:
  selectors:
  - cel:
      expression: device.driver == '
expect 422 "broken CEL syntax"
grep -q 'compilation failed' "$out" || fail "no CEL compiler message: $(cat "$out")"
pass "broken CEL syntax -> 422: $(field message)"
apply /apis/resource.k8s.io/v1/deviceclasses/wirespeed-broken 'apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: wirespeed-broken
spec:
  selectors:
  - cel:
      expression: device.driver == 1'
expect 422 "ill-typed CEL"
grep -q 'no matching overload' "$out" || fail "no CEL type error: $(cat "$out")"
pass "ill-typed CEL -> 422: $(field message)"

# Narrow RBAC can be tested: a service account that may only list pods in
# $ns gets a token (TokenRequest, signed with start.sh's key) that lists
# pods there and is refused in $other.
apply "/api/v1/namespaces/$ns/serviceaccounts/agent" "apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent
  namespace: $ns"
expect 201 "apply ServiceAccount"
apply "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/roles/pod-reader" "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
  namespace: $ns
rules:
- apiGroups: ['']
  resources: [pods]
  verbs: [get, list]"
expect 201 "apply Role"
apply "/apis/rbac.authorization.k8s.io/v1/namespaces/$ns/rolebindings/agent-pod-reader" "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: agent-pod-reader
  namespace: $ns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: pod-reader
subjects:
- kind: ServiceAccount
  name: agent
  namespace: $ns"
expect 201 "apply RoleBinding"
api POST "/api/v1/namespaces/$ns/serviceaccounts/agent/token" application/json \
  '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}'
expect 201 "TokenRequest"
sa_token=$(field token)
[[ -n $sa_token ]] || fail "TokenRequest gave no token"
api -t "$sa_token" GET "/api/v1/namespaces/$ns/pods"
expect 200 "service account lists pods in $ns"
api -t "$sa_token" GET "/api/v1/namespaces/$other/pods"
expect 403 "service account lists pods in $other"
api -t "$sa_token" GET "/api/v1/namespaces/$ns/secrets"
expect 403 "service account lists secrets in $ns"
pass "RBAC: service account token lists pods in $ns (200), not in $other (403), no secrets (403)"

# No scheduler, no kubelet: a pod stays Pending with no node until the test
# writes its status, as a kubelet would.
apply "/api/v1/namespaces/$ns/pods/agent-0" "apiVersion: v1
kind: Pod
metadata:
  name: agent-0
  namespace: $ns
spec:
  serviceAccountName: agent
  containers:
  - name: agent
    image: wirespeed:test"
expect 201 "apply Pod"
api GET "/api/v1/namespaces/$ns/pods/agent-0"
[[ $(field phase) == Pending ]] || fail "new pod not Pending: $(cat "$out")"
grep -q '"nodeName"' "$out" && fail "pod got a node without a scheduler"
pass "pod agent-0 is Pending with no node (no scheduler, no kubelet)"
api PATCH "/api/v1/namespaces/$ns/pods/agent-0/status" application/merge-patch+json \
  '{"status":{"phase":"Running","podIP":"10.244.0.7","podIPs":[{"ip":"10.244.0.7"}],"hostIP":"192.168.0.10","conditions":[{"type":"Ready","status":"True"}]}}'
expect 200 "write pod status"
[[ $(field podIP) == 10.244.0.7 && $(field phase) == Running ]] || fail "pod status not written: $(cat "$out")"
pass "test wrote pod status as a kubelet would: Running, podIP 10.244.0.7"

# A ResourceClaim's allocation and device status (networkData), as the
# scheduler and DraNet would write them.
apply "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaims/agent-0-nic" "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: agent-0-nic
  namespace: $ns
spec:
  devices:
    requests:
    - name: nic
      exactly:
        deviceClassName: wirespeed-dranet"
expect 201 "apply ResourceClaim"
api PATCH "/apis/resource.k8s.io/v1/namespaces/$ns/resourceclaims/agent-0-nic/status" application/merge-patch+json \
  '{"status":{"allocation":{"devices":{"results":[{"request":"nic","driver":"dra.net","pool":"node-a","device":"eth1"}]}},"devices":[{"driver":"dra.net","pool":"node-a","device":"eth1","networkData":{"interfaceName":"eth1","ips":["10.10.1.2/24"],"hardwareAddress":"02:00:0a:0a:01:02"}}]}}'
expect 200 "write ResourceClaim status"
grep -q '"interfaceName": *"eth1"' "$out" || fail "networkData not kept: $(cat "$out")"
pass "ResourceClaim status written: allocation + networkData eth1 10.10.1.2/24"

# No namespace controller: a deleted namespace stays Terminating.
api DELETE "/api/v1/namespaces/$other"
expect 200 "delete namespace $other"
api GET "/api/v1/namespaces/$other"
expect 200 "namespace $other after delete"
[[ $(field phase) == Terminating ]] || fail "deleted namespace not Terminating: $(cat "$out")"
pass "deleted namespace $other stays Terminating (no namespace controller)"

echo "smoke: all checks passed against $SERVER"
