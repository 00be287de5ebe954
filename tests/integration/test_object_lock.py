"""S3 Object Lock (issue 38 item 1) against the real server on four drives (erasure coding; Object
Lock needs versioning): buckets created with Object Lock, Put/GetObjectLockConfiguration and its
errors, default retention, per-version retention (GOVERNANCE / COMPLIANCE) and legal hold, the
x-amz-bypass-governance-retention rules with the s3:BypassGovernanceRetention permission, every
delete path (DeleteObject, DeleteObjects, MinIO's force deletes) refusing a locked version while a
plain delete still creates a delete marker, the lock headers of PutObject / multipart / CopyObject
and of HEAD / GET, and a heal that must not lose a lock. What the checks expect is AWS's documented
answer (and s3-tests' test_object_lock_*); MinIO's where only MinIO defines it (force delete).
"""
import base64
import datetime
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from conftest import (boto3_error_code, RDMASTOR_BIN, _clean_env, admin_heal, erasure4, make_client, rand_str,
                      signed_request, unique_bucket)

UTC = datetime.timezone.utc
FAR = datetime.datetime(2030, 1, 1, tzinfo=UTC)
FARTHER = datetime.datetime(2030, 1, 3, tzinfo=UTC)


err = boto3_error_code  # [status, code] of a call that must fail


@pytest.fixture(scope="module")
def s3(erasure_server):
    return make_client(erasure_server)


def lock_bucket(s3):
    b = unique_bucket("lock")
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    return b


def conf(mode="GOVERNANCE", **period):
    return {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": mode, **period}}}


def md5_header(body):
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def test_bucket_configuration(s3):
    b = lock_bucket(s3)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=conf(Days=1))
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == conf(Days=1)
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=conf("COMPLIANCE", Years=1))
    assert (s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
            == conf("COMPLIANCE", Years=1))
    put = s3.put_object_lock_configuration
    assert err(put, Bucket=b, ObjectLockConfiguration=conf(Days=1, Years=1)) == [400, "MalformedXML"]
    assert err(put, Bucket=b, ObjectLockConfiguration=conf(Days=0)) == [400, "InvalidRetentionPeriod"]
    assert err(put, Bucket=b, ObjectLockConfiguration=conf(Years=-1)) == [400, "InvalidRetentionPeriod"]
    assert err(put, Bucket=b, ObjectLockConfiguration=conf("governance", Years=1)) == [400, "MalformedXML"]
    assert err(put, Bucket=b, ObjectLockConfiguration=conf("abc", Years=1)) == [400, "MalformedXML"]
    assert err(put, Bucket=b, ObjectLockConfiguration=dict(conf(Years=1), ObjectLockEnabled="Disabled")) == [400, "MalformedXML"]
    # The bucket stays versioned, everywhere in it.
    assert err(s3.put_bucket_versioning, Bucket=b,
               VersioningConfiguration={"Status": "Suspended"}) == [409, "InvalidBucketState"]
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"

    plain = unique_bucket("nolock")
    s3.create_bucket(Bucket=plain)
    assert err(s3.get_object_lock_configuration, Bucket=plain) == [404, "ObjectLockConfigurationNotFoundError"]
    assert err(put, Bucket=plain, ObjectLockConfiguration=conf(Days=1)) == [409, "InvalidBucketState"]
    s3.put_bucket_versioning(Bucket=plain, VersioningConfiguration={"Status": "Suspended"})
    assert err(put, Bucket=plain, ObjectLockConfiguration=conf(Days=1)) == [409, "InvalidBucketState"]
    # AWS: a versioned bucket may be given Object Lock after its creation.
    s3.put_bucket_versioning(Bucket=plain, VersioningConfiguration={"Status": "Enabled"})
    put(Bucket=plain, ObjectLockConfiguration=conf(Days=1))
    assert s3.get_object_lock_configuration(Bucket=plain)["ObjectLockConfiguration"] == conf(Days=1)
    # Lock requests on a bucket without Object Lock.
    nolock = unique_bucket("nolock")
    s3.create_bucket(Bucket=nolock)
    s3.put_object(Bucket=nolock, Key="k", Body=b"x")
    assert err(s3.put_object_retention, Bucket=nolock, Key="k",
               Retention={"Mode": "GOVERNANCE", "RetainUntilDate": FAR}) == [400, "InvalidRequest"]
    assert err(s3.get_object_retention, Bucket=nolock, Key="k") == [400, "InvalidRequest"]
    assert err(s3.put_object_legal_hold, Bucket=nolock, Key="k", LegalHold={"Status": "ON"}) == [400, "InvalidRequest"]
    assert err(s3.get_object_legal_hold, Bucket=nolock, Key="k") == [400, "InvalidRequest"]
    assert err(s3.put_object, Bucket=nolock, Key="k2", Body=b"x",
               ObjectLockLegalHoldStatus="ON") == [400, "InvalidRequest"]


