# ab.py OLD NEW ROUNDS: two wirespeed binaries, each client against its
# own version's server, alternating, over lab.sh's veth (zcA -> zcB,
# `bench/probe/lab.sh up 1500` first); prints each row's medians, the
# ratio new/old and the rounds new was ahead. The rows are those of the
# blocking-sender change (docs/benchmarks.md, "A thread's only sender
# blocks").
import subprocess, json, statistics, sys, time
B = "10.77.0.2"
BIN = {"old": sys.argv[1], "new": sys.argv[2]}
PORT = {"old": 5300, "new": 5301}
ROWS = {
    "s1-bbr": ["-l", "128K", "--cc", "bbr"],
    "s4t-bbr": ["-l", "128K", "-F", "4", "-T", "4", "--cc", "bbr"],
    "s4t-cubic": ["-l", "128K", "-F", "4", "-T", "4", "--cc", "cubic"],
    "d-stream1": [],
}


def run(v, row):
    o = subprocess.run(["ip", "netns", "exec", "zcA", BIN[v], "bench", B, "-p", str(PORT[v]),
                        *ROWS[row], "-d", "3s", "--json"], capture_output=True, text=True, timeout=60)
    r = json.loads(o.stdout)["results"][0]
    return r.get("transactions_per_s") or r["throughput_bps"] / 1e9


srv = [subprocess.Popen(["ip", "netns", "exec", "zcB", BIN[v], "serve", "--port", str(PORT[v])],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for v in BIN]
time.sleep(1.5)
res = {(r, v): [] for r in ROWS for v in BIN}
try:
    for i in range(int(sys.argv[3])):
        for row in ROWS:
            for v in (["old", "new"] if i % 2 == 0 else ["new", "old"]):
                res[(row, v)].append(run(v, row))
        print(i, flush=True)
finally:
    for s in srv:
        s.kill()
for row in ROWS:
    o, n = statistics.median(res[(row, "old")]), statistics.median(res[(row, "new")])
    ahead = sum(1 for a, b in zip(res[(row, "old")], res[(row, "new")]) if b > a)
    print(f"{row}: old {o:,.2f} new {n:,.2f} ratio {n/o:.3f} new ahead {ahead}/{len(res[(row, 'new')])}")
