"""The Python package rdmastor (python/, built into <build>/python) against the real server on the
soft fabric: round trips into every buffer kind, ranges, multipart, errors, threads, fork
(DataLoader workers), checkpoints, fsspec, and RDMA asserted from the server's metrics; retries
against a server throttling RDMA transfers and a stalled one, the RDMA decline cache, the
exception classes, streaming checkpoints' peak RSS, sharded checkpoints over 2 gloo ranks,
mid-epoch resume, boto3's and s3fs's habits, and every python block of docs/python.md.
The torch parts skip with a message when python3-torch is not installed."""

import concurrent.futures
import hashlib
import io
import json
import os
import subprocess
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


@pytest.fixture(autouse=True)
def forget_rdma_declines():
    """A server's decline of RDMA is remembered per endpoint for minutes: a later server of this
    session on the same port must not inherit it."""
    yield
    rdmastor._declines.clear()
    rdmastor._declines_warned.clear()


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
    # The chain's answer is kept per process for the same environment and file contents: a file
    # rewritten in place (same name, same profile) is read again.
    good = creds.read_text()
    creds.write_text(good.replace(soft.secret_key, "not-the-secret"))
    with pytest.raises(rdmastor.S3Error) as e:
        rdmastor.Client(soft.endpoint, rdma="soft").get_object("pyt", "auto/k")
    assert e.value.code == "SignatureDoesNotMatch"
    creds.write_text(good)
    assert rdmastor.Client(soft.endpoint, rdma="soft").get_object("pyt", "auto/k") == b"abc"
    monkeypatch.setenv("AWS_PROFILE", "missing")
    with pytest.raises(ValueError, match="missing"):  # botocore: ProfileNotFound
        rdmastor.Client(soft.endpoint, rdma="soft")
    # The profile's endpoint_url and region in the config file (AWS_CONFIG_FILE), as botocore
    # reads them; AWS_ENDPOINT_URL overrides the profile's endpoint.
    config = tmp_path / "config"
    config.write_text(f"[profile other]\nendpoint_url = {soft.endpoint}\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "other")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    prof = rdmastor.Client(rdma="soft")
    assert (prof.endpoint, prof.region) == (soft.endpoint, "eu-west-3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert rdmastor.Client(rdma="soft").endpoint == "http://127.0.0.1:9"
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    # Temporary credentials: refused by name (the server has no STS), not signed without them.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", soft.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", soft.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", "tok")
    with pytest.raises(ValueError, match="AWS_SESSION_TOKEN"):
        rdmastor.Client(soft.endpoint, rdma="soft")


def test_explicit_settings_never_load_botocore(soft, c):
    # Keys, endpoint and region all given: nothing for botocore's chain to add, and importing it
    # costs a DataLoader worker 0.1-0.8 s of CPU per Client.
    code = ("import sys, rdmastor; "
            f"c = rdmastor.Client({soft.endpoint!r}, {soft.access_key!r}, {soft.secret_key!r}, "
            "region='us-east-1', rdma='soft'); "
            "c.put_object('pyt', 'explicit/k', b'xyz'); "
            "assert c.get_object('pyt', 'explicit/k') == b'xyz'; "
            "print('botocore' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONPATH"] = PKG_DIR
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


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
    # A buffer too small for the object is refused, not overrun, naming both sizes.
    with pytest.raises(rdmastor.BufferTooSmallError) as e:
        cl.get_into("pyt", "mp/obj", bytearray(20 * MiB))
    assert e.value.needed == len(data) and e.value.capacity == 20 * MiB and e.value.key == "mp/obj"
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
    with pytest.raises(ValueError):
        rdmastor.Client(soft.endpoint, "a", "b", rdma="infiniband")


def test_501_with_and_without_fallback(server_factory):
    srv = server_factory(name="rdma-off", env={"MINIO_RDMA_FABRIC": "off"})
    strict = client(srv, rdma="soft")
    strict.create_bucket("fbk")
    with pytest.raises(rdmastor.S3Error) as e:
        strict.put_object("fbk", "k", b"payload")
    assert e.value.code == "RDMANotSupported" and e.value.status == 501 and e.value.request_id
    # The declines the fallback acts on are C++'s IsRdmaDecline list, exported by the extension.
    assert rdmastor._native.RDMA_DECLINE_CODES == {"RDMANotSupported", "RDMAPathMTUMismatch"}
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
    with pytest.raises(rdmastor.BufferTooSmallError) as ei:
        c.get_batch_into("pyt", ["batch/1", "batch/2", "batch/4"], dst)
    # The server declines what does not fit the token, saying by how much.
    assert (ei.value.key, ei.value.index, ei.value.needed, ei.value.capacity) == (
        "batch/2", 1, 4097, 4096)
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


def test_register_device_takes_gpu_memory_only_and_names_why_not(c):
    """Issue 37 item 5: rdmastor.register_device pins a CUDA allocation; host memory is refused
    (an rdmastor.Buffer is its counterpart), and where GPU memory cannot be registered the
    error says why. No GPU here: with CUDA compiled in, the driver is what is missing."""
    for host in (bytearray(64), np.zeros(8)):
        with pytest.raises(ValueError, match="takes GPU memory"):
            rdmastor.register_device(host)
    with pytest.raises(ValueError, match="empty device buffer"):
        rdmastor.register_device(CudaArray(0))
    for fn in (rdmastor.register_device, rdmastor.deregister_device):
        if not rdmastor._native.cuda_built():
            with pytest.raises(rdmastor.DeviceMemoryError, match="built without CUDA|standard build"):
                fn(CudaArray(4096))
        elif fn is rdmastor.register_device:  # no NVIDIA driver on the test machines
            with pytest.raises(ValueError, match="libcuda.so.1|CUDA"):
                fn(CudaArray(4096))
        else:
            assert fn(CudaArray(4096)) is False  # never registered


def test_sync_is_accepted_and_host_buffers_ignore_it(c):
    """Issue 37 item 6: sync (default True) waits for a GPU buffer's stream; sync=False is the
    opt-out. A refused GPU buffer is refused before any stream is touched: a producer stream
    that a sync would have to wait on is never reached (the object's sync would raise)."""
    c.put_object("pyt", "sync/k", b"abcdef", sync=False)
    buf = bytearray(6)
    assert int(c.get_into("pyt", "sync/k", buf, sync=False)) == 6 and buf == b"abcdef"

    class Streamed(CudaArray):
        @property
        def __cuda_array_interface__(self):
            d = dict(super().__cuda_array_interface__)
            d["stream"] = 1  # the legacy default stream
            return d

    with pytest.raises(rdmastor.DeviceMemoryError):
        c.get_into("pyt", "sync/k", Streamed(6))
    dev = rdmastor._buffer(Streamed(6), writable=True)
    assert callable(dev.sync)  # a CUDA build would call cuStreamSynchronize(1) under the context
    assert rdmastor._buffer(CudaArray(6), writable=True).sync is None  # "stream": None


def test_nearest_rdma_device_names_what_it_cannot_find(soft):
    """Issue 37 item 11: the NIC beside a GPU comes from /sys (the choice itself is unit-tested
    over a fixture tree: rdma_tests PciAffinity.*); an address no PCI device has is an error
    naming it, and Client(rdma_device=...) takes the choice."""
    with pytest.raises(ValueError, match="00ff:fe:1f.7"):  # a PCI domain no host has
        rdmastor.nearest_rdma_device("00ff:fe:1f.7")
    with pytest.raises(ValueError, match="no PCI device"):
        rdmastor.nearest_rdma_device("not-an-address")
    cl = rdmastor.Client(soft.endpoint, soft.access_key, soft.secret_key, rdma="off",
                         rdma_device="mlx5_7")
    assert cl._verbs_env["MINIO_RDMA_DEVICE"] == "mlx5_7"


def test_dlpack_gpu_object_refused(c):
    with pytest.raises(ValueError, match="DLPack device type 2"):
        c.get_into("pyt", "cai/k", DlpackOnGpu())


# -- issue 34: retries, the RDMA decline cache, honest errors, streaming checkpoints ----------

def _read_all(cl, keys, data, threads):
    """Every thread reads every key (started together); returns the exceptions raised."""
    errors = []
    barrier = threading.Barrier(threads)

    def work(tid):
        barrier.wait(timeout=30)
        for k in keys[tid:] + keys[:tid]:
            buf = bytearray(len(data[k]))
            try:
                cl.get_into("thr", k, buf)
                assert buf == data[k], k
            except (rdmastor.S3Error, rdmastor.ConnectionError) as e:
                errors.append(e)

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(work, range(threads)))
    return errors


def test_throttled_rdma_transfers_are_retried(server_factory):
    """A server that runs one S3-over-RDMA transfer per client host (RDMASTOR_RDMA_TRANSFERS_PER_
    CLIENT=1) answers concurrent ones 503 SlowDown: without retries threads sharing a Client
    fail; with botocore's standard retries (jittered back-off) none does, the retries are
    counted, and a DataLoader's forked workers read every object."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    srv = server_factory(name="throttle", env={**SOFT_ENV,
                                               "RDMASTOR_RDMA_TRANSFERS_PER_CLIENT": "1"})
    setup = client(srv)
    setup.create_bucket("thr")
    data = {f"o/{i:02d}": seeded_bytes(MiB + i, seed=3400 + i) for i in range(6)}
    for k, v in data.items():
        setup.put_object("thr", k, v)
    keys = sorted(data)
    assert client(srv).max_attempts == 3  # botocore's default
    # Without retries (max_attempts=1) the collisions surface as SlowDown.
    once = client(srv, retries={"max_attempts": 1})
    errors = []
    for _ in range(3):  # bounded: one round is nearly always enough
        errors = _read_all(once, keys, data, threads=4)
        if errors:
            break
    assert errors and all(isinstance(e, rdmastor.S3Error) and e.code == "SlowDown" and
                          e.status == 503 for e in errors), errors
    assert once.stats()["retries"] == 0
    # Standard mode: retried until a slot is free.
    retrying = client(srv, retries={"max_attempts": 10, "base_delay": 0.05})
    assert _read_all(retrying, keys, data, threads=4) == []
    st = retrying.stats()
    assert st["throttle"] > 0 and st["retries"] == retrying.retries >= st["throttle"], st
    # The same under a DataLoader: 4 forked workers, one object each at a time.
    from rdmastor.torch import ObjectIterableDataset
    ds = ObjectIterableDataset("s3://thr/o/", client=retrying,
                               decode=lambda view, key: (key, bytes(view.numpy())))
    got = dict(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4,
                                           multiprocessing_context="fork"))
    assert got == data
    # A batch retried after a collision goes on from the failing key.
    dst = np.zeros(len(keys) * (MiB + 8), np.uint8)
    results = []
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        results = list(ex.map(lambda _: list(retrying.get_batch_into(
            "thr", keys, np.zeros_like(dst), slot=MiB + 8)), range(3)))
    assert results == [[len(data[k]) for k in keys]] * 3
    with pytest.raises(ValueError):
        client(srv, retries={"max_attempts": 0})
    with pytest.raises(TypeError):
        client(srv, retries="standard")


def test_rdma_decline_is_remembered_and_warned_once(server_factory):
    """Against a server without S3 over RDMA, rdma="auto" pays the declined request once per
    period, not on every call: the server counts one 501, the client warns once (with the
    server's reason) and sends the rest over HTTP."""
    srv = server_factory(name="no-rdma", env={"MINIO_RDMA_FABRIC": "off",
                                              "MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    declines = lambda: scrape(srv).get('minio_api_rdma_replies_total{code="501"}', 0.0)  # noqa: E731
    # Without the cache (rdma_decline_ttl=0) every payload call is declined first.
    every = client(srv, rdma="auto", rdma_decline_ttl=0)
    every.create_bucket("dcl")
    before = declines()
    for i in range(3):
        assert every.put_object("dcl", f"k{i}", b"x" * 100).transport == "http"
    assert declines() - before == 3 and every.stats()["rdma_declined"] == 3
    assert every.rdma_declined() is None
    auto = client(srv, rdma="auto")
    before = declines()
    with pytest.warns(rdmastor.RDMADeclinedWarning, match="S3 over RDMA"):
        assert auto.put_object("dcl", "a", b"payload").transport == "http"
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        for i in range(5):
            assert auto.get_object("dcl", "a").transport == "http"
            buf = bytearray(7)
            assert auto.get_into("dcl", "a", buf).transport == "http" and buf == b"payload"
        assert list(auto.get_batch_into("dcl", ["a", "a"], bytearray(14))) == [7, 7]
        # Another Client of the endpoint in this process knows it too.
        assert client(srv, rdma="auto").put_object("dcl", "b", b"b").transport == "http"
    assert declines() - before == 1
    assert "MINIO_RDMA_FABRIC" in auto.rdma_declined()
    assert auto.stats()["rdma_declined"] == 1


def test_errors_are_honest(soft, c):
    """Caller mistakes raise ValueError/TypeError; a dead endpoint a ConnectionError subclass
    (construction succeeds, as botocore's, the first call raises); server errors carry code,
    status, message and request id as fields; an object larger than the buffer says so."""
    # A dead endpoint: nothing listens on port 9.
    dead = rdmastor.Client("http://127.0.0.1:9", "a", "b", rdma="off",
                           retries={"max_attempts": 2, "base_delay": 0.01})
    for call in (lambda: dead.get_object("pyt", "k"), lambda: dead.put_object("pyt", "k", b"x"),
                 lambda: list(dead.list_objects("pyt"))):
        with pytest.raises(rdmastor.EndpointConnectionError) as e:
            call()
        assert isinstance(e.value, ConnectionError) and e.value.status is None
        assert "127.0.0.1:9" in str(e.value)
    assert dead.stats()["connect"] == 3  # each call retried once
    soft_dead = rdmastor.Client("http://127.0.0.1:9", "a", "b", rdma="soft",
                                retries={"max_attempts": 1})
    with pytest.raises(rdmastor.EndpointConnectionError):
        soft_dead.get_into("pyt", "k", bytearray(4))
    # Server errors: the fields of the error document, not text.
    bad = rdmastor.Client(soft.endpoint, soft.access_key, "wrong-secret", rdma="soft")
    c.put_object("pyt", "err/k", b"12345")
    for call in (lambda: bad.get_object("pyt", "err/k"),
                 lambda: bad.get_into("pyt", "err/k", bytearray(5))):
        with pytest.raises(rdmastor.S3Error) as e:
            call()
        assert e.value.code == "SignatureDoesNotMatch" and e.value.status == 403
        assert e.value.message and "signature" in e.value.message.lower()
        assert e.value.request_id and e.value.fields["RequestId"] == e.value.request_id
    with pytest.raises(rdmastor.S3Error) as e:
        c.head_object("pyt", "err/missing")
    assert e.value.status == 404 and e.value.code == "NotFound"
    # An object larger than the buffer: over RDMA (the server's decline) and over HTTP.
    for cl in (c, client(soft, rdma="off"), client(soft, rdma="auto")):
        with pytest.raises(rdmastor.BufferTooSmallError) as e:
            cl.get_into("pyt", "err/k", bytearray(3))
        assert (e.value.needed, e.value.capacity, e.value.key) == (5, 3, "err/k"), cl.fabric
        assert isinstance(e.value, ValueError)
    # Caller mistakes.
    with pytest.raises(TypeError):
        rdmastor.Client(9000)
    with pytest.raises(ValueError):
        rdmastor.Client("127.0.0.1:9000", "a", "b")
    with pytest.raises(TypeError):
        client(soft, part_size="16MiB")
    with pytest.raises(ValueError):
        client(soft, io_timeout=-1)
    with pytest.raises(TypeError):
        c.get_into("pyt", "err/k", bytearray(5), offset="0")
    with pytest.raises(TypeError):
        c.get_into("pyt", 5, bytearray(5))
    with pytest.raises(TypeError):
        c.get_batch_into("pyt", ["err/k"], bytearray(5), slot=2.5)


def _peak_rss_during(fn):
    """(fn's result, peak RSS growth in bytes while it ran): VmHWM reset through clear_refs."""
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise AssertionError(field)
    import gc
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    out = fn()
    return out, status("VmHWM") - base


def test_checkpoint_save_load_stream_in_bounded_memory(soft):
    """rdmastor.torch.save streams torch.save's writes through part buffers and load reads each
    tensor straight into its storage: a 96 MiB state_dict saves within (max_concurrency + 1) part
    buffers of extra memory and loads within 1.1x its size plus a small bound."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import load, save
    cl = client(soft, part_size=8 * MiB, max_concurrency=2)
    torch.manual_seed(1)
    state = {"a": torch.randn(12 * MiB), "b": torch.randint(0, 100, (4 * MiB,)),
             "c": torch.randn(4 * MiB).to(torch.float16), "step": 7}
    size = sum(t.numel() * t.element_size() for t in state.values() if torch.is_tensor(t))
    assert size == 88 * MiB
    slack = 12 * MiB  # threads, the native clients, torch's bookkeeping
    t, grew = _peak_rss_during(lambda: save(state, "s3://pyt/ckpt/stream.pt", client=cl))
    print(f"save of {size / MiB:.0f} MiB: peak RSS +{grew / MiB:.1f} MiB")
    assert grew <= 3 * 8 * MiB + slack, grew / MiB
    assert t.transport == "rdma" and int(t) > size and t.etag.strip('"').endswith("-12")
    back, grew = _peak_rss_during(lambda: load("s3://pyt/ckpt/stream.pt", client=cl))
    print(f"load of {size / MiB:.0f} MiB: peak RSS +{grew / MiB:.1f} MiB")
    assert grew <= 1.1 * size + MiB + slack, grew / MiB
    assert back["step"] == 7 and all(torch.equal(back[k], state[k]) for k in "abc")
    # A small checkpoint is one PUT; a failing save leaves the previous object in place.
    small = save({"x": torch.arange(5)}, "s3://pyt/ckpt/small.pt", client=cl)
    assert "-" not in small.etag.strip('"')

    class Boom:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        save({"big": state["a"], "then": Boom()}, "s3://pyt/ckpt/stream.pt", client=cl)
    assert torch.equal(load("s3://pyt/ckpt/stream.pt", client=cl)["a"], state["a"])
    # A checkpoint replaced while it is being loaded: an error, never a mix of the two.
    from rdmastor._stream import ObjectReader
    r = ObjectReader(cl, "pyt", "ckpt/small.pt")
    save({"x": torch.arange(6)}, "s3://pyt/ckpt/small.pt", client=cl)
    with pytest.raises(rdmastor.S3Error) as e:
        r.read(10)
    assert e.value.code == "PreconditionFailed" and "changed" in str(e.value)


def _python_blocks(path):
    """The ```python blocks of a Markdown file, in order."""
    import re
    with open(path) as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_docs_python_md_and_readme_examples_run(soft, monkeypatch):
    """docs/python.md as executable truth: every ```python block of it runs, in order and in one
    namespace (as a reader would paste them), against the real server, followed by the README's
    Python example. The objects under data/train/ have different sizes (a multiple of 4 bytes,
    for the float32 view of the map-style example). Only the endpoint is rewritten (the blocks
    name http://127.0.0.1:9000) and the names the prose leaves to the reader are defined first:
    numpy_array, tensor, buf, key, keys, size, model."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    pytest.importorskip("fsspec", reason="python3-fsspec not installed")
    from conftest import REPO_ROOT
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL", soft.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", soft.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", soft.secret_key)
    import rdmastor.torch as rt
    monkeypatch.setattr(rt, "_default", {})  # the blocks' default client: this environment
    setup = rdmastor.Client(soft.endpoint, soft.access_key, soft.secret_key)
    for b in ("data", "ckpt"):
        setup.create_bucket(b, exist_ok=True)
    for i in range(40):
        setup.put_object("data", f"train/{i:03d}", seeded_bytes(1024 + 4 * 97 * (i % 8), i))
    setup.put_object("data", "table.csv", "".join(f"{i},{i * i}\n" for i in range(100)).encode())
    blocks = _python_blocks(os.path.join(REPO_ROOT, "docs", "python.md"))
    readme = _python_blocks(os.path.join(REPO_ROOT, "README.md"))
    assert len(blocks) >= 7 and len(readme) == 1
    ns = {"numpy_array": np.arange(32768, dtype=np.float32), "tensor": torch.empty(32768),
          "buf": bytearray(65536), "key": "train/001", "size": 1024 + 4 * 97,
          "model": torch.nn.Linear(16, 4), "np": np,
          "keys": [f"train/{i:03d}" for i in range(40)]}
    from fsspec.registry import _registry
    try:
        for i, code in enumerate(blocks + readme):
            code = code.replace("http://127.0.0.1:9000", soft.endpoint)
            try:
                exec(compile(code, f"<docs/python.md block {i}>", "exec"), ns)
            except Exception as e:
                pytest.fail(f"block {i} of docs/python.md / README.md failed: {e!r}\n{code}")
    finally:
        _registry.pop("s3", None)  # a block registers rdmastor for s3://


def test_boto3_style_calls(soft, c, tmp_path, capsys):
    """list_buckets, copy_object, delete_objects, generate_presigned_url (fetched with a plain
    HTTP client), upload_file / download_file with callbacks (streamed in parts), a progress
    bar with the rate and the time left."""
    import requests
    c.put_object("pyt", "b3/bar", bytes(3 * MiB), progress=True)
    err = capsys.readouterr().err
    assert "put b3/bar" in err and "/s" in err and ("ETA" in err or "<" in err), err
    assert "pyt" in [b["name"] for b in c.list_buckets()]
    c.put_object("pyt", "b3/src", b"copy me", metadata={"a": "1"})
    c.copy_object("pyt", "b3/dst", "pyt", "b3/src")
    assert c.get_object("pyt", "b3/dst") == b"copy me"
    assert c.head_object("pyt", "b3/dst")["metadata"] == {"a": "1"}
    c.copy_object("pyt", "b3/dst2", "pyt", "b3/src", metadata={"b": "2"})
    assert c.head_object("pyt", "b3/dst2")["metadata"] == {"b": "2"}
    url = c.generate_presigned_url("GET", "pyt", "b3/dst", expires_in=60)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"copy me"
    put = c.generate_presigned_url("PUT", "pyt", "b3/presigned", expires_in=60)
    assert requests.put(put, data=b"via url", timeout=10).status_code == 200
    assert c.get_object("pyt", "b3/presigned") == b"via url"
    with pytest.raises(ValueError):
        c.generate_presigned_url("GET", "pyt", "k", expires_in=0)
    # upload_file / download_file: 3 parts of 5 MiB and a bit, callbacks add up.
    cl = client(soft, part_size=5 * MiB, max_concurrency=2)
    src = tmp_path / "big.bin"
    data = seeded_bytes(15 * MiB + 3, seed=81)
    src.write_bytes(data)
    seen = []
    t = cl.upload_file(str(src), "pyt", "b3/file", callback=seen.append)
    assert int(t) == len(data) and sum(seen) == len(data) and t.etag.strip('"').endswith("-4")
    dst = tmp_path / "back.bin"
    seen = []
    t = cl.download_file("pyt", "b3/file", str(dst), callback=seen.append)
    assert dst.read_bytes() == data and sum(seen) == len(data) and t.transport == "rdma"
    assert sorted(os.listdir(tmp_path)) == ["back.bin", "big.bin"]  # no temporary file left
    small = tmp_path / "small.bin"
    small.write_bytes(b"tiny")
    assert "-" not in cl.upload_file(str(small), "pyt", "b3/small").etag.strip('"')
    with pytest.raises(rdmastor.S3Error) as e:
        cl.download_file("pyt", "b3/missing", str(tmp_path / "never"))
    assert e.value.status == 404 and not (tmp_path / "never").exists()
    # delete_objects: existing and missing keys are both deleted; in batches of 1,000.
    keys = [f"b3/del/{i:04d}" for i in range(1003)]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: c.put_object("pyt", k, b"x"), keys[:20]))
    out = c.delete_objects("pyt", keys)
    assert sorted(out["deleted"]) == keys and out["errors"] == []
    assert list(c.list_objects("pyt", prefix="b3/del/")) == []


def test_fsspec_s3fs_habits(soft, c):
    """s3fs's storage options (endpoint_url, key, secret, client_kwargs), ls("") for the buckets,
    s3:// URLs through registration, and writes streamed in parts while the file is open."""
    fsspec = pytest.importorskip("fsspec", reason="python3-fsspec not installed")
    import rdmastor.fsspec as rf
    opts = {"key": soft.access_key, "secret": soft.secret_key,
            "client_kwargs": {"endpoint_url": soft.endpoint}, "rdma": "soft"}
    fs = fsspec.filesystem("rdmastor", **opts)
    assert "pyt" in fs.ls("", detail=False)
    fsspec.register_implementation("s3", rf.RdmastorFileSystem, clobber=True)
    try:
        data = seeded_bytes(12 * MiB + 5, seed=90)
        with fsspec.open("s3://pyt/fss/stream.bin", "wb", endpoint_url=soft.endpoint,
                         key=soft.access_key, secret=soft.secret_key, rdma="soft") as f:
            for at in range(0, len(data), MiB):
                f.write(data[at:at + MiB])
            # Parts went out while writing: the upload exists before close.
            assert f._upload_id is not None and len(f._parts) >= 1
            assert f.buffer.tell() < 6 * MiB  # not the whole file in memory
        assert c.get_object("pyt", "fss/stream.bin") == data
        assert c.head_object("pyt", "fss/stream.bin")["etag"].strip('"').count("-") == 1
        with fsspec.open("s3://pyt/fss/stream.bin", "rb", endpoint_url=soft.endpoint,
                         key=soft.access_key, secret=soft.secret_key, rdma="soft") as f:
            f.seek(5 * MiB)
            assert f.read(100) == data[5 * MiB:5 * MiB + 100]
    finally:
        from fsspec.registry import _registry
        _registry.pop("s3", None)  # back to fsspec's own choice for s3://
    with pytest.raises(TypeError):
        fsspec.filesystem("rdmastor", client_kwargs={"verify": False}, skip_instance_cache=True)


def _sharded_rank(rank, port, srv_info, url, seed, die_in_upload, q):
    """One rank of a 2-rank gloo job: save_sharded, then load_sharded; reports to q. With
    die_in_upload, rank 1 is SIGKILLed during its second part upload (a crash mid-save)."""
    import datetime
    import signal
    import torch
    import torch.distributed as dist
    from rdmastor.torch import load_sharded, save_sharded
    code = 1
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=2, timeout=datetime.timedelta(seconds=20))
        endpoint, ak, sk = srv_info
        cl = rdmastor.Client(endpoint, ak, sk, rdma="soft", part_size=5 * MiB, max_concurrency=2)
        if die_in_upload and rank == 1:
            real, calls = cl._upload_part, []

            def dying(*a, **kw):
                calls.append(1)
                if len(calls) == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*a, **kw)
            cl._upload_part = dying
        state = {"w": torch.randn(3 * MiB, generator=torch.Generator().manual_seed(seed + rank)),
                 "rank": rank}
        try:
            m = save_sharded(state, url, client=cl)
        except Exception as e:  # noqa: BLE001  (reported to the test)
            q.put((rank, "save failed", repr(e)))
            code = 0
            return
        back = load_sharded(url, client=cl)
        q.put((rank, "ok", m["generation"], back["rank"] == rank and torch.equal(back["w"],
                                                                                  state["w"])))
        code = 0
    finally:
        q.close()
        q.join_thread()  # flushed before _exit
        os._exit(code)


def test_sharded_checkpoint_two_ranks_commit_atomically(soft, c):
    """save_sharded / load_sharded with 2 gloo ranks: both shards written in parallel, visible
    through the manifest only; a rank killed mid-save leaves the previous checkpoint readable
    (byte for byte) and the new one invisible; the next save that commits removes what the
    killed one left (a shard, an unfinished upload) and the superseded checkpoint's shards."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    import multiprocessing
    import socket
    from rdmastor.torch import load_sharded
    ctx = multiprocessing.get_context("fork")
    url = "s3://pyt/sharded/ckpt"

    def run(seed, die):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        q = ctx.Queue()
        procs = [ctx.Process(target=_sharded_rank, args=(r, port, (soft.endpoint, soft.access_key,
                                                                     soft.secret_key), url, seed,
                                                           die, q)) for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=90)
            assert not p.is_alive()
        out = {}
        while not q.empty():
            r = q.get(timeout=5)
            out[r[0]] = r[1:]
        return out, [p.exitcode for p in procs]

    out, codes = run(seed=100, die=False)
    assert codes == [0, 0] and out[0][0] == "ok" and out[1][0] == "ok", out
    assert out[0][1] == out[1][1] and out[0][2] and out[1][2]  # same generation, identical
    gen1 = out[0][1]
    for rank in range(2):  # from outside the job too, byte-identical
        back = load_sharded(url, rank=rank, client=c)
        want = torch.randn(3 * MiB, generator=torch.Generator().manual_seed(100 + rank))
        assert torch.equal(back["w"], want)
    out, codes = run(seed=200, die=True)
    assert codes[1] == -9 and 1 not in out, (out, codes)  # rank 1 died mid-upload
    assert out[0][0] == "save failed", out  # rank 0 never committed
    m = json.loads(bytes(c.get_object("pyt", "sharded/ckpt/manifest.json")))
    assert m["generation"] == gen1
    for rank in range(2):
        back = load_sharded(url, rank=rank, client=c)
        assert torch.equal(back["w"], torch.randn(
            3 * MiB, generator=torch.Generator().manual_seed(100 + rank)))

    def left():
        objects = sorted(o.key for o in c.list_objects("pyt", prefix="sharded/ckpt/"))
        uploads = [u[0] for u in c.list_multipart_uploads("pyt", prefix="sharded/ckpt/")]
        return objects, uploads
    objects, uploads = left()  # the killed save's orphans: rank 0's shard, rank 1's upload
    orphans = [k for k in objects if k != "sharded/ckpt/manifest.json"
               and not k.startswith(f"sharded/ckpt/{gen1}/")]
    assert len(orphans) == 1 and len(uploads) == 1, (objects, uploads)
    out, codes = run(seed=300, die=False)  # the next save that commits removes them
    assert codes == [0, 0] and out[0][0] == "ok", out
    gen3 = out[0][1]
    objects, uploads = left()
    assert objects == [f"sharded/ckpt/{gen3}/shard-{r:05d}-of-00002.pt" for r in range(2)] + [
        "sharded/ckpt/manifest.json"], objects
    assert uploads == [], uploads


def test_iterable_dataset_resumes_mid_epoch(soft, c, thousand):
    """state_dict() / load_state_dict() as torchdata's StatefulDataLoader drives them (the state
    taken in each worker with the items it hands over, restored in the same worker of the
    restarted job): 2 ranks x 2 workers stop mid-epoch and resume; every object is read exactly
    once over both runs, none skipped."""
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    from rdmastor.torch import ObjectIterableDataset

    class Stateful(ObjectIterableDataset):
        """Ships the worker's state with each item, as StatefulDataLoader does."""

        def __iter__(self):
            wid = torch.utils.data.get_worker_info().id
            for item in super().__iter__():
                yield item, wid, self.state_dict()

    def make(rank, states=None):
        ds = Stateful("s3://pyt/dl/02", client=c, rank=rank, world_size=2, shuffle=True, seed=9,
                      decode=lambda view, key: key, batch_size=None)
        ds.set_epoch(4)

        def init(wid):
            if states is not None:
                torch.utils.data.get_worker_info().dataset.load_state_dict(states[wid])
        return torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                           multiprocessing_context="fork", worker_init_fn=init)

    first, saved = [], {}
    for rank in range(2):
        states = {}
        for n, (key, wid, state) in enumerate(make(rank)):
            # The job stops after 15 items: what comes later (prefetched or not) is lost with
            # it. (Read to the end rather than break: stopping workers mid-epoch costs seconds.)
            if n < 15:
                first.append(key)
                states[wid] = state
        assert sorted(states) == [0, 1] and states[0]["epoch"] == 4
        saved[rank] = states
    rest = []
    for rank in range(2):
        rest.extend(key for key, _, _ in make(rank, saved[rank]))
    everything = first + rest
    assert len(first) == 30 and len(everything) == 100, (len(first), len(everything))
    assert sorted(everything) == thousand[200:300]
    # A state from another shard layout is refused, not silently misapplied.
    ds = ObjectIterableDataset("s3://pyt/dl/02", client=c, shuffle=True, seed=9)
    ds.load_state_dict({**saved[0][0], "shards": 3})
    with pytest.raises(ValueError, match="shard"):
        next(iter(ds))


