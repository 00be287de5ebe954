"""Small GETs served on the I/O thread that parsed them (issue 39 item 1; s3/http_server.cc
TryInline, common/no_block.h).

The counter rdmastor_s3_inline_requests_total{result="served"} proves which reads took the fast
path. What must hold there as on a worker: a read right after an acknowledged write sees that
write (never an older version), even while writers and readers race; and a client that sends
requests without reading the answers holds no thread, so other clients are served meanwhile."""
import hashlib
import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

from conftest import HOST, Server, boto3_error_code, make_client, scrape, seeded_bytes, unique_bucket

ENV = {"MINIO_PROMETHEUS_AUTH_TYPE": "public", "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"}


def served_inline(srv):
    return scrape(srv).get('rdmastor_s3_inline_requests_total{result="served"}', 0)


@pytest.fixture(scope="module", params=[1, 4], ids=["1drive", "4drives"])
def srv(request):
    base = tempfile.mkdtemp(prefix="rdmastor-it-inl-", dir="/tmp")
    s = Server(f"inl{request.param}", env=ENV,
               data_dirs=[os.path.join(base, f"d{i}") for i in range(request.param)])
    try:
        s.start()
    except RuntimeError as e:
        s.cleanup()
        pytest.fail(str(e))
    yield s
    s.cleanup()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def s3(srv):
    return make_client(srv)


@pytest.fixture
def bkt(s3):
    b = unique_bucket("inl")
    s3.create_bucket(Bucket=b)
    return b


def test_read_after_overwrite_on_fast_path(srv, s3, bkt):
    first = seeded_bytes(4096, 1)
    s3.put_object(Bucket=bkt, Key="k", Body=first)
    assert s3.get_object(Bucket=bkt, Key="k")["Body"].read() == first  # caches the metadata
    before = served_inline(srv)
    rounds = 40
    # Same sizes and different ones, empty included: every overwrite read back at once.
    for i in range(rounds):
        data = seeded_bytes([4096, 4096, 0, 60 << 10, 1][i % 5], 100 + i)
        s3.put_object(Bucket=bkt, Key="k", Body=data)
        got = s3.get_object(Bucket=bkt, Key="k")
        assert got["Body"].read() == data, f"overwrite {i}: a stale read"
        assert got["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
        assert s3.head_object(Bucket=bkt, Key="k")["ContentLength"] == len(data)
        # Ranges of the new bytes, too.
        if len(data) > 100:
            part = s3.get_object(Bucket=bkt, Key="k", Range="bytes=10-99")["Body"].read()
            assert part == data[10:100]
    # The first GET after a write misses the cache (a worker reads the drive), the HEAD and the
    # ranged GET then find it cached: the fast path served most of these reads.
    assert served_inline(srv) - before >= rounds, "the reads did not take the fast path"
    s3.delete_object(Bucket=bkt, Key="k")
    assert boto3_error_code(s3.get_object, Bucket=bkt, Key="k") == [404, "NoSuchKey"]


def test_racing_overwrites_never_read_stale(srv, s3, bkt):
    """A writer overwrites one key; readers check that every GET returns a version at least as new
    as the last one acknowledged before the GET began, and that body and ETag agree."""
    size = 4096
    versions = [seeded_bytes(size, 1000 + i) for i in range(60)]
    by_digest = {hashlib.md5(v).hexdigest(): i for i, v in enumerate(versions)}
    s3.put_object(Bucket=bkt, Key="r", Body=versions[0])
    acked = [0]
    errors = []
    done = threading.Event()
    before = served_inline(srv)

    def writer():
        w = make_client(srv)
        try:
            for i in range(1, len(versions)):
                w.put_object(Bucket=bkt, Key="r", Body=versions[i])
                acked[0] = i
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"writer: {e!r}")
        finally:
            done.set()

    def reader(n):
        r = make_client(srv)
        deadline = time.monotonic() + 60
        try:
            while not done.is_set() and time.monotonic() < deadline:
                floor = acked[0]
                got = r.get_object(Bucket=bkt, Key="r")
                data = got["Body"].read()
                digest = hashlib.md5(data).hexdigest()
                if got["ETag"] != '"%s"' % digest:
                    errors.append(f"reader {n}: ETag {got['ETag']} for a body of MD5 {digest}")
                    return
                seen = by_digest.get(digest)
                if seen is None or seen < floor:
                    errors.append(f"reader {n}: read version {seen} after {floor} was acknowledged")
                    return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"reader {n}: {e!r}")

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, errors
    assert s3.get_object(Bucket=bkt, Key="r")["Body"].read() == versions[-1]
    assert served_inline(srv) > before, "no read took the fast path"


def test_client_that_does_not_read_stalls_nobody(srv, s3, bkt):
    """Connections that send GETs of a 60 KiB object back to back and never read the answers
    (more of them than the server has I/O threads) must not keep other clients waiting: each
    answer is written from the connection's strand as the socket takes it, never by a thread
    that waits on it."""
    data = seeded_bytes(60 << 10, 7)
    s3.put_object(Bucket=bkt, Key="big", Body=data)
    s3.put_object(Bucket=bkt, Key="small", Body=b"x" * 100)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bkt, "Key": "big"},
                                    ExpiresIn=600)
    target = url[url.index("/", len("http://")):]
    request = (f"GET {target} HTTP/1.1\r\nHost: {srv.address}\r\n\r\n").encode()
    before = served_inline(srv)
    hostile = []
    try:
        for _ in range(8):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.settimeout(5)
            c.connect((HOST, srv.port))
            # 300 requests x 60 KiB: far more than the socket buffers hold, so the server ends up
            # with answers it cannot hand over. Sent without blocking past what the kernel takes.
            c.setblocking(False)
            try:
                c.send(request * 300)
            except BlockingIOError:
                pass
            hostile.append(c)
        time.sleep(0.5)  # the server has filled those sockets by now
        assert served_inline(srv) > before, "the stalled GETs were not served on the fast path"
        # Meanwhile another client reads, within a bound far below the send timeout (30 s).
        other = make_client(srv, read_timeout=10)
        started = time.monotonic()
        for i in range(50):
            t0 = time.monotonic()
            assert other.get_object(Bucket=bkt, Key="small")["Body"].read() == b"x" * 100
            assert time.monotonic() - t0 < 2, f"GET {i} waited behind the stalled connections"
        assert time.monotonic() - started < 10
    finally:
        for c in hostile:
            c.close()
    # Once they are gone the server serves as before.
    assert s3.get_object(Bucket=bkt, Key="big")["Body"].read() == data
