#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Receive-buffer sizing over NTB, one side of it.

  buffers.py server ADDR PORT COUNTFILE OUT  accept ULP connections until there are
                                             as many as COUNTFILE says; write OUT;
                                             read each to EOF, check its bytes,
                                             write OUT again
  buffers.py client ADDR PORT MAX GOFILE OUT connect (ULP) until a connection falls
                                             back or MAX are open; write OUT; once
                                             GOFILE exists send data on some, close
                                             them all, write OUT again

Each entry of OUT is a connection: its NTBSMC_INFO, "port" (the client's port, to
match the two sides' lists), and after the data phase "sent" (client), "received"
and "intact" (server).

A connection's receive buffer is its own (getsockopt NTBSMC_INFO rmb_size); the
client's first connection sets SO_RCVBUF to 40000 bytes, which must give it a
64 KiB buffer (half the kernel's doubled value, rounded up to a power of two).
"""
import json
import os
import select
import socket
import struct
import sys
import time

TCP_ULP = 31
SOL_NTBSMC = 0x4e54
NTBSMC_INFO = 1
INFO = struct.Struct('<IIIIQQIIQQQ')
MODES = ['handshake', 'ntb', 'tcp', 'listen']
REASONS = ['none', 'peer_no_offer', 'peer_smc', 'no_fabric', 'link_down', 'no_buffer',
           'no_memory', 'version', 'timeout', 'declined', 'disabled', 'protocol']
PATTERN = bytes(range(251)) * 4096     # a period that is no power of two
SEND = 1 << 20                         # bytes sent on each connection that carries data


def info(s):
    """NTBSMC_INFO once the handshake ended: connect() and accept() may return
    before it did."""
    end = time.monotonic() + 60
    while True:
        i = info_now(s)
        if i['mode'] != 'handshake' or time.monotonic() > end:
            return i
        time.sleep(0.05)


def info_now(s):
    (mode, reason, peer_reason, lgr, tx, rx, rmb, peer_rmb,
     _cpu, _dma, _zc) = INFO.unpack(s.getsockopt(SOL_NTBSMC, NTBSMC_INFO, INFO.size))
    return {'mode': MODES[mode], 'reason': REASONS[reason],
            'peer_reason': REASONS[peer_reason], 'lgr_id': lgr, 'tx_bytes': tx,
            'rx_bytes': rx, 'rmb_size': rmb, 'peer_rmb_size': peer_rmb}


def family(addr):
    return socket.AF_INET6 if ':' in addr else socket.AF_INET


def expected(n):
    out = bytearray()
    while len(out) < n:
        out += PATTERN[:n - len(out)]
    return bytes(out)


def dump(entries, out):
    with open(out + '.tmp', 'w') as f:
        json.dump(entries, f)
    os.rename(out + '.tmp', out)


def wait_file(path, secs):
    end = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > end:
            sys.exit(f'timed out waiting for {path}')
        time.sleep(0.2)


def server(addr, port, countfile, out):
    ls = socket.socket(family(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b'ntbsmc')
    ls.bind((addr, port))
    ls.listen(1024)
    conns = []
    while not os.path.exists(countfile) or len(conns) < int(open(countfile).read()):
        if select.select([ls], [], [], 0.2)[0]:
            s, peer = ls.accept()
            conns.append((s, peer[1]))
    for k, (s, port) in enumerate(conns):
        i = info(s)
        i['port'] = port
        conns[k] = (s, i)
    dump([i for _, i in conns], out)
    want = expected(SEND)
    res = []
    for s, i in conns:
        s.settimeout(120)
        got = bytearray()
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            got += b
        i['received'] = len(got)
        i['intact'] = not got or bytes(got) == want
        i['rx_bytes'] = info_now(s)['rx_bytes']
        s.close()
        res.append(i)
    dump(res, out)


def client(addr, port, most, gofile, out):
    conns = []
    for n in range(most):
        s = socket.socket(family(addr), socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b'ntbsmc')
        if n == 0:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 40000)
        s.settimeout(30)
        s.connect((addr, port))
        i = info(s)
        i['port'] = s.getsockname()[1]
        conns.append((s, i))
        if i['mode'] != 'ntb':
            break
    dump([i for _, i in conns], out)
    wait_file(gofile, 300)
    # Data through the first, second and last buffer over NTB, and every 16th.
    ntb = [k for k, (_, i) in enumerate(conns) if i['mode'] == 'ntb']
    carry = set(ntb[:2] + ntb[-1:] + ntb[::16])
    data = expected(SEND)
    for k, (s, i) in enumerate(conns):
        if k in carry:
            s.sendall(data)
            i['sent'] = SEND
            i['tx_bytes'] = info_now(s)['tx_bytes']
        s.shutdown(socket.SHUT_WR)
    for s, _ in conns:
        s.close()
    dump([i for _, i in conns], out)


if __name__ == '__main__':
    if sys.argv[1] == 'server':
        server(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6])
