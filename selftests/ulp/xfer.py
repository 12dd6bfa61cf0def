#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Checksummed TCP transfer between two hosts, optionally over ntbsmc (TCP_ULP).
"""
xfer.py server ADDR PORT [--ulp] [--conns N]
xfer.py client ADDR PORT [--ulp] [--bytes N] [--write-size N] [--both]

The client sends --bytes of seeded pseudo-random data (and with --both the server
sends the same amount back at the same time); each side checks the SHA-256 of what
it received against what the other sent, and prints one JSON line per connection:
mode and fallback reason (getsockopt SOL_NTBSMC/NTBSMC_INFO), bytes over NTB,
throughput. Exit status 1 on any mismatch or error.
"""
import argparse, hashlib, json, os, socket, struct, sys, threading, time

SOL_TCP, TCP_ULP = 6, 31
SOL_NTBSMC, NTBSMC_INFO = 0x4e54, 1
MODES = ['handshake', 'ntb', 'tcp', 'listen']
REASONS = ['none', 'peer_no_offer', 'peer_smc', 'no_fabric', 'link_down', 'no_buffer',
           'no_memory', 'version', 'timeout', 'declined', 'disabled', 'protocol']


def info(s):
    try:
        b = s.getsockopt(SOL_NTBSMC, NTBSMC_INFO, 40)
    except OSError:
        return {'mode': 'tcp', 'reason': 'no_ulp'}
    mode, reason, peer, lgr, tx, rx, rmb, prmb = struct.unpack('IIIIQQII', b)
    name = lambda t, i: t[i] if i < len(t) else str(i)
    return {'mode': name(MODES, mode), 'reason': name(REASONS, reason),
            'peer_reason': name(REASONS, peer), 'lgr': lgr, 'ntb_tx_bytes': tx,
            'ntb_rx_bytes': rx, 'rmb_size': rmb, 'peer_rmb_size': prmb}


def stream(n, seed):
    """n bytes of reproducible data, in 1 MiB blocks."""
    block = hashlib.sha256(seed.encode()).digest() * 32768
    while n > 0:
        b = block[:min(n, len(block))]
        n -= len(b)
        yield b


def expected_sum(n, seed):
    h = hashlib.sha256()
    for b in stream(n, seed):
        h.update(b)
    return h.hexdigest()


def send(s, n, seed, wsize):
    for b in stream(n, seed):
        for i in range(0, len(b), wsize):
            s.sendall(b[i:i + wsize])


def recv(s, n):
    h, got = hashlib.sha256(), 0
    while got < n:
        b = s.recv(min(1 << 20, n - got))
        if not b:
            break
        h.update(b)
        got += len(b)
    return got, h.hexdigest()


def session(s, role, n, both, wsize, seed):
    """Runs one connection; returns the JSON record."""
    # header: the client announces the size, the direction and the seed
    if role == 'client':
        s.sendall(struct.pack('!QB16s', n, both, seed.encode()[:16].ljust(16)))
    else:
        hdr = b''
        while len(hdr) < 25:
            b = s.recv(25 - len(hdr))
            if not b:
                raise OSError('peer closed before the header')
            hdr += b
        n, both, seed = struct.unpack('!QB16s', hdr)
        seed = seed.decode().strip()
    t0 = time.monotonic()
    res = {}
    sender = role == 'client'
    th = None
    if sender or both:
        th = threading.Thread(target=send, args=(s, n, seed + role, wsize))
        th.start()
    ok = True
    digest = None
    if not sender or both:
        # receive and check; the digest of what arrived goes back to the sender
        peer = 'server' if role == 'client' else 'client'
        got, digest = recv(s, n)
        res['received'] = got
        ok &= got == n and digest == expected_sum(n, seed + peer)
    if th:
        # one writer per stream: the digest follows our own data, never into it
        th.join()
    if digest is not None:
        s.sendall(digest.encode())
    if sender or both:
        # the receiver's digest of what we sent
        back = b''
        while len(back) < 64:
            b = s.recv(64 - len(back))
            if not b:
                break
            back += b
        ok &= back.decode(errors='replace') == expected_sum(n, seed + role)
    res['intact'] = ok
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    secs = time.monotonic() - t0
    res.update(info(s))
    res.update({'role': role, 'bytes': n, 'secs': round(secs, 4),
                'mb_per_s': round(n * (2 if both else 1) / secs / 1e6, 1)})
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('role', choices=['server', 'client'])
    ap.add_argument('addr')
    ap.add_argument('port', type=int)
    ap.add_argument('--ulp', action='store_true')
    ap.add_argument('--bytes', type=int, default=1 << 20)
    ap.add_argument('--write-size', type=int, default=65536)
    ap.add_argument('--both', action='store_true')
    ap.add_argument('--conns', type=int, default=1)
    ap.add_argument('--seed', default='ntbsmc')
    ap.add_argument('--smc', action='store_true', help='a Linux SMC socket (AF_SMC)')
    ap.add_argument('--allow-reset', action='store_true',
                    help='a reset or timeout is an outcome to report, not a failure')
    a = ap.parse_args()
    fam = socket.AF_INET6 if ':' in a.addr else socket.AF_INET
    if a.allow_reset:
        try:
            return run(a, fam)
        except (ConnectionResetError, BrokenPipeError, TimeoutError, socket.timeout) as e:
            # secs: from the connection's establishment to its end
            since = CONNECTED or time.monotonic()
            print(json.dumps({'outcome': 'reset', 'error': type(e).__name__,
                              'secs': round(time.monotonic() - since, 3)}), flush=True)
            sys.exit(0)
    run(a, fam)


def mksock(fam, smc):
    """A TCP socket, or with smc a Linux SMC one (AF_SMC, SMCPROTO_SMC/SMC6).

    Python cannot parse addresses of family AF_SMC, but AF_SMC takes INET
    addresses: the fd is re-wrapped as an AF_INET(6) socket object."""
    if not smc:
        return socket.socket(fam, socket.SOCK_STREAM)
    s = socket.socket(43, socket.SOCK_STREAM, 1 if fam == socket.AF_INET6 else 0)
    return socket.socket(fam, socket.SOCK_STREAM, 0, fileno=s.detach())


CONNECTED = None   # time.monotonic() when the last connection was established


def run(a, fam):
    global CONNECTED
    ok = True
    if a.role == 'server':
        ls = mksock(fam, a.smc)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if a.ulp:
            ls.setsockopt(SOL_TCP, TCP_ULP, b'ntbsmc')
        ls.bind((a.addr, a.port))
        ls.listen(128)
        ls.settimeout(120)
        for _ in range(a.conns):
            s, _ = ls.accept()
            CONNECTED = time.monotonic()
            s.settimeout(120)
            r = session(s, 'server', 0, False, a.write_size, '')
            r['outcome'] = 'ok'
            ok &= r['intact']
            print(json.dumps(r), flush=True)
            s.close()
    else:
        for i in range(a.conns):
            end = time.monotonic() + 30
            while True:
                # a fresh socket per attempt: after a refused non-blocking
                # connect, connecting the same socket again is ECONNABORTED
                s = mksock(fam, a.smc)
                if a.ulp:
                    s.setsockopt(SOL_TCP, TCP_ULP, b'ntbsmc')
                s.settimeout(120)
                try:
                    s.connect((a.addr, a.port))
                    CONNECTED = time.monotonic()
                    break
                except ConnectionRefusedError:
                    s.close()
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.1)
            r = session(s, 'client', a.bytes, a.both, a.write_size, a.seed + str(i))
            r['outcome'] = 'ok'
            ok &= r['intact']
            print(json.dumps(r), flush=True)
            s.close()
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
