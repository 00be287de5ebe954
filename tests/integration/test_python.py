"""The Python package rdmastor (python/, built into <build>/python) against the real server on the
soft fabric: round trips into every buffer kind, ranges, multipart, errors, threads, fork
(DataLoader workers), checkpoints, fsspec, and RDMA asserted from the server's metrics.
The torch parts skip with a message when python3-torch is not installed."""

import concurrent.futures
import hashlib
import io
import os
import sys
import threading

import pytest

from conftest import BUILD_DIR, Server, rand_str, scrape, seeded_bytes

PKG_DIR = os.path.join(BUILD_DIR, "python")
if not os.path.isdir(os.path.join(PKG_DIR, "rdmastor")):
    pytest.skip("the Python module is not configured in this build (pybind11-dev missing: "
                "scripts/install-deps.sh)", allow_module_level=True)
sys.path.insert(0, PKG_DIR)
import rdmastor  # noqa: E402  (configured: an import error fails the tests)
import numpy as np  # noqa: E402

MiB = 1024 * 1024
SOFT_ENV = {"MINIO_RDMA_FABRIC": "soft", "MINIO_PROMETHEUS_AUTH_TYPE": "public"}


@pytest.fixture(scope="module")
def soft():
    srv = Server("soft", env=SOFT_ENV)
    srv.start()
    yield srv
    srv.cleanup()


def client(srv, **kw):
    kw.setdefault("rdma", "soft")
    return rdmastor.Client(srv.endpoint, srv.access_key, srv.secret_key, **kw)


@pytest.fixture(scope="module")
def c(soft):
    cl = client(soft)
    cl.create_bucket("pyt")
    yield cl
    cl.close()


def rdma_bytes(srv):
    m = scrape(srv)
    return (m.get('minio_s3_traffic_sent_bytes{transport="rdma"}', 0.0),
            m.get('minio_s3_traffic_received_bytes{transport="rdma"}', 0.0))


SIZES = [0, 1, 4097, MiB + 3, 16 * MiB + 5, 64 * MiB]


def test_round_trips_bytes_bytearray_numpy(soft, c):
    sent0, recv0 = rdma_bytes(soft)
    moved = 0
    for size in SIZES:
        data = seeded_bytes(size, seed=size)
        key = f"rt/{size}"
        t = c.put_object("pyt", key, data)
        assert int(t) == size and t.transport == "rdma", t
        assert t.etag.strip('"') == hashlib.md5(data).hexdigest()
        got = c.get_object("pyt", key)
        assert isinstance(got, bytes) and got == data and got.transport == "rdma"
        ba = bytearray(size)
        n = c.get_into("pyt", key, ba)
        assert int(n) == size and n.transport == "rdma" and ba == data
        arr = np.empty(size, dtype=np.uint8)
        assert c.get_into("pyt", key, arr) == size and arr.tobytes() == data
        moved += size
    # Every payload above went over RDMA: the server's RDMA byte counters moved by at least that.
    sent1, recv1 = rdma_bytes(soft)
    assert recv1 - recv0 >= moved, (recv0, recv1, moved)
    assert sent1 - sent0 >= 3 * moved, (sent0, sent1, moved)


def test_auto_mode_and_credentials_like_boto3(soft, tmp_path, monkeypatch):
    # "auto" on a host without an RDMA device: the soft fabric, payloads over RDMA.
    auto = rdmastor.Client(soft.endpoint, soft.access_key, soft.secret_key)
    assert auto.fabric == "soft"
    assert auto.put_object("pyt", "auto/k", b"abc").transport == "rdma"
    # Credentials from AWS_* variables, then from the shared credentials file's profile.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", soft.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", soft.secret_key)
    assert rdmastor.Client(soft.endpoint, rdma="soft").get_object("pyt", "auto/k") == b"abc"
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    creds = tmp_path / "credentials"
    creds.write_text(f"[other]\naws_access_key_id = {soft.access_key}\n"
                     f"aws_secret_access_key = {soft.secret_key}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_PROFILE", "other")
    assert rdmastor.Client(soft.endpoint, rdma="soft").get_object("pyt", "auto/k") == b"abc"
    monkeypatch.setenv("AWS_PROFILE", "missing")
    with pytest.raises(rdmastor.S3Error, match="no credentials"):
        rdmastor.Client(soft.endpoint, rdma="soft")


