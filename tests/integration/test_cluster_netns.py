"""A 4-node cluster in network namespaces of our own (one per node, veth pairs to a bridge in a
hub namespace; see cluster_util.NetLab), so that a node can really be cut off the network.

Every node runs `ip netns exec <its namespace>` in a private mount namespace where its own four
directories appear at the same paths as every other node's, and all nodes get the one ellipsis
argument a real deployment uses: MINIO_VOLUMES=http://10.A.B.{1...4}:9000/<base>/mnt/disk{1...4}
(one erasure set of 16 drives, EC 12+4, read and write quorum 12). The test client (boto3 in this
process, and the `rdmastor admin heal` CLI) runs in the hub namespace. Nothing is created in the
host's namespace; the namespaces are deleted in a finally.

- PUT/GET/LIST/multipart through every node; every object written through one node reads back
  byte-identical (SHA-256) through every other; listings agree on every node and paginate.
- Cut node 3's link (its veth down: no RST, packets vanish): reads of old objects and writes of
  new ones through the other three nodes continue (12 drives left = quorum), the first ones
  within FIRST_BOUND_S of the cut (the peers' health check finds node 3 offline), later ones
  each within OP_BOUND_S; listings still agree. Restore the link, heal through node 1: node 3's
  drives get the metadata (and shards) of every object written while it was cut, and node 3
  serves them.

Skipped (with the reason) when not root or when `ip netns` does not work here.
"""

import threading
import time

import pytest

from cluster_util import (DRIVES, MiB, NODES, Cluster, NetLab, get_bytes, list_keys, meta_files,
                          sha)
from conftest import seeded_bytes

# Every node pings every peer each second with a 2 s limit (RDMASTOR_PEER_PING_INTERVAL /
# _TIMEOUT): a cut peer is offline for the others within 3 s of the cut, the calls waiting on it
# (on keep-alive connections open when the link went down) are aborted then, and later calls skip
# it. So the first request through each other node ends within FIRST_BOUND_S of the cut (without
# the health check: the 30 s peer I/O timeout), and every later one within OP_BOUND_S.
FIRST_BOUND_S = 6
OP_BOUND_S = 10
# The clients wait longer than any bound, so a slow answer fails its bound, not the client.
CLIENT_TIMEOUT_S = 45


@pytest.fixture(scope="module")
def lab():
    lab = NetLab(NODES)
    try:
        try:
            lab.create()
        except NetLab.Unavailable as e:
            pytest.skip(f"network namespace test skipped: {e}")
        yield lab
    finally:
        lab.cleanup()


@pytest.fixture(scope="module")
def cluster(lab):
    c = Cluster(hosts=lab.hosts, netns=lab.node_ns, same_paths=True, name="ns-node")
    try:
        with lab.hub():
            c.start()
        yield c
    finally:
        c.cleanup()


def timed(fn, *args, **kw):
    t0 = time.monotonic()
    out = fn(*args, **kw)
    dt = time.monotonic() - t0
    assert dt < OP_BOUND_S, f"{fn.__name__} took {dt:.1f} s"
    return out, dt


def test_volumes_are_one_ellipsis_argument(cluster, lab):
    assert cluster.volumes.startswith(f"http://{lab.net}.{{1...4}}:9000/")
    assert " " not in cluster.volumes


def test_every_node_serves_the_whole_namespace(cluster, lab):
    c = cluster
    with lab.hub():
        clients = [c.client(i) for i in range(NODES)]
        bucket = "ns-every-node"
        clients[2].create_bucket(Bucket=bucket)
        for cl in clients:
            cl.head_bucket(Bucket=bucket)
        objects = {}
        sizes = [0, 1, 4096, MiB - 1, MiB + 1, 3 * MiB + 7]
        for w in range(NODES):
            for n, size in enumerate(sizes):
                key = f"w{w}/{n}-{size}"
                data = seeded_bytes(size, seed=100 * w + n)
                clients[w].put_object(Bucket=bucket, Key=key, Body=data)
                objects[key] = sha(data)
        # Multipart through every node: created through w, parts through w+1 and w+2,
        # completed through w+3.
        for w in range(NODES):
            key = f"mp/{w}"
            up = clients[w].create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            parts = [seeded_bytes(5 * MiB, seed=900 + w), seeded_bytes(MiB + 3, seed=950 + w)]
            etags = [clients[(w + 1 + p) % NODES].upload_part(
                Bucket=bucket, Key=key, UploadId=up, PartNumber=p + 1, Body=parts[p])["ETag"]
                for p in range(2)]
            clients[(w + 3) % NODES].complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": p + 1, "ETag": etags[p]}
                                           for p in range(2)]})
            objects[key] = sha(b"".join(parts))
        # Every object through every other node than the writer.
        for key, digest in objects.items():
            for r in range(NODES):
                assert sha(get_bytes(clients[r], bucket, key)) == digest, (key, r)
        expected = sorted(objects)
        for cl in clients:
            assert list_keys(cl, bucket) == expected
            assert list_keys(cl, bucket, page=7) == expected
        r = clients[1].list_objects_v2(Bucket=bucket, Delimiter="/")
        assert sorted(p["Prefix"] for p in r["CommonPrefixes"]) == ["mp/", "w0/", "w1/", "w2/",
                                                                     "w3/"]
        # The set spans the nodes: each node's drives hold a copy of each (non-inline) object.
        for i in range(NODES):
            assert len(meta_files(c, bucket, "w2/5-%d" % (3 * MiB + 7), [i])) == DRIVES


