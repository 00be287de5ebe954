"""A 1 GiB object streamed in and out while the server's memory stays bounded.

A 5 GiB round trip would take too long in CI; 1 GiB already proves the server streams (it is
five times the RSS limit below). Runs in well under two minutes on loopback.
"""

import hashlib
import http.client
import random
import threading
import time

import pytest

from conftest import HOST, UNSIGNED, make_client, sign_v4, unique_bucket

pytestmark = pytest.mark.large

MiB = 1 << 20
GiB = 1 << 30
SIZE = 1 * GiB
RSS_LIMIT_KIB = 200 * 1024


class RssSampler(threading.Thread):
    def __init__(self, srv, interval=0.05):
        super().__init__(daemon=True)
        self.srv, self.interval = srv, interval
        self.max_kib = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            rss = self.srv.rss_kib()
            if rss is not None:
                self.max_kib = max(self.max_kib, rss)
                self.samples += 1
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join(timeout=5)


def pieces(size, seed=99):
    """size bytes in 1 MiB pieces, all different, cheap to produce (no 1 GiB in memory here)."""
    pool = random.Random(seed).randbytes(5 * MiB)
    n = 0
    left = size
    while left > 0:
        k = min(MiB, left)
        off = (n * 7919 * 131) % (4 * MiB)
        piece = n.to_bytes(8, "big") + pool[off + 8: off + k]
        yield piece[:k]
        left -= k
        n += 1


@pytest.fixture
def big_server(server_factory):
    return server_factory(name="large")


def test_1gib_streamed_put_get_bounded_memory(big_server):
    srv = big_server
    client = make_client(srv)
    bucket = unique_bucket("large")
    client.create_bucket(Bucket=bucket)
    path = f"/{bucket}/one-gib.bin"

    sampler = RssSampler(srv)
    sampler.start()
    try:
        # PUT: streamed from a generator, hashed as it goes
        put_md5 = hashlib.md5()
        hdrs, _ = sign_v4("PUT", path, [], {"host": srv.address, "content-length": str(SIZE)},
                          UNSIGNED, srv.access_key, srv.secret_key)
        conn = http.client.HTTPConnection(HOST, srv.port, timeout=120)
        t0 = time.monotonic()
        conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        last_piece = b""
        for piece in pieces(SIZE):
            put_md5.update(piece)
            conn.send(piece)
            last_piece = piece
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        put_s = time.monotonic() - t0
        assert resp.status == 200, body[:500]
        assert resp.getheader("ETag") == f'"{put_md5.hexdigest()}"'

        head = client.head_object(Bucket=bucket, Key="one-gib.bin")
        assert head["ContentLength"] == SIZE

        # GET: streamed, hashed incrementally, never held whole
        hdrs, _ = sign_v4("GET", path, [], {"host": srv.address}, UNSIGNED,
                          srv.access_key, srv.secret_key)
        conn = http.client.HTTPConnection(HOST, srv.port, timeout=120)
        t0 = time.monotonic()
        conn.request("GET", path, headers=hdrs)
        resp = conn.getresponse()
        assert resp.status == 200
        assert int(resp.getheader("Content-Length")) == SIZE
        get_md5 = hashlib.md5()
        got = 0
        for _ in range(SIZE // MiB + 10):
            chunk = resp.read(MiB)
            if not chunk:
                break
            get_md5.update(chunk)
            got += len(chunk)
        conn.close()
        get_s = time.monotonic() - t0
        assert got == SIZE
        assert get_md5.hexdigest() == put_md5.hexdigest()

        # the tail through a ranged GET
        tail = client.get_object(Bucket=bucket, Key="one-gib.bin", Range=f"bytes={SIZE - 100}-")
        assert tail["ContentRange"] == f"bytes {SIZE - 100}-{SIZE - 1}/{SIZE}"
        assert tail["Body"].read() == last_piece[-100:]
    finally:
        sampler.stop()

    print(f"PUT {SIZE / MiB / put_s:.0f} MiB/s, GET {SIZE / MiB / get_s:.0f} MiB/s, "
          f"max RSS {sampler.max_kib / 1024:.1f} MiB over {sampler.samples} samples")
    assert sampler.samples > 10
    assert sampler.max_kib < RSS_LIMIT_KIB, f"server RSS reached {sampler.max_kib / 1024:.1f} MiB"
    client.delete_object(Bucket=bucket, Key="one-gib.bin")
    client.delete_bucket(Bucket=bucket)
