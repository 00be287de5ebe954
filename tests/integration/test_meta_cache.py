"""The metadata cache never serves a stale read (issue 39 item 3).

A GET reads the key's metadata file through the node's cache (src/storage/meta_cache.h): every
case here reads the key first (so the file is cached, which the hit counter proves), changes it
through one write path, and reads it back at once: the read must see the change. One drive, four
drives (EC 2+2) and, last, a 2-node cluster where the change goes through the other node."""
import datetime
import os
import shutil
import tempfile
import time

import pytest
import requests

from cluster_util import Cluster
from conftest import (Server, admin_heal, boto3_error_code, make_client, scrape, seeded_bytes,
                      unique_bucket)

err = boto3_error_code
ENV = {"MINIO_PROMETHEUS_AUTH_TYPE": "public", "RDMASTOR_LIFECYCLE_DAY_SECONDS": "1",
       "RDMASTOR_LIFECYCLE_INTERVAL": "200ms", "RDMASTOR_LIFECYCLE_PAUSE": "10ms",
       "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"}


def hits(srv):
    return scrape(srv).get('rdmastor_meta_cache_reads_total{result="hit"}', 0)


def body(s3, bucket, key, **kw):
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def cached(srv, s3, bucket, key, expect):
    """Reads the key twice: the second read must come from the cache and return `expect`."""
    assert body(s3, bucket, key) == expect
    before = hits(srv)
    assert body(s3, bucket, key) == expect
    assert hits(srv) > before, "the second GET did not hit the metadata cache"


@pytest.fixture(scope="module", params=[1, 4], ids=["1drive", "4drives"])
def srv(request):
    base = tempfile.mkdtemp(prefix="rdmastor-it-mc-", dir="/tmp")
    s = Server(f"mc{request.param}", env=ENV,
               data_dirs=[os.path.join(base, f"d{i}") for i in range(request.param)])
    try:
        s.start()
    except RuntimeError as e:
        s.cleanup()
        pytest.fail(str(e))
    yield s
    s.cleanup()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def s3(srv):
    return make_client(srv)


@pytest.fixture
def bkt(s3):
    b = unique_bucket("mc")
    s3.create_bucket(Bucket=b)
    return b


