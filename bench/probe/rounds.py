# rounds.py: the interleaving the probe scripts share (bbr4.py, floors.py).
import json, sys

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
