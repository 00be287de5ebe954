"""Faults on the real kernel RDMA stack (ctest rxe.faults, issue 31 item 4), inside the guest of
scripts/rdma-vm.sh --devices 1: the RDMA build's server serving S3 over RDMA on RC.

- A client killed in the middle of a GET over RC: the server frees that client's QP, CQ and
  rdma_cm id (counted by the kernel, `rdma resource show`, for the server) back to what it
  held before the client came, and goes on serving RC.
- Clients that ask for an RC connection and never complete the handshake (tests/rxe/
  rc_stall_client.cc: a QP rdma_cm does not manage, no rdma_establish) do not hold up the
  listener: a well-behaved client connects and GETs while they stall, and the server frees
  their half-open connections after its 3 s establish timeout, back to its baseline.
- A low memlock limit (64 KiB and no CAP_IPC_LOCK, what an unprivileged service gets by default):
  rdmastor-cli, the Python package and the server each fail with an error naming RLIMIT_MEMLOCK
  and its fix; the server still serves HTTP and declines S3 over RDMA with 501.
"""

import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rxe_util import LOW_MEMLOCK, PASSWORD, USER, RxeServer, data_of, rdma_resources  # noqa: E402

BUILD = os.environ.get("RDMASTOR_BUILD_DIR", os.path.abspath("build-rdma"))
MiB = 1 << 20
MEMLOCK_FIX = "raise RLIMIT_MEMLOCK, LimitMEMLOCK=infinity in the systemd unit"

pytestmark = pytest.mark.skipif(os.environ.get("RDMASTOR_VM") != "1",
                                reason="runs inside scripts/rdma-vm.sh (ctest -L rxe)")


@pytest.fixture(scope="module")
def srv():
    s = RxeServer(BUILD)
    yield s
    s.stop()


def python_client(srv, prefix=(), code=""):
    """A Python process with the package's Client over RC to srv as `c`, running code."""
    script = (f"import sys; sys.path.insert(0, {os.path.join(BUILD, 'python')!r})\n"
              "import rdmastor\n"
              f"c = rdmastor.Client({srv.endpoint!r}, {USER!r}, {PASSWORD!r}, rdma='verbs', "
              f"transport='rc', rc_port={srv.rc_port})\n" + code)
    return list(prefix) + [sys.executable, "-c", script]


def test_client_killed_mid_get_frees_its_resources(srv, tmp_path):
    size = 32 * MiB  # ~3 s over RC under TCG (~10 MB/s): killed 0.7 s into it
    src = tmp_path / "big"
    src.write_bytes(data_of(size, 1))
    assert srv.cli("mb", "faults").returncode == 0
    assert srv.cli("put", "faults/big", str(src)).returncode == 0
    assert srv.cli("put", "faults/small", "/etc/hostname").returncode == 0
    assert subprocess.run(["pgrep", "-c", "-x", "rdmastor"], capture_output=True,
                          text=True).stdout.strip() == "1"  # the counts below are by name
    baseline = rdma_resources()
    sent0 = srv.traffic()[("sent", "rdma")]
    child = subprocess.Popen(python_client(srv, code=(
        "c.get_into('faults', 'small', bytearray(1 << 16))\n"  # the RC connection is up
        "print('connected', flush=True)\n"
        f"c.get_into('faults', 'big', bytearray({size}))\nprint('done', flush=True)\n")),
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "connected"
        time.sleep(0.7)
        during = rdma_resources()
        child.kill()
        child.wait(timeout=30)
        out = child.stdout.read()
    finally:
        if child.poll() is None:
            child.kill()
    moved = srv.traffic()[("sent", "rdma")] - sent0
    assert "done" not in out and moved < size, (moved, out)  # killed mid-GET
    assert during["qp"] > baseline["qp"], (baseline, during)  # its connection was being served
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and rdma_resources() != baseline:
        time.sleep(0.5)
    assert rdma_resources() == baseline, (baseline, during)
    dst = tmp_path / "back"
    p = srv.cli("get", "faults/small", str(dst), rdma=True)  # and RC still serves
    assert p.returncode == 0 and "transport rdma" in p.stderr, p.stderr
    assert dst.read_bytes() == open("/etc/hostname", "rb").read()


def test_low_memlock_limit_is_named(srv, tmp_path):
    src = tmp_path / "one"
    src.write_bytes(data_of(MiB, 2))
    assert srv.cli("mb", "memlock").returncode == 0
    assert srv.cli("put", "memlock/one", str(src)).returncode == 0
    for args in (["get", "memlock/one", str(tmp_path / "o")], ["put", "memlock/two", str(src)]):
        p = srv.cli(*args, rdma=True, prefix=LOW_MEMLOCK)
        assert p.returncode != 0 and MEMLOCK_FIX in p.stderr, (args, p.returncode, p.stderr)
    p = subprocess.run(python_client(srv, LOW_MEMLOCK, (
        "try:\n    c.get_into('memlock', 'one', bytearray(1 << 20))\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n")),
        capture_output=True, text=True, timeout=120)
    assert MEMLOCK_FIX in p.stdout, (p.stdout, p.stderr)

    low = RxeServer(BUILD, prefix=LOW_MEMLOCK)
    try:
        log = low.log()
        assert "S3 over RDMA: unavailable" in log and MEMLOCK_FIX in log, log[-3000:]
        assert low.cli("mb", "lowsrv").returncode == 0  # HTTP goes on
        assert low.cli("put", "lowsrv/one", str(src)).returncode == 0
        p = low.cli("get", "lowsrv/one", str(tmp_path / "o2"))
        assert p.returncode == 0 and "transport http" in p.stderr, p.stderr
        assert (tmp_path / "o2").read_bytes() == src.read_bytes()
        p = low.cli("get", "lowsrv/one", str(tmp_path / "o3"), rdma=True)
        assert p.returncode != 0, p.stderr  # RC refused (the listener never started), not a hang
    finally:
        low.stop()


def test_handshakes_that_never_complete_do_not_hold_up_others(srv, tmp_path):
    src = tmp_path / "one"
    src.write_bytes(data_of(MiB, 3))
    assert srv.cli("mb", "stall").returncode == 0
    assert srv.cli("put", "stall/one", str(src)).returncode == 0
    baseline = rdma_resources()
    stall = os.path.join(BUILD, "tests", "rc_stall_client")
    stallers = [subprocess.Popen([stall, srv.endpoint.split("//")[1].split(":")[0],
                                  str(srv.rc_port), "120"], stdout=subprocess.PIPE, text=True)
                for _ in range(3)]
    try:
        # One is accepted and stalls: a listener that waits for its ESTABLISHED is stuck now.
        assert stallers[0].stdout.readline().strip() == "accepted"
        p = srv.cli("get", "stall/one", str(tmp_path / "o"), rdma=True)
        assert p.returncode == 0 and "transport rdma" in p.stderr, p.stderr
        assert (tmp_path / "o").read_bytes() == src.read_bytes()
        for s in stallers[1:]:
            assert s.stdout.readline().strip() == "accepted"
        # The server frees the three half-open connections itself, while their clients live.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                srv.log().count("was not established within 3 s: freed") < 3 or
                rdma_resources() != baseline):
            time.sleep(0.5)
        assert srv.log().count("was not established within 3 s: freed") == 3, srv.log()[-2000:]
        assert rdma_resources() == baseline
        assert all(s.poll() is None for s in stallers)
    finally:
        for s in stallers:
            s.kill()
            s.wait(timeout=30)
