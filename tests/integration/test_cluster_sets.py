"""Listing across erasure sets and nodes: 4 nodes x 6 drives = 24 drives = 2 sets of 12, so keys
hash to different sets whose drives span every node. Every node must list the same keys, merged in
order, paginated exactly (small pages, continuation tokens, start-after, prefixes, delimiters).
"""

import pytest

from cluster_util import Cluster, get_bytes, list_keys, meta_files, sha
from conftest import seeded_bytes


@pytest.fixture(scope="module")
def two_sets():
    c = Cluster(drives=6)
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def test_two_sets_listing_merged_and_paginated(two_sets):
    c = two_sets
    log = c.nodes[0].log_text()
    assert "2 set(s) of 12" in log, c.nodes[0].log_tail(20)
    bucket = "two-sets"
    c.client(0).create_bucket(Bucket=bucket)
    keys = {}
    for n in range(24):
        key = f"{'ab'[n % 2]}/{n:03d}" if n % 5 else f"top-{n:03d}"
        data = seeded_bytes(n * 997 + (200 << 10 if n % 7 == 0 else 0), seed=n)
        c.client(n % 4).put_object(Bucket=bucket, Key=key, Body=data)
        keys[key] = sha(data)
    # Both sets hold objects (a key's set is chosen by its hash).
    holders = {i for k in keys for i in range(4) for _ in meta_files(c, bucket, k, [i])}
    assert holders == {0, 1, 2, 3}
    expected = sorted(keys)
    for i in range(4):
        cl = c.client(i)
        assert list_keys(cl, bucket) == expected
        assert list_keys(cl, bucket, page=3) == expected
        assert list_keys(cl, bucket, page=4, prefix="a/") == [k for k in expected
                                                              if k.startswith("a/")]
        r = cl.list_objects_v2(Bucket=bucket, Delimiter="/")
        assert sorted(p["Prefix"] for p in r["CommonPrefixes"]) == ["a/", "b/"]
        assert [o["Key"] for o in r["Contents"]] == [k for k in expected if "/" not in k]
        r = cl.list_objects_v2(Bucket=bucket, StartAfter="a/020", MaxKeys=5)
        assert [o["Key"] for o in r["Contents"]] == [k for k in expected if k > "a/020"][:5]
        # ListObjects v1 with markers, 7 at a time.
        got, marker = [], ""
        for _ in range(100):
            r = cl.list_objects(Bucket=bucket, Marker=marker, MaxKeys=7)
            got += [o["Key"] for o in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                break
            marker = got[-1]
        assert got == expected
    for n, key in enumerate(expected):
        assert sha(get_bytes(c.client((n + 1) % 4), bucket, key)) == keys[key], key
