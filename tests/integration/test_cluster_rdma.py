"""Inter-node shard transport over RDMA (soft fabric) on a 4-node x 4-drive loopback cluster.

With MINIO_RDMA_INTERNODE=on every piece of a shard whose file is at least MINIO_RDMA_MIN_SIZE
moves between nodes over the fabric (the serving node RDMA-READs a written piece out of the
caller's buffer, RDMA-WRITEs a read piece into it); smaller shards go in HTTP bodies. The node
metrics prove which way the bytes went; every object is byte-compared through another node.

16 drives form one set of EC 12+4, so an object of S bytes gives shard files of about S/12 (plus
8 bytes of bitrot hash per 1 MiB stripe): 2 MiB -> ~175 KiB shards (TCP at the 1 MiB default),
24 MiB -> ~2 MiB shards (RDMA).
"""

import os

import pytest

from cluster_util import Cluster, get_bytes, metric_samples, metric_sum, sha
from conftest import seeded_bytes

MiB = 1 << 20
SOFT_ON = {"MINIO_RDMA_INTERNODE": "on", "MINIO_RDMA_FABRIC": "soft"}
SENT = "minio_system_network_internode_sent_bytes_total"
RECV = "minio_system_network_internode_recv_bytes_total"
PEER_RECV = "minio_system_network_internode_peer_recv_bytes_total"
FALLBACKS = "minio_system_network_internode_rdma_fallbacks_total"
ERRORS = "minio_system_network_internode_rdma_errors_total"
DEGRADED = "minio_system_network_internode_rdma_degraded"


def traffic(c, idx):
    m = c.metrics(idx)
    return {
        "sent_rdma": metric_sum(m, SENT, transport="rdma"),
        "sent_tcp": metric_sum(m, SENT, transport="tcp"),
        "recv_rdma": metric_sum(m, RECV, transport="rdma"),
        "recv_tcp": metric_sum(m, RECV, transport="tcp"),
        "fallbacks": metric_sum(m, FALLBACKS),
        "errors": metric_sum(m, ERRORS),
    }


def delta(after, before):
    return {k: after[k] - before[k] for k in after}


def remote_shard_bytes(size, data=12, remote_drives=12):
    """Shard bytes one node sends to its peers for an object of `size` (EC 12+4, 1 MiB stripes,
    8-byte hash per block): every remote drive gets one shard file."""
    full, rest = divmod(size, MiB)
    per = full * (-(-MiB // data) + 8) + ((-(-rest // data) + 8) if rest else 0)
    return per * remote_drives


@pytest.fixture(scope="module")
def bucket_name():
    return "internode-rdma"


def start(env_extra=None, node_env=None):
    c = Cluster(env_extra={**SOFT_ON, **(env_extra or {})}, node_env=node_env)
    c.start()
    return c


def put_and_verify(c, writer, reader, bucket, key, data):
    c.client(writer).put_object(Bucket=bucket, Key=key, Body=data)
    assert sha(get_bytes(c.client(reader), bucket, key)) == sha(data), key


def test_shards_at_or_above_min_size_go_over_rdma(bucket_name):
    c = start()
    try:
        log = c.nodes[0].log_text()
        assert "inter-node RDMA: on, soft fabric" in log, c.nodes[0].log_tail(20)
        c.client(0).create_bucket(Bucket=bucket_name)

        # Small shards (~175 KiB < 1 MiB): TCP only, and not counted as fallbacks.
        small = seeded_bytes(2 * MiB, seed=1)
        before = traffic(c, 0)
        c.client(0).put_object(Bucket=bucket_name, Key="small", Body=small)
        d = delta(traffic(c, 0), before)
        assert d["sent_rdma"] == 0, d
        assert d["sent_tcp"] == remote_shard_bytes(len(small)), d
        assert d["fallbacks"] == 0 and d["errors"] == 0, d

        # Large shards (~2 MiB): every byte over RDMA, nothing in HTTP bodies.
        big = seeded_bytes(24 * MiB + 7, seed=2)
        before = [traffic(c, i) for i in range(4)]
        c.client(0).put_object(Bucket=bucket_name, Key="big", Body=big)
        d = delta(traffic(c, 0), before[0])
        assert d["sent_rdma"] == remote_shard_bytes(len(big)), d
        assert d["sent_tcp"] == 0, d
        # The serving nodes pulled them: each counts what it received from node 1 over RDMA.
        for i in (1, 2, 3):
            di = delta(traffic(c, i), before[i])
            assert di["recv_rdma"] == remote_shard_bytes(len(big), remote_drives=4), (i, di)
            assert metric_sum(c.metrics(i), PEER_RECV, peer=c.nodes[0].address,
                              transport="rdma") > 0

        # Reads through node 2: the big object's shards come back over RDMA, the small one's
        # over TCP; the bytes are identical either way.
        before = traffic(c, 1)
        assert sha(get_bytes(c.client(1), bucket_name, "big")) == sha(big)
        d = delta(traffic(c, 1), before)
        assert d["recv_rdma"] > 0 and d["recv_tcp"] == 0, d
        before = traffic(c, 1)
        assert sha(get_bytes(c.client(1), bucket_name, "small")) == sha(small)
        d = delta(traffic(c, 1), before)
        assert d["recv_tcp"] > 0 and d["recv_rdma"] == 0, d

        # Ranged read at an odd offset through a third node.
        r = c.client(2).get_object(Bucket=bucket_name, Key="big", Range="bytes=5000001-13000003")
        assert r["Body"].read() == big[5000001:13000004]

        # Multipart: parts through different nodes, read back through the fourth.
        s3 = c.client(1)
        up = s3.create_multipart_upload(Bucket=bucket_name, Key="multi")["UploadId"]
        p1, p2 = seeded_bytes(15 * MiB, seed=3), seeded_bytes(MiB + 3, seed=4)
        e1 = c.client(2).upload_part(Bucket=bucket_name, Key="multi", UploadId=up, PartNumber=1,
                                     Body=p1)["ETag"]
        e2 = c.client(3).upload_part(Bucket=bucket_name, Key="multi", UploadId=up, PartNumber=2,
                                     Body=p2)["ETag"]
        s3.complete_multipart_upload(
            Bucket=bucket_name, Key="multi", UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                       {"PartNumber": 2, "ETag": e2}]})
        assert sha(get_bytes(c.client(3), bucket_name, "multi")) == sha(p1 + p2)
        for i in range(4):
            m = c.metrics(i)
            assert metric_sum(m, ERRORS) == 0 and metric_sum(m, FALLBACKS) == 0, i
    finally:
        c.cleanup()


