# sched.py ROUNDS: one rr client at a time over lab.sh's veth (14 B each
# way), wirespeed (`bench -w rr --size 14` against `serve` on 5300) and
# pingpong.c (against its server on 7004) alternating, 3 s each; prints
# each client's and server's threads that ran: CPU time, context
# switches, migrations, involuntary switches, read from
# /proc/PID/task/TID/sched 0.3 s and 2.5 s into the run (SAMPLE=1 also
# samples every thread's CPU every 1 ms, which loads the machine and
# changes what it measures). Needs root, lab.sh up, target/dist built
# and pingpong built in target/dist (docs/benchmarks.md, "A probe of the
# small rr rows"). Starts and stops the servers itself.
# sched.py: run one rr client (ws or pingpong) for D s over lab.sh's veth and
# report, per thread of client and server that ran, switches, migrations and
# the CPUs seen (sampled every 1 ms).
import subprocess, sys, time, os, re, json, collections
SAMPLE = os.environ.get("SAMPLE") == "1"
W = "target/dist/wirespeed"; B = "10.77.0.2"; D = 3
def threads(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/sched").read()
            st = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")",1)[1].split()
            name = open(f"/proc/{pid}/task/{t}/comm").read().strip()
        except OSError:
            continue
        g = lambda k: float(re.search(k + r"\s*:\s*(\S+)", s).group(1))
        out[t] = dict(name=name, mig=g("se.nr_migrations"), sw=g("nr_switches"), inv=g("nr_involuntary_switches"), run=g("se.sum_exec_runtime"), cpu=int(st[36]))
    return out
def run(kind, srv_pid):
    if kind == "ws":
        cmd = ["ip","netns","exec","zcA",W,"bench",B,"-w","rr","--size","14","-d",f"{D}s","--warmup","1s","--json"]
    else:
        cmd = ["ip","netns","exec","zcA","target/dist/pingpong","client",B,"7004",str(D),"1","14"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    # the client process: the child of ip netns exec (exec replaces it)
    cpid = p.pid
    a0 = threads(cpid); s0 = threads(srv_pid)
    seen = collections.defaultdict(collections.Counter)
    same = 0; n = 0
    t_end = time.time() + D
    while SAMPLE and time.time() < t_end:
        a = threads(cpid); s = threads(srv_pid)
        for k, v in list(a.items()) + list(s.items()):
            seen[k][v["cpu"]] += 1
        time.sleep(0.001)
    if not SAMPLE: time.sleep(D - 0.5)
    a1 = threads(cpid); s1 = threads(srv_pid)
    out = p.communicate()[0]
    if kind == "ws":
        tps = json.loads(out)["results"][0]["transactions_per_s"]
    else:
        tps = float(re.search(r"tps (\S+)", out).group(1))
    rows = []
    for side, x0, x1 in (("cli", a0, a1), ("srv", s0, s1)):
        for t in x1:
            if t in x0 and x1[t]["run"] - x0[t]["run"] > 50:
                d = {k: x1[t][k] - x0[t][k] for k in ("mig","sw","inv","run")}
                rows.append(f"{side} {x1[t]['name']:<14} run {d['run']:7.0f} ms sw {d['sw']:7.0f} mig {d['mig']:6.0f} inv {d['inv']:5.0f} cpus {dict(seen[t])}")
    return tps, rows
srv_ws = subprocess.Popen(["ip","netns","exec","zcB",W,"serve","--port","5300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
srv_pp = subprocess.Popen(["ip","netns","exec","zcB","target/dist/pingpong","server","7004","14"])
time.sleep(1)
try:
    for r in range(int(sys.argv[1])):
        for kind, sp in (("ws", srv_ws.pid), ("pp", srv_pp.pid)):
            tps, rows = run(kind, sp)
            print(f"== {kind} {tps:,.0f} tps"); print("\n".join(rows)); sys.stdout.flush()
finally:
    srv_ws.kill(); srv_pp.kill()
