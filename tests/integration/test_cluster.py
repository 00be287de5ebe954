"""A 4-node cluster of real rdmastor processes on 127.0.0.1 (different ports and directories,
4 drives each: one erasure set of 16 drives, EC 12+4, read and write quorum 12).

- PUT/GET/LIST/multipart through every node with boto3; objects written through one node read
  back byte-identical (SHA-256) through another; listings agree on every node and paginate.
- Peer RPC without (or with a wrong) signature is refused with 403 and an S3 error document.
- Kill one node (SIGKILL): reads and writes continue (12 drives left = quorum), and
  /minio/health/cluster and /cluster/read answer 200 with X-Minio-Write-Quorum: 12.
- Kill a second node: the health endpoints answer 503 (minio_cluster_health_status 0) on the
  survivors; writes fail cleanly with 503 and leave nothing visible (no listing entry,
  no metadata file on any surviving drive); reads of old objects fail cleanly too (below read
  quorum) rather than returning wrong bytes.
- Restart both, heal (`rdmastor admin heal` through one node): the objects written while a node
  was down get their shards on the restarted node's drives; everything reads back.
- A node started with different root credentials or a different drive list refuses to start.
"""

import hashlib
import json
import os
import subprocess
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

from cluster_util import (DRIVES, MiB, NODES, Cluster, get_bytes, list_keys, meta_files, retry,
                          settle_peers, sha)
from conftest import Server, admin_heal, seeded_bytes


def expect_health(node, want, timeout=5):
    """The node's health_status() becomes `want` (drive state is sampled at most once a second)."""
    def check():
        assert health_status(node) == want
    retry(check, timeout=timeout, exceptions=(AssertionError,))


