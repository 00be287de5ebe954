"""Peer RPC under attack: requests that carry a valid peer signature (a captured or forged call from
someone holding the deployment's credentials) must still never act outside the drives, nor on any
name that is not the storage layout's own; and a request captured on the wire can be neither
replayed nor given another body (issue 10: the signature covers a nonce and the body).

A 2-node x 2-drive cluster (one erasure set, EC 2+2) of real rdmastor processes on 127.0.0.1.
"""

import http.client
import json
import os
import socket
import time

import pytest
import requests

from cluster_util import (Cluster, get_bytes, peer_auth_header, peer_call, storage_call,
                          storage_call_body, storage_call_target)
from conftest import rand_str, seeded_bytes


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(nodes=2, drives=2)
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def test_forged_commit_cannot_touch_anything_outside_the_drive(cluster):
    """Issue 7: a signed `commit` whose data-dir names climb out of the key directory. Before the
    fix, step 4 of the commit (retire the old data dir) renamed or removed the directory the name
    pointed at, wherever it was."""
    c = cluster
    bucket = "peer-attack"
    data, outside = _victim_and_outside(c, bucket, 300 << 10, seed=7)

    node, disk = c.nodes[1], c.dirs[1][0]
    staging = ".rdmastor.sys/tmp/forged-staging"
    r = storage_call(node, c.creds, "mkdir", disk, {"path": staging})
    assert r.status_code == 200, r.text  # inside the drive: an allowed call

    climb = "../" * 32 + os.path.relpath(outside, "/")
    forged = [
        {"old_data_name": climb, "new_data_name": "", "meta_name": ".rdmastor.meta"},
        {"old_data_name": "", "new_data_name": climb, "meta_name": ".rdmastor.meta"},
        {"old_data_name": "", "new_data_name": "", "meta_name": "../../../" + climb},
        # Inside the drive but not a data dir name: a neighbouring key's directory.
        {"old_data_name": "victim", "new_data_name": "", "meta_name": ".rdmastor.meta"},
        {"old_data_name": ".rdmastor.data./x", "new_data_name": "", "meta_name": ".rdmastor.meta"},
    ]
    for names in forged:
        plan = {"base": bucket, "staging": staging, "target": bucket + "/victim", **names}
        r = storage_call(node, c.creds, "commit", disk, plan)
        assert r.status_code == 400, (names, r.status_code, r.text)
        assert "commit names not of the drive layout" in r.text, r.text

    # The same names through the coarse commit (renamedata: metadata + data + old version in one
    # call), and staging directories or key directories that are not where they must be.
    def rename_data(**over):
        args = {"staging": staging, "bucket": bucket, "key_dir": bucket + "/victim",
                "meta_name": ".rdmastor.meta", "data_name": "", "has_meta": True,
                "keep_data": False, "prune": False, **over}
        return storage_call(node, c.creds, "renamedata", disk, args, b"{}")
    for over, why in (({"data_name": climb}, "commit names not of the drive layout"),
                      ({"meta_name": "../../../" + climb}, "commit names not of the drive layout"),
                      ({"data_name": "victim"}, "commit names not of the drive layout"),
                      ({"staging": climb}, "not a staging directory"),
                      ({"staging": ".rdmastor.sys/tmp/../../" + bucket},
                       "not a staging directory"),
                      ({"staging": bucket + "/victim"}, "not a staging directory"),
                      ({"key_dir": climb}, "")):
        r = rename_data(**over)
        assert r.status_code == 400, (over, r.status_code, r.text)
        assert why in r.text, (over, r.text)

    assert os.path.isfile(os.path.join(outside, "keep", "file"))
    with open(os.path.join(outside, "keep", "file")) as f:
        assert f.read() == "must survive"
    # Refused before anything was journaled or unlinked: the object is whole on every drive.
    for d in (x for dirs in c.dirs for x in dirs):
        assert os.path.isfile(os.path.join(d, bucket, "victim", ".rdmastor.meta")), d
    assert get_bytes(c.client(1), bucket, "victim") == data


