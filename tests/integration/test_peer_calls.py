"""The peer call budget (issue 10): counted from rdmastor_peer_calls_total{call} on the node that
serves the S3 request, on a 4-node x 4-drive cluster (one erasure set of 16 drives, 12 of them
remote for every node) of real rdmastor processes on 127.0.0.1.

- a PUT of an inline object (shard file <= 128 KiB, MINIO_STORAGE_CLASS_INLINE_BLOCK: on 12+4 up
  to ~1.5 MiB, so 10 KiB and 1 MiB alike) makes exactly one storage call per other node
  (renamedatagroup: metadata, inline data and the old version of each of its drives in one call),
  plus the lock round;
- a 2 MiB PUT (~171 KiB shards: files) makes one shardwritegroup (the pieces of all its drives)
  and one renamedatagroup per other node: with the lock round, 12 peer calls in all;
- a GET of an inline object reads each remote drive's metadata once, in one readfilegroup per
  other node, nothing else;
- a GET of a 2 MiB or 8 MiB object (shard files up to 1 MiB) adds one shardreadgroup per other
  node holding data shards (the pieces of all its drives): at most 6 peer calls in all;
- a DELETE is one renamedatagroup per other node.

Before issue 10 the same PUTs made about 7 (inline) and 10+ (1 MiB) calls per remote drive:
statvol twice, mkdir, shardwrite, writefile(meta), readfile(old meta), commit, removeall; then
one renamedata per remote drive (12 per PUT), before the commits were batched per node; and
one shardwrite per remote drive (12 per 2 MiB PUT), before shard pieces were batched per node
(issue 35: one DriveHost per node); and one shardread per remote drive holding data (about 9 per
2 MiB GET) before a GET's shard reads were (DriveHost::ReadShardPieces).
"""

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
    assert storage == {"shardwritegroup": PEERS, "renamedatagroup": PEERS}, storage
    assert sum(locks.values()) <= 2 * (NODES - 1), locks
    assert sum(storage.values()) + sum(locks.values()) <= 12, (storage, locks)

    # Overwriting a version with a data directory: one more call per drive drops the retired
    # data once the new version has its quorum (until then it is what a rollback restores).
    big2 = seeded_bytes(2 << 20, seed=3)
    storage, _ = delta(c, lambda: s3.put_object(Bucket=bucket, Key="big", Body=big2))
    print("2 MiB overwrite:", storage)
    assert sum(storage.values()) <= REMOTE + 2 * PEERS, storage
    assert storage.get("removeall", 0) <= REMOTE, storage
    assert storage.get("renamedatagroup") == PEERS, storage
    assert storage.get("shardwritegroup") == PEERS, storage

    got = {}
    storage, _ = delta(c, lambda: got.update(small=get_bytes(s3, bucket, "small")))
    print("inline GET:", storage)
    assert got["small"] == small
    assert storage == {"readfilegroup": PEERS}, storage

    storage, _ = delta(c, lambda: got.update(mib=get_bytes(s3, bucket, "mib")))
    print("1 MiB (inline) GET:", storage)
    assert got["mib"] == mib
    assert storage == {"readfilegroup": PEERS}, storage

    storage, _ = delta(c, lambda: got.update(big=get_bytes(s3, bucket, "big")))
    print("2 MiB GET:", storage)
    assert got["big"] == big2
    assert storage.get("readfilegroup") == PEERS, storage
    assert "readfile" not in storage, storage
    # Metadata once per node, and the shard pieces of all of a node's drives in one call (a node
    # whose drives hold parity only is not asked): 6 calls, not one shardread per remote drive
    # holding data (9 before issue 35's ReadShardPieces).
    assert "shardread" not in storage, storage
    assert 1 <= storage.get("shardreadgroup", 0) <= PEERS, storage
    assert sum(storage.values()) <= 2 * PEERS, storage

    # 8 MiB: ~683 KiB shard files, each still one window: one call per node as well (12 + 4
    # shardread calls before, at least one per remote drive holding data).
    eight = seeded_bytes(8 << 20, seed=6)
    s3.put_object(Bucket=bucket, Key="eight", Body=eight)
    storage, _ = delta(c, lambda: got.update(eight=get_bytes(s3, bucket, "eight")))
    print("8 MiB GET:", storage)
    assert got["eight"] == eight
    assert "shardread" not in storage, storage
    assert 1 <= storage.get("shardreadgroup", 0) <= PEERS, storage
    assert sum(storage.values()) <= 2 * PEERS, storage

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
