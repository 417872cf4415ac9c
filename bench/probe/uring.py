# uring.py ROUNDS SECS PORT: epoll against io_uring (--io uring) over
# loopback, pinned (client workers on CPU 0, server workers on CPU 1),
# rounds interleaved (epoll, uring, epoll, uring, ...) for: one stream
# flow, 1-byte rr, udp-stream of 1400-byte datagrams, and 1-byte rr over
# 8 flows on one thread each side. Prints the
# median and range per row; every run's figures go to /tmp/uring.json.
# Needs `wirespeed serve --port PORT` running and WIRESPEED (the binary);
# ONLY=I,J limits the rows.
import json, subprocess, sys, statistics, os
W = os.environ.get("WIRESPEED", "target/dist/wirespeed")
ROUNDS = int(sys.argv[1]); D = sys.argv[2]; PORT = sys.argv[3]
ROWS = {
    "stream, 1 flow": ["-w", "stream"],
    "rr 1 B": ["-w", "rr", "--size", "1"],
    "udp-stream 1400 B": ["-w", "udp-stream", "-l", "1400"],
    "rr 1 B, 8 flows on 1 thread": ["-w", "rr", "--size", "1", "-F", "8"],
}
# ONLY=2,3 runs only those rows (0-based, in the order above).
if os.environ.get("ONLY"):
    keep = [list(ROWS)[int(i)] for i in os.environ["ONLY"].split(",")]
    ROWS = {k: ROWS[k] for k in keep}
def run(args, io):
    cmd = [W, "bench", "127.0.0.1", "--port", PORT, "-d", D + "s", "--warmup", "0.5s",
           "--pin", "0", "--remote-pin", "1", "--io", io, "--json"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    r = json.loads(out.stdout)["results"][0]
    lat = r.get("latency") or {}
    return dict(gbps=r["throughput_bps"] / 1e9, tps=r["transactions_per_s"],
                p50=lat.get("p50_us"), p99=lat.get("p99_us"),
                lc=r["local_cpu"]["total_pct"], rc=r["remote_cpu"]["total_pct"],
                io=r.get("io_engines"), notes=r["notes"])
res = {(row, io): [] for row in ROWS for io in ("epoll", "uring")}
for rnd in range(ROUNDS):
    for row, args in ROWS.items():
        for io in ("epoll", "uring"):
            res[(row, io)].append(run(args, io))
json.dump({f"{k[0]} / {k[1]}": v for k, v in res.items()}, open("/tmp/uring.json", "w"), indent=1)
med = lambda v, k: statistics.median([x[k] for x in v])
rng = lambda v, k: f"{min(x[k] for x in v):.3g}-{max(x[k] for x in v):.3g}"
for (row, io), v in res.items():
    if row.startswith("rr"):
        print(f"| {row} | {io} | {med(v,'tps'):,.0f} tps ({rng(v,'tps')}) | p50 {med(v,'p50'):.1f} / p99 {med(v,'p99'):.1f} us | {med(v,'lc'):.0f}% / {med(v,'rc'):.0f}% | {len(v)} |")
    else:
        print(f"| {row} | {io} | {med(v,'gbps'):.2f} Gbit/s ({rng(v,'gbps')}) | | {med(v,'lc'):.0f}% / {med(v,'rc'):.0f}% | {len(v)} |")
# Paired by round: uring over epoll of the same round (one after the other).
for row in ROWS:
    k = "tps" if row.startswith("rr") else "gbps"
    ratios = [u[k] / e[k] for e, u in zip(res[(row, "epoll")], res[(row, "uring")])]
    wins = sum(r > 1 for r in ratios)
    print(f"{row}: uring/epoll per round {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}; uring ahead in {wins} of {len(ratios)}")