def test_stalled_server_reads_are_retried_writes_that_are_not_idempotent_are_not(server_factory):
    """A server that stops answering (SIGSTOP) for 1.5 s: an idempotent call meets a read
    timeout (io_timeout=1), is retried and succeeds once the server runs again (counted as a
    timeout retry); creating a multipart upload (not idempotent: the server may have acted on
    it) raises ReadTimeoutError without a retry."""
    import signal
    srv = server_factory(name="stall", env=SOFT_ENV)
    cl = client(srv, io_timeout=1, retries={"max_attempts": 4, "base_delay": 0.05})
    cl.create_bucket("stl")
    cl.put_object("stl", "k", b"still here")

    def stall(seconds):
        os.kill(srv.proc.pid, signal.SIGSTOP)
        t = threading.Timer(seconds, os.kill, (srv.proc.pid, signal.SIGCONT))
        t.start()
        return t

    t = stall(1.5)
    try:
        assert cl.get_object("stl", "k") == b"still here"
    finally:
        t.join()
    st = cl.stats()
    assert st["timeout"] >= 1 and st["retries"] == st["timeout"], st
    t = stall(1.5)
    try:
        with pytest.raises(rdmastor.ReadTimeoutError) as e:
            cl.create_multipart_upload("stl", "mp")
        assert isinstance(e.value, ConnectionError) and "timed out" in str(e.value)
    finally:
        t.join()
    assert cl.stats()["retries"] == st["retries"]  # not retried
    assert cl.get_object("stl", "k") == b"still here"  # and the client still works