@pytest.mark.parametrize("min_size,expect", [("0", "rdma"), ("1TiB", "tcp")])
def test_min_size_zero_and_huge(min_size, expect):
    c = start({"MINIO_RDMA_MIN_SIZE": min_size})
    try:
        c.client(0).create_bucket(Bucket="minsize")
        before = traffic(c, 0)
        for n, size in enumerate((200 << 10, 2 * MiB, 24 * MiB)):
            put_and_verify(c, 0, 1 + n % 3, "minsize", f"o{n}", seeded_bytes(size, seed=10 + n))
        d = delta(traffic(c, 0), before)
        other = "tcp" if expect == "rdma" else "rdma"
        assert d[f"sent_{expect}"] > 0 and d[f"sent_{other}"] == 0, d
        assert d["fallbacks"] == 0 and d["errors"] == 0, d
    finally:
        c.cleanup()


def test_separate_rdma_address_is_reached_through_the_node_list():
    """Issue 37 item 2: node 3's RDMA target listens on 127.0.0.3 (MINIO_RDMA_INTERNODE_ADDRESS:
    a separate RDMA network) while its peer RPCs come from 127.0.0.1. Its tokens name 127.0.0.3,
    which the peers learned from node 3 at start (its configuration, over signed peer RPC): they
    reach it without MINIO_RDMA_SOFT_ALLOW. Before, every piece node 3 started fell back to TCP."""
    c = start(node_env={2: {"MINIO_RDMA_INTERNODE_ADDRESS": "127.0.0.3"}})
    try:
        assert "target port" in c.nodes[2].log_text() and "on 127.0.0.3" in c.nodes[2].log_text()
        c.client(0).create_bucket(Bucket="separate")
        data = seeded_bytes(24 * MiB + 1, seed=20)
        before = [traffic(c, i) for i in range(4)]
        c.client(2).put_object(Bucket="separate", Key="through-node3", Body=data)
        d = delta(traffic(c, 2), before[2])
        assert d["sent_rdma"] == remote_shard_bytes(len(data)), d  # every byte over RDMA
        assert d["sent_tcp"] == 0 and d["fallbacks"] == 0 and d["errors"] == 0, d
        # Reads through node 3: its peers push into buffers behind 127.0.0.3.
        before = traffic(c, 2)
        assert sha(get_bytes(c.client(2), "separate", "through-node3")) == sha(data)
        d = delta(traffic(c, 2), before)
        assert d["recv_rdma"] > 0 and d["recv_tcp"] == 0 and d["fallbacks"] == 0, d
        # And node 3 still reaches the others (their targets on their own address).
        before = traffic(c, 0)
        c.client(0).put_object(Bucket="separate", Key="through-node1", Body=data[::-1])
        d = delta(traffic(c, 0), before)
        assert d["sent_rdma"] == remote_shard_bytes(len(data)) and d["fallbacks"] == 0, d
        assert sha(get_bytes(c.client(2), "separate", "through-node1")) == sha(data[::-1])
        for i in range(4):
            m = c.metrics(i)
            assert metric_sum(m, ERRORS) == 0 and metric_sum(m, FALLBACKS) == 0, i
            assert not [lab for lab, v in metric_samples(m, DEGRADED) if v == 1], i
    finally:
        c.cleanup()
