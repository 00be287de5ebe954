"""S3 over RDMA against hostile clients (issue 11, defect 6), real binary, soft fabric.

The soft fabric's "client target" is a TCP listener the server connects to (docs/s3-over-rdma.md,
src/rdma/soft/soft_wire.h). A target written here accepts the server's connection, completes the
handshake, then answers each work request one byte every few seconds (a PUT's RDMA READ reply) or
reads a GET's RDMA WRITE payload one byte at a time. Before the fix each byte reset a per-call
socket timeout, so such a request held its handler thread and staging buffer forever; 32 of them
took every staging buffer. Now progress is measured on bytes moved (RDMASTOR_RDMA_PROGRESS_TIMEOUT
/ RDMASTOR_RDMA_MIN_RATE), one client runs at most RDMASTOR_RDMA_TRANSFERS_PER_CLIENT transfers,
and plain HTTP clients are served meanwhile.
"""

import concurrent.futures
import contextlib
import hashlib
import socket
import struct
import threading
import time

from conftest import HOST, assert_server_alive, scrape, signed_request, unique_bucket

MAGIC = 0x31465352  # "RSF1"
OP_WRITE, OP_READ = 1, 2
HELLO = struct.Struct("<II")           # magic, qpn
REQUEST = struct.Struct("<B3xIQQII")   # op, rkey, wr_id, remote_addr, length, pad
REPLY = struct.Struct("<QII")          # wr_id, status, length
QPN = 0x1234
EMPTY_SHA = hashlib.sha256(b"").hexdigest()

PROGRESS = 2.0  # RDMASTOR_RDMA_PROGRESS_TIMEOUT in these tests, seconds
ENV = {"MINIO_RDMA_FABRIC": "soft", "RDMASTOR_RDMA_PROGRESS_TIMEOUT": "2s",
       "RDMASTOR_RDMA_MIN_RATE": "64KiB"}


def token(port, rsize, ip=HOST):
    # raddr:rsize:rkey:lid:qpn:has_gid:gid; lid = the target's TCP port, gid ::ffff:<ip>
    return "%016x:%08x:%08x:%04x:%06x:%01x:%016x%016x" % (
        0x100000, rsize, 7, port, QPN, 1, 0,
        0x0000ffff00000000 | int.from_bytes(socket.inet_aton(ip), "big"))


def _recv_exact(conn, n, stop):
    buf = b""
    while len(buf) < n and not stop.is_set():
        try:
            piece = conn.recv(n - len(buf))
        except socket.timeout:
            continue
        if not piece:
            raise ConnectionError("closed")
        buf += piece
    if len(buf) < n:
        raise ConnectionError("stopped")
    return buf


class Target:
    """A soft-fabric client target. mode "trickle": one byte every `every` seconds of each reply
    (READ) and of each payload read (WRITE); mode "honest": at full speed. Bounded: every
    connection ends when stop() is called or after `max_seconds`."""

    def __init__(self, mode="trickle", every=1.0, max_seconds=60.0, host=HOST):
        self.mode, self.every, self.max_seconds = mode, every, max_seconds
        self.stop_event = threading.Event()
        self.listener = socket.socket()
        self.listener.bind((host, 0))
        self.listener.listen(128)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        end = time.monotonic() + self.max_seconds
        while not self.stop_event.is_set() and time.monotonic() < end:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            t = threading.Thread(target=self._serve, args=(conn, end), daemon=True)
            t.start()
            self.threads.append(t)

    def _dribble(self, conn, data, end):
        for i in range(len(data)):
            if self.stop_event.is_set() or time.monotonic() > end:
                raise ConnectionError("stopped")
            conn.sendall(data[i:i + 1])
            self.stop_event.wait(self.every)

    def _serve(self, conn, end):
        conn.settimeout(0.5)
        with contextlib.suppress(OSError, ConnectionError), conn:
            magic, qpn = HELLO.unpack(_recv_exact(conn, HELLO.size, self.stop_event))
            conn.sendall(HELLO.pack(MAGIC, 0 if (magic, qpn) == (MAGIC, QPN) else 1))
            while time.monotonic() < end:
                op, _, wr_id, _, length, _ = REQUEST.unpack(
                    _recv_exact(conn, REQUEST.size, self.stop_event))
                if op == OP_READ:
                    reply = REPLY.pack(wr_id, 0, length) + b"r" * length
                    if self.mode == "honest":
                        conn.sendall(reply)
                    else:
                        self._dribble(conn, reply, end)
                else:
                    if self.mode == "honest":
                        _recv_exact(conn, length, self.stop_event)
                    else:
                        for _ in range(length):
                            _recv_exact(conn, 1, self.stop_event)
                            self.stop_event.wait(self.every)
                    conn.sendall(REPLY.pack(wr_id, 0, length))

    def stop(self):
        self.stop_event.set()
        self.listener.close()
        for t in self.threads:
            t.join(timeout=5)


