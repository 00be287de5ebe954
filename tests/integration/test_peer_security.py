"""Peer RPC under attack: requests that carry a valid peer signature (a captured or forged call from
someone holding the deployment's credentials) must still never act outside the drives, nor on any
name that is not the storage layout's own.

A 2-node x 2-drive cluster (one erasure set, EC 2+2) of real rdmastor processes on 127.0.0.1.
"""

import json
import os
import urllib.parse

import pytest

from cluster_util import Cluster, get_bytes, peer_call
from conftest import seeded_bytes


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(nodes=2, drives=2)
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def _storage_target(call, disk, **params):
    query = urllib.parse.urlencode({"disk": disk, **params}, safe="/")
    return f"/minio/storage/v1/{call}?{query}"


def test_forged_commit_cannot_touch_anything_outside_the_drive(cluster):
    """Issue 7: a signed `commit` whose data-dir names climb out of the key directory. Before the
    fix, step 4 of the commit (retire the old data dir) renamed or removed the directory the name
    pointed at, wherever it was."""
    c = cluster
    s3 = c.client(0)
    bucket = "peer-attack"
    s3.create_bucket(Bucket=bucket)
    data = seeded_bytes(300 << 10, seed=7)
    s3.put_object(Bucket=bucket, Key="victim", Body=data)

    outside = os.path.join(c.base, "outside-the-drives")
    os.makedirs(os.path.join(outside, "keep"))
    with open(os.path.join(outside, "keep", "file"), "w") as f:
        f.write("must survive")

    node, disk = c.nodes[1], c.dirs[1][0]
    staging = ".rdmastor.sys/tmp/forged-staging"
    r = peer_call(node, c.creds, _storage_target("mkdir", disk, path=staging))
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
        r = peer_call(node, c.creds, _storage_target("commit", disk), json.dumps(plan).encode())
        assert r.status_code == 400, (names, r.status_code, r.text)
        assert "commit names not of the drive layout" in r.text, r.text

    assert os.path.isfile(os.path.join(outside, "keep", "file"))
    with open(os.path.join(outside, "keep", "file")) as f:
        assert f.read() == "must survive"
    # Refused before anything was journaled or unlinked: the object is whole on every drive.
    for d in (x for dirs in c.dirs for x in dirs):
        assert os.path.isfile(os.path.join(d, bucket, "victim", ".rdmastor.meta")), d
    assert get_bytes(c.client(1), bucket, "victim") == data
