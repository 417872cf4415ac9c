# drive.py IP SRCMODE BUD: runs one 4-flow stream test against `wirespeed serve`
# at IP (warm-up 1 s, 4 s window) through the control protocol
# (docs/protocol.md), with pair.c's source (./pair next to it, SRCMODE and BUD
# as in pair.c) sending the data, and prints the server's own figures. Lets
# the sender be swapped while the wirespeed receiver stays (docs/benchmarks.md,
# "Fifth follow-up"). Environment: SCPU (JSON list, the server's CPUs),
# SRCPIN (a command prefix for the source, e.g. "taskset -c 1").
import socket, struct, json, subprocess, sys, time, os
ip, mode, bud = sys.argv[1], sys.argv[2], sys.argv[3]
c = socket.create_connection((ip, 5300))
def send(o):
    b = json.dumps(o).encode(); c.sendall(struct.pack('>I', len(b)) + b)
def recv():
    h = b''
    while len(h) < 4: h += c.recv(4 - len(h))
    n = struct.unpack('>I', h)[0]; b = b''
    while len(b) < n: b += c.recv(n - len(b))
    return json.loads(b)
c.sendall(b'WSPC'); send({"type":"hello","version":1,"client":"wirespeed 0.1.0"}); recv()
send({"type":"auth","mac":None}); recv()
spec={"workload":"stream","direction":"forward","duration_s":4.0,"warmup_s":1.0,"threads":1,"flows":4,"paths":[{"local":None,"remote":ip}],"msg_size":131072,"request_size":1,"response_size":1,"sndbuf":None,"rcvbuf":None,"congestion":"bbr","nodelay":False,"zerocopy":False,"skip_rx_copy":False,"pacing_bps":None,"client_cpus":[],"server_cpus":json.loads(os.environ.get("SCPU","[]")),"interval_s":0.0,"probe_rr":False,"rate_bps":None,"udp_gso":True,"udp_gro":True,"rr_timeout_s":0.2}
send({"type":"spec","spec":spec}); acc = recv()
env = dict(os.environ, WSTOK=acc["token"], WAIT="1", BUD=bud, CC="bbr")
p = subprocess.Popen(os.environ.get("SRCPIN","").split() + [os.path.join(os.path.dirname(os.path.abspath(__file__)), "pair"),"src",ip,str(acc["data_port"]),"4","5.3",mode,"0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
time.sleep(0.3)
send({"type":"start"}); st = recv()
p.stdin.write(b'g'); p.stdin.flush()
time.sleep(5.0)
send({"type":"stop"}); rep = recv()
out = p.communicate()[0].decode().strip()
r = rep.get("report", rep)
def find(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("window_s", "bytes_received", "bytes_rx", "received_bytes", "rx_bytes") or "bytes" in k: print(path + k, v)
            if isinstance(v, (dict, list)) and k not in ("flows",): find(v, path + k + ".")
print({k:(v if not isinstance(v,(list,dict)) else type(v).__name__) for k,v in r.items()})
tot=sum(f["window_received"] for f in r["flows"]); print("flow keys", list(r["flows"][0].keys())); print("server Gbit/s %.2f" % (tot*8/r["window_s"]/1e9), "srvthread%", r["cpu"]["per_thread_pct"])
print("src:", out, "started:", st.get("type"))