def test_retention_rules_and_deletes(s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    assert err(s3.get_object_retention, Bucket=b, Key="k") == [404, "NoSuchObjectLockConfiguration"]
    ret = lambda mode, until: {"Mode": mode, "RetainUntilDate": until}  # noqa: E731
    s3.put_object_retention(Bucket=b, Key="k", Retention=ret("GOVERNANCE", FAR))
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == ret("GOVERNANCE", FAR)
    h = s3.head_object(Bucket=b, Key="k")
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"]) == ("GOVERNANCE", FAR)
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-object-lock-retain-until-date"] == "2030-01-01T00:00:00.000Z"
    # GOVERNANCE: extended by anyone allowed; shortened, or made COMPLIANCE, only with the bypass.
    s3.put_object_retention(Bucket=b, Key="k", Retention=ret("GOVERNANCE", FARTHER))
    assert err(s3.put_object_retention, Bucket=b, Key="k",
               Retention=ret("GOVERNANCE", FAR)) == [403, "AccessDenied"]
    assert err(s3.put_object_retention, Bucket=b, Key="k",
               Retention=ret("COMPLIANCE", FARTHER)) == [403, "AccessDenied"]
    s3.put_object_retention(Bucket=b, Key="k", Retention=ret("GOVERNANCE", FAR),
                            BypassGovernanceRetention=True)
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == ret("GOVERNANCE", FAR)
    past = datetime.datetime(2020, 1, 1, tzinfo=UTC)
    assert err(s3.put_object_retention, Bucket=b, Key="k",
               Retention=ret("GOVERNANCE", past), BypassGovernanceRetention=True)[0] == 400
    assert err(s3.put_object_retention, Bucket=b, Key="k",
               Retention=ret("governance", FAR)) == [400, "MalformedXML"]

    # A locked version is not removed; a plain delete creates a delete marker all the same.
    assert err(s3.delete_object, Bucket=b, Key="k", VersionId=v) == [403, "AccessDenied"]
    marker = s3.delete_object(Bucket=b, Key="k")
    assert marker["DeleteMarker"] is True and marker["VersionId"] != v
    s3.delete_object(Bucket=b, Key="k", VersionId=marker["VersionId"])  # markers carry no lock
    assert err(s3.delete_object, Bucket=b, Key="k", VersionId=v) == [403, "AccessDenied"]
    assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"abc"
    # DeleteObjects: per key.
    v2 = s3.put_object(Bucket=b, Key="free", Body=b"x")["VersionId"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v},
                                                        {"Key": "free", "VersionId": v2}]})
    assert [(e["Key"], e["VersionId"], e["Code"]) for e in r.get("Errors", [])] == [("k", v, "AccessDenied")]
    assert [(d["Key"], d["VersionId"]) for d in r["Deleted"]] == [("free", v2)]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v}]},
                          BypassGovernanceRetention=True)
    assert not r.get("Errors") and [(d["Key"], d["VersionId"]) for d in r["Deleted"]] == [("k", v)]

    # COMPLIANCE: never shortened, never made GOVERNANCE, never removed, bypass or not.
    c = s3.put_object(Bucket=b, Key="c", Body=b"c", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=FAR)["VersionId"]
    for r in (ret("COMPLIANCE", datetime.datetime(2029, 1, 1, tzinfo=UTC)), ret("GOVERNANCE", FARTHER)):
        assert err(s3.put_object_retention, Bucket=b, Key="c", Retention=r,
                   BypassGovernanceRetention=True) == [403, "AccessDenied"]
    s3.put_object_retention(Bucket=b, Key="c", Retention=ret("COMPLIANCE", FARTHER))
    assert err(s3.delete_object, Bucket=b, Key="c", VersionId=c,
               BypassGovernanceRetention=True) == [403, "AccessDenied"]


