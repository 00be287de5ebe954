"""Persistent inter-node RDMA channels (issue 10 item 4) on a 4-node x 4-drive loopback cluster,
inter-node RDMA on over the soft fabric, MINIO_RDMA_MIN_SIZE=16KiB, MINIO_RDMA_CHANNELS=2, and
MINIO_STORAGE_CLASS_INLINE_BLOCK=16KiB so that small objects' shards are files that move as pieces
(at the default 128KiB a 256 KiB object is inline: no pieces at all).

- 200 objects whose shards all move over RDMA open at most peers x channels connections per node
  (rdmastor_rdma_internode_connections_opened_total), instead of one per piece, and that many stay
  open to each node's target (/proc/net/tcp);
- a node SIGKILLed mid-transfer leaves nothing behind on the survivors: no socket in CLOSE_WAIT,
  no descriptor of a closed socket, no connection toward the dead node (counted from
  /proc/PID/fd and /proc/net/*).
"""

import concurrent.futures
import os
import re
import threading
import time

import pytest

from cluster_util import Cluster, metric_sum, sha
from conftest import seeded_bytes

KiB = 1 << 10
MiB = 1 << 20
CHANNELS = 2
PEERS = 3
ENV = {"MINIO_RDMA_INTERNODE": "on", "MINIO_RDMA_FABRIC": "soft", "MINIO_RDMA_MIN_SIZE": "16KiB",
       "MINIO_RDMA_CHANNELS": str(CHANNELS), "MINIO_STORAGE_CLASS_INLINE_BLOCK": "16KiB"}
OPENED = "rdmastor_rdma_internode_connections_opened_total"
SENT = "minio_system_network_internode_sent_bytes_total"


def _net_tables():
    """{socket inode: (state hex or None, local port, remote port)} over /proc/net/*."""
    out = {}
    for name in ("tcp", "tcp6"):
        with open(f"/proc/net/{name}") as f:
            for line in f.readlines()[1:]:
                p = line.split()
                out[p[9]] = (p[3], int(p[1].rsplit(":", 1)[1], 16), int(p[2].rsplit(":", 1)[1], 16))
    for name in ("udp", "udp6", "raw", "raw6", "unix", "netlink", "packet"):
        try:
            with open(f"/proc/net/{name}") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        col = 6 if name == "unix" else (8 if name == "netlink" else 9)
        for line in lines:
            p = line.split()
            if len(p) > col:
                out.setdefault(p[col], (None, 0, 0))
    return out


def socket_report(pid, dead_ports):
    """What node `pid` holds that it should not: CLOSE_WAIT sockets, descriptors of sockets the
    kernel no longer lists (closed, fd kept), and TCP connections to `dead_ports`."""
    tables = _net_tables()
    report = {"close_wait": 0, "closed_fds": 0, "to_dead": 0, "sockets": 0}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", link)
        if not m:
            continue
        report["sockets"] += 1
        entry = tables.get(m.group(1))
        if entry is None:
            report["closed_fds"] += 1
        elif entry[0] == "08":
            report["close_wait"] += 1
        elif entry[0] is not None and entry[0] != "0A" and entry[2] in dead_ports:
            report["to_dead"] += 1
    return report


def target_port(node):
    m = re.search(r"inter-node RDMA: on, soft fabric, target port (\d+)", node.log_text())
    assert m, node.log_tail(20)
    return int(m.group(1))


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(env_extra=ENV)
    try:
        c.start()
        c.client(0).create_bucket(Bucket="chan")
        yield c
    finally:
        c.cleanup()


def test_pieces_reuse_persistent_channels(cluster):
    c = cluster
    before = [metric_sum(c.metrics(i), SENT, transport="rdma") for i in range(4)]
    # 256 KiB objects: ~22 KiB shards (EC 12+4), above the 16KiB inline block: every piece over
    # RDMA at MIN_SIZE=16KiB.
    bodies = {f"o{i:03d}": seeded_bytes(256 * KiB, seed=i) for i in range(200)}

    def put(item):
        n, (key, body) = item
        c.client(n % 4).put_object(Bucket="chan", Key=key, Body=body)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(put, enumerate(bodies.items())))
    for n, key in enumerate(list(bodies)[::10]):
        got = c.client((n + 1) % 4).get_object(Bucket="chan", Key=key)["Body"].read()
        assert sha(got) == sha(bodies[key]), key
    for i in range(4):
        m = c.metrics(i)
        assert metric_sum(m, SENT, transport="rdma") > before[i], f"node{i + 1} sent no RDMA"
        opened = metric_sum(m, OPENED)
        # Serving pieces for 3 peers over at most 2 channels each, whatever the piece count.
        assert 0 < opened <= PEERS * CHANNELS, (i, opened)
        # Seen from outside: the connections the peers hold open to node i's RDMA target.
        port = target_port(c.nodes[i])
        established = sum(1 for state, local, _ in _net_tables().values()
                          if state == "01" and local == port)
        assert 0 < established <= PEERS * CHANNELS, (i, established)


def test_killed_node_leaves_no_sockets_behind(cluster):
    c = cluster
    dead = 3
    dead_ports = {c.nodes[dead].port, target_port(c.nodes[dead])}
    stop = threading.Event()
    errors = []

    def writer(n):
        s3 = c.client(n, connect_timeout=20, read_timeout=30)
        for i in range(20):
            if stop.is_set():
                return
            try:
                s3.put_object(Bucket="chan", Key=f"kill-{n}-{i}", Body=seeded_bytes(2 * MiB, i))
            except Exception as e:  # the kill may fail a PUT in flight; that is not the point
                errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in (0, 1, 2)]
    for t in threads:
        t.start()
    time.sleep(1.5)  # transfers in flight with every peer
    c.kill(dead)
    time.sleep(2)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    # The survivors drop what they had with the dead node within the sweep interval (1 s) and
    # the peer health check; bounded wait.
    pids = c.pids()
    deadline = time.monotonic() + 15
    while True:
        reports = {i: socket_report(pids[i], dead_ports) for i in range(4) if i != dead}
        leaked = {i: r for i, r in reports.items()
                  if r["close_wait"] or r["closed_fds"] or r["to_dead"]}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not leaked, f"survivors hold sockets of the dead node: {leaked}"
    # The survivors still serve: a PUT and GET through each.
    for i in (0, 1, 2):
        body = seeded_bytes(1 * MiB, seed=100 + i)
        s3 = c.client(i, connect_timeout=20, read_timeout=30)
        s3.put_object(Bucket="chan", Key=f"after-{i}", Body=body)
        assert sha(s3.get_object(Bucket="chan", Key=f"after-{i}")["Body"].read()) == sha(body)