def health_status(node):
    """(status of /minio/health/cluster, its X-Minio-Write-Quorum, status of .../cluster/read,
    minio_cluster_health_status)."""
    w = requests.get(node.url("/minio/health/cluster"), timeout=10)
    r = requests.get(node.url("/minio/health/cluster/read"), timeout=10)
    gauge = node.metrics("cluster").get("minio_cluster_health_status")
    return w.status_code, w.headers.get("X-Minio-Write-Quorum"), r.status_code, gauge


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def test_cluster_end_to_end(cluster):
    c = cluster
    clients = [c.client(i) for i in range(NODES)]
    bucket = "cluster-it"
    clients[0].create_bucket(Bucket=bucket)
    for cl in clients:  # the bucket exists for every node
        cl.head_bucket(Bucket=bucket)

    # PUT through node i, GET through node i+1: sizes around the inline limit and the stripe.
    objects = {}
    sizes = [0, 1, 100 << 10, MiB - 1, MiB + 1, 5 * MiB + 3]
    for n, size in enumerate(sizes):
        key = f"obj/{n:02d}-{size}"
        data = seeded_bytes(size, seed=n + 1)
        clients[n % NODES].put_object(Bucket=bucket, Key=key, Body=data)
        objects[key] = sha(data)
    for n, (key, digest) in enumerate(sorted(objects.items())):
        for reader in ((n + 1) % NODES, (n + 2) % NODES):
            assert sha(get_bytes(clients[reader], bucket, key)) == digest, (key, reader)
    # Shards landed on every node's drives (the set spans the nodes).
    big = "obj/05-%d" % (5 * MiB + 3)
    for i in range(NODES):
        assert meta_files(c, bucket, big, [i]), f"node{i + 1} holds no copy of {big}"

    # Multipart: parts through different nodes, completed through a third, read through a fourth.
    mkey = "multi/part-object"
    up = clients[1].create_multipart_upload(Bucket=bucket, Key=mkey)["UploadId"]
    p1, p2 = seeded_bytes(5 * MiB, seed=50), seeded_bytes(MiB + 17, seed=51)
    e1 = clients[2].upload_part(Bucket=bucket, Key=mkey, UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = clients[3].upload_part(Bucket=bucket, Key=mkey, UploadId=up, PartNumber=2, Body=p2)["ETag"]
    listed = clients[0].list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["UploadId"] for u in listed] == [up]
    clients[0].complete_multipart_upload(
        Bucket=bucket, Key=mkey, UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    objects[mkey] = sha(p1 + p2)
    assert sha(get_bytes(clients[3], bucket, mkey)) == objects[mkey]

    # Listing: the same on every node, paginated exactly.
    expected = sorted(objects)
    for cl in clients:
        assert list_keys(cl, bucket) == expected
        assert list_keys(cl, bucket, page=2) == expected
    r = clients[2].list_objects_v2(Bucket=bucket, Delimiter="/")
    assert sorted(p["Prefix"] for p in r["CommonPrefixes"]) == ["multi/", "obj/"]

    # Peer RPC is authenticated.
    node = c.nodes[0]
    disk = c.dirs[0][0]
    for path in (f"/minio/storage/v1/readformat?disk={disk}", "/minio/lock/v1/lock",
                 "/minio/peer/v1/config"):
        r = requests.post(node.url(path), data=b"{}", timeout=5)
        assert r.status_code == 403, (path, r.status_code, r.text)
        assert "<Code>AccessDenied</Code>" in r.text
    r = requests.post(node.url(f"/minio/storage/v1/removeall?disk={disk}&path={bucket}"),
                      headers={"x-rdmastor-peer-auth": "v2 %d %s %s %s" % (
                          time.time() * 1000, "0" * 32, hashlib.sha256(b"").hexdigest(), "0" * 64)},
                      timeout=5)
    assert r.status_code == 403 and "AccessDenied" in r.text
    assert os.path.isdir(os.path.join(disk, bucket))

    # Health covers every drive of the set against its real quorum (12 of 16), not this node's.
    for i in range(NODES):
        assert health_status(c.nodes[i]) == (200, "12", 200, 1.0), i

    # One node down: reads and writes continue.
    c.nodes[3].kill()
    for i in range(3):
        expect_health(c.nodes[i], (200, "12", 200, 1.0))
    for key, digest in objects.items():
        assert sha(get_bytes(clients[(hash(key) % 3)], bucket, key)) == digest, key
    down1 = seeded_bytes(3 * MiB + 5, seed=77)
    clients[0].put_object(Bucket=bucket, Key="while-down/one", Body=down1)
    objects["while-down/one"] = sha(down1)
    assert sha(get_bytes(clients[2], bucket, "while-down/one")) == objects["while-down/one"]
    assert "while-down/one" in list_keys(clients[1], bucket)

    # Two nodes down: writes fail cleanly (503), nothing partial is visible.
    c.nodes[2].kill()
    t0 = time.monotonic()
    with pytest.raises(ClientError) as err:
        clients[0].put_object(Bucket=bucket, Key="while-down/two", Body=seeded_bytes(2 * MiB, 9))
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert time.monotonic() - t0 < 20
    assert meta_files(c, bucket, "while-down/two", [0, 1]) == []
    with pytest.raises(ClientError) as err:
        clients[1].put_object(Bucket=bucket, Key="while-down/small", Body=b"tiny")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    with pytest.raises(ClientError) as err:  # below read quorum: an error, never wrong bytes
        get_bytes(clients[1], bucket, big)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] in (404, 503)
    # ... and the health endpoints say so, on every surviving node (8 of 16 drives < 12).
    for i in range(2):
        expect_health(c.nodes[i], (503, "12", 503, 0.0))

    # Restart both and heal: the object written with node 4 down gets its copies there.
    c.start([2, 3])
    for cl in clients:
        # Peers that saw nodes 3-4 fail skip them for a short fail-fast window (1 s) after the
        # last failed call: meanwhile a listing is an error or leaves out objects whose copies
        # sit on the skipped node (below read quorum among the drives that answered). Allow a
        # bounded wait for every node to see the restarted ones again.
        deadline = time.monotonic() + 15
        while True:
            try:
                keys = list_keys(cl, bucket)
                if "while-down/one" in keys or time.monotonic() > deadline:
                    break
            except ClientError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.5)
        assert "while-down/two" not in keys and "while-down/small" not in keys
        assert "while-down/one" in keys
    assert meta_files(c, bucket, "while-down/one", [3]) == []
    expect_health(c.nodes[0], (200, "12", 200, 1.0), timeout=15)
    settle_peers()
    heal = admin_heal(c.nodes[1])
    assert heal.returncode == 0, heal.stderr + heal.stdout
    assert len(meta_files(c, bucket, "while-down/one", [3])) == DRIVES
    for key, digest in objects.items():
        assert sha(get_bytes(clients[3], bucket, key)) == digest, key


