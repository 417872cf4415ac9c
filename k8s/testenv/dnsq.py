#!/usr/bin/env python3
"""dnsq.py SERVER NAME: ask SERVER (UDP port 53) for NAME's A records and
print each address on a line; exit 1 with no answer within 2 s. cluster.sh
uses it to check that cluster DNS answers (no dig on a bare machine)."""
import random
import socket
import struct
import sys


def query(server, name):
    qid = random.randrange(1 << 16)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(q, (server, 53))
    r, _ = s.recvfrom(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", r[:8])
    if rid != qid or flags & 0xF:
        return []
    off = len(q)
    out = []
    for _ in range(an):
        while r[off] and r[off] < 0xC0:
            off += r[off] + 1
        off += 2 if r[off] >= 0xC0 else 1
        typ, _cls, _ttl, ln = struct.unpack(">HHIH", r[off : off + 10])
        off += 10
        if typ == 1 and ln == 4:
            out.append(socket.inet_ntoa(r[off : off + 4]))
        off += ln
    return out


if __name__ == "__main__":
    try:
        addrs = query(sys.argv[1], sys.argv[2])
    except (OSError, IndexError, struct.error) as e:
        print(f"dnsq: {e}", file=sys.stderr)
        sys.exit(1)
    for a in addrs:
        print(a)
    sys.exit(0 if addrs else 1)