def test_forged_batched_commit_is_refused_whole(cluster):
    """renamedatagroup (the commits of all of a node's drives in one call) checks every entry as
    renamedata does, and the drive each names, before it runs any: a batch whose valid first
    entry would delete an object, followed by an entry that names a path outside the drive, a
    drive of another node or a directory that is no drive, or the same drive twice, is refused
    (400) and the object stays whole on every drive."""
    c = cluster
    bucket = "peer-batch"
    data, outside = _victim_and_outside(c, bucket, 100 << 10, seed=13)

    node, disks = c.nodes[1], c.dirs[1]
    climb = "../" * 32 + os.path.relpath(outside, "/")

    def entry(disk, **over):
        # A valid removal of "victim" (mode 2: remove the null version, then prune the key).
        return {"disk": disk, "staging": ".rdmastor.sys/tmp/forged-batch", "bucket": bucket,
                "key_dir": bucket + "/victim", "meta_name": ".rdmastor.meta", "data_name": "",
                "has_meta": False, "keep_data": False, "prune": True, "mode": 2,
                "version_id": "", "len": 0, **over}

    def batch(*entries, payload=b""):
        return storage_call(node, c.creds, "renamedatagroup", disks[0], {"entries": list(entries)},
                            payload)

    for second, why in (
            (entry(disks[1], key_dir=climb), "drive path"),
            (entry(disks[1], staging=climb), "not a staging directory"),
            (entry(disks[1], staging=".rdmastor.sys/tmp/../../" + bucket),
             "not a staging directory"),
            (entry(disks[1], data_name=climb), "commit names not of the drive layout"),
            (entry(disks[1], meta_name="../../" + climb), "commit names not of the drive layout"),
            (entry(disks[1], key_dir=bucket + "/victim\u0000x"), "drive path"),
            (entry(c.dirs[0][0]), "is not a drive of this node"),
            (entry(outside), "is not a drive of this node"),
            (entry(disks[1] + "/.."), "is not a drive of this node"),
            (entry(disks[0]), "named twice")):
        r = batch(entry(disks[0]), second)
        assert r.status_code == 400, (second, r.status_code, r.text)
        assert why in r.text, (second, r.text)
    # A payload longer or shorter than the entries' lengths is malformed, not cut anywhere.
    r = batch(entry(disks[0], has_meta=True, len=4), payload=b"{}")
    assert r.status_code >= 400, r.text

    assert _read(os.path.join(outside, "keep", "file")) == b"must survive"
    for d in (x for dirs in c.dirs for x in dirs):
        assert os.path.isfile(os.path.join(d, bucket, "victim", ".rdmastor.meta")), d
    assert get_bytes(c.client(1), bucket, "victim") == data
    assert get_bytes(c.client(0), bucket, "victim") == data

    # The batched metadata read: a drive of another node or no drive refuses the whole call; a
    # path outside the drive is refused for its entry, and the others are read.
    def read_batch(*entries):
        return storage_call(node, c.creds, "readfilegroup", disks[0], {"entries": list(entries)})
    meta = bucket + "/victim/.rdmastor.meta"
    for disk in (c.dirs[0][0], outside, disks[1] + "/.."):
        r = read_batch({"disk": disks[0], "path": meta}, {"disk": disk, "path": meta})
        assert r.status_code == 400 and "is not a drive of this node" in r.text, (disk, r.text)
    r = read_batch({"disk": disks[0], "path": meta},
                   {"disk": disks[1], "path": climb + "/keep/file"},
                   {"disk": disks[1], "path": "/" + os.path.relpath(outside, "/") + "/keep/file"})
    assert r.status_code == 200, r.text
    head = json.loads(r.headers["x-rdmastor-reply"])["results"]
    assert head[0]["ok"] and head[0]["found"], head
    assert [h["ok"] for h in head[1:]] == [False, False], head
    assert b"must survive" not in r.content


