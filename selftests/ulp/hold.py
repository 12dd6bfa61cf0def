#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Holds one ntbsmc connection open for inspection.

  hold.py server ADDR PORT RELEASE_FILE
  hold.py client ADDR PORT RELEASE_FILE

Both ends set TCP_ULP "ntbsmc"; the client sends N bytes, the server echoes them;
then both keep the connection open until RELEASE_FILE exists (120 s at most) and
print one JSON line: local and peer port, the bytes each way.
"""
import json
import os
import socket
import sys
import time

SOL_TCP, TCP_ULP = 6, 31
N = 100000


def wait_release(path):
    end = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit('hold.py: release file never appeared')
        time.sleep(0.05)


def recv_n(s, n):
    got = 0
    while got < n:
        b = s.recv(n - got)
        if not b:
            sys.exit('hold.py: EOF after %d of %d bytes' % (got, n))
        got += len(b)


def main():
    role, addr, port, release = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    fam = socket.AF_INET6 if ':' in addr else socket.AF_INET

    def mksock():
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(SOL_TCP, TCP_ULP, b'ntbsmc')
        return s

    s = mksock()
    if role == 'server':
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(1)
        s.settimeout(120)
        c, _ = s.accept()
        c.settimeout(120)
        recv_n(c, N)
        c.sendall(b'y' * N)
    else:
        end = time.monotonic() + 30
        while True:
            # a fresh socket per attempt (see xfer.py)
            s.settimeout(120)
            try:
                s.connect((addr, port))
                break
            except ConnectionRefusedError:
                s.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
                s = mksock()
        c = s
        c.sendall(b'x' * N)
        recv_n(c, N)
    print(json.dumps({'local_port': c.getsockname()[1], 'peer_port': c.getpeername()[1],
                      'bytes': N}), flush=True)
    wait_release(release)
    c.close()


if __name__ == '__main__':
    main()