def _rdma(srv, method, path, tok, timeout, source=None):
    t0 = time.monotonic()
    try:
        r = signed_request(srv, method, path, headers={"x-amz-rdma-token": tok},
                           payload_hash="UNSIGNED-PAYLOAD" if method == "PUT" else EMPTY_SHA,
                           timeout=timeout, source=source)
        return r.status, r.header("x-amz-rdma-reply"), r.body, time.monotonic() - t0
    except (OSError, TimeoutError) as e:  # no answer within `timeout`
        return None, None, repr(e).encode(), time.monotonic() - t0


def _plain_http_round(srv, bucket, i):
    c = srv.client(read_timeout=10)
    t0 = time.monotonic()
    body = b"plain %d" % i
    c.put_object(Bucket=bucket, Key=f"plain-{i}", Body=body)
    assert c.get_object(Bucket=bucket, Key=f"plain-{i}")["Body"].read() == body
    return time.monotonic() - t0


def test_trickling_rdma_targets_are_cut_off_and_do_not_starve_http(server_factory):
    """32 RDMA requests (16 PUT, 16 GET of 1 MiB) whose targets move one byte per second, from
    one client address, beside plain HTTP clients. Each RDMA request is answered within the
    progress window (2 s of waiting with less than 64 KiB/s × 2 s moved) plus slack, or refused
    at once beyond the per-client cap (default 8); plain clients are served throughout; the
    staging buffers and caps are free again afterwards (an honest target's PUT succeeds)."""
    srv = server_factory(name="rdma-abuse", env=ENV)
    s3 = srv.client()
    bucket = unique_bucket("rdmab")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="big", Body=b"g" * (1 << 20))
    target = Target(mode="trickle", every=1.0, max_seconds=60.0)
    results = []
    try:
        tok = token(target.port, 1 << 20)
        with concurrent.futures.ThreadPoolExecutor(max_workers=40) as pool:
            rdma = [pool.submit(_rdma, srv, "PUT" if i % 2 == 0 else "GET",
                                f"/{bucket}/" + (f"up-{i}" if i % 2 == 0 else "big"), tok, 25)
                    for i in range(32)]
            time.sleep(0.5)
            # Plain HTTP from the same address while the tricklers hold what they can.
            slowest = 0.0
            for rnd in range(3):
                plain = [pool.submit(_plain_http_round, srv, bucket, rnd * 8 + i) for i in range(8)]
                slowest = max([slowest] + [f.result(timeout=30) for f in plain])
            results = [f.result(timeout=40) for f in rdma]
    finally:
        target.stop()
    unanswered = [r for r in results if r[0] is None]
    assert not unanswered, f"{len(unanswered)} RDMA requests held past 25 s: {unanswered[:2]}"
    assert slowest < 5.0, f"plain HTTP clients waited {slowest:.1f} s beside the tricklers"
    refused = [r for r in results if r[0] == 503]
    cut = [r for r in results if r[0] in (500, 501)]
    print(f"32 trickling RDMA requests: {len(refused)} refused (503), {len(cut)} cut off, the last "
          f"after {max([r[3] for r in cut] or [0]):.1f} s; plain HTTP round at most {slowest:.2f} s")
    assert len(refused) + len(cut) == 32, [(r[0], r[2][:200]) for r in results]
    assert all(b"<Code>SlowDown</Code>" in r[2] for r in refused)
    assert 8 <= len(cut) <= 16, len(cut)  # the cap (8) plus those that started after one ended
    # Cut off after one progress window of waiting, not after their 1 MiB at one byte a second.
    latest = max(r[3] for r in cut)
    assert latest < 2 * PROGRESS + 6, latest
    assert all(r[1] in ("500", "501") for r in cut)
    # Nothing was stored from a trickled PUT; the buffers and caps are released.
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert not any(k.startswith("up-") for k in keys), keys
    honest = Target(mode="honest", max_seconds=30.0)
    try:
        for i in range(10):  # more than the cap, one after the other
            status, reply, body, _ = _rdma(srv, "PUT", f"/{bucket}/honest-{i}",
                                           token(honest.port, 256 << 10), 20)
            assert (status, reply) == (200, "200"), body[:300]
    finally:
        honest.stop()
    assert s3.head_object(Bucket=bucket, Key="honest-9")["ContentLength"] == 256 << 10
    assert_server_alive(srv)


