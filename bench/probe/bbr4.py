# bbr4.py ROUNDS SECS: four bbr flows on one thread over lab.sh's veth (MTU
# 1500), every sender pinned to CPU 0 and every receiver to CPU 1, rounds
# interleaved with the order rotating: wirespeed (`-F 4 -T 1 -l 128K --cc
# bbr --pin 0 --remote-pin 1`), iperf3 (`-P 4 -l 128K -C bbr -A 0,1`), the
# bare C source and sink in iperf3's pattern (pair.c sel: select, one
# 128 KiB write per socket per pass, BUD=10 passes; one read per ready
# socket) and the same C programs making wirespeed's calls (pair.c epr into
# ep1: epoll on both sides, one send per ready socket per pass, BUD=16, and
# one message of reads per ready socket per wake), and the receiver
# wirespeed had before (epr into ep: up to 16 reads in a row per ready
# socket). Prints Gbit/s received, medians and ranges, and
# the per-round ratios. Needs root, PAIR (the built pair.c), WIRESPEED,
# `wirespeed serve --port 5300` in zcB; starts and stops iperf3's server
# and the C sinks itself.
import rounds
import json, os, re, statistics, subprocess, sys, time
W = os.environ.get("WIRESPEED", "target/dist/wirespeed")
PAIR = os.environ.get("PAIR", "/tmp/pair")
ROUNDS, D = int(sys.argv[1]), sys.argv[2]
B = "10.77.0.2"

def ns(name, *cmd, **kw):
    return subprocess.run(["ip", "netns", "exec", name, *cmd], capture_output=True, text=True, timeout=120, **kw)

def ready(port):
    rounds.ready(ns, B, port)

def ws():
    out = ns("zcA", W, "bench", B, "--port", "5300", "-F", "4", "-T", "1", "-l", "128K", "--cc", "bbr", "-d", D + "s", "--pin", "0", "--remote-pin", "1", "--json")
    return json.loads(out.stdout)["results"][0]["throughput_bps"] / 1e9

def iperf3():
    out = ns("zcA", "iperf3", "-c", B, "-p", "5201", "-P", "4", "-l", "128K", "-C", "bbr", "-t", D, "-A", "0,1", "-J")
    return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9

def pair(src_mode="sel", sink_mode="sel", bud="10"):
    env = dict(os.environ, BUD=bud)
    sink = subprocess.Popen(["ip", "netns", "exec", "zcB", "taskset", "-c", "1", PAIR, "sink", "5999", "4", sink_mode], env=env, stdout=subprocess.PIPE, text=True)
    try:
        # The sink accepts the four flows, so a readiness probe would take
        # one of them: wait for its listening socket instead.
        for _ in range(100):
            if ":5999 " in ns("zcB", "ss", "-Hltn").stdout:
                break
            time.sleep(0.05)
        ns("zcA", "taskset", "-c", "0", PAIR, "src", B, "5999", "4", D, src_mode, env=env)
        out, _ = sink.communicate(timeout=60)
    finally:
        sink.kill()
    return float(re.search(r"sink (\S+) Gbit/s", out).group(1))

V = {
    "4 bbr flows, wirespeed -T 1": ws,
    "4 bbr flows, iperf3 -P 4": iperf3,
    "4 bbr flows, pair.c select (C floor)": pair,
    "4 bbr flows, pair.c epoll (wirespeed's calls)": lambda: pair("epr", "ep1", "16"),
    "4 bbr flows, pair.c epoll, 16 reads in a row (the old receiver)": lambda: pair("epr", "ep", "16"),
}
srv = subprocess.Popen(["ip", "netns", "exec", "zcB", "iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    ready(5201)
    ready(5300)
    names = list(V)
    res = rounds.interleave(V, ROUNDS, "/tmp/bbr4.json")
    for n in names:
        v = res[n]
        if v:
            print(f"| {n} | {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}) | {len(v)} |")
    w, i, c, e, o = (res[n] for n in names)
    for name, x, y in (("wirespeed / iperf3", w, i), ("wirespeed / the C floor", w, c), ("wirespeed / C with its calls", w, e), ("C with wirespeed's calls / the C floor", e, c), ("the old receiver's calls / the C floor", o, c)):
        ratios = [p / q for p, q in zip(x, y)]
        if ratios:
            ahead = sum(r > 1 for r in ratios)
            print(f"{name} per round: median {statistics.median(ratios):.2f}, ahead in {ahead} of {len(ratios)}")
finally:
    srv.kill()
