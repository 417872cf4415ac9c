# users4.py ROUNDS SECS: four flows as users type them, unpinned, over
# lab.sh's veth (MTU 1500), rounds interleaved with the order rotating:
# `wirespeed bench -F 4` with its defaults and with one setting changed at
# a time, against `iperf3 -P 4` (Debian's 3.12, one thread) and, when
# IPERF321 names it, iperf3 3.21 (a thread per stream). Prints Gbit/s
# received, medians and ranges, and each variant's per-round ratio to the
# best iperf3. Needs root, WIRESPEED, `wirespeed serve --port 5300` in zcB;
# starts and stops the iperf3 servers itself.
import rounds
import json, os, statistics, subprocess, sys, time
W = os.environ.get("WIRESPEED", "target/dist/wirespeed")
I321 = os.environ.get("IPERF321")
ROUNDS, D = int(sys.argv[1]), sys.argv[2]
EXTRA = [v for v in os.environ.get("VARIANTS", "").split(";") if v]
B = "10.77.0.2"

def ns(name, *cmd):
    return subprocess.run(["ip", "netns", "exec", name, *cmd], capture_output=True, text=True, timeout=120)

def ready(port):
    rounds.ready(ns, B, port)

def ws(*extra):
    def run():
        out = ns("zcA", W, "bench", B, "--port", "5300", "-F", "4", "-d", D + "s", "--json", *extra)
        return json.loads(out.stdout)["results"][0]["throughput_bps"] / 1e9
    return run

def iperf3(binary, port):
    def run():
        out = ns("zcA", binary, "-c", B, "-p", port, "-P", "4", "-t", D, "-O", "1", "-J")
        return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    return run

V = {"wirespeed -F 4": ws(), "iperf3 3.12 -P 4": iperf3("iperf3", "5201")}
for e in EXTRA:
    V["wirespeed -F 4 " + e] = ws(*e.split())
srvs = [subprocess.Popen(["ip", "netns", "exec", "zcB", "iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
if I321:
    V["iperf3 3.21 -P 4"] = iperf3(I321, "5202")
    srvs.append(subprocess.Popen(["ip", "netns", "exec", "zcB", I321, "-s", "-p", "5202"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
try:
    ready(5201)
    ready(5300)
    if I321:
        ready(5202)
    res = rounds.interleave(V, ROUNDS, "/tmp/users4.json")
    for n, v in res.items():
        if v:
            print(f"| {n} | {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}) | {len(v)} |")
    peers = [res[n] for n in res if n.startswith("iperf3")]
    best = [max(xs) for xs in zip(*peers)]
    for n, v in res.items():
        if n.startswith("wirespeed") and len(v) == len(best):
            r = [p / q for p, q in zip(v, best)]
            print(f"{n} / best iperf3 per round: median {statistics.median(r):.2f}, ahead in {sum(x > 1 for x in r)} of {len(r)}")
finally:
    for s in srvs:
        s.kill()