def test_numpy_typed_arrays_and_memoryview(c):
    a = np.arange(100_000, dtype=np.float64).reshape(100, 1000)
    assert c.put_object("pyt", "np/f64", a).transport == "rdma"
    b = np.zeros_like(a)
    assert c.get_into("pyt", "np/f64", b) == a.nbytes
    assert np.array_equal(a, b)
    m = memoryview(bytearray(a.nbytes))
    assert c.get_into("pyt", "np/f64", m) == a.nbytes and bytes(m) == a.tobytes()
    with pytest.raises(ValueError):  # not contiguous
        c.get_into("pyt", "np/f64", b[:, ::2])
    with pytest.raises(TypeError):  # read-only
        c.get_into("pyt", "np/f64", a.tobytes())


def test_ranges(c):
    data = seeded_bytes(3 * MiB + 11, seed=7)
    c.put_object("pyt", "range/obj", data)
    for off, ln in [(0, 1), (5, 100), (MiB - 1, MiB + 2), (len(data) - 10, 10)]:
        buf = bytearray(ln)
        t = c.get_into("pyt", "range/obj", buf, offset=off, length=ln)
        assert int(t) == ln and t.status == 206 and t.transport == "rdma"
        assert t.object_size == len(data)
        assert bytes(buf) == data[off:off + ln]
        assert c.get_object("pyt", "range/obj", offset=off, length=ln) == data[off:off + ln]
    # Offset to the end, into a larger buffer.
    buf = bytearray(MiB)
    n = c.get_into("pyt", "range/obj", buf, offset=len(data) - 100)
    assert int(n) == 100 and bytes(buf[:100]) == data[-100:]
    with pytest.raises(rdmastor.S3Error) as e:
        c.get_into("pyt", "range/obj", bytearray(10), offset=len(data) + 5, length=10)
    assert e.value.code == "InvalidRange" and e.value.status == 416


def test_multipart_parallel_parts_and_ranged_reads(soft):
    cl = client(soft, multipart_threshold=8 * MiB, part_size=5 * MiB, max_concurrency=4)
    data = seeded_bytes(23 * MiB + 7, seed=23)
    seen = []
    t = cl.put_object("pyt", "mp/obj", data, progress=lambda done, total: seen.append((done, total)))
    assert t.transport == "rdma" and int(t) == len(data)
    assert t.etag.strip('"').endswith("-5"), t.etag  # 5 parts of 5 MiB
    assert seen[-1] == (len(data), len(data)) and len(seen) == 5
    head = cl.head_object("pyt", "mp/obj")
    assert head["size"] == len(data)
    arr = np.empty(len(data), dtype=np.uint8)
    n = cl.get_into("pyt", "mp/obj", arr)
    assert int(n) == len(data) and n.transport == "rdma" and arr.tobytes() == data
    # A buffer too small for the object is refused, not overrun.
    with pytest.raises(rdmastor.S3Error):
        cl.get_into("pyt", "mp/obj", bytearray(20 * MiB))
    cl.close()


def test_list_objects_pages_and_prefixes(c):
    keys = [f"ls/{i:03d}" for i in range(25)] + ["ls/sub/a", "ls/sub/b"]
    for k in keys:
        c.put_object("pyt", k, k.encode())
    got = [o.key for o in c.list_objects("pyt", prefix="ls/", max_keys=7)]
    assert got == sorted(keys)
    top = list(c.list_objects("pyt", prefix="ls/", delimiter="/"))
    assert [o.key for o in top if o.is_prefix] == ["ls/sub/"]
    assert len([o for o in top if not o.is_prefix]) == 25
    assert all(o.size == 6 for o in top if not o.is_prefix)


