"""Faults on the real kernel RDMA stack (ctest rxe.faults, issue 31 item 4), inside the guest of
scripts/rdma-vm.sh --devices 1: the RDMA build's server serving S3 over RDMA on RC.

- A client killed in the middle of a GET over RC: the server frees that client's QP, CQ and
  rdma_cm id (counted by the kernel, `rdma resource show`, for the server) back to what it
  held before the client came, and goes on serving RC.
- Clients that ask for an RC connection and never complete the handshake (tests/rxe/
  rc_stall_client.cc: a QP rdma_cm does not manage, no rdma_establish) do not hold up the
  listener: a well-behaved client connects and GETs while they stall, and the server frees
  their half-open connections after its 3 s establish timeout, back to its baseline.
- The port of the server's device goes down (`ip link set <netdev> down` under rxe0): token
  requests get 501 `degraded` naming the port, HTTP goes on, the fabric is kept, and RC serves
  again by itself once the netdev is up.
- A low memlock limit (64 KiB and no CAP_IPC_LOCK, what an unprivileged service gets by default):
  rdmastor-cli, the Python package and the server each fail with an error naming RLIMIT_MEMLOCK
  and its fix; the server still serves HTTP and declines S3 over RDMA with 501.
- `rdma link delete` of the device: S3 over RDMA (the server) and inter-node shards (a 2-node
  cluster with MINIO_RDMA_INTERNODE=on on the same device) free everything they made on it, the
  delete returns within seconds, pieces go over TCP meanwhile (fallbacks, reason
  fabric_unavailable) and over RDMA again once `rdma link add` brought the device back.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rxe_util import (IP, LOW_MEMLOCK, PASSWORD, USER, RxeServer, data_of, free_port,  # noqa: E402
                      rdma_resources)

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
    size = 64 * MiB  # 1.5-6 s over RC under TCG (10-45 MB/s measured): killed 0.2 s into it
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
        time.sleep(0.2)
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


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _netdev_of(dev):
    links = json.loads(subprocess.run(["rdma", "-j", "link", "show"], capture_output=True,
                                      text=True, timeout=30).stdout or "[]")
    return next(link["netdev"] for link in links if link["ifname"].split("/")[0] == dev)


def test_port_down_answers_501_degraded_and_recovers(srv, tmp_path):
    """The netdev under rxe0 goes down and up again: the port is not ACTIVE meanwhile. The server
    keeps its fabric (a port down is no removed device), answers token requests 501 `degraded`
    naming the port, serves HTTP, and serves RC again by itself once the port is back."""
    src = tmp_path / "one"
    src.write_bytes(data_of(MiB, 6))
    assert srv.cli("mb", "port").returncode == 0
    assert srv.cli("put", "port/one", str(src)).returncode == 0
    netdev = _netdev_of("rxe0")
    released = srv.log().count("S3 over RDMA: degraded")
    _ip("link", "set", netdev, "down")
    try:
        p = None
        for _ in range(40):  # the fabric reads its port at most every 250 ms
            p = srv.cli("--rdma", "--fabric", "soft", "get", "port/one", str(tmp_path / "s"))
            if "port 1 is down" in p.stderr:
                break
            time.sleep(0.25)
        assert p.returncode != 0 and "501" in p.stderr and "degraded" in p.stderr, p.stderr
        assert "port 1 is down" in p.stderr, p.stderr
        h = srv.cli("get", "port/one", str(tmp_path / "h"))  # HTTP goes on
        assert h.returncode == 0 and "transport http" in h.stderr, h.stderr
        assert (tmp_path / "h").read_bytes() == src.read_bytes()
    finally:
        _ip("link", "set", netdev, "up")
    got = None
    for _ in range(40):
        got = srv.cli("get", "port/one", str(tmp_path / "r"), rdma=True)
        if got.returncode == 0:
            break
        time.sleep(0.5)
    assert got.returncode == 0 and "transport rdma" in got.stderr, got.stderr
    assert (tmp_path / "r").read_bytes() == src.read_bytes()
    # Degraded, not released: nothing was freed or reopened.
    assert srv.log().count("S3 over RDMA: degraded") == released, srv.log()[-2000:]


def _second_device():
    """rxe9 on a dummy netdev: librdmacm closes its context of a removed device only when it syncs
    its device list, which it cannot while no device is left (docs/runbook.md)."""
    links = subprocess.run(["rdma", "link", "show"], capture_output=True, text=True,
                           timeout=30).stdout
    if "rxe9" in links:
        return
    _ip("link", "add", "rxv9", "type", "dummy")
    _ip("addr", "add", "10.77.9.1/24", "dev", "rxv9")
    _ip("link", "set", "rxv9", "up")
    subprocess.run(["rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "rxv9"], check=True,
                   timeout=30)


def test_device_removed_and_added_again(srv, tmp_path):
    """`rdma link delete` of the server's device during transfers: the delete completes (the server
    and an idle Python client free everything they made on it), HTTP goes on, S3 over RDMA
    answers 501 naming the degraded fabric, and once `rdma link add` brings the device back the
    server serves RC again on its port and the same Python client uses RC again by itself."""
    src = tmp_path / "one"
    src.write_bytes(data_of(MiB, 4))
    big = tmp_path / "big"
    big.write_bytes(data_of(16 * MiB, 5))
    assert srv.cli("mb", "dev").returncode == 0
    assert srv.cli("put", "dev/one", str(src)).returncode == 0
    assert srv.cli("put", "dev/big", str(big)).returncode == 0
    netdev = _netdev_of("rxe0")
    _second_device()
    # The Python client (rdma="auto" over RC): one GET per line on its stdin, printing how it went.
    child = subprocess.Popen([sys.executable, "-c", (
        f"import sys; sys.path.insert(0, {os.path.join(BUILD, 'python')!r})\n"
        "import faulthandler, signal, rdmastor\n"
        "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
        f"c = rdmastor.Client({srv.endpoint!r}, {USER!r}, {PASSWORD!r}, rdma='auto', "
        f"transport='rc', rc_port={srv.rc_port})\n"
        "one, big = bytearray(1 << 20), bytearray(16 << 20)\n"
        "for line in sys.stdin:\n"
        "    try:\n"
        "        t = c.get_into('dev', line.strip(), big if line.strip() == 'big' else one)\n"
        "        print(t.transport, int(t), flush=True)\n"
        "    except Exception as e:\n"
        "        print('error', type(e).__name__, e, flush=True)\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    answers = queue.Queue()  # the child's lines, read on a thread: a read can time out
    threading.Thread(target=lambda: [answers.put(line) for line in child.stdout], daemon=True).start()

    def child_answer():  # skipping the library's log lines ("[date] [error] ...")
        for _ in range(100):
            try:
                words = answers.get(timeout=90).split()
            except queue.Empty:
                child.send_signal(signal.SIGUSR1)  # its Python stack, on the test's stderr
                time.sleep(2)
                raise AssertionError(f"the Python client did not answer within 90 s; server "
                                     f"log:\n{srv.log()[-3000:]}")
            if not words or not words[0].startswith("["):
                return words
        return []

    def child_get(key):
        child.stdin.write(key + "\n")
        child.stdin.flush()
        return child_answer()

    deleted = False
    try:
        assert child_get("one") == ["rdma", str(MiB)]
        before = rdma_resources()
        assert before["cm_id"] > 0 and before["pd"] > 0, before
        # Delete while both the server (a 16 MiB GET over RC) and rdmastor-cli move payloads.
        child.stdin.write("big\n")
        child.stdin.flush()
        cli = subprocess.Popen(
            [os.path.join(BUILD, "src", "rdmastor-cli"), "--endpoint", srv.endpoint, "--rdma",
             "--fabric", "verbs", "--transport", "rc", "--rc-port", str(srv.rc_port),
             "get", "dev/big", str(tmp_path / "cli-big")],
            env=dict(srv.env, AWS_ACCESS_KEY_ID=USER, AWS_SECRET_ACCESS_KEY=PASSWORD),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        t0 = time.monotonic()
        subprocess.run(["rdma", "link", "delete", "rxe0"], check=True, timeout=90)
        deleted = True
        took = time.monotonic() - t0
        print(f"rdma link delete took {took:.1f} s")
        got = child_answer()  # the big GET: done, over HTTP, or a clean error
        assert got and got[0] in ("rdma", "http"), got
        cli_out, cli_err = cli.communicate(timeout=120)  # it ends: done or a clean error
        assert cli.returncode == 0 or "RDMA" in cli_err or "verbs" in cli_err, cli_err
        # The server freed everything it made on the device; HTTP goes on.
        none = {k: 0 for k in before}
        deadline = time.monotonic() + 10  # a reopen attempt binds an rdma_cm id for a moment
        while time.monotonic() < deadline and rdma_resources() != none:
            time.sleep(0.2)
        assert rdma_resources() == none
        p = srv.cli("get", "dev/one", str(tmp_path / "h"))
        assert p.returncode == 0 and "transport http" in p.stderr, p.stderr
        assert (tmp_path / "h").read_bytes() == src.read_bytes()
        # A token request gets the documented decline: 501 naming the degraded fabric.
        p = srv.cli("--rdma", "--fabric", "soft", "get", "dev/one", str(tmp_path / "s"))
        assert p.returncode != 0 and "501" in p.stderr and "degraded" in p.stderr, p.stderr
        assert "rxe0 was removed" in p.stderr, p.stderr
        # The Python client: over HTTP meanwhile (auto), no hang.
        assert child_get("one") == ["http", str(MiB)]

        subprocess.run(["rdma", "link", "add", "rxe0", "type", "rxe", "netdev", netdev],
                       check=True, timeout=30)
        deleted = False
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "the device was reopened" not in srv.log():
            time.sleep(0.5)
        assert "the device was reopened" in srv.log(), srv.log()[-3000:]
        p = srv.cli("get", "dev/big", str(tmp_path / "back"), rdma=True)
        assert p.returncode == 0 and "transport rdma" in p.stderr, p.stderr
        assert (tmp_path / "back").read_bytes() == big.read_bytes()
        # The same Python client goes back to RC by itself (its device reopened, the degraded
        # decline remembered for 2 s only).
        got = []
        for _ in range(20):
            got = child_get("one")
            if got and got[0] == "rdma":
                break
            time.sleep(0.5)
        assert got == ["rdma", str(MiB)], got
    finally:
        child.kill()
        child.wait(timeout=30)
        if deleted:
            subprocess.run(["rdma", "link", "add", "rxe0", "type", "rxe", "netdev", netdev],
                           timeout=30)
        # rxe9 stays: librdmacm in the server opened it too (it opens every device it lists) and
        # would hold its delete until the server exits; the guest ends after this module.


SENT = 'minio_system_network_internode_sent_bytes_total{transport="%s"}'
FALLBACKS = "minio_system_network_internode_rdma_fallbacks_total"
UNAVAILABLE = 'rdmastor_rdma_internode_fallbacks_total{reason="fabric_unavailable"}'


def test_internode_device_removed_and_added_again(srv, tmp_path):
    """Inter-node shards over RC (MINIO_RDMA_INTERNODE=on, 2 nodes x 2 drives on rxe0's
    addresses): `rdma link delete` during a PUT returns within seconds (each node frees its
    channels, QPs, CQs, MRs, PDs and rdma_cm ids), pieces go over TCP meanwhile (fallbacks with
    reason fabric_unavailable), and after `rdma link add` each node reopens the device and shards
    move over RDMA again. Before, a node held the device until it exited: the delete hung."""
    _second_device()
    netdev = _netdev_of("rxe0")
    subprocess.run(["ip", "addr", "add", "10.77.0.2/24", "dev", netdev], capture_output=True,
                   timeout=30)  # the second node's address (kept if a run before added it)
    hosts, port = [IP, "10.77.0.2"], free_port()
    work = tempfile.mkdtemp(prefix="rxe-internode-")
    dirs = [[os.path.join(work, f"n{i}", f"d{j}") for j in (1, 2)] for i in range(2)]
    for d in dirs[0] + dirs[1]:
        os.makedirs(d)
    env = {"MINIO_VOLUMES": " ".join(f"http://{h}:{port}{d}" for h, ds in zip(hosts, dirs)
                                     for d in ds),
           "MINIO_RDMA_INTERNODE": "on", "MINIO_RDMA_INTERNODE_INFLIGHT_BYTES": "16MiB",
           "MINIO_RDMA_RC_PORT": "off", "MINIO_PEER_WAIT": "30s",
           "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"}
    nodes = [RxeServer(BUILD, env=env, host=h, port=port, wait=False) for h in hosts]
    obj = tmp_path / "obj"
    obj.write_bytes(data_of(4 * MiB, 7))
    big = tmp_path / "big"
    big.write_bytes(data_of(16 * MiB, 8))

    def metric(i, name):
        return nodes[i].metrics().get(name, 0.0)

    def wait_logs(text, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(text in n.log() for n in nodes):
            time.sleep(0.25)
        for n in nodes:
            assert text in n.log(), n.log()[-3000:]

    def put_then_get(key):
        p = nodes[0].cli("put", f"inter/{key}", str(obj))
        assert p.returncode == 0, (p.stderr, nodes[0].log()[-2000:])
        back = tmp_path / f"{key}.back"
        p = nodes[1].cli("get", f"inter/{key}", str(back))
        assert p.returncode == 0, (p.stderr, nodes[1].log()[-2000:])
        assert back.read_bytes() == obj.read_bytes()

    deleted, delete = False, None
    try:
        for n in nodes:
            n.wait_live(120, "/minio/health/cluster")
        wait_logs("inter-node RDMA: on, verbs fabric")
        mb = None
        for _ in range(40):  # until each node counts the other online (its health check, 1 s)
            mb = nodes[0].cli("mb", "inter")
            if mb.returncode == 0:
                break
            time.sleep(0.5)
        assert mb.returncode == 0, (mb.stderr, nodes[0].log()[-2000:])
        rdma0 = metric(0, SENT % "rdma")
        put_then_get("a")  # EC 2+2: node 1 sends node 2's two shards (2 MiB each) over RC
        assert metric(0, SENT % "rdma") - rdma0 >= 2 * MiB
        assert metric(0, FALLBACKS) == 0 and metric(1, FALLBACKS) == 0

        # Delete the device while a 16 MiB PUT moves shards.
        bg = subprocess.Popen(
            [os.path.join(BUILD, "src", "rdmastor-cli"), "--endpoint", nodes[0].endpoint, "put",
             "inter/big", str(big)],
            env=nodes[0].cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        t0 = time.monotonic()
        # Not subprocess.run(timeout=): a delete the kernel holds cannot be killed, and waiting
        # for it would wait for the nodes, which only the finally below stops.
        delete = subprocess.Popen(["rdma", "link", "delete", "rxe0"])
        deleted = True
        try:
            delete.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("rdma link delete did not return within 30 s: a node holds the "
                                 "device\n" + nodes[0].log()[-2000:])
        took = time.monotonic() - t0
        print(f"inter-node: rdma link delete took {took:.1f} s", flush=True)
        assert delete.returncode == 0 and took < 20, (delete.returncode, took)
        _, err = bg.communicate(timeout=240)  # done (pieces resent over TCP) or a clean error
        big_ok = bg.returncode == 0
        wait_logs("inter-node RDMA: degraded, shard pieces go over TCP")
        assert rdma_resources() == {k: 0 for k in ("qp", "cq", "mr", "pd", "cm_id")}
        # Meanwhile: over TCP, counted as fallbacks with the reason.
        tcp0, unavailable0 = metric(0, SENT % "tcp"), metric(0, UNAVAILABLE)
        put_then_get("b")
        assert metric(0, SENT % "tcp") - tcp0 >= 2 * MiB
        assert metric(0, UNAVAILABLE) > unavailable0

        subprocess.run(["rdma", "link", "add", "rxe0", "type", "rxe", "netdev", netdev],
                       check=True, timeout=30)
        deleted = False
        wait_logs("inter-node RDMA: the device was reopened")
        rdma1, tcp1 = metric(0, SENT % "rdma"), metric(0, SENT % "tcp")
        put_then_get("c")
        assert metric(0, SENT % "rdma") - rdma1 >= 2 * MiB, nodes[0].log()[-3000:]
        assert metric(0, SENT % "tcp") == tcp1
        if big_ok:
            p = nodes[1].cli("get", "inter/big", str(tmp_path / "big.back"))
            assert p.returncode == 0 and (tmp_path / "big.back").read_bytes() == big.read_bytes()
        else:
            print("the PUT during the delete failed cleanly:", err[-300:], flush=True)
    finally:
        for n in nodes:
            n.stop()
        if delete is not None and delete.poll() is None:
            delete.wait(timeout=60)  # the nodes are gone: the kernel finishes the delete
        if deleted:
            subprocess.run(["rdma", "link", "add", "rxe0", "type", "rxe", "netdev", netdev],
                           timeout=30)
