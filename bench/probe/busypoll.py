# busypoll.py ROUNDS SECS: 1-byte rr over lab.sh's veth (MTU 1500), plain and
# --busy-poll 50, each with veth GRO off (no NAPI) and on (NAPI), rounds
# interleaved. Prints transactions/s, p50, p99 (us), client/server CPU (% of
# one core). Needs root, WIRESPEED and `wirespeed serve --port 5300` in zcB.
import json, subprocess, sys, statistics
import os
W=os.environ.get("WIRESPEED","target/dist/wirespeed")
ROUNDS=int(sys.argv[1]); D=sys.argv[2]
def gro(on):
    for ns,dev in (("zcA","zcv0"),("zcB","zcv1")):
        subprocess.run(["ip","netns","exec",ns,"ethtool","-K",dev,"gro","on" if on else "off"],check=True,capture_output=True)
def ws(extra, g):
    gro(g)
    out=subprocess.run(["ip","netns","exec","zcA",W,"bench","10.77.0.2","-w","rr","-d",D+"s","--warmup","1s","--json"]+extra,capture_output=True,text=True,timeout=60)
    r=json.loads(out.stdout)["results"][0]
    return dict(t=r["transactions_per_s"],p50=r["latency"]["p50_us"],p99=r["latency"]["p99_us"],lc=r["local_cpu"]["total_pct"],rc=r["remote_cpu"]["total_pct"])
V={"rr":lambda: ws([],False),"rr --busy-poll 50":lambda: ws(["--busy-poll","50"],False),
   "rr, veth GRO on (NAPI)":lambda: ws([],True),"rr --busy-poll 50, veth GRO on (NAPI)":lambda: ws(["--busy-poll","50"],True)}
names=list(V); res={n:[] for n in names}
for r in range(ROUNDS):
    for k in range(len(names)):
        n=names[(k+r)%len(names)]
        try: res[n].append(V[n]())
        except Exception as e: print("fail",n,e,file=sys.stderr)
gro(False)
json.dump(res,open("/tmp/busypoll.json","w"))
m=lambda v,k: statistics.median([x[k] for x in v])
for n in names:
    v=res[n]
    if v: print(f"| {n} | {m(v,'t'):,.0f} | {m(v,'p50'):.1f} | {m(v,'p99'):.1f} | {m(v,'lc'):.0f}% / {m(v,'rc'):.0f}% | {len(v)} |")