def test_errors_carry_code_status_request_id(soft, c):
    with pytest.raises(rdmastor.S3Error) as e:
        c.get_object("pyt", "no/such/key")
    assert e.value.code == "NoSuchKey" and e.value.status == 404 and e.value.request_id
    with pytest.raises(rdmastor.S3Error) as e:
        c.get_into("pyt", "no/such/key", bytearray(10))
    assert e.value.code == "NoSuchKey" and e.value.status == 404 and e.value.request_id
    bad = rdmastor.Client(soft.endpoint, soft.access_key, "wrong-secret", rdma="soft")
    with pytest.raises(rdmastor.S3Error) as e:
        bad.put_object("pyt", "k", b"x")
    assert e.value.code == "SignatureDoesNotMatch" and e.value.status == 403
    assert e.value.request_id
    unknown = rdmastor.Client(soft.endpoint, "NOSUCHKEY", "whatever", rdma="soft")
    with pytest.raises(rdmastor.S3Error) as e:
        list(unknown.list_objects("pyt"))
    assert e.value.code == "InvalidAccessKeyId" and e.value.status == 403
    # Nothing listening: a client-side error (no HTTP status).
    dead = rdmastor.Client("http://127.0.0.1:9", "a", "b", rdma="off", connect_timeout=2)
    with pytest.raises(rdmastor.S3Error) as e:
        dead.get_object("pyt", "k")
    assert e.value.status is None
    with pytest.raises(ValueError):
        rdmastor.Client(soft.endpoint, "a", "b", rdma="infiniband")


def test_501_with_and_without_fallback(server_factory):
    srv = server_factory(name="rdma-off", env={"MINIO_RDMA_FABRIC": "off"})
    strict = client(srv, rdma="soft")
    strict.create_bucket("fbk")
    with pytest.raises(rdmastor.S3Error) as e:
        strict.put_object("fbk", "k", b"payload")
    assert e.value.code == "RDMANotSupported" and e.value.status == 501 and e.value.request_id
    lenient = client(srv, rdma="soft", allow_http_fallback=True)
    t = lenient.put_object("fbk", "k", b"payload")
    assert t.transport == "http"
    with pytest.raises(rdmastor.S3Error) as e:
        strict.get_into("fbk", "k", bytearray(7))
    assert e.value.code == "RDMANotSupported"
    buf = bytearray(7)
    assert lenient.get_into("fbk", "k", buf).transport == "http" and buf == b"payload"
    # A registered Buffer that fell back to HTTP is registered again on its next RDMA call.
    rb = rdmastor.Buffer(7)
    assert lenient.get_into("fbk", "k", rb).transport == "http" and bytes(rb) == b"payload"
    assert rb.clients == 0
    # "auto" falls back by default; "off" never tries RDMA.
    auto = client(srv, rdma="auto")
    assert auto.get_object("fbk", "k") == b"payload"
    off = client(srv, rdma="off")
    assert off.fabric == "off" and off.get_object("fbk", "k").transport == "http"


def test_eight_threads_share_a_client(soft, c):
    errors = []
    barrier = threading.Barrier(8)

    def work(tid):
        try:
            barrier.wait(timeout=30)
            for i in range(15):
                data = seeded_bytes(1000 + 997 * i + tid, seed=tid * 100 + i)
                key = f"thr/{tid}/{i}"
                assert c.put_object("pyt", key, data).transport == "rdma"
                buf = bytearray(len(data))
                assert c.get_into("pyt", key, buf) == len(data) and buf == data
        except Exception as e:  # collected: assertion in the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_gil_released_during_transfer(c):
    """A Python thread keeps running while another waits on a 64 MiB transfer."""
    data = seeded_bytes(64 * MiB, seed=64)
    c.put_object("pyt", "gil/obj", data)
    buf = bytearray(len(data))
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        before = ticks[0]
        c.get_into("pyt", "gil/obj", buf)
        during = ticks[0] - before
    finally:
        done.set()
        th.join(timeout=10)
    assert during > 1000, during  # with the GIL held, the spinner would barely move