def test_cut_link_then_heal(cluster, lab):
    c = cluster
    cut = 2
    others = [i for i in range(NODES) if i != cut]
    with lab.hub():
        # Bodies may wait in the socket while a node first times out on the cut peer: the
        # clients allow that (connect_timeout also bounds a stalled send in urllib3).
        clients = [c.client(i, connect_timeout=CLIENT_TIMEOUT_S, read_timeout=CLIENT_TIMEOUT_S)
                   for i in range(NODES)]
        bucket = "ns-cut"
        clients[0].create_bucket(Bucket=bucket)
        before = {}
        for n, size in enumerate([10, 2 * MiB + 1]):
            data = seeded_bytes(size, seed=300 + n)
            clients[n % NODES].put_object(Bucket=bucket, Key=f"before/{n}", Body=data)
            before[f"before/{n}"] = sha(data)

        lab.cut(cut)
        cut_at = time.monotonic()
        # First writes through the three other nodes at once: each node still holds keep-alive
        # connections to the cut node, and its calls on them wait until its health check finds
        # the peer offline and aborts them.
        during = {}
        results = {}

        def first_put(w):
            key = f"during/first-{w}"
            data = seeded_bytes(4 * MiB + 3, seed=400 + w)
            try:
                clients[w].put_object(Bucket=bucket, Key=key, Body=data)
                dt = time.monotonic() - cut_at
                results[w] = ("ok", round(dt, 2), key, sha(data))
            except Exception as e:  # reported below, with the node
                results[w] = ("error", repr(e), key, None)

        threads = [threading.Thread(target=first_put, args=(w,)) for w in others]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CLIENT_TIMEOUT_S + 20)
        assert all(not t.is_alive() for t in threads), "a first PUT did not end"
        assert sorted(results) == others and all(r[0] == "ok" for r in results.values()), results
        during.update({r[2]: r[3] for r in results.values()})
        timings = [("first put (s after the cut)", w, results[w][1]) for w in others]
        print("first PUTs with node %d cut ended %s s after the cut"
              % (cut + 1, [results[w][1] for w in others]))
        assert all(results[w][1] < FIRST_BOUND_S for w in others), timings

        # Then: writes of every size and reads of old and new objects through the others; a
        # node now skips the cut peer (offline until it answers a ping).
        for n, w in enumerate(others * 2):
            size = [7, MiB + 5, 3 * MiB + 3][n % 3]
            key = f"during/{n}"
            data = seeded_bytes(size, seed=500 + n)
            _, dt = timed(clients[w].put_object, Bucket=bucket, Key=key, Body=data)
            timings.append(("put", w, size, round(dt, 2)))
            during[key] = sha(data)
        for n, (key, digest) in enumerate({**before, **during}.items()):
            r = others[n % len(others)]
            body, dt = timed(get_bytes, clients[r], bucket, key)
            timings.append(("get", r, key, round(dt, 2)))
            assert sha(body) == digest, (key, r)
        for r in others:
            keys, _ = timed(list_keys, clients[r], bucket)
            assert keys == sorted({**before, **during}), r
        print("timings with node %d cut:" % (cut + 1), timings)
        # Nothing reached the cut node's drives.
        for key in during:
            assert meta_files(c, bucket, key, [cut]) == [], key

        lab.restore(cut)
        lab.wait_reachable()
        # Peers skip a failed node for a short window; every node lists everything again soon.
        keys = c.wait_listing(range(NODES), bucket, timeout=CLIENT_TIMEOUT_S)
        assert keys == sorted({**before, **during})
        for key in during:  # not healed yet
            assert meta_files(c, bucket, key, [cut]) == [], key
        heal = c.heal(0)
        assert heal.returncode == 0, heal
        assert heal.counts is not None and heal.counts["failed"] == 0, heal
        assert heal.counts["healed"] >= len(during), heal
        for key in during:
            assert len(meta_files(c, bucket, key, [cut])) == DRIVES, key
        # The healed node serves everything, byte-identical.
        for key, digest in {**before, **during}.items():
            assert sha(get_bytes(clients[cut], bucket, key)) == digest, key