def test_overwrite_copy_multipart_delete(srv, s3, bkt):
    a, b = seeded_bytes(4096, 1), seeded_bytes(4096, 2)  # same size: same-sized metadata files
    s3.put_object(Bucket=bkt, Key="k", Body=a)
    cached(srv, s3, bkt, "k", a)
    s3.put_object(Bucket=bkt, Key="k", Body=b)
    assert body(s3, bkt, "k") == b
    # Many overwrites in a row, each read back at once (inode numbers get reused meanwhile).
    for i in range(20):
        data = seeded_bytes(4096, 100 + i)
        s3.put_object(Bucket=bkt, Key="k", Body=data)
        assert body(s3, bkt, "k") == data, f"overwrite {i}"
    # CopyObject onto the key, and onto itself with new metadata.
    s3.put_object(Bucket=bkt, Key="src", Body=a)
    cached(srv, s3, bkt, "k", data)
    s3.copy_object(Bucket=bkt, Key="k", CopySource={"Bucket": bkt, "Key": "src"})
    assert body(s3, bkt, "k") == a
    s3.copy_object(Bucket=bkt, Key="k", CopySource={"Bucket": bkt, "Key": "k"},
                   Metadata={"m": "v2"}, MetadataDirective="REPLACE")
    assert s3.get_object(Bucket=bkt, Key="k")["Metadata"] == {"m": "v2"}
    # CompleteMultipartUpload onto the key.
    cached(srv, s3, bkt, "k", a)
    up = s3.create_multipart_upload(Bucket=bkt, Key="k")["UploadId"]
    part = s3.upload_part(Bucket=bkt, Key="k", UploadId=up, PartNumber=1, Body=b)
    s3.complete_multipart_upload(Bucket=bkt, Key="k", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert body(s3, bkt, "k") == b
    # DeleteObject and DeleteObjects.
    cached(srv, s3, bkt, "k", b)
    s3.delete_object(Bucket=bkt, Key="k")
    assert err(s3.get_object, Bucket=bkt, Key="k") == [404, "NoSuchKey"]
    s3.put_object(Bucket=bkt, Key="k", Body=a)
    cached(srv, s3, bkt, "k", a)
    s3.delete_objects(Bucket=bkt, Delete={"Objects": [{"Key": "k"}]})
    assert err(s3.get_object, Bucket=bkt, Key="k") == [404, "NoSuchKey"]
    # A data object (part files on more than one drive), overwritten by one of another size.
    big = seeded_bytes(3 << 20, 3)
    s3.put_object(Bucket=bkt, Key="big", Body=big)
    cached(srv, s3, bkt, "big", big)
    s3.put_object(Bucket=bkt, Key="big", Body=a)
    assert body(s3, bkt, "big") == a


def test_tagging_acl_and_versions(srv, s3, bkt):
    a, b = seeded_bytes(4096, 4), seeded_bytes(4096, 5)
    s3.put_object(Bucket=bkt, Key="t", Body=a)
    cached(srv, s3, bkt, "t", a)
    s3.put_object_tagging(Bucket=bkt, Key="t", Tagging={"TagSet": [{"Key": "x", "Value": "1"}]})
    assert s3.get_object(Bucket=bkt, Key="t").get("TagCount") == 1
    assert s3.get_object_tagging(Bucket=bkt, Key="t")["TagSet"] == [{"Key": "x", "Value": "1"}]
    s3.delete_object_tagging(Bucket=bkt, Key="t")
    assert s3.get_object(Bucket=bkt, Key="t").get("TagCount") is None
    # ACL: an anonymous GET follows PutObjectAcl both ways at once.
    url = f"{srv.endpoint}/{bkt}/t"
    assert requests.get(url, timeout=10).status_code == 403
    s3.put_object_acl(Bucket=bkt, Key="t", ACL="public-read")
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == a
    assert requests.get(url, timeout=10).status_code == 200
    s3.put_object_acl(Bucket=bkt, Key="t", ACL="private")
    assert requests.get(url, timeout=10).status_code == 403
    # Versions: a new version, a delete marker, the marker's removal.
    s3.put_bucket_versioning(Bucket=bkt, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bkt, Key="v", Body=a)["VersionId"]
    cached(srv, s3, bkt, "v", a)
    v2 = s3.put_object(Bucket=bkt, Key="v", Body=b)["VersionId"]
    assert body(s3, bkt, "v") == b
    assert body(s3, bkt, "v", VersionId=v1) == a
    marker = s3.delete_object(Bucket=bkt, Key="v")["VersionId"]
    assert err(s3.get_object, Bucket=bkt, Key="v") == [404, "NoSuchKey"]
    s3.delete_object(Bucket=bkt, Key="v", VersionId=marker)
    assert body(s3, bkt, "v") == b
    s3.delete_object(Bucket=bkt, Key="v", VersionId=v2)
    assert body(s3, bkt, "v") == a


def test_retention_and_legal_hold(srv, s3):
    bkt = unique_bucket("mclock")
    s3.create_bucket(Bucket=bkt, ObjectLockEnabledForBucket=True)
    a = seeded_bytes(4096, 6)
    v = s3.put_object(Bucket=bkt, Key="l", Body=a)["VersionId"]
    cached(srv, s3, bkt, "l", a)
    s3.put_object_legal_hold(Bucket=bkt, Key="l", LegalHold={"Status": "ON"})
    assert s3.head_object(Bucket=bkt, Key="l")["ObjectLockLegalHoldStatus"] == "ON"
    assert s3.get_object(Bucket=bkt, Key="l")["ObjectLockLegalHoldStatus"] == "ON"
    s3.put_object_legal_hold(Bucket=bkt, Key="l", LegalHold={"Status": "OFF"})
    assert s3.get_object(Bucket=bkt, Key="l")["ObjectLockLegalHoldStatus"] == "OFF"
    until = time.time() + 3600
    s3.put_object_retention(Bucket=bkt, Key="l", Retention={
        "Mode": "GOVERNANCE",
        "RetainUntilDate": datetime.datetime.fromtimestamp(until, datetime.timezone.utc)})
    assert s3.get_object(Bucket=bkt, Key="l")["ObjectLockMode"] == "GOVERNANCE"
    s3.delete_object(Bucket=bkt, Key="l", VersionId=v, BypassGovernanceRetention=True)
    assert err(s3.get_object, Bucket=bkt, Key="l") == [404, "NoSuchKey"]


def test_lifecycle_expiry(srv, s3, bkt):
    a = seeded_bytes(4096, 7)
    s3.put_object(Bucket=bkt, Key="exp/k", Body=a)
    cached(srv, s3, bkt, "exp/k", a)
    s3.put_bucket_lifecycle_configuration(Bucket=bkt, LifecycleConfiguration={"Rules": [
        {"ID": "r", "Status": "Enabled", "Filter": {"Prefix": "exp/"},
         "Expiration": {"Days": 1}}]})
    # The listing reads the drives, not the cache: once it no longer shows the key, the scanner
    # has removed it, and a GET right after must not find it either.
    deadline = time.monotonic() + 30
    while s3.list_objects_v2(Bucket=bkt, Prefix="exp/").get("KeyCount", 0) > 0:
        assert time.monotonic() < deadline, "the lifecycle scanner did not expire the object"
        body(s3, bkt, "exp/k")  # keeps the key's file in the cache meanwhile
        time.sleep(0.1)
    assert err(s3.get_object, Bucket=bkt, Key="exp/k") == [404, "NoSuchKey"]


def test_change_behind_the_servers_back(srv, s3, bkt):
    """A metadata file changed by someone else (an operator, a corruption) is not served from
    the cache: it is stat'ed on every read."""
    a = seeded_bytes(4096, 8)
    s3.put_object(Bucket=bkt, Key="ext", Body=a)
    cached(srv, s3, bkt, "ext", a)
    metas = [os.path.join(d, bkt, "ext", ".rdmastor.meta") for d in srv.data_dirs]
    assert all(os.path.exists(m) for m in metas)
    time.sleep(0.05)  # past the file system's timestamp granularity
    for m in metas:  # the same size, other bytes: the file no longer parses (bad checksum)
        with open(m, "r+b") as f:
            raw = bytearray(f.read())
            raw[len(raw) // 2] ^= 0x01
            f.seek(0)
            f.write(bytes(raw))
    assert err(s3.get_object, Bucket=bkt, Key="ext")[0] == 500
    for m in metas:
        os.unlink(m)
    assert err(s3.get_object, Bucket=bkt, Key="ext") == [404, "NoSuchKey"]


def test_replaced_drive_then_heal(srv, s3, bkt):
    if len(srv.data_dirs) < 4:
        pytest.skip("needs an erasure set")
    a = seeded_bytes(4096, 9)
    s3.put_object(Bucket=bkt, Key="h", Body=a)
    cached(srv, s3, bkt, "h", a)
    d0 = srv.data_dirs[0]
    shutil.rmtree(d0)
    os.makedirs(d0)
    assert body(s3, bkt, "h") == a  # served from the other drives
    run = admin_heal(srv)
    assert run.returncode == 0, run.stderr
    assert os.path.exists(os.path.join(d0, bkt, "h", ".rdmastor.meta"))
    b = seeded_bytes(4096, 10)
    s3.put_object(Bucket=bkt, Key="h", Body=b)
    assert body(s3, bkt, "h") == b


def test_cluster_change_through_the_other_node():
    """2 nodes x 2 drives (EC 2+2): both nodes' reads go through their own drives' caches and
    the peer's (a remote drive is read by its node, through that node's cache); writes through
    one node are seen through the other at once."""
    c = Cluster(nodes=2, drives=2, env_extra={"MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    try:
        c.start()
        s0, s1 = c.client(0), c.client(1)
        s0.create_bucket(Bucket="mcc")
        a, b = seeded_bytes(4096, 11), seeded_bytes(4096, 12)
        s0.put_object(Bucket="mcc", Key="k", Body=a)
        for _ in range(3):
            assert body(s1, "mcc", "k") == a
            assert body(s0, "mcc", "k") == a
        assert sum(hits(c.nodes[i]) for i in range(2)) > 0, "no GET hit a metadata cache"
        for i in range(10):
            data = seeded_bytes(4096, 200 + i)
            (s0 if i % 2 else s1).put_object(Bucket="mcc", Key="k", Body=data)
            assert body(s0, "mcc", "k") == data and body(s1, "mcc", "k") == data, i
        s0.put_object_tagging(Bucket="mcc", Key="k", Tagging={"TagSet": [{"Key": "t", "Value": "v"}]})
        assert s1.get_object(Bucket="mcc", Key="k").get("TagCount") == 1
        s1.delete_object(Bucket="mcc", Key="k")
        assert err(s0.get_object, Bucket="mcc", Key="k") == [404, "NoSuchKey"]
        s1.put_object(Bucket="mcc", Key="k", Body=b)
        assert body(s0, "mcc", "k") == b
    finally:
        c.cleanup()