def test_forged_shard_batch_is_refused_whole(cluster):
    """shardwritegroup (a shard piece for each of a node's drives in one call) checks every
    entry's drive and the pieces' lengths before it writes any: an entry naming a drive of another
    node, no drive, or a drive twice, or lengths that do not add up to the payload, is refused
    (400) and nothing is written; a path outside the drive fails its own entry (the drive's
    CheckRelPath), never writes there, and the other entries are written."""
    c = cluster
    _, outside = _victim_and_outside(c, "peer-shards", 10, seed=17)
    node, disks = c.nodes[1], c.dirs[1]
    staging = ".rdmastor.sys/tmp/forged-shards"
    climb = "../" * 32 + os.path.relpath(outside, "/")

    def entry(disk, path=staging + "/data/part.1", n=3):
        return {"disk": disk, "path": path, "offset": 0, "len": n, "create": True, "sync": False}

    def batch(*entries, payload=b"abcabc"):
        # A node call: no ?disk= (whatever one says is ignored).
        return storage_call(node, c.creds, "shardwritegroup", disks[-1], {"entries": list(entries)},
                            payload)

    for second, why in ((entry(c.dirs[0][0]), "is not a drive of this node"),
                        (entry(outside), "is not a drive of this node"),
                        (entry(disks[1] + "/.."), "is not a drive of this node"),
                        (entry(disks[0]), "named twice")):
        r = batch(entry(disks[0]), second)
        assert r.status_code == 400, (second, r.status_code, r.text)
        assert why in r.text, (second, r.text)
    for payload in (b"abcab", b"abcabcd"):
        r = batch(entry(disks[0]), entry(disks[1]), payload=payload)
        assert r.status_code == 400 and "payload of" in r.text, (payload, r.text)
    for d in disks:
        assert not os.path.exists(os.path.join(d, staging)), d

    r = batch(entry(disks[0]), entry(disks[1], path=climb + "/keep/new"))
    assert r.status_code == 200, r.text
    results = json.loads(r.text)["results"]
    assert [x["ok"] for x in results] == [True, False], results
    assert _read(os.path.join(disks[0], staging, "data", "part.1")) == b"abc"
    assert not os.path.exists(os.path.join(outside, "keep", "new"))
    assert _read(os.path.join(outside, "keep", "file")) == b"must survive"


def test_forged_shard_read_batch_is_refused_whole(cluster):
    """shardreadgroup (a range of a shard file of each of a node's drives in one call) checks every
    entry's drive before it reads any: an entry naming a drive of another node, a path that is no
    drive, or a drive twice is refused (400); a path that climbs out of the drive fails its own
    entry (the drive's CheckRelPath) and its slot of the reply stays zero, never the file's bytes,
    while the other entries are read."""
    c = cluster
    _, outside = _victim_and_outside(c, "peer-reads", 10, seed=18)
    node, disks = c.nodes[1], c.dirs[1]
    rel = ".rdmastor.sys/tmp/forged-read/part.1"
    os.makedirs(os.path.dirname(os.path.join(disks[0], rel)))
    with open(os.path.join(disks[0], rel), "wb") as f:
        f.write(b"shard bytes!")
    climb = "../" * 32 + os.path.relpath(outside, "/") + "/keep/file"

    def entry(disk, path=rel, n=12):
        return {"disk": disk, "path": path, "offset": 0, "len": n, "handle": 0, "keep": False}

    def batch(*entries):
        return storage_call(node, c.creds, "shardreadgroup", disks[-1],
                            {"entries": list(entries)}, b"")

    for second, why in ((entry(c.dirs[0][0]), "is not a drive of this node"),
                        (entry(outside), "is not a drive of this node"),
                        (entry(disks[1] + "/.."), "is not a drive of this node"),
                        (entry(disks[0]), "named twice")):
        r = batch(entry(disks[0]), second)
        assert r.status_code == 400, (second, r.status_code, r.text)
        assert why in r.text, (second, r.text)

    r = batch(entry(disks[0]), entry(disks[1], path=climb))
    assert r.status_code == 200, r.text
    results = json.loads(r.headers["x-rdmastor-reply"])["results"]
    assert [x["ok"] for x in results] == [True, False], results
    assert results[0]["bytes"] == 12, results
    assert r.content == b"shard bytes!" + bytes(12), r.content
    assert b"must survive" not in r.content


def _victim_and_outside(c, bucket, size, seed):
    """A bucket holding object "victim" (its bytes returned), and a directory outside every drive
    (returned) holding keep/file = "must survive": what a forged call must leave alone."""
    s3 = c.client(0)
    s3.create_bucket(Bucket=bucket)
    data = seeded_bytes(size, seed=seed)
    s3.put_object(Bucket=bucket, Key="victim", Body=data)
    outside = os.path.join(c.base, f"outside-the-drives-{bucket}")
    os.makedirs(os.path.join(outside, "keep"))
    with open(os.path.join(outside, "keep", "file"), "w") as f:
        f.write("must survive")
    return data, outside


