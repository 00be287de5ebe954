"""The peer call budget (issue 10): counted from rdmastor_peer_calls_total{call} on the node that
serves the S3 request, on a 4-node x 4-drive cluster (one erasure set of 16 drives, 12 of them
remote for every node) of real rdmastor processes on 127.0.0.1.

- a PUT of an inline object (shard file <= 128 KiB, MINIO_STORAGE_CLASS_INLINE_BLOCK: on 12+4 up
  to ~1.5 MiB, so 10 KiB and 1 MiB alike) makes exactly one storage call per other node
  (renamedatagroup: metadata, inline data and the old version of each of its drives in one call),
  plus the lock round;
- a 2 MiB PUT (~171 KiB shards: files) makes one shard piece per remote drive and one
  renamedatagroup per other node;
- a GET of an inline object reads the metadata of a read quorum (the 12 drives holding data
  shards), in one readfilegroup per other node holding one of them, nothing else; a GET of an
  object with part files reads the other 4 drives' metadata as well, a second round of one
  readfilegroup per other node holding one of those; every 16th GET of a node (the sampled full
  read that lets heal on read see every drive) reads all 16 in one readfilegroup per other node;
- a DELETE is one renamedatagroup per other node.

Before issue 10 the same PUTs made about 7 (inline) and 10+ (1 MiB) calls per remote drive:
statvol twice, mkdir, shardwrite, writefile(meta), readfile(old meta), commit, removeall; then
one renamedata per remote drive (12 per PUT), before the commits were batched per node.
"""

import json
import os

import pytest

from cluster_util import Cluster, get_bytes, metric_sum, peer_calls_during
from conftest import seeded_bytes

NODES, DRIVES = 4, 4
REMOTE = (NODES - 1) * DRIVES  # drives of the set on other nodes
PEERS = NODES - 1


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(nodes=NODES, drives=DRIVES)
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def delta(c, action, idx=0):
    return peer_calls_during(c, idx, action)


def meta_rounds(c, bucket, key, idx=0):
    """The readfilegroup calls node `idx` makes for the quorum read of `key` (inline, or data in
    part files): (first round, second round), counted from the shard index each drive's metadata
    file names: the first round reads the drives holding data shards, one call per other node
    with such a drive; the second the rest."""
    data_nodes, parity_nodes = set(), set()
    for node, dirs in enumerate(c.dirs):
        for d in dirs:
            with open(os.path.join(d, bucket, key, ".rdmastor.meta")) as f:
                e = json.load(f)["versions"][0]["erasure"]
            if node != idx:
                (data_nodes if e["index"] < e["data"] else parity_nodes).add(node)
    return len(data_nodes), len(parity_nodes)


