"""Users and bucket policies in a 4-node cluster: kept in the erasure-coded system bucket, so a
user added through one node authenticates through every other at once, and changes made through
one node are seen by the others within RDMASTOR_IAM_REFRESH."""

import json
import time

import pytest
import requests
from botocore.exceptions import ClientError

from cluster_util import Cluster
from conftest import make_client, rand_str, unique_bucket
from test_access_abuse import BogusKeyFlood, signed_from
from test_iam import admin

REFRESH_S = 1.0


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(env_extra={"RDMASTOR_IAM_REFRESH": "1s"})
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def user_client(c, idx, ak, sk):
    return make_client(c.nodes[idx], ak, sk)


def wait_until_every_node(c, ak, sk, accepts, nodes=(0, 1, 2, 3)):
    """Waits (bounded: the refresh interval plus 10 s) until each node accepts, or refuses as
    InvalidAccessKeyId, the user's requests."""
    deadline = time.monotonic() + REFRESH_S + 10
    for idx in nodes:
        while True:
            try:
                user_client(c, idx, ak, sk).list_buckets()
                if accepts:
                    break
            except ClientError as err:
                assert err.response["Error"]["Code"] == "InvalidAccessKeyId"
                if not accepts:
                    break
            assert time.monotonic() < deadline, f"node{idx + 1}: accepts is not {accepts}"
            time.sleep(0.2)


def test_user_added_on_one_node_works_on_every_node_at_once(cluster):
    c = cluster
    ak, sk = "cl" + rand_str(10), rand_str(24)
    admin(c.nodes[0], "user", "add", ak, sk)
    admin(c.nodes[0], "policy", "attach", "readwrite", "--user", ak)
    b = unique_bucket("cliam")
    # No wait at all: nodes 2..4 have never seen this key and must look it up.
    user_client(c, 1, ak, sk).create_bucket(Bucket=b)
    user_client(c, 2, ak, sk).put_object(Bucket=b, Key="k", Body=b"cluster")
    assert user_client(c, 3, ak, sk).get_object(Bucket=b, Key="k")["Body"].read() == b"cluster"
    assert ak in admin(c.nodes[3], "user", "list").stdout

    # A readonly user added through node 4 cannot write through node 1.
    ro, ro_sk = "ro" + rand_str(10), rand_str(24)
    admin(c.nodes[3], "user", "add", ro, ro_sk)
    admin(c.nodes[3], "policy", "attach", "readonly", "--user", ro)
    assert user_client(c, 0, ro, ro_sk).get_object(Bucket=b, Key="k")["Body"].read() == b"cluster"
    with pytest.raises(ClientError) as e:
        user_client(c, 0, ro, ro_sk).put_object(Bucket=b, Key="w", Body=b"x")
    assert e.value.response["Error"]["Code"] == "AccessDenied"

    # Removal through node 1 reaches the others within the refresh interval.
    admin(c.nodes[0], "user", "remove", ak)
    wait_until_every_node(c, ak, sk, accepts=False, nodes=(1, 2, 3))


def test_bucket_policy_set_on_one_node_applies_on_the_others(cluster):
    c = cluster
    root = c.client(0)
    b = unique_bucket("clpol")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="pub", Body=b"open")
    for node in c.nodes:
        assert requests.get(node.url(f"/{b}/pub"), timeout=10).status_code == 403
    doc = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                          "Resource": f"arn:aws:s3:::{b}/*"}]}
    c.client(1).put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    deadline = time.monotonic() + REFRESH_S + 10
    for node in c.nodes:
        while requests.get(node.url(f"/{b}/pub"), timeout=10).status_code != 200:
            assert time.monotonic() < deadline, f"{node.address} never applied the policy"
            time.sleep(0.2)


def test_user_added_on_one_node_works_at_once_under_a_bogus_key_flood(cluster):
    # Issue 32: made-up access keys from several addresses flood node 1; users added through
    # node 2 must still authenticate through node 1 at once, from another address.
    c = cluster
    with BogusKeyFlood(c.nodes[0]) as flood:
        statuses = []
        for _ in range(4):
            ak, sk = "fl" + rand_str(10), rand_str(24)
            admin(c.nodes[1], "user", "add", ak, sk)
            admin(c.nodes[1], "policy", "attach", "readwrite", "--user", ak)
            statuses.append(signed_from(c.nodes[0], "127.0.0.9", "GET", "/", ak, sk).status)
    assert flood.sent > 100, flood.sent
    assert statuses == [200] * 4, statuses


def test_admin_info_lists_every_node_and_a_disabled_user_is_refused_everywhere(cluster):
    """`rdmastor admin info` through one node shows the four nodes with their four drives each,
    one erasure set per 16 drives or less; `user disable` through one node reaches every node
    within the refresh interval, `user enable` brings the user back (issue 33, item 10)."""
    c = cluster
    info = json.loads(admin(c.nodes[1], "info", "--json").stdout)["info"]
    assert info["mode"] == "online" and info["backend"]["backendType"] == "Erasure", info
    assert info["backend"]["onlineDisks"] == 16 and info["backend"]["offlineDisks"] == 0, info
    servers = {s["endpoint"]: s for s in info["servers"]}
    assert set(servers) == {f"{n.host}:{n.port}" for n in c.nodes}, servers
    for s in servers.values():
        assert s["state"] == "online" and len(s["drives"]) == 4, s
        assert all(d["state"] == "ok" and d["totalspace"] > 0 for d in s["drives"]), s
    ak, sk = "dis" + rand_str(10), rand_str(24)
    admin(c.nodes[0], "user", "add", ak, sk)
    admin(c.nodes[0], "policy", "attach", "readwrite", "--user", ak)
    for idx in range(4):
        user_client(c, idx, ak, sk).list_buckets()
    admin(c.nodes[0], "user", "disable", ak)
    wait_until_every_node(c, ak, sk, accepts=False)
    admin(c.nodes[2], "user", "enable", ak)
    wait_until_every_node(c, ak, sk, accepts=True)
