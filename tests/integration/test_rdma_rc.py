"""S3 over RDMA on RC connections the client opens (docs/s3-over-rdma.md, "RC transport"), with
rdmastor-cli and the Python package against the real server on the soft fabric (which gives RC its
semantics over TCP): PUT, GET, ranged GET and UploadPart byte-identical, one connection per client,
the payload counted on the RDMA side of the server's traffic metrics and none over HTTP."""

import os
import sys

import pytest

from conftest import BUILD_DIR, Server, free_port, scrape, seeded_bytes
from test_rdma_cli import cli, md5_file, write_file

SIZES = [0, 1, 4096, (1 << 20) + 1]


@pytest.fixture(scope="module")
def rc_server():
    port = free_port()
    srv = Server("rc", env={"MINIO_RDMA_FABRIC": "soft", "MINIO_RDMA_RC_PORT": str(port),
                            "MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    srv.rc_port = port
    srv.start()
    yield srv
    srv.cleanup()


def traffic(srv):
    m = scrape(srv)
    return {(d, t): m.get(f'minio_s3_traffic_{d}_bytes{{transport="{t}"}}', 0.0)
            for d in ("received", "sent") for t in ("rdma", "tcp")}


def rc_events(srv, event):
    return scrape(srv).get(f'rdmastor_rdma_rc_connection_events{{event="{event}"}}', 0.0)


def test_cli_put_get_over_rc(rc_server, tmp_path):
    rc, _, err = cli(rc_server, "mb", "clirc")
    assert rc == 0, err
    before = traffic(rc_server)
    admitted = rc_events(rc_server, "admitted")
    moved = 0
    for size in SIZES:
        src = tmp_path / f"src{size}"
        dst = tmp_path / f"dst{size}"
        write_file(src, size, size)
        rc, _, err = cli(rc_server, "--rdma", "--transport", "rc", "--rc-port",
                         str(rc_server.rc_port), "put", f"clirc/o{size}", str(src))
        assert rc == 0, err
        assert f"put: {size} bytes" in err and "transport rdma" in err, err
        rc, _, err = cli(rc_server, "--rdma", "--transport", "rc", "--rc-port",
                         str(rc_server.rc_port), "get", f"clirc/o{size}", str(dst))
        assert rc == 0, err
        assert md5_file(dst) == md5_file(src)
        moved += size
    after = traffic(rc_server)
    assert after[("received", "rdma")] - before[("received", "rdma")] == moved
    assert after[("sent", "rdma")] - before[("sent", "rdma")] == moved
    assert after[("received", "tcp")] == before[("received", "tcp")], "payload over HTTP"
    assert after[("sent", "tcp")] == before[("sent", "tcp")], "payload over HTTP"
    # One connection per rdmastor-cli process that moved a payload (8 runs).
    assert rc_events(rc_server, "admitted") - admitted == 2 * len(SIZES)


def test_cli_rejects_a_bad_transport(rc_server):
    rc, _, err = cli(rc_server, "--rdma", "--transport", "xx", "ls")
    assert rc == 2 and "--transport takes dc or rc" in err


PKG_DIR = os.path.join(BUILD_DIR, "python")


@pytest.fixture(scope="module")
def rdmastor_pkg():
    if not os.path.isdir(os.path.join(PKG_DIR, "rdmastor")):
        pytest.skip("the Python module is not configured in this build (pybind11-dev missing: "
                    "scripts/install-deps.sh)")
    sys.path.insert(0, PKG_DIR)
    import rdmastor
    return rdmastor


def test_python_put_get_range_and_parts_over_rc(rc_server, rdmastor_pkg):
    c = rdmastor_pkg.Client(rc_server.endpoint, rc_server.access_key, rc_server.secret_key,
                            rdma="soft", transport="rc", rc_port=rc_server.rc_port,
                            multipart_threshold=5 << 20, part_size=5 << 20, max_concurrency=1)
    c.create_bucket("pyrc")
    before = traffic(rc_server)
    admitted = rc_events(rc_server, "admitted")
    moved_in = moved_out = 0
    for size in SIZES + [6 << 20]:  # the last one as a multipart upload (UploadPart over RC)
        data = seeded_bytes(size, size + 1)
        t = c.put_object("pyrc", f"o{size}", data)
        assert t.transport == "rdma" and int(t) == size
        back = bytearray(size)
        g = c.get_into("pyrc", f"o{size}", back)
        assert g.transport == "rdma" and bytes(back) == data
        moved_in += size
        moved_out += size
        if size > 2:
            part = bytearray(size - 2)
            r = c.get_into("pyrc", f"o{size}", part, offset=1, length=size - 2)
            assert r.transport == "rdma" and bytes(part) == data[1:-1]
            moved_out += size - 2
    after = traffic(rc_server)
    assert after[("received", "rdma")] - before[("received", "rdma")] == moved_in
    assert after[("sent", "rdma")] - before[("sent", "rdma")] == moved_out
    # Over HTTP only the multipart upload's XML (create / complete), never payload.
    assert after[("received", "tcp")] - before[("received", "tcp")] < 1024, "payload over HTTP"
    assert after[("sent", "tcp")] - before[("sent", "tcp")] < 1024, "payload over HTTP"
    # One connection per native client, never one per request: the calling thread's, and the
    # one pool worker's (max_concurrency=1) that sends the parts and ranges of the 6 MiB object.
    assert 1 <= rc_events(rc_server, "admitted") - admitted <= 2