def test_legal_hold(s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    assert err(s3.get_object_legal_hold, Bucket=b, Key="k") == [404, "NoSuchObjectLockConfiguration"]
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "ON"}
    assert s3.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "ON"
    assert err(s3.put_object_legal_hold, Bucket=b, Key="k", LegalHold={"Status": "abc"}) == [400, "MalformedXML"]
    # A legal hold is no retention: the bypass does not lift it.
    assert err(s3.delete_object, Bucket=b, Key="k", VersionId=v,
               BypassGovernanceRetention=True) == [403, "AccessDenied"]
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "OFF"}
    assert s3.delete_object(Bucket=b, Key="k", VersionId=v)["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_lock_headers_on_writes_and_defaults(s3, erasure_server):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="p", Body=b"abc", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=FAR, ObjectLockLegalHoldStatus="ON")
    h = s3.head_object(Bucket=b, Key="p")
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"], h["ObjectLockLegalHoldStatus"]) == (
        "GOVERNANCE", FAR, "ON")
    g = s3.get_object(Bucket=b, Key="p")
    assert (g["ObjectLockMode"], g["ObjectLockLegalHoldStatus"]) == ("GOVERNANCE", "ON")
    # Multipart: CreateMultipartUpload's headers are the object's at Complete.
    up = s3.create_multipart_upload(Bucket=b, Key="m", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=FAR)["UploadId"]
    etag = s3.upload_part(Bucket=b, Key="m", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
    done = s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=up,
                                        MultipartUpload={"Parts": [{"ETag": etag, "PartNumber": 1}]})
    assert s3.get_object_retention(Bucket=b, Key="m")["Retention"]["Mode"] == "GOVERNANCE"
    assert err(s3.delete_object, Bucket=b, Key="m", VersionId=done["VersionId"]) == [403, "AccessDenied"]
    # CopyObject: the request's lock, not the source's.
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "p"},
                   ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=FAR)
    h = s3.head_object(Bucket=b, Key="copy")
    assert h["ObjectLockMode"] == "COMPLIANCE" and "ObjectLockLegalHoldStatus" not in h
    # Onto itself (REPLACE): a new version with the request's lock, the old one keeps its own.
    old = s3.head_object(Bucket=b, Key="p")["VersionId"]
    new = s3.copy_object(Bucket=b, Key="p", CopySource={"Bucket": b, "Key": "p"},
                         MetadataDirective="REPLACE", ObjectLockLegalHoldStatus="OFF")["VersionId"]
    assert new != old
    assert s3.get_object_legal_hold(Bucket=b, Key="p")["LegalHold"] == {"Status": "OFF"}
    assert s3.get_object_legal_hold(Bucket=b, Key="p", VersionId=old)["LegalHold"] == {"Status": "ON"}
    # Header errors.
    assert err(s3.put_object, Bucket=b, Key="x", Body=b"x", ObjectLockMode="GOVERNANCE") == [400, "InvalidArgument"]
    assert err(s3.put_object, Bucket=b, Key="x", Body=b"x", ObjectLockMode="GOVERNANCE",
               ObjectLockRetainUntilDate=datetime.datetime(2020, 1, 1, tzinfo=UTC)) == [400, "InvalidArgument"]
    # AWS: a PUT with lock headers declares Content-MD5 or a checksum.
    r = signed_request(erasure_server, "PUT", f"/{b}/raw", body=b"raw",
                       headers={"x-amz-object-lock-legal-hold": "ON"})
    assert r.status == 400 and b"<Code>InvalidRequest</Code>" in r.body, r.body
    assert b"Content-MD5 OR x-amz-checksum-" in r.body
    r = signed_request(erasure_server, "PUT", f"/{b}/raw", body=b"raw",
                       headers={"x-amz-object-lock-legal-hold": "ON", "content-md5": md5_header(b"raw")})
    assert r.status == 200, r.body
    # The lock subresources' PUTs need one too.
    body = b"<LegalHold><Status>OFF</Status></LegalHold>"
    r = signed_request(erasure_server, "PUT", f"/{b}/raw", query=[("legal-hold", "")], body=body)
    assert r.status == 400 and b"<Code>InvalidRequest</Code>" in r.body, r.body
    r = signed_request(erasure_server, "PUT", f"/{b}/raw", query=[("legal-hold", "")], body=body,
                       headers={"content-md5": md5_header(body)})
    assert r.status == 200, r.body

    # Default retention: applied to a version written without lock headers, from its write.
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=conf(Days=1))
    before = datetime.datetime.now(UTC)
    d = s3.put_object(Bucket=b, Key="d", Body=b"d")["VersionId"]
    ret = s3.get_object_retention(Bucket=b, Key="d")["Retention"]
    assert ret["Mode"] == "GOVERNANCE"
    assert datetime.timedelta(hours=23) < ret["RetainUntilDate"] - before < datetime.timedelta(hours=25)
    assert err(s3.delete_object, Bucket=b, Key="d", VersionId=d) == [403, "AccessDenied"]
    s3.delete_object(Bucket=b, Key="d", VersionId=d, BypassGovernanceRetention=True)


