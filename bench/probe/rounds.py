# rounds.py: the interleaving the probe scripts share (bbr4.py, floors.py).
import json, sys, time

def interleave(variants, rounds, save):
    """Runs each of `variants` (name -> function returning a figure) once a
    round for `rounds` rounds, the order rotating by one each round; a
    failed run is reported on stderr and left out. Saves the figures as
    JSON to `save` and returns them, name -> list."""
    names = list(variants)
    res = {n: [] for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            n = names[(k + r) % len(names)]
            try:
                res[n].append(variants[n]())
            except Exception as e:
                print("fail", n, e, file=sys.stderr)
    json.dump(res, open(save, "w"))
    return res


def ready(ns, host, port):
    """Waits until `host`:`port` accepts a TCP connection from namespace
    zcA, `ns(name, *cmd)` running a command in a namespace; raises after
    10 s."""
    for _ in range(100):
        if ns("zcA", "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}").returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing answers on {host}:{port}")
