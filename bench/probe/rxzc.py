# rxzc.py ROUNDS SECS: one flow, 128 KiB, cubic, interleaved rounds over lab.sh's
# veth (MTU 61492: an MSS of 15 pages): the copy path, --rx-zerocopy with a
# copying and a --zerocopy sender, both again with order-0 page fragments
# (net.core.high_order_alloc_disable=1, host-wide, restored after each run),
# and pair.c as the bare C copy floor. Prints a Markdown table: Gbit/s
# median (min-max), ratio to the floor, client/server CPU, mapped share.
# Needs root, WIRESPEED (the binary; `wirespeed serve --port 5300` running in
# zcB) and PAIR (gcc -O2 -pthread -o bench/probe/pair bench/probe/pair.c).
import json, subprocess, sys, statistics, time
import os
W=os.environ.get("WIRESPEED","target/dist/wirespeed")
PAIR=os.environ.get("PAIR","bench/probe/pair")
ROUNDS=int(sys.argv[1]); D=sys.argv[2] if len(sys.argv)>2 else "3"
CC="cubic"
def hoad(v): open("/proc/sys/net/core/high_order_alloc_disable","w").write(str(v))
def ws(extra, h=0):
    hoad(h)
    try:
        out=subprocess.run(["ip","netns","exec","zcA",W,"bench","10.77.0.2","-d",D+"s","--warmup","1s","-l","128K","--cc",CC,"--json"]+extra,capture_output=True,text=True,timeout=60)
    finally:
        hoad(0)
    r=json.loads(out.stdout)["results"][0]
    z=r["flows"][0].get("rx_zerocopy")
    return dict(g=r["throughput_bps"]/1e9, rcpu=r["remote_cpu"]["total_pct"], lcpu=r["local_cpu"]["total_pct"], frac=(z or {}).get("fraction"))
def cfloor():
    s=subprocess.Popen(["ip","netns","exec","zcB",PAIR,"sink","5999","1","ep"],stdout=subprocess.PIPE,text=True,env={"CC":CC})
    time.sleep(0.3)
    c=subprocess.run(["ip","netns","exec","zcA",PAIR,"src","10.77.0.2","5999","1",D,"ep"],capture_output=True,text=True,env={"CC":CC,"BUD":"16"})
    o=s.communicate(timeout=30)[0]
    return dict(g=float(o.split()[1]), rcpu=None, lcpu=None, frac=None)
V={"copy":lambda: ws([]),
   "rxzc(copy sender)":lambda: ws(["--rx-zerocopy"]),
   "rxzc+zerocopy sender":lambda: ws(["--rx-zerocopy","--zerocopy"]),
   "copy, order-0 frags":lambda: ws([],1),
   "rxzc, order-0 frags":lambda: ws(["--rx-zerocopy"],1),
   "C floor pair.c":cfloor}
names=list(V); res={n:[] for n in names}
for r in range(ROUNDS):
    for k in range(len(names)):
        n=names[(k+r)%len(names)]
        try: res[n].append(V[n]())
        except Exception as e: print("fail",n,e,file=sys.stderr)
    print("round",r+1,"done",file=sys.stderr)
json.dump(res,open("/tmp/rxzc.json","w"))
floor=statistics.median([x["g"] for x in res["C floor pair.c"]]) if res["C floor pair.c"] else 0
for n in names:
    v=res[n]
    if not v: continue
    g=[x["g"] for x in v]; med=statistics.median(g)
    rc=[x["rcpu"] for x in v if x["rcpu"] is not None]; lc=[x["lcpu"] for x in v if x["lcpu"] is not None]
    fr=[x["frac"] for x in v if x["frac"] is not None]
    print(f"| {n} | {med:.2f} ({min(g):.2f}-{max(g):.2f}) | {med/floor if floor else 0:.2f}x | "+(f"{statistics.median(lc):.0f}% / {statistics.median(rc):.0f}%" if rc else "n/a")+" | "+(f"{statistics.median(fr)*100:.1f}%" if fr else "-")+" |")