def test_force_deletes_refused_on_lock_buckets(s3, erasure_server):
    """MinIO refuses x-minio-force-delete on a lock-enabled bucket: 405 on the bucket, 400
    InvalidArgument on a prefix; everything stays."""
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="dir/k", Body=b"x", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=FAR)["VersionId"]
    r = signed_request(erasure_server, "DELETE", f"/{b}", headers={"x-minio-force-delete": "true"})
    assert r.status == 405 and b"MethodNotAllowed" in r.body, r.body
    r = signed_request(erasure_server, "DELETE", f"/{b}/dir", headers={"x-minio-force-delete": "true"})
    assert r.status == 400 and b"<Code>InvalidArgument</Code>" in r.body, r.body
    assert b"force-delete is forbidden on Object Locking enabled buckets" in r.body
    assert s3.get_object(Bucket=b, Key="dir/k", VersionId=v)["Body"].read() == b"x"
    assert err(s3.delete_bucket, Bucket=b) == [409, "BucketNotEmpty"]


def test_bypass_needs_its_permission(erasure_server, s3):
    """x-amz-bypass-governance-retention counts only for a caller allowed
    s3:BypassGovernanceRetention; s3:PutObjectRetention is needed to set a retention at all."""
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=FAR)["VersionId"]
    env = _clean_env({"MINIO_ROOT_USER": erasure_server.access_key,
                      "MINIO_ROOT_PASSWORD": erasure_server.secret_key})
    ak, sk = "lockuser" + rand_str(6), rand_str(24)
    base = [RDMASTOR_BIN, "admin"]
    end = ["--endpoint", erasure_server.endpoint]
    doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": [
        "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion",
        "s3:GetObjectRetention"], "Resource": [f"arn:aws:s3:::{b}/*"]}]}
    path = os.path.join(erasure_server.base, f"lockpol-{rand_str(6)}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    name = "lockpol-" + rand_str(6)
    for args in (["user", "add", ak, sk], ["policy", "create", name, path],
                 ["policy", "attach", name, "--user", ak]):
        cp = subprocess.run(base + args + end, env=env, capture_output=True, text=True, timeout=60)
        assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
    os.unlink(path)
    user = make_client(erasure_server, access_key=ak, secret_key=sk)
    assert err(user.delete_object, Bucket=b, Key="k", VersionId=v,
               BypassGovernanceRetention=True) == [403, "AccessDenied"]
    assert err(user.put_object, Bucket=b, Key="k2", Body=b"x", ObjectLockMode="GOVERNANCE",
               ObjectLockRetainUntilDate=FAR) == [403, "AccessDenied"]
    assert user.get_object_retention(Bucket=b, Key="k")["Retention"]["Mode"] == "GOVERNANCE"
    s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)


