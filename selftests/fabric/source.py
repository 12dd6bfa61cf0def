#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# source.py ADDR PORT FILE: connects and sends FILE, then closes.
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120)
with open(sys.argv[3], 'rb') as f:
    c.sendall(f.read())
c.shutdown(socket.SHUT_WR)
c.recv(1)
c.close()
