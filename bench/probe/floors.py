# floors.py ROUNDS SECS: the request/response rows against their bare C
# floors over lab.sh's veth, rounds interleaved with the order rotating:
# 1-byte rr (wirespeed, pingpong.c), 14-byte rr (the same and sockperf
# ping-pong, whose messages cannot be shorter than its 14-byte header) and
# 1-byte crr (wirespeed, crr.c, and crr.c making wirespeed's system calls in
# its order: `ws`, an epoll server and RST closes). Unpinned, SECS after 1 s of warm-up. Prints
# transactions/s, p50 and p99 (us), medians and ranges. Needs root, the C
# programs built in /tmp (gcc -O2 -o /tmp/pingpong pingpong.c; the same for
# crr.c) and WIRESPEED; starts and stops the servers itself.
import rounds
import json, os, re, statistics, subprocess, sys
W = os.environ.get("WIRESPEED", "target/dist/wirespeed")
ROUNDS, D = int(sys.argv[1]), sys.argv[2]
B = "10.77.0.2"

def ns(name, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", name, *cmd], capture_output=True, text=True, timeout=120, **kw)

def ws(workload, size=1):
    out = ns("zcA", W, "bench", B, "-w", workload, "--size", str(size), "-d", D + "s", "--warmup", "1s", "--json")
    r = json.loads(out.stdout)["results"][0]
    return r["transactions_per_s"], r["latency"]["p50_us"], r["latency"]["p99_us"]

def floor(prog, port, size=1, *extra):
    out = ns("zcA", "/tmp/" + prog, "client", B, str(port), D, "1", *([str(size)] if prog == "pingpong" else []), *extra)
    m = re.search(r"tps (\S+) p50 (\S+) p99 (\S+)", out.stdout)
    if not m:
        raise RuntimeError(out.stderr or out.stdout)
    return tuple(float(x) for x in m.groups())

def sockperf():
    out = ns("zcA", "sockperf", "ping-pong", "--tcp", "-i", B, "-p", "7003", "-m", "14", "--full-rtt", "-t", str(int(D) + 1))
    text = out.stdout + out.stderr
    rtt = lambda k: float(re.search(rf"percentile {k} = +(\S+)", text).group(1))
    avg = float(re.search(r"avg-rtt=([0-9.]+)", text).group(1))
    return 1e6 / avg, rtt("50.000"), rtt("99.000")

V = {
    "rr 1 B wirespeed": lambda: ws("rr"),
    "rr 1 B pingpong.c": lambda: floor("pingpong", 7001),
    "rr 14 B wirespeed": lambda: ws("rr", 14),
    "rr 14 B pingpong.c": lambda: floor("pingpong", 7004, 14),
    "rr 14 B sockperf": sockperf,
    "crr 1 B wirespeed": lambda: ws("crr"),
    "crr 1 B crr.c": lambda: floor("crr", 7002),
    "crr 1 B crr.c ws": lambda: floor("crr", 7005, 1, "ws"),
}
servers = [
    subprocess.Popen(["ip", "netns", "exec", "zcB", W, "serve", "--port", "5300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    subprocess.Popen(["ip", "netns", "exec", "zcB", "/tmp/pingpong", "server", "7001", "1"]),
    subprocess.Popen(["ip", "netns", "exec", "zcB", "/tmp/pingpong", "server", "7004", "14"]),
    subprocess.Popen(["ip", "netns", "exec", "zcB", "/tmp/crr", "server", "7002"]),
    subprocess.Popen(["ip", "netns", "exec", "zcB", "/tmp/crr", "server", "7005", "ws"]),
    subprocess.Popen(["ip", "netns", "exec", "zcB", "sockperf", "server", "--tcp", "-i", B, "-p", "7003"], stdout=subprocess.DEVNULL),
]
try:
    import time
    for _ in range(100):  # readiness: every server's port answers
        if all(ns("zcA", "bash", "-c", f"exec 3<>/dev/tcp/{B}/{p}").returncode == 0 for p in (5300, 7001, 7002, 7003, 7004, 7005)):
            break
        time.sleep(0.1)
    names = list(V)
    res = rounds.interleave(V, ROUNDS, "/tmp/floors.json")
    for n in names:
        v = res[n]
        if v:
            col = lambda i: statistics.median(x[i] for x in v)
            rng = lambda i: f"{min(x[i] for x in v):,.1f}-{max(x[i] for x in v):,.1f}"
            print(f"| {n} | {col(0):,.0f} ({rng(0)}) | {col(1):.1f} | {col(2):.1f} ({rng(2)}) | {len(v)} |")
finally:
    for s in servers:
        s.kill()