def test_put_and_get_call_budget(cluster):
    c = cluster
    s3 = c.client(0)
    bucket = "budget"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="warm", Body=b"x")  # connections, bucket cache

    small = seeded_bytes(10 << 10, seed=1)
    storage, locks = delta(c, lambda: s3.put_object(Bucket=bucket, Key="small", Body=small))
    print("inline PUT:", storage, locks)
    assert storage == {"renamedatagroup": PEERS}, storage
    # One lock round: a lock and an unlock per other node at most.
    assert sum(locks.values()) <= 2 * (NODES - 1), locks

    # 1 MiB on 12+4: ~85 KiB shards, inline by shard size: one call per remote drive as well.
    mib = seeded_bytes(1 << 20, seed=5)
    storage, locks = delta(c, lambda: s3.put_object(Bucket=bucket, Key="mib", Body=mib))
    print("1 MiB (inline) PUT:", storage, locks)
    assert storage == {"renamedatagroup": PEERS}, storage
    assert sum(locks.values()) <= 2 * (NODES - 1), locks

    big = seeded_bytes(2 << 20, seed=2)
    storage, locks = delta(c, lambda: s3.put_object(Bucket=bucket, Key="big", Body=big))
    print("2 MiB PUT:", storage, locks)
    assert storage == {"shardwrite": REMOTE, "renamedatagroup": PEERS}, storage
    assert sum(locks.values()) <= 2 * (NODES - 1), locks

    # Overwriting a version with a data directory: one more call per drive drops the retired
    # data once the new version has its quorum (until then it is what a rollback restores).
    big2 = seeded_bytes(2 << 20, seed=3)
    storage, _ = delta(c, lambda: s3.put_object(Bucket=bucket, Key="big", Body=big2))
    print("2 MiB overwrite:", storage)
    assert sum(storage.values()) <= 2 * REMOTE + PEERS, storage
    assert storage.get("removeall", 0) <= REMOTE, storage
    assert storage.get("renamedatagroup") == PEERS, storage

    # GETs: metadata from the 12 drives of a read quorum, one call per other node holding one of
    # them (three nodes hold 12 drives, so 2 or 3 calls); PEERS when the GET is the node's
    # sampled full read (every 16th: three GETs meet it at most once).
    got = {}
    storage, _ = delta(c, lambda: got.update(small=get_bytes(s3, bucket, "small")))
    print("inline GET:", storage, meta_rounds(c, bucket, "small"))
    assert got["small"] == small
    first, _ = meta_rounds(c, bucket, "small")
    assert storage in ({"readfilegroup": first}, {"readfilegroup": PEERS}), storage

    storage, _ = delta(c, lambda: got.update(mib=get_bytes(s3, bucket, "mib")))
    print("1 MiB (inline) GET:", storage, meta_rounds(c, bucket, "mib"))
    assert got["mib"] == mib
    first, _ = meta_rounds(c, bucket, "mib")
    assert storage in ({"readfilegroup": first}, {"readfilegroup": PEERS}), storage

    # Part files: the reader needs every drive as a source, so a second round reads the other 4
    # drives' metadata, one call per other node holding one of them (a node with one of them
    # gets a plain readfile: ReadFileEach batches groups of two or more).
    storage, _ = delta(c, lambda: got.update(big=get_bytes(s3, bucket, "big")))
    print("2 MiB GET:", storage, meta_rounds(c, bucket, "big"))
    assert got["big"] == big2
    first, second = meta_rounds(c, bucket, "big")
    meta_calls = storage.get("readfilegroup", 0) + storage.get("readfile", 0)
    assert meta_calls in (first + second, PEERS), storage
    # Metadata once per node and round, and at most one shard window per drive holding data.
    assert sum(storage.values()) <= meta_calls + REMOTE, storage

    storage, _ = delta(c, lambda: s3.delete_object(Bucket=bucket, Key="big"))
    print("DELETE:", storage)
    # The bucket check is cached (as a PUT's): no statvol per remote drive.
    assert storage == {"renamedatagroup": PEERS}, storage
    # The object is gone everywhere, its directory too (renamedata pruned it).
    for dirs in c.dirs:
        for d in dirs:
            assert not os.path.exists(os.path.join(d, bucket, "big")), d


def test_bucket_deleted_on_another_node_is_seen_by_a_cached_put(cluster):
    """Node 0 caches that the bucket exists; node 1 deletes it. A DELETE and a PUT through node 0
    then fail with NoSuchBucket (the commit call checks the bucket on every drive), a GET too, and
    no object appears."""
    c = cluster
    s3, other = c.client(0), c.client(1)
    bucket = "cached-gone"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="a", Body=b"1")
    s3.head_object(Bucket=bucket, Key="a")
    other.delete_object(Bucket=bucket, Key="a")
    other.delete_bucket(Bucket=bucket)
    # First, while node 0 still has the bucket cached (a failed commit forgets it).
    with pytest.raises(Exception) as e:
        s3.delete_object(Bucket=bucket, Key="a")
    assert "NoSuchBucket" in str(e.value), e.value
    for body in (b"small", seeded_bytes(1 << 20, seed=4)):
        with pytest.raises(Exception) as e:
            s3.put_object(Bucket=bucket, Key="b", Body=body)
        assert "NoSuchBucket" in str(e.value), e.value
    with pytest.raises(Exception) as e:
        s3.get_object(Bucket=bucket, Key="a")
    assert "NoSuchBucket" in str(e.value), e.value
    for dirs in c.dirs:
        for d in dirs:
            assert not os.path.exists(os.path.join(d, bucket)), d


def test_every_node_commits_its_drives_with_one_pair_of_barriers(cluster):
    """A node's 4 drives share one file system here, so a PUT commits them as one group with two
    syncfs barriers in all: on the nodes that serve renamedatagroup and on the node that takes the
    S3 request, whose own drives the set reaches through a wrapper (which once dropped the group:
    each drive then committed on its own thread with barriers of its own)."""
    c = cluster
    s3 = c.client(0)
    bucket = "barriers"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="warm", Body=b"x")

    def fs_syncs():
        return [metric_sum(c.metrics(i), "rdmastor_storage_syncs_total", kind="fs")
                for i in range(NODES)]

    puts = 5
    before = fs_syncs()
    for i in range(puts):  # one after another: no two PUTs share a barrier
        s3.put_object(Bucket=bucket, Key=f"k{i}", Body=seeded_bytes(10 << 10, seed=20 + i))
    after = fs_syncs()
    assert [int(a - b) for a, b in zip(after, before)] == [2 * puts] * NODES, (before, after)
