#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# sink.py ADDR PORT FILE: accepts one TCP connection and stores what it receives.
import socket, sys
s = socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(120)
c, _ = s.accept()
c.settimeout(120)
with open(sys.argv[3], 'wb') as f:
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        f.write(b)