def test_fork_child_uses_client(c):
    c.put_object("pyt", "fork/k", b"from-parent")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: the parent's native client is not reused
        code = 1
        try:
            os.close(r)
            got = c.get_object("pyt", "fork/k")
            c.put_object("pyt", "fork/child", b"from-child")
            os.write(w, bytes(got) + b"|" + got.transport.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    out = b""
    with os.fdopen(r, "rb") as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0 and out == b"from-parent|rdma"
    assert c.get_object("pyt", "fork/child") == b"from-child"


def test_cuda_and_meta_tensors_refused(c):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    t = torch.empty(16, device="meta")
    with pytest.raises(ValueError, match="device memory"):
        c.get_into("pyt", "fork/k", t)


def test_torch_tensors_round_trip(c):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.bool):
        src = (torch.arange(300_000) % 7).to(dtype).reshape(300, 1000)
        t = c.put_object("pyt", f"torch/{dtype}", src)
        assert t.transport == "rdma"
        dst = torch.empty_like(src)
        n = c.get_into("pyt", f"torch/{dtype}", dst)
        assert int(n) == src.numel() * src.element_size() and n.transport == "rdma"
        assert torch.equal(src, dst)
    big = torch.randn(16 * MiB // 4)
    c.put_object("pyt", "torch/big", big)
    out = torch.empty_like(big)
    c.get_into("pyt", "torch/big", out)
    assert torch.equal(big, out)
    with pytest.raises(ValueError, match="contiguous"):
        c.get_into("pyt", "torch/big", torch.empty(1024, 1024)[:, :4])


def test_registered_buffer_registers_once_and_is_forgotten_when_freed(soft, c):
    """Transfers into and out of an rdmastor.Buffer (through numpy and torch views, whole or
    sliced) register it once with the thread's client; plain buffers are forgotten after each
    call; freeing the Buffer drops its registration before the memory goes, and a new Buffer
    (at the same address or not) moves the right bytes."""
    native = c._native()
    sizes = [MiB, 1, 4096, 300_001, MiB - 1, 0, 77]
    for i, size in enumerate(sizes):
        c.put_object("pyt", f"rb/{i}", seeded_bytes(size, seed=500 + i))
    base = native.registrations
    rb = rdmastor.Buffer(MiB)
    assert len(rb) == MiB and rb.clients == 0
    arr = np.frombuffer(rb, np.uint8)
    for rounds in range(3):
        for i, size in enumerate(sizes):
            n = c.get_into("pyt", f"rb/{i}", arr[:size] if rounds else arr)
            assert int(n) == size and n.transport == "rdma"
            assert arr[:size].tobytes() == seeded_bytes(size, seed=500 + i), (rounds, i)
    # PUT from the registered memory: the same registration serves remote reads.
    arr[:5000] = 7
    assert c.put_object("pyt", "rb/from-buffer", arr[:5000]).transport == "rdma"
    assert c.get_object("pyt", "rb/from-buffer") == b"\x07" * 5000
    assert rb.clients == 1 and native.registrations == base + 1
    plain = np.empty(MiB, np.uint8)
    c.get_into("pyt", "rb/0", plain)
    assert native.registrations == base + 1  # a plain buffer is forgotten on return
    addr = arr.ctypes.data
    del arr, rb  # the last view goes: deregistered, then unmapped
    assert native.registrations == base
    for attempt in range(3):  # mmap usually hands the same address out again
        rb2 = rdmastor.Buffer(MiB)
        arr2 = np.frombuffer(rb2, np.uint8)
        arr2[:] = 0xEE
        assert c.get_into("pyt", "rb/4", arr2) == MiB - 1
        assert arr2[:MiB - 1].tobytes() == seeded_bytes(MiB - 1, seed=504)
        assert arr2[MiB - 1] == 0xEE
        same = arr2.ctypes.data == addr
        del arr2, rb2
        if same:
            break
    assert native.registrations == base


def test_registered_buffer_threads_and_fork(soft, c):
    """One Buffer shared by 4 threads (each its own client: 4 registrations) and read in a forked
    child (its own client registers it there; the parent's stay)."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    for t in range(4):
        c.put_object("pyt", f"rbt/{t}", seeded_bytes(64 * 1024, seed=600 + t))
    rb = rdmastor.Buffer(4 * 64 * 1024)
    buf = torch.frombuffer(rb, dtype=torch.uint8)  # what rdmastor.torch.registered_tensor makes
    barrier = threading.Barrier(4)

    def work(t):
        barrier.wait(timeout=30)  # four threads, not one reused
        view = buf[t * 65536:(t + 1) * 65536]
        for _ in range(5):
            assert c.get_into("pyt", f"rbt/{t}", view).transport == "rdma"
        return bytes(view.numpy()) == seeded_bytes(65536, seed=600 + t)

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(4)))
        assert rb.clients == 4  # the pool's threads (and their clients) still live
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            buf.zero_()
            t = c.get_into("pyt", "rbt/2", buf[:65536])
            ok = bytes(buf[:65536].numpy()) == seeded_bytes(65536, seed=602)
            os.write(w, f"{t.transport}|{ok}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0 and out == b"rdma|True"
    assert bytes(buf[65536:131072].numpy()) == seeded_bytes(65536, seed=601)  # parent untouched


@pytest.fixture(scope="module")
def thousand(soft, c):
    """1,000 small objects whose content names them."""
    keys = [f"dl/{i:04d}" for i in range(1000)]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: c.put_object("pyt", k, (k + "|").encode() * 8), keys))
    return keys


def test_dataloader_workers_and_ranks_read_each_object_once(soft, c, thousand):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import ObjectIterableDataset

    def decode(view, key):
        assert bytes(view.numpy()) == (key + "|").encode() * 8
        return key

    seen = []
    for rank in range(2):
        ds = ObjectIterableDataset("s3://pyt/dl/", decode=decode, client=c, rank=rank,
                                   world_size=2, shuffle=True, seed=3)
        ds.set_epoch(1)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4,
                                             multiprocessing_context="fork")
        seen.extend(loader)
    assert len(seen) == 1000 and sorted(seen) == thousand


def test_map_style_dataset_with_workers(soft, c, thousand):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import ObjectDataset
    ds = ObjectDataset("s3://pyt/dl/00", client=c, decode=lambda t, key: (key, t.clone()))
    assert len(ds) == 100
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4,
                                         multiprocessing_context="fork")
    got = {key: bytes(t.numpy()) for key, t in loader}
    assert sorted(got) == thousand[:100]
    assert all(v == (k + "|").encode() * 8 for k, v in got.items())


def test_get_batch_into_slots_registration_and_errors(soft, c):
    """get_batch_into reads each key into its slot in one call over RDMA: into an rdmastor.Buffer
    (registered once, kept), a plain numpy array and a bytearray (registered for the call only);
    short objects leave the rest of their slot alone; an object larger than its slot, a missing
    key, or slots that overrun the buffer raise, and the client still works afterwards."""
    native = c._native()
    sizes = [0, 1, 4097, 128 * 1024, 77, 128 * 1024 - 1]
    keys = [f"batch/{i}" for i in range(len(sizes))]
    for i, (k, size) in enumerate(zip(keys, sizes)):
        c.put_object("pyt", k, seeded_bytes(size, seed=700 + i))
    slot = 128 * 1024
    base = native.registrations
    sent0, _ = rdma_bytes(soft)
    rb = rdmastor.Buffer(len(keys) * slot)
    plain = np.empty(len(keys) * slot, np.uint8)
    for dst in (np.frombuffer(rb, np.uint8).reshape(len(keys), slot), plain, bytearray(len(plain))):
        for _ in range(2):
            memoryview(dst).cast("B")[:] = b"\xee" * len(plain)
            got = c.get_batch_into("pyt", keys, dst)
            assert list(got) == sizes and got.transport == "rdma"
            flat = memoryview(dst).cast("B")
            for i, size in enumerate(sizes):
                assert bytes(flat[i * slot:i * slot + size]) == seeded_bytes(size, seed=700 + i)
                assert bytes(flat[i * slot + size:(i + 1) * slot]) == b"\xee" * (slot - size)
    assert rb.clients == 1 and native.registrations == base + 1  # only the Buffer stays
    sent1, _ = rdma_bytes(soft)
    assert sent1 - sent0 >= 6 * sum(sizes)
    # An explicit slot smaller than buf / len(keys); keys as any iterable.
    small = np.zeros(3 * 5000, np.uint8)
    got = c.get_batch_into("pyt", iter(["batch/1", "batch/2", "batch/4"]), small, slot=4200)
    assert list(got) == [1, 4097, 77]
    assert small[4200 * 2:4200 * 2 + 77].tobytes() == seeded_bytes(77, seed=704)
    assert c.get_batch_into("pyt", [], small) == [] and c.get_batch_into("pyt", [], small).transport == "none"
    with pytest.raises(ValueError, match="do not fit"):
        c.get_batch_into("pyt", keys, np.empty(slot, np.uint8), slot=slot)
    with pytest.raises(TypeError, match="read-only"):
        c.get_batch_into("pyt", keys[:1], bytes(slot))
    # An object larger than its slot, and a missing key: the batch stops there.
    dst = np.zeros(3 * 4096, np.uint8)
    with pytest.raises(rdmastor.S3Error) as ei:
        c.get_batch_into("pyt", ["batch/1", "batch/2", "batch/4"], dst)
    # The server declines what does not fit the token (501; no HTTP fallback for rdma="soft").
    assert ei.value.code == "RDMANotSupported" and "batch/2" in str(ei.value)
    assert dst[0] == seeded_bytes(1, seed=701)[0]  # the key before it was read
    with pytest.raises(rdmastor.S3Error) as ei:
        c.get_batch_into("pyt", ["batch/4", "batch/missing", "batch/1"], dst)
    assert ei.value.code == "NoSuchKey" and ei.value.status == 404
    assert dst[:77].tobytes() == seeded_bytes(77, seed=704)
    assert native.registrations == base + 1
    assert list(c.get_batch_into("pyt", keys, rb)) == sizes  # still fine after the errors
    del rb
    assert native.registrations == base


def test_get_batch_into_over_http(soft):
    """rdma="off": the same slots, filled over HTTP."""
    h = client(soft, rdma="off")
    dst = np.zeros(2 * 4097, np.uint8)
    got = h.get_batch_into("pyt", ["batch/2", "batch/1"], dst)
    assert list(got) == [4097, 1] and got.transport == "http"
    assert dst[:4097].tobytes() == seeded_bytes(4097, seed=702)
    assert dst[4097] == seeded_bytes(1, seed=701)[0]


def test_iterable_dataset_batches_with_workers(soft, c, thousand):
    """ObjectIterableDataset(batch_size=32) under 4 forked workers and 2 ranks: every object once,
    as rows of (data, lengths) batches; with decode, decode(view, lengths, keys)."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import ObjectIterableDataset
    seen = []
    for rank in range(2):
        ds = ObjectIterableDataset("s3://pyt/dl/", client=c, rank=rank, world_size=2,
                                   shuffle=True, seed=5, batch_size=32)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4,
                                             multiprocessing_context="fork")
        for data, lengths in loader:
            assert data.dtype == torch.uint8 and data.dim() == 2 and 1 <= len(data) <= 32
            assert lengths.tolist() == [64] * len(data)
            for row in data:
                text = bytes(row.numpy())
                key = text[:7].decode()
                assert text == (key + "|").encode() * 8
                seen.append(key)
    assert len(seen) == 1000 and sorted(seen) == thousand

    def decode(view, lengths, keys):
        return [bytes(view[j, :n].numpy()) == (k + "|").encode() * 8
                for j, (n, k) in enumerate(zip(lengths.tolist(), keys))]

    ds = ObjectIterableDataset("s3://pyt/dl/01", client=c, decode=decode, batch_size=7)
    flags = [f for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                                        multiprocessing_context="fork")
             for f in batch]
    assert len(flags) == 100 and all(flags)
    with pytest.raises(ValueError, match="batch_size"):
        ObjectIterableDataset("s3://pyt/dl/", client=c, batch_size=0)