def test_lock_survives_heal(server_factory, tmp_path):
    """The lock is part of the version record: a drive whose copy of the object is lost gets it
    back by a heal with the lock, and a delete is still refused with that drive's copy alone
    among the readers."""
    dirs = [str(tmp_path / f"d{i}") for i in range(4)]
    srv = server_factory(data_dirs=dirs)
    s3 = make_client(srv)
    b = lock_bucket(s3)
    data = os.urandom(300 << 10)  # beyond the inline limit: shards on every drive
    v = s3.put_object(Bucket=b, Key="k", Body=data, ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=FAR, ObjectLockLegalHoldStatus="ON")["VersionId"]
    shutil.rmtree(os.path.join(dirs[0], b, "k"))
    res = admin_heal(srv, b)
    assert res.returncode == 0 and res.counts["failed"] == 0, res
    with open(os.path.join(dirs[0], b, "k", ".rdmastor.meta")) as f:
        rec = json.load(f)["versions"][0]
    assert (rec["lock_mode"], rec["legal_hold"]) == ("COMPLIANCE", "ON"), rec
    assert rec["lock_until_ms"] == int(FAR.timestamp() * 1000), rec
    # Restarted with the healed drive among the readers: the lock holds.
    srv.restart()
    s3 = make_client(srv)
    assert err(s3.delete_object, Bucket=b, Key="k", VersionId=v) == [403, "AccessDenied"]
    h = s3.head_object(Bucket=b, Key="k", VersionId=v)
    assert (h["ObjectLockMode"], h["ObjectLockLegalHoldStatus"]) == ("COMPLIANCE", "ON")


def test_lock_over_s3_over_rdma(tmp_path):
    """A PUT whose payload comes over RDMA (rdmastor-cli, soft fabric) gets the bucket's default
    retention like any other, and its version is kept the same way."""
    cli_bin = os.path.join(os.path.dirname(RDMASTOR_BIN), "rdmastor-cli")
    if not os.path.exists(cli_bin):
        pytest.fail(f"{cli_bin} is not built")
    with erasure4("lock-rdma", env={"MINIO_RDMA_FABRIC": "soft"}) as srv:
        s3 = make_client(srv)
        b = lock_bucket(s3)
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=conf("COMPLIANCE", Days=1))
        src = tmp_path / "src"
        src.write_bytes(os.urandom(3 << 20))
        env = _clean_env({"AWS_ACCESS_KEY_ID": srv.access_key, "AWS_SECRET_ACCESS_KEY": srv.secret_key})
        p = subprocess.run([cli_bin, "--endpoint", srv.endpoint, "--rdma", "put", f"{b}/k", str(src)],
                           capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        assert p.returncode == 0 and "transport rdma" in p.stderr + p.stdout, (p.stdout, p.stderr)
        h = s3.head_object(Bucket=b, Key="k")
        assert h["ObjectLockMode"] == "COMPLIANCE", h
        assert err(s3.delete_object, Bucket=b, Key="k", VersionId=h["VersionId"],
                   BypassGovernanceRetention=True) == [403, "AccessDenied"]
        dst = tmp_path / "dst"
        p = subprocess.run([cli_bin, "--endpoint", srv.endpoint, "--rdma", "get", f"{b}/k", str(dst)],
                           capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        assert p.returncode == 0 and dst.read_bytes() == src.read_bytes(), (p.stdout, p.stderr)