def test_slow_but_steady_target_is_not_cut_off(server_factory):
    """A target at about twice RDMASTOR_RDMA_MIN_RATE (128 KiB/s against 64 KiB/s) keeps its
    transfer although it takes several progress windows: the deadline is on progress, not on
    the wall clock."""
    srv = server_factory(name="rdma-steady", env=ENV)
    s3 = srv.client()
    bucket = unique_bucket("rdmas")
    s3.create_bucket(Bucket=bucket)

    class Steady(Target):
        def _dribble(self, conn, data, end):
            for i in range(0, len(data), 16 << 10):  # 16 KiB every 1/8 s
                conn.sendall(data[i:i + (16 << 10)])
                self.stop_event.wait(0.125)

    target = Steady(mode="trickle", max_seconds=60.0)
    try:
        status, reply, body, took = _rdma(srv, "PUT", f"/{bucket}/steady",
                                          token(target.port, 768 << 10), 40)
    finally:
        target.stop()
    assert (status, reply) == (200, "200"), body[:300]
    assert took > 2 * PROGRESS, took  # it did span several windows
    assert s3.head_object(Bucket=bucket, Key="steady")["ContentLength"] == 768 << 10


def _ceiling_hits(metrics, ceiling, outcome):
    return metrics.get(
        f'rdmastor_rdma_ceiling_hits_total{{ceiling="{ceiling}",outcome="{outcome}"}}', 0)


def test_small_ceilings_answer_slowdown_and_are_counted(server_factory):
    """Issue 37 item 10: with RDMASTOR_RDMA_TRANSFERS_MAX=2, _PER_CLIENT=1 and _WAIT=1s, two
    client hosts (127.0.0.1 and 127.0.0.2, each with a trickling target) hold both transfers. A
    second request from the first host gets 503 at once (its own cap); a request from a third host
    waits 1 s for a staging buffer, then gets 503 naming RDMASTOR_RDMA_TRANSFERS_MAX. Both show in
    rdmastor_rdma_ceiling_hits_total; once the holders are cut off, the third host is served."""
    env = dict(ENV, RDMASTOR_RDMA_PROGRESS_TIMEOUT="4s", RDMASTOR_RDMA_TRANSFERS_MAX="2",
               RDMASTOR_RDMA_TRANSFERS_PER_CLIENT="1", RDMASTOR_RDMA_TRANSFERS_WAIT="1s",
               MINIO_PROMETHEUS_AUTH_TYPE="public")
    srv = server_factory(name="rdma-ceilings", env=env)
    assert "RDMA ceilings: 2 S3 transfers (1 per client address)" in srv.log_text(), \
        srv.log_tail()
    s3 = srv.client()
    bucket = unique_bucket("rdmac")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="big", Body=b"c" * (1 << 20))
    before = scrape(srv)
    hosts = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
    targets = {ip: Target(mode="trickle", every=1.0, max_seconds=30.0, host=ip) for ip in hosts}

    def get_from(target, ip):
        return _rdma(srv, "GET", f"/{bucket}/big", token(target.port, 1 << 20, ip), 20, source=ip)

    def get(ip):
        return get_from(targets[ip], ip)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            held = [pool.submit(get, ip) for ip in hosts[:2]]
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not all(targets[ip].accepted for ip in hosts[:2]):
                time.sleep(0.05)
            assert all(targets[ip].accepted for ip in hosts[:2]), "the holders never connected"
            same_host = get(hosts[0])
            third = get(hosts[2])
            held = [f.result(timeout=30) for f in held]
        honest = targets["honest"] = Target(mode="honest", max_seconds=20.0, host=hosts[2])
        served = get_from(honest, hosts[2])
    finally:
        for t in targets.values():
            t.stop()
    after = scrape(srv)
    assert same_host[0] == 503 and b"<Code>SlowDown</Code>" in same_host[2], same_host
    assert b"RDMASTOR_RDMA_TRANSFERS_PER_CLIENT" in same_host[2], same_host[2][:400]
    assert same_host[3] < 1.0, same_host[3]  # refused at once, no wait
    assert third[0] == 503 and b"RDMASTOR_RDMA_TRANSFERS_MAX" in third[2], third
    assert 0.9 <= third[3] < 4.0, third[3]  # after the 1 s wait, before the holders ended
    assert all(r[0] in (500, 501) for r in held), held  # cut off by the progress check
    assert served[:2] == (200, "200"), served[2][:300]
    assert _ceiling_hits(after, "transfers_per_client", "refused") - \
        _ceiling_hits(before, "transfers_per_client", "refused") == 1
    assert _ceiling_hits(after, "transfers_max", "refused") - \
        _ceiling_hits(before, "transfers_max", "refused") == 1
    assert_server_alive(srv)