def test_map_style_dataset_batches_register_once(soft, c, thousand, monkeypatch):
    """A DataLoader with batch_size fetches ObjectDataset batches through __getitems__ (one
    get_batch_into per batch into a reused registered buffer: the client keeps one registration,
    none per item); items are tensors of their own that stay valid after the next batch."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import ObjectDataset
    native = c._native()
    ds = ObjectDataset("s3://pyt/dl/", client=c)
    base = native.registrations
    first = ds.__getitems__([0, 5, 999])
    second = ds.__getitems__(list(range(100, 120)))
    single = ds[7]
    assert native.registrations <= base + 1  # the reused buffer, registered once
    assert [bytes(t.numpy()) for t in first] == [(thousand[i] + "|").encode() * 8
                                                 for i in (0, 5, 999)]
    assert bytes(second[19].numpy()) == (thousand[119] + "|").encode() * 8
    assert bytes(single.numpy()) == (thousand[7] + "|").encode() * 8
    # A batch larger than the reused buffer's cap goes in several calls; objects over the cap
    # one by one into their own tensors.
    import rdmastor.torch as rt
    monkeypatch.setattr(rt, "_SCRATCH_MAX", 200)  # 3 objects of 64 bytes per call
    assert [bytes(t.numpy()) for t in ds.__getitems__(list(range(10)))] == [
        (k + "|").encode() * 8 for k in thousand[:10]]
    monkeypatch.setattr(rt, "_SCRATCH_MAX", 50)
    assert bytes(ds.__getitems__([3, 4])[1].numpy()) == (thousand[4] + "|").encode() * 8
    monkeypatch.undo()
    loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, shuffle=True,
                                         multiprocessing_context="fork")
    got = []
    for batch in loader:
        assert batch.shape[1] == 64
        got.extend(bytes(row.numpy()) for row in batch)
    assert sorted(got) == sorted((k + "|").encode() * 8 for k in thousand)


def test_checkpoint_save_load(soft, c):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import load, save
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    state = {"model": model.state_dict(), "step": 100,
             "extra": torch.arange(10, dtype=torch.int16), "big": torch.randn(3 * MiB)}
    t = save(state, "s3://pyt/ckpt/step-100.pt", client=c)
    assert t.transport == "rdma"
    back = load("s3://pyt/ckpt/step-100.pt", client=c)
    assert back["step"] == 100 and torch.equal(back["extra"], state["extra"])
    assert torch.equal(back["big"], state["big"])
    for k, v in state["model"].items():
        assert torch.equal(back["model"][k], v), k
    with pytest.raises(ValueError):
        load("http://py/x", client=c)


def test_fsspec_open(soft, c):
    fsspec = pytest.importorskip("fsspec", reason="python3-fsspec not installed")
    import rdmastor.fsspec  # noqa: F401  (registers rdmastor://)
    opts = {"endpoint": soft.endpoint, "access_key": soft.access_key,
            "secret_key": soft.secret_key, "rdma": "soft"}
    csv = "".join(f"{i},{i * i}\n" for i in range(20000)).encode()
    with fsspec.open("rdmastor://pyt/fs/table.csv", "wb", **opts) as f:
        f.write(csv)
    with fsspec.open("rdmastor://pyt/fs/table.csv", "rb", **opts) as f:
        assert f.read() == csv
        f.seek(1000)
        assert f.read(50) == csv[1000:1050]
    fs = fsspec.filesystem("rdmastor", **opts)
    assert fs.info("pyt/fs/table.csv")["size"] == len(csv)
    assert "pyt/fs/table.csv" in fs.ls("pyt/fs", detail=False)
    assert fs.cat_file("pyt/fs/table.csv", start=10, end=20) == csv[10:20]
    try:
        import pandas
    except ImportError:
        return
    with fsspec.open("rdmastor://pyt/fs/table.csv", "rb", **opts) as f:
        df = pandas.read_csv(f, header=None)
    assert len(df) == 20000


class CudaArray:
    """An object exposing GPU memory only through the CUDA Array Interface (version 3), as
    numba's DeviceNDArray and CuPy's ndarray do: no buffer protocol. The pointer is not host
    memory (an address no process maps), so a transfer that touched it would crash the test."""

    def __init__(self, n, ptr=0x7E0000000000):
        self.n, self.ptr = n, ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": "|u1", "data": (self.ptr, False), "strides": None,
                "version": 3, "stream": None}


class MappedArray(np.ndarray):
    """Host memory that also offers __cuda_array_interface__ (numba's mapped / managed arrays):
    CPU-addressable, so it is a host buffer."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ctypes.data, False),
                "strides": None, "version": 3}