def test_mismatched_configuration_refused(cluster):
    c = cluster

    def refused_start(name, volumes, creds):
        """Starts a fifth process claiming to be node 4; it must exit non-zero. Returns its log."""
        n = Server(name=name, env={"MINIO_VOLUMES": volumes, "MINIO_PEER_WAIT": "10s"},
                   data_dirs=[os.path.join(c.base, name)], creds=creds, pass_dirs=False)
        n.port = c.ports[3]
        try:
            n._log = open(n.log_path, "ab")
            n.proc = subprocess.Popen(n.command(), stdin=subprocess.DEVNULL, stdout=n._log,
                                      stderr=subprocess.STDOUT, env=n.env(),
                                      start_new_session=True)
            assert n.proc.wait(timeout=30) != 0, n.log_tail()
            return n.log_text()
        finally:
            n.cleanup()

    try:
        c.nodes[3].kill()
        # Other credentials: refused by the peers' check.
        log = refused_start("bad-creds", c.volumes, ("otheruser", "other-secret-1"))
        assert "root credentials" in log, log[-2000:]
        # Same credentials, a different drive list (node 4's last two drives swapped).
        urls = c.volumes.split()
        urls[-1], urls[-2] = urls[-2], urls[-1]
        log = refused_start("bad-volumes", " ".join(urls),
                            (c.nodes[0].access_key, c.nodes[0].secret_key))
        assert "different drive lists" in log, log[-2000:]
    finally:
        c.start([3])


def _drive_versions(c, bucket, key):
    """{(data_dir, etag, size)} over every drive's metadata file of bucket/key, and how many
    drives hold one."""
    files = meta_files(c, bucket, key, range(NODES))
    versions = set()
    for f in files:
        with open(f) as fh:
            m = json.load(fh)["versions"][0]  # the latest version
        versions.add((m["data_dir"], m["etag"], m["size"]))
    return versions, len(files)


def _wait_all_nodes_write_everywhere(c, bucket):
    """Bounded wait until a PUT through every node lands on all 16 drives (peers skip a node that
    failed for a short fail-fast window, e.g. after the restart of the previous test)."""
    for i in range(NODES):
        cl = c.client(i)

        def probe():
            cl.put_object(Bucket=bucket, Key=f"probe/{i}", Body=b"probe")
            assert len(meta_files(c, bucket, f"probe/{i}", range(NODES))) == NODES * DRIVES

        retry(probe, timeout=20, exceptions=(ClientError, AssertionError))