class _ResettingProxy:
    """A loopback TCP proxy in front of srv that resets (RST, SO_LINGER 0) the connections whose
    index is in `resets` once the request's first bytes arrived, and relays the others whole."""

    def __init__(self, srv, resets):
        import socket
        self.resets, self.accepted = set(resets), 0
        self.target = ("127.0.0.1", srv.port)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        import socket
        import struct
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            n, self.accepted = self.accepted, self.accepted + 1
            if n in self.resets:
                conn.settimeout(5)
                try:
                    conn.recv(1)  # the request began: the client sent it, the server never saw it
                except OSError:
                    pass
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
                continue
            up = socket.create_connection(self.target, timeout=5)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        import socket
        try:
            for _ in range(1 << 20):  # bounded: ends at EOF or error long before
                data = src.recv(1 << 16)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_connection_resets_are_retried_for_idempotent_calls_only(server_factory):
    """Connections reset by the network mid-request (a proxy sends RST): a GET and a PUT of a
    whole object (idempotent) are retried on a new connection and succeed, counted as transient
    retries; creating a multipart upload (the server may have acted on it) raises a
    ConnectionError at once, and is not retried."""
    srv = server_factory(name="resets", env=SOFT_ENV)
    direct = client(srv, rdma="off")
    direct.create_bucket("rst")
    direct.put_object("rst", "k", b"through the resets")
    proxy = _ResettingProxy(srv, resets={0, 1, 3})
    try:
        cl = rdmastor.Client(proxy.endpoint, srv.access_key, srv.secret_key, rdma="off",
                             retries={"max_attempts": 4, "base_delay": 0.05})
        assert cl.get_object("rst", "k") == b"through the resets"  # connections 0, 1 reset; 2 relays
        st = cl.stats()
        assert st["transient"] == 2 and st["retries"] == 2, st
        cl.close()  # a new client opens a new connection: number 3, which resets
        cl = rdmastor.Client(proxy.endpoint, srv.access_key, srv.secret_key, rdma="off",
                             retries={"max_attempts": 4, "base_delay": 0.05})
        with pytest.raises(ConnectionError) as e:
            cl.create_multipart_upload("rst", "mp")
        assert not isinstance(e.value, rdmastor.EndpointConnectionError), e.value
        assert cl.stats()["retries"] == 0, cl.stats()
        assert proxy.accepted == 4
        cl.put_object("rst", "k2", b"x" * 1000)  # connection 4 relays
        assert direct.get_object("rst", "k2") == b"x" * 1000
    finally:
        proxy.close()
