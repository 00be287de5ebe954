"""SSE-KMS (issue 38 item 3): aws:kms with named keys from MINIO_KMS_SECRET_KEY and a key
directory (RDMASTOR_KMS_KEY_DIR), against a 4-drive server (EC 2+2) and real clients.

PUT/GET/HEAD/ranges with AWS's headers; the stored bytes are ciphertext; unknown keys, bad
contexts and encryption headers on reads refused with AWS's codes; multipart and copies between
keys; a bucket default naming a key and a bucket key; a policy on the key-id condition key;
S3 over RDMA (soft fabric) into a bucket whose default is aws:kms; a restart without the key
directory cannot read (and never serves ciphertext); a shared-readable key file stops startup.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import (BUILD_DIR, RDMASTOR_BIN, Server, _clean_env, erasure4, make_client, scrape,
                      seeded_bytes, signed_request, unique_bucket)

KiB = 1 << 10
MiB = 1 << 20
MASTER = "rdmastor-key:" + base64.b64encode(bytes(range(32))).decode()
KEY_IDS = ("testkey-1", "testkey-2")


def write_key_dir(path):
    os.makedirs(path, exist_ok=True)
    for i, name in enumerate(KEY_IDS):
        p = os.path.join(path, name)
        with open(p, "w") as f:
            f.write(base64.b64encode(bytes([i + 7]) * 32).decode() + "\n")
        os.chmod(p, 0o600)


def err(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"))
    return ("ok", None)


def kms_args(key_id=None):
    args = {"ServerSideEncryption": "aws:kms"}
    if key_id:
        args["SSEKMSKeyId"] = key_id
    return args


def stored_files(srv, bucket):
    out = []
    for d in srv.data_dirs:  # os.walk: the shard files live in hidden directories
        for root, _, files in os.walk(os.path.join(d, bucket)):
            out += [os.path.join(root, f) for f in files]
    return out


@pytest.fixture(scope="module")
def key_dir():
    d = tempfile.mkdtemp(prefix="rdmastor-it-kms-", dir="/tmp")
    write_key_dir(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def kms_server(key_dir):
    with erasure4("kms4", env={"MINIO_KMS_SECRET_KEY": MASTER, "RDMASTOR_KMS_KEY_DIR": key_dir,
                               "MINIO_PROMETHEUS_AUTH_TYPE": "public",
                               "MINIO_RDMA_FABRIC": "soft"}) as srv:
        yield srv


@pytest.fixture(scope="module")
def c(kms_server):
    return make_client(kms_server)


def new_bucket(c, prefix="kms"):
    b = unique_bucket(prefix)
    c.create_bucket(Bucket=b)
    return b


def test_round_trips_headers_and_ciphertext_on_drives(kms_server, c):
    b = new_bucket(c)
    marker = b"KMS-PLAINTEXT-MARKER-" * 40
    for size in (0, 1, 13, 64 * KiB + 1, MiB + 3):
        data = (marker * (size // len(marker) + 1))[:size]
        r = c.put_object(Bucket=b, Key=f"o{size}", Body=data, **kms_args("testkey-1"))
        assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "testkey-1", r
        assert r["ETag"].strip('"') != __import__("hashlib").md5(data).hexdigest()  # AWS: not MD5
        g = c.get_object(Bucket=b, Key=f"o{size}")
        assert g["Body"].read() == data
        assert g["ServerSideEncryption"] == "aws:kms" and g["SSEKMSKeyId"] == "testkey-1"
        assert g["ETag"] == r["ETag"]
        h = c.head_object(Bucket=b, Key=f"o{size}")
        assert h["ContentLength"] == size and h["SSEKMSKeyId"] == "testkey-1"
    # Ranges across the 64 KiB packages.
    data = (marker * (MiB // len(marker) + 1))[:MiB + 3]
    for first, last in ((0, 0), (65535, 65537), (MiB - 5, MiB + 2)):
        g = c.get_object(Bucket=b, Key=f"o{MiB + 3}", Range=f"bytes={first}-{last}")
        assert g["Body"].read() == data[first:last + 1]
    # No request names a key: the KMS's default (MINIO_KMS_SECRET_KEY's); an ARN names its id.
    assert c.put_object(Bucket=b, Key="def", Body=b"x", **kms_args())["SSEKMSKeyId"] == \
        "rdmastor-key"
    arn = "arn:aws:kms:us-east-1:123456789012:key/testkey-2"
    assert c.put_object(Bucket=b, Key="arn", Body=b"y", **kms_args(arn))["SSEKMSKeyId"] == \
        "testkey-2"
    assert c.get_object(Bucket=b, Key="arn")["Body"].read() == b"y"
    # Listings with metadata (MinIO's extension) name the encryption.
    lst = signed_request(kms_server, "GET", f"/{b}", query=[("list-type", "2"),
                                                           ("metadata", "true")])
    assert lst.status == 200 and b"aws:kms" in lst.body, lst
    # What lies on the drives is ciphertext.
    files = stored_files(kms_server, b)
    assert files
    for f in files:
        with open(f, "rb") as fh:
            assert b"KMS-PLAINTEXT-MARKER" not in fh.read(), f
    assert scrape(kms_server).get("rdmastor_sse_auth_failures_total", 0) == 0


def test_refusals_with_aws_codes(kms_server, c):
    b = new_bucket(c)
    assert err(c.put_object, Bucket=b, Key="k", Body=b"x", **kms_args("no-such-key")) == \
        (400, "KMS.NotFoundException")
    r = signed_request(kms_server, "PUT", f"/{b}/k",
                       headers={"x-amz-server-side-encryption-aws-kms-key-id": "testkey-1"},
                       body=b"x")
    assert r.status == 400 and b"<Code>InvalidArgument</Code>" in r.body, r
    for ctx in ("not-base64!", base64.b64encode(b"[1,2]").decode(),
                base64.b64encode(b'{"n": 1}').decode()):
        r = signed_request(kms_server, "PUT", f"/{b}/k",
                           headers={"x-amz-server-side-encryption": "aws:kms",
                                    "x-amz-server-side-encryption-context": ctx}, body=b"x")
        assert r.status == 400 and b"<Code>InvalidArgument</Code>" in r.body, (ctx, r)
    r = signed_request(kms_server, "PUT", f"/{b}/k",
                       headers={"x-amz-server-side-encryption": "aws:kms:dsse"}, body=b"x")
    assert r.status == 501, r
    assert err(c.head_object, Bucket=b, Key="k")[0] == 404
    # Reads take no encryption header but SSE-C's, encrypted object or not (AWS: 400).
    c.put_object(Bucket=b, Key="plain", Body=b"p")
    c.put_object(Bucket=b, Key="enc", Body=b"e", **kms_args("testkey-1"))
    for key in ("plain", "enc"):
        for method in ("GET", "HEAD"):
            r = signed_request(kms_server, method, f"/{b}/{key}",
                               headers={"x-amz-server-side-encryption": "aws:kms",
                                        "x-amz-server-side-encryption-aws-kms-key-id":
                                            "testkey-1"})
            assert r.status == 400, (key, method, r)


def test_context_is_echoed_and_bucket_key_kept(kms_server, c):
    b = new_bucket(c)
    ctx = base64.b64encode(json.dumps({"team": "ml"}).encode()).decode()
    r = signed_request(kms_server, "PUT", f"/{b}/ctx",
                       headers={"x-amz-server-side-encryption": "aws:kms",
                                "x-amz-server-side-encryption-aws-kms-key-id": "testkey-2",
                                "x-amz-server-side-encryption-context": ctx,
                                "x-amz-server-side-encryption-bucket-key-enabled": "true"},
                       body=b"context")
    assert r.status == 200, r
    assert r.header("x-amz-server-side-encryption-context") == ctx
    assert r.header("x-amz-server-side-encryption-bucket-key-enabled") == "true"
    h = c.head_object(Bucket=b, Key="ctx")
    assert h["SSEKMSKeyId"] == "testkey-2" and h["BucketKeyEnabled"] is True
    assert c.get_object(Bucket=b, Key="ctx")["Body"].read() == b"context"


def test_multipart_and_copies_between_keys(kms_server, c):
    b = new_bucket(c)
    part = 5 * MiB
    data = seeded_bytes(2 * part + 777, 38)
    up = c.create_multipart_upload(Bucket=b, Key="mp", **kms_args("testkey-1"))
    assert up["ServerSideEncryption"] == "aws:kms" and up["SSEKMSKeyId"] == "testkey-1"
    parts = []
    for i, off in enumerate(range(0, len(data), part)):
        # UploadPart takes the upload's key whatever SSE-KMS headers a part brings (s3-tests).
        p = signed_request(kms_server, "PUT", f"/{b}/mp",
                           query=[("partNumber", str(i + 1)), ("uploadId", up["UploadId"])],
                           headers={"x-amz-server-side-encryption": "aws:kms",
                                    "x-amz-server-side-encryption-aws-kms-key-id": "testkey-2"},
                           body=data[off:off + part])
        assert p.status == 200, p
        assert p.header("x-amz-server-side-encryption-aws-kms-key-id") == "testkey-1"
        parts.append({"PartNumber": i + 1, "ETag": p.header("ETag")})
    done = c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                       MultipartUpload={"Parts": parts})
    assert done["ServerSideEncryption"] == "aws:kms" and done["SSEKMSKeyId"] == "testkey-1"
    assert c.get_object(Bucket=b, Key="mp")["Body"].read() == data
    g = c.get_object(Bucket=b, Key="mp", Range=f"bytes={part - 3}-{part + 3}")
    assert g["Body"].read() == data[part - 3:part + 4]
    # Copies: KMS key 1 -> key 2, -> SSE-S3, -> plain; the source opens without any header.
    src = {"Bucket": b, "Key": "mp"}
    r = c.copy_object(Bucket=b, Key="k2", CopySource=src, **kms_args("testkey-2"))
    assert r["SSEKMSKeyId"] == "testkey-2"
    assert c.get_object(Bucket=b, Key="k2")["Body"].read() == data
    c.copy_object(Bucket=b, Key="s3", CopySource=src, ServerSideEncryption="AES256")
    assert c.head_object(Bucket=b, Key="s3")["ServerSideEncryption"] == "AES256"
    c.copy_object(Bucket=b, Key="plain", CopySource=src)
    h = c.head_object(Bucket=b, Key="plain")
    assert "ServerSideEncryption" not in h
    assert c.get_object(Bucket=b, Key="plain")["Body"].read() == data
    # UploadPartCopy from an SSE-KMS source into an SSE-KMS upload under the other key.
    up = c.create_multipart_upload(Bucket=b, Key="pc", **kms_args("testkey-2"))
    pc = c.upload_part_copy(Bucket=b, Key="pc", UploadId=up["UploadId"], PartNumber=1,
                            CopySource=src, CopySourceRange=f"bytes=0-{part - 1}")
    assert pc["SSEKMSKeyId"] == "testkey-2"
    c.complete_multipart_upload(Bucket=b, Key="pc", UploadId=up["UploadId"],
                                MultipartUpload={"Parts": [{"PartNumber": 1,
                                                            "ETag": pc["CopyPartResult"]["ETag"]}]})
    assert c.get_object(Bucket=b, Key="pc")["Body"].read() == data[:part]


def test_bucket_default_and_policy_condition(kms_server, c):
    b = new_bucket(c)
    conf = {"Rules": [{"ApplyServerSideEncryptionByDefault":
                       {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "testkey-2"},
                       "BucketKeyEnabled": True}]}
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=conf)
    got = c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert got["ApplyServerSideEncryptionByDefault"] == \
        {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "testkey-2"}
    assert got["BucketKeyEnabled"] is True
    r = c.put_object(Bucket=b, Key="d", Body=b"defaulted")
    assert r["SSEKMSKeyId"] == "testkey-2" and r["BucketKeyEnabled"] is True
    assert c.put_object(Bucket=b, Key="e", Body=b"x", **kms_args("testkey-1"))["SSEKMSKeyId"] \
        == "testkey-1"
    bad = {"Rules": [{"ApplyServerSideEncryptionByDefault":
                      {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "nope"}}]}
    assert err(c.put_bucket_encryption, Bucket=b, ServerSideEncryptionConfiguration=bad) == \
        (400, "KMS.NotFoundException")
    # A policy may demand a key: s3:x-amz-server-side-encryption-aws-kms-key-id (anonymous
    # writers here, whom only the policy lets in; the root user is above policies).
    p = new_bucket(c, "kmspol")
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{p}/*",
        "Condition": {"StringEquals":
                      {"s3:x-amz-server-side-encryption-aws-kms-key-id": "testkey-1"}}}]}
    c.put_bucket_policy(Bucket=p, Policy=json.dumps(policy))

    def anonymous_put(key_id):
        return requests.put(kms_server.url(f"/{p}/k"), data=b"x", timeout=10,
                            headers={"x-amz-server-side-encryption": "aws:kms",
                                     "x-amz-server-side-encryption-aws-kms-key-id": key_id})
    assert anonymous_put("testkey-2").status_code == 403
    r = anonymous_put("testkey-1")
    assert r.status_code == 200 and \
        r.headers["x-amz-server-side-encryption-aws-kms-key-id"] == "testkey-1", r.text
    assert c.head_object(Bucket=p, Key="k")["SSEKMSKeyId"] == "testkey-1"


def test_s3_over_rdma_into_a_kms_default_bucket(kms_server, c):
    pkg = os.path.join(BUILD_DIR, "python")
    if not os.path.isdir(os.path.join(pkg, "rdmastor")):
        pytest.skip("the Python module is not configured in this build (pybind11-dev missing)")
    sys.path.insert(0, pkg)
    import rdmastor
    b = new_bucket(c)
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                "KMSMasterKeyID": "testkey-1"}}]})
    data = seeded_bytes(3 * MiB + 5, 41)
    cl = rdmastor.Client(kms_server.endpoint, kms_server.access_key, kms_server.secret_key,
                         rdma="soft")
    try:
        assert cl.put_object(b, "r", data).transport == "rdma"
        got = cl.get_object(b, "r")
        assert got == data and got.transport == "rdma"
    finally:
        cl.close()
    h = c.head_object(Bucket=b, Key="r")
    assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == "testkey-1"


def test_restart_without_the_key_directory_and_bad_key_files(tmp_path):
    base = tempfile.mkdtemp(prefix="rdmastor-it-kms-restart-", dir="/tmp")
    keys = os.path.join(base, "keys")
    write_key_dir(keys)
    srv = Server("kmsr", env={"RDMASTOR_KMS_KEY_DIR": keys,
                              "RDMASTOR_KMS_DEFAULT_KEY_ID": "testkey-2"},
                 data_dirs=[os.path.join(base, "data")])
    try:
        srv.start()
        c = make_client(srv)
        b = new_bucket(c)
        # The key directory alone, with a named default (no MINIO_KMS_SECRET_KEY).
        assert c.put_object(Bucket=b, Key="o", Body=b"secret", **kms_args())["SSEKMSKeyId"] == \
            "testkey-2"
        srv.kill()
        srv.extra_env = {}
        srv.start(port=srv.port)
        c = make_client(srv)
        # No KMS: the object cannot be read, and aws:kms writes are 501 naming the settings.
        r = signed_request(srv, "GET", f"/{b}/o")
        assert r.status >= 400 and b"secret" not in r.body, r
        r = signed_request(srv, "PUT", f"/{b}/n", headers={"x-amz-server-side-encryption":
                                                             "aws:kms"}, body=b"x")
        assert r.status == 501 and b"RDMASTOR_KMS_KEY_DIR" in r.body, r
        srv.kill()
        # A key file others may read stops the server at startup, naming the file.
        os.chmod(os.path.join(keys, "testkey-1"), 0o644)
        env = srv.env()
        env.update({"RDMASTOR_KMS_KEY_DIR": keys, "RDMASTOR_KMS_DEFAULT_KEY_ID": "testkey-2"})
        cp = subprocess.run(srv.command(), env=env, capture_output=True, text=True, timeout=20,
                            stdin=subprocess.DEVNULL)
        assert cp.returncode != 0 and "chmod 600" in cp.stdout + cp.stderr, cp
        os.chmod(os.path.join(keys, "testkey-1"), 0o600)
        srv.extra_env = {"RDMASTOR_KMS_KEY_DIR": keys, "RDMASTOR_KMS_DEFAULT_KEY_ID": "testkey-2"}
        srv.start(port=srv.port)
        c = make_client(srv)
        assert c.get_object(Bucket=b, Key="o")["Body"].read() == b"secret"
    finally:
        srv.cleanup()
        shutil.rmtree(base, ignore_errors=True)