def test_concurrent_writers_of_one_key_leave_one_complete_version(cluster):
    """8 writers PUT bodies of different sizes (inline, one stripe, several stripes) to ONE key
    through different nodes at once, for a few rounds. Every PUT succeeds (the namespace lock
    serialises the commits across nodes); after each round every drive's metadata names one
    version, and at the end GET through every node returns the same complete body, one of those
    written.
    Then PUT and DELETE of one key race: the key ends whole or absent, the same on every drive."""
    c = cluster
    bucket = "cluster-race"

    def make_bucket():
        try:
            c.client(0).create_bucket(Bucket=bucket)
        except ClientError as e:
            if e.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
                raise

    retry(make_bucket, timeout=20, exceptions=(ClientError,))
    _wait_all_nodes_write_everywhere(c, bucket)

    key = "race/hot"
    sizes = [1000, 100 << 10, 200 << 10, MiB + 1, 3 * MiB + 5, 17, 2 * MiB, 600 << 10]
    bodies = [seeded_bytes(size, seed=100 + n) for n, size in enumerate(sizes)]
    digests = {sha(b) for b in bodies}
    # Each round starts all writers together, so their commits overlap; after each round every
    # drive must hold the same version (without a cluster-wide lock, two nodes' commits reach the
    # drives in different orders and the drives disagree).
    rounds = 5
    barrier = threading.Barrier(len(bodies), timeout=60)
    errors = []

    def writer(n):
        cl = c.client(n % NODES)
        try:
            barrier.wait()
            cl.put_object(Bucket=bucket, Key=key, Body=bodies[n])
        except ClientError as e:
            errors.append((n, e.response["Error"]["Code"], str(e)))
        except threading.BrokenBarrierError as e:
            errors.append((n, "barrier", str(e)))

    t0 = time.monotonic()
    for r in range(rounds):
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "writers did not finish in time"
        assert errors == [], errors
        versions, copies = _drive_versions(c, bucket, key)
        assert copies == NODES * DRIVES and len(versions) == 1, (r, copies, versions)
        assert time.monotonic() - t0 < 300
    got = {sha(get_bytes(c.client(i), bucket, key)) for i in range(NODES)}
    assert len(got) == 1 and got <= digests, got
    (_, etag, size), = versions
    assert size in sizes
    head = c.client(2).head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == size and head["ETag"].strip('"') == etag

    # PUT and DELETE of one key race through different nodes.
    pd_key = "race/put-delete"
    body = seeded_bytes(2 * MiB + 3, seed=7)
    barrier2 = threading.Barrier(2, timeout=60)
    errors2 = []

    def putter():
        cl = c.client(1)
        barrier2.wait()
        for _ in range(6):
            try:
                cl.put_object(Bucket=bucket, Key=pd_key, Body=body)
            except ClientError as e:
                errors2.append(("put", str(e)))

    def deleter():
        cl = c.client(3)
        barrier2.wait()
        for _ in range(6):
            try:
                cl.delete_object(Bucket=bucket, Key=pd_key)
            except ClientError as e:
                errors2.append(("delete", str(e)))

    threads = [threading.Thread(target=putter), threading.Thread(target=deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)
    assert errors2 == [], errors2
    versions, copies = _drive_versions(c, bucket, pd_key)
    assert copies in (0, NODES * DRIVES) and len(versions) <= 1, (copies, versions)
    for i in range(NODES):
        cl = c.client(i)
        if copies:
            assert sha(get_bytes(cl, bucket, pd_key)) == sha(body)
        else:
            with pytest.raises(ClientError) as err:
                cl.head_object(Bucket=bucket, Key=pd_key)
            assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def _staging_dirs(c):
    """{staging name: [files in it]} per node index, over that node's drives."""
    out = {}
    for i in range(NODES):
        for d in c.dirs[i]:
            tmp = os.path.join(d, ".rdmastor.sys", "tmp")
            for name in os.listdir(tmp):
                files = sorted(os.listdir(os.path.join(tmp, name)))
                out.setdefault(i, {})[name] = files
    return out


def test_remote_drives_keep_staging_directories_for_reuse(cluster):
    """A commit keeps its staging directory (only its journal left) for the set's next write, on
    the remote drives too (RenameData's keep_staging over the peer wire): PUTs one after another
    through one node create no new staging directory on any drive, and leave nothing but
    journals in the staging areas."""
    c = cluster
    bucket = "cluster-staging"
    retry(lambda: c.client(0).create_bucket(Bucket=bucket), timeout=20, exceptions=(ClientError,))
    _wait_all_nodes_write_everywhere(c, bucket)
    cl = c.client(0)
    cl.put_object(Bucket=bucket, Key="warm", Body=b"w" * 1000)
    before = _staging_dirs(c)
    names_before = {n for node in before.values() for n in node}
    remote = {n for i in range(1, NODES) for n in before.get(i, {})}
    assert remote, "no staging directory kept on a remote drive"
    for i in range(8):
        body = seeded_bytes(3 * MiB if i % 4 == 0 else 5000, seed=i)
        cl.put_object(Bucket=bucket, Key=f"k{i % 3}", Body=body)
        assert sha(get_bytes(cl, bucket, f"k{i % 3}")) == sha(body)
    after = _staging_dirs(c)
    names_after = {n for node in after.values() for n in node}
    assert names_after <= names_before, names_after - names_before
    for i, node in after.items():
        for name, files in node.items():
            assert files in ([], ["intent.json"]), (i, name, files)
