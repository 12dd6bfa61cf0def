#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""memc.py HOST PORT CONNS ROUNDS DEPTH: a pipelining memcached client.

On each of CONNS connections, ROUNDS times: DEPTH "set" commands in one write,
their DEPTH "STORED" replies, then DEPTH "get"s in one write and the values
read back and compared; values are 1..64 KiB, a function of connection, round
and key. Prints one JSON line; exit 1 on a wrong or missing reply, or when a
reply does not come within 10 s (a stall).
"""
import json
import socket
import sys
import time


PATTERN = bytes(range(256)) * 257
CACHE = {}


def value(c, r, k):
    if (c, r, k) not in CACHE:
        n = 1 + (c * 7919 + r * 104729 + k * 1299709) % 65536
        o = (c * 131 + r * 7 + k * 3) & 0xff
        CACHE[(c, r, k)] = PATTERN[o:o + n]
    return CACHE[(c, r, k)]


def readline(s, buf):
    while b"\r\n" not in buf:
        d = s.recv(1 << 16)
        if not d:
            raise SystemExit(json.dumps({"error": "EOF from memcached"}))
        buf += d
    line, _, rest = buf.partition(b"\r\n")
    return line, rest


def readn(s, buf, n):
    while len(buf) < n:
        d = s.recv(1 << 16)
        if not d:
            raise SystemExit(json.dumps({"error": "EOF from memcached"}))
        buf += d
    return buf[:n], buf[n:]


def main():
    host, port, conns, rounds, depth = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
    t0, nbytes, ops = time.time(), 0, 0
    socks = [socket.create_connection((host, port), timeout=10) for _ in range(conns)]
    try:
        for r in range(rounds):
            for c, s in enumerate(socks):
                req = b"".join(b"set k%d.%d.%d 0 0 %d\r\n%s\r\n" %
                               (c, r, k, len(value(c, r, k)), value(c, r, k))
                               for k in range(depth))
                s.sendall(req)
                nbytes += len(req)
            for c, s in enumerate(socks):
                buf = b""
                for k in range(depth):
                    line, buf = readline(s, buf)
                    if line != b"STORED":
                        raise SystemExit(json.dumps({"error": "set k%d.%d.%d: %r" % (c, r, k, line)}))
                s.sendall(b"".join(b"get k%d.%d.%d\r\n" % (c, r, k) for k in range(depth)))
                for k in range(depth):
                    want = value(c, r, k)
                    line, buf = readline(s, buf)
                    if line != b"VALUE k%d.%d.%d 0 %d" % (c, r, k, len(want)):
                        raise SystemExit(json.dumps({"error": "get k%d.%d.%d: %r" % (c, r, k, line[:80])}))
                    data, buf = readn(s, buf, len(want) + 2)
                    end, buf = readline(s, buf)
                    if data[:-2] != want or end != b"END":
                        raise SystemExit(json.dumps({"error": "get k%d.%d.%d: value differs" % (c, r, k)}))
                    nbytes += len(want)
                ops += 2 * depth
    except socket.timeout:
        raise SystemExit(json.dumps({"error": "no reply within 10 s (stall)", "ops": ops}))
    print(json.dumps({"ops": ops, "bytes": nbytes, "seconds": round(time.time() - t0, 3)}))


main()