class DlpackOnGpu:
    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0


def test_cuda_array_interface_refused_naming_the_reason(c):
    c.put_object("pyt", "cai/k", b"before")
    for call in (lambda: c.get_into("pyt", "cai/k", CudaArray(6)),
                 lambda: c.get_into("pyt", "cai/k", CudaArray(6), offset=1, length=3),
                 lambda: c.put_object("pyt", "cai/k", CudaArray(6))):
        with pytest.raises(rdmastor.DeviceMemoryError) as e:
            call()
        msg = str(e.value)
        assert "CudaArray (CUDA device memory: __cuda_array_interface__)" in msg, msg
        if not rdmastor._native.built_with_verbs():
            assert "standard build" in msg and "verbs" in msg and "dma-buf" in msg, msg
        elif not rdmastor._native.cuda_built():
            assert "built without CUDA" in msg, msg
        else:  # an RDMA build with CUDA headers: this Client's fabric is soft, not verbs
            assert "uses the soft fabric" in msg and "only over verbs" in msg, msg
        assert "never copies device memory through the host" in msg, msg
    assert c.get_object("pyt", "cai/k") == b"before"  # nothing was written
    assert isinstance(e.value, ValueError)  # argument errors stay ValueError


def test_host_memory_with_cuda_interface_is_a_host_buffer(c):
    data = seeded_bytes(100_000, seed=9)
    src = np.frombuffer(data, dtype=np.uint8).copy().view(MappedArray)
    assert c.put_object("pyt", "cai/mapped", src).transport == "rdma"
    dst = np.zeros(len(data), dtype=np.uint8).view(MappedArray)
    n = c.get_into("pyt", "cai/mapped", dst)
    assert int(n) == len(data) and n.transport == "rdma" and dst.tobytes() == data


def test_dlpack_gpu_object_refused(c):
    with pytest.raises(ValueError, match="DLPack device type 2"):
        c.get_into("pyt", "cai/k", DlpackOnGpu())