def _refused(r):
    assert r.status_code == 403, (r.status_code, r.text)
    assert "<Code>AccessDenied</Code>" in r.text, r.text
    return r.text


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_captured_request_cannot_be_replayed_or_given_another_body(cluster):
    """Issue 10: one captured signed request, replayed with its own or a forged body, or at
    another node, is refused (403) and changes nothing; a fresh signature with a swapped body is
    refused too. Before, the signature covered neither a nonce nor the body: the same header
    carried any body for 5 minutes (a replayed `commit` deleted an object's metadata)."""
    c = cluster
    s3 = c.client(0)
    bucket = "peer-replay"
    s3.create_bucket(Bucket=bucket)
    data = seeded_bytes(200 << 10, seed=11)
    s3.put_object(Bucket=bucket, Key="victim", Body=data)
    metas = {d: _read(os.path.join(d, bucket, "victim", ".rdmastor.meta"))
             for d in (x for dirs in c.dirs for x in dirs)}

    node, disk = c.nodes[1], c.dirs[1][0]
    meta_rel = f"{bucket}/victim/.rdmastor.meta"
    target = storage_call_target("writefile", disk)
    body = storage_call_body({"path": meta_rel}, metas[disk])
    # The capture: a legitimate request (it rewrites the metadata with the same bytes), accepted.
    captured = peer_auth_header(c.creds, "POST", node.address, target, body)
    r = peer_call(node, c.creds, target, body, auth=captured)
    assert r.status_code == 200, r.text

    # Replayed as is, with forged bodies, at the other node: all refused.
    assert "nonce already used" in _refused(peer_call(node, c.creds, target, body, auth=captured))
    for forged in (b"", b"{}", body[: len(body) // 2]):
        _refused(peer_call(node, c.creds, target, forged, auth=captured))
    other = c.nodes[0]
    _refused(peer_call(other, c.creds, storage_call_target("writefile", c.dirs[0][0]), body,
                       auth=captured))
    # A fresh signature whose body was swapped in transit: refused on the body, not the nonce.
    fresh = peer_auth_header(c.creds, "POST", node.address, target, body)
    assert "body is not" in _refused(peer_call(node, c.creds, target, b"", auth=fresh))
    # The old v1 scheme (no nonce, no body) is refused outright.
    _refused(peer_call(node, c.creds, target, b"", auth=captured.replace("v2", "v1", 1)))

    # A shard piece with a swapped body is never written: no file appears.
    staging = ".rdmastor.sys/tmp/replay-staging"
    shard = storage_call_target("shardwrite", disk)
    piece = seeded_bytes(1 << 20, seed=12)
    body = storage_call_body({"path": staging + "/part.1", "offset": 0, "create": True,
                              "sync": False}, piece)
    auth = peer_auth_header(c.creds, "POST", node.address, shard, body)
    _refused(peer_call(node, c.creds, shard, body[:-1] + b"x", auth=auth))
    assert not os.path.exists(os.path.join(disk, staging))
    # The same piece, correctly signed, is written (the refusal above was the body's), with the
    # staging directory it needs.
    r = peer_call(node, c.creds, shard, body)
    assert r.status_code == 200, r.text
    assert _read(os.path.join(disk, staging, "part.1")) == piece
    assert storage_call(node, c.creds, "removeall", disk, {"path": staging}).status_code == 200

    # Nothing changed: every drive's metadata is what it was, and the object reads back.
    for d, meta in metas.items():
        assert _read(os.path.join(d, bucket, "victim", ".rdmastor.meta")) == meta, d
    assert get_bytes(c.client(1), bucket, "victim") == data
    assert get_bytes(c.client(0), bucket, "victim") == data


def test_replayed_lock_is_not_granted(cluster):
    """Issue 10: a forged lock made from a captured lock request's header is refused, whatever
    body it carries; the lock table stays free (a new lock on the resource is granted)."""
    c = cluster
    node = c.nodes[1]
    resource = "peer-replay/locked"

    def lock_body(uid, res=resource):
        return json.dumps({"uid": uid, "resources": [res], "owner": "test", "source": "test",
                           "quorum": 2}).encode()

    granted = lock_body("uid-1")
    captured = peer_auth_header(c.creds, "POST", node.address, "/minio/lock/v1/lock", granted)
    # Lock calls have the same target on every node: a request signed for node 2 is refused by
    # node 1 (the signature names its destination), then accepted where it was meant to go.
    assert "another node" in _refused(
        peer_call(c.nodes[0], c.creds, "/minio/lock/v1/lock", granted, auth=captured))
    r = peer_call(node, c.creds, "/minio/lock/v1/lock", granted, auth=captured)
    assert (r.status_code, r.text) == (200, "1")
    r = peer_call(node, c.creds, "/minio/lock/v1/unlock", granted)
    assert (r.status_code, r.text) == (200, "1")

    # The captured lock, replayed after its unlock (it would hold the key until the lock TTL),
    # and with forged bodies: another uid, another resource.
    _refused(peer_call(node, c.creds, "/minio/lock/v1/lock", granted, auth=captured))
    _refused(peer_call(node, c.creds, "/minio/lock/v1/lock", lock_body("uid-evil"),
                       auth=captured))
    _refused(peer_call(node, c.creds, "/minio/lock/v1/lock",
                       lock_body("uid-evil", "peer-replay/victim"), auth=captured))

    # None of them took the lock: a new writer gets both resources at once.
    for res in (resource, "peer-replay/victim"):
        mine = lock_body("uid-2", res)
        r = peer_call(node, c.creds, "/minio/lock/v1/lock", mine)
        assert (r.status_code, r.text) == (200, "1"), res
        r = peer_call(node, c.creds, "/minio/lock/v1/unlock", mine)
        assert (r.status_code, r.text) == (200, "1"), res


def test_refused_peer_calls_log_bounded_lines_at_a_bounded_rate(cluster):
    """Issue 32 item 9: unauthenticated peer calls with a 30 KB path each wrote their whole path
    to the log, one line per call. Now a refusal's line is cut short and at most one a second is
    written (with the count of those left out)."""
    node = cluster.nodes[0]
    before = len(node.log_text())
    path = "/minio/storage/v1/" + "A" * 30000
    start = time.monotonic()
    for _ in range(100):
        r = requests.post(node.url(path), data=b"", timeout=10)
        assert r.status_code in (400, 403), r.status_code
    took = time.monotonic() - start
    added = node.log_text()[before:]
    lines = [line for line in added.splitlines() if "refused" in line]
    assert len(lines) <= took + 2, (len(lines), took)
    assert all(len(line) < 1000 for line in lines), max(map(len, lines))
    assert len(added) < 20000, len(added)


def _timed_from(node, source, method, target, headers=None):
    """One request from loopback address `source`: (status, seconds until the reply)."""
    conn = http.client.HTTPConnection(node.host, node.port, timeout=20,
                                      source_address=(source, 0))
    try:
        start = time.monotonic()
        conn.request(method, target, body=b"", headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status, time.monotonic() - start
    finally:
        conn.close()


def test_unsigned_peer_calls_wait_in_their_clients_share(tmp_path):
    """Issue 32 item 4 (the peer half of item 9): requests to the peer paths skipped the
    per-client gate whatever they carried, so a client at its share could go on sending them.
    Now only a request with a valid peer signature is uncapped: with its one handler held by a
    stalled form POST, the same address's unsigned peer call waits until that handler is done,
    and a signed one is answered at once."""
    c = Cluster(nodes=2, drives=2, name="gate", env_extra={
        "RDMASTOR_API_REQUESTS_PER_CLIENT": "1", "RDMASTOR_API_BODY_TIMEOUT": "3s",
        "RDMASTOR_API_MIN_RATE": "off"})
    try:
        c.start()
        node = c.nodes[0]
        bucket = "gate-" + rand_str(6)
        c.client(0).create_bucket(Bucket=bucket)
        source = "127.0.0.5"

        def stall():
            s = socket.socket()
            s.bind((source, 0))
            s.connect((node.host, node.port))
            s.sendall((f"POST /{bucket} HTTP/1.1\r\nHost: {node.address}\r\nContent-Type: "
                       "multipart/form-data; boundary=xyz\r\nContent-Length: 100000\r\n\r\n"
                       "--xyz\r\n").encode())
            time.sleep(0.5)  # in its handler, waiting for the form's fields
            return s

        held = stall()
        try:
            status, took = _timed_from(node, source, "POST", "/minio/peer/v1/ping")
        finally:
            held.close()
        assert status == 403
        assert took > 1.5, took  # waited for the stalled POST's body deadline (3 s)
        held = stall()
        try:
            target = "/minio/peer/v1/ping"
            auth = peer_auth_header(c.creds, "POST", node.address, target)
            status, took = _timed_from(node, source, "POST", target,
                                       {"x-rdmastor-peer-auth": auth})
        finally:
            held.close()
        assert status == 200 and took < 1.0, (status, took)
    finally:
        c.cleanup()
