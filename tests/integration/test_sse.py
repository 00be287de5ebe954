"""Server-side encryption (issue 16): SSE-S3 (x-amz-server-side-encryption: AES256, sealed by the
master key MINIO_KMS_SECRET_KEY) and SSE-C (x-amz-server-side-encryption-customer-*) on PUT, GET,
HEAD, ranges at package boundaries, multipart (the key on every part), UploadPartCopy, CopyObject
between keys; bucket default encryption; the refusals (no master key, unknown KMS keys, SSE-C over plain
HTTP, wrong or missing customer key) with AWS's codes; the stored bytes are ciphertext; tampered
ciphertext on one drive is served from parity and healed; a restart with the key from the
environment. Most checks run against a 4-drive server (EC 2+2) with RDMASTOR_SSE_C_ALLOW_HTTP=on
so that raw signed requests can check exact headers; SDK round trips over HTTPS are below.
"""
import base64
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time

import pytest
from botocore.exceptions import ClientError

from conftest import (_clean_env, assert_s3_error, erasure4, make_client, md5_hex, scrape,
                      seeded_bytes, signed_request, unique_bucket, wait_heal_idle)
from test_auth_v2_post import post_form, v4_form

KiB = 1 << 10
MiB = 1 << 20
PKG = 64 * KiB  # crypto::kPackageSize
MASTER = "rdmastor-key:" + base64.b64encode(bytes(range(32))).decode()
OTHER_MASTER = "next-key:" + base64.b64encode(bytes(range(100, 132))).decode()


def customer_key(seed):
    raw = hashlib.sha256(f"customer key {seed}".encode()).digest()
    return raw


def ssec_args(raw, prefix="SSECustomer"):
    """boto3 arguments (botocore base64s the key and adds its MD5)."""
    return {prefix + "Algorithm": "AES256", prefix + "Key": raw}


def ssec_headers(raw, copy_source=False):
    p = "x-amz-copy-source-server-side-encryption-customer-" if copy_source else \
        "x-amz-server-side-encryption-customer-"
    return {p + "algorithm": "AES256", p + "key": base64.b64encode(raw).decode(),
            p + "key-md5": base64.b64encode(hashlib.md5(raw).digest()).decode()}


def err(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"))
    return ("ok", None)


def shard_files(d, bucket, key=None):
    pattern = os.path.join(d, bucket, key if key else "**", ".rdmastor.data.*", "part.*")
    return sorted(glob.glob(pattern, recursive=True))


@pytest.fixture(scope="module")
def sse_server():
    with erasure4("sse4", env={"MINIO_KMS_SECRET_KEY": MASTER, "RDMASTOR_SSE_C_ALLOW_HTTP": "on",
                               "MINIO_PROMETHEUS_AUTH_TYPE": "public"}) as srv:
        yield srv


@pytest.fixture(scope="module")
def c(sse_server):
    return make_client(sse_server)


def new_bucket(c, prefix="sse"):
    b = unique_bucket(prefix)
    c.create_bucket(Bucket=b)
    return b


SIZES = [0, 1, PKG - 1, PKG, PKG + 1, 3 * PKG + 5, 5 * MiB + 7]


def test_sse_s3_round_trip_sizes_and_headers(sse_server, c):
    b = new_bucket(c)
    for size in SIZES:
        data = seeded_bytes(size, seed=size + 1)
        r = c.put_object(Bucket=b, Key=f"o{size}", Body=data, ServerSideEncryption="AES256")
        assert r["ServerSideEncryption"] == "AES256"
        # SSE-S3 single PUT: the ETag is the MD5 of the plaintext (AWS).
        assert r["ETag"] == f'"{md5_hex(data)}"'
        g = c.get_object(Bucket=b, Key=f"o{size}")
        assert g["Body"].read() == data, size
        assert g["ServerSideEncryption"] == "AES256"
        h = c.head_object(Bucket=b, Key=f"o{size}")
        assert h["ContentLength"] == size and h["ServerSideEncryption"] == "AES256"
    listed = {o["Key"]: o["Size"] for o in c.list_objects_v2(Bucket=b)["Contents"]}
    assert listed == {f"o{s}": s for s in SIZES}
    # Stored bytes are ciphertext: a plaintext run does not appear in any shard file.
    data = b"PLAINTEXT-MARKER-" * 65536  # above the inline size: shard files on every drive
    c.put_object(Bucket=b, Key="marker", Body=data, ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="marker-c", Body=data, **ssec_args(customer_key("m")))
    files = [f for d in sse_server.data_dirs for k in ("marker", "marker-c")
             for f in shard_files(d, b, k)]
    assert len(files) == 8, files
    metas = glob.glob(os.path.join(sse_server.data_dirs[0], b, "marker*", ".rdmastor.meta"))
    for f in files + metas:
        with open(f, "rb") as fh:
            assert b"PLAINTEXT-MARKER" not in fh.read(), f


def test_ranges_at_package_boundaries(c):
    b = new_bucket(c)
    size = 4 * PKG + 100
    data = seeded_bytes(size, seed=7)
    key = customer_key("ranges")
    c.put_object(Bucket=b, Key="s3", Body=data, ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="c", Body=data, **ssec_args(key))
    ranges = [(0, 0), (PKG - 1, PKG), (PKG, PKG), (PKG - 1, 2 * PKG + 1), (2 * PKG, 3 * PKG - 1),
              (size - 1, size - 1), (4 * PKG, size - 1), (5, size - 1), (0, size - 1)]
    for first, last in ranges:
        want = data[first:last + 1]
        got = c.get_object(Bucket=b, Key="s3", Range=f"bytes={first}-{last}")
        assert got["Body"].read() == want, (first, last)
        assert got["ContentRange"] == f"bytes {first}-{last}/{size}"
        got = c.get_object(Bucket=b, Key="c", Range=f"bytes={first}-{last}", **ssec_args(key))
        assert got["Body"].read() == want, (first, last)
    got = c.get_object(Bucket=b, Key="s3", Range="bytes=-70000")
    assert got["Body"].read() == data[-70000:]


def test_sse_c_headers_etag_and_key_errors(sse_server, c):
    b = new_bucket(c)
    key, other = customer_key(1), customer_key(2)
    data = seeded_bytes(PKG * 2 + 3, seed=3)
    r = signed_request(sse_server, "PUT", f"/{b}/obj", headers=ssec_headers(key), body=data)
    assert r.status == 200, r.body
    assert r.header("x-amz-server-side-encryption-customer-algorithm") == "AES256"
    assert r.header("x-amz-server-side-encryption-customer-key-MD5") == \
        base64.b64encode(hashlib.md5(key).digest()).decode()
    assert r.header("x-amz-server-side-encryption") is None
    # AWS: the ETag of an SSE-C object is not the MD5 of its data.
    etag = r.header("ETag").strip('"')
    assert len(etag) == 32 and etag != md5_hex(data)
    g = signed_request(sse_server, "GET", f"/{b}/obj", headers=ssec_headers(key))
    assert g.status == 200 and g.body == data
    assert g.header("ETag").strip('"') == etag
    # Without the key: 400 InvalidRequest; HEAD the same status without a body.
    g = signed_request(sse_server, "GET", f"/{b}/obj")
    assert g.status == 400 and b"<Code>InvalidRequest</Code>" in g.body, g.body
    assert b"Server Side Encryption" in g.body
    assert signed_request(sse_server, "HEAD", f"/{b}/obj").status == 400
    # Another key: 403 AccessDenied.
    g = signed_request(sse_server, "GET", f"/{b}/obj", headers=ssec_headers(other))
    assert g.status == 403 and b"<Code>AccessDenied</Code>" in g.body, g.body
    assert err(c.head_object, Bucket=b, Key="obj", **ssec_args(other))[0] == 403
    # A key whose MD5 does not match, a short key, another algorithm.
    h = ssec_headers(key)
    h["x-amz-server-side-encryption-customer-key-md5"] = base64.b64encode(b"0" * 16).decode()
    g = signed_request(sse_server, "GET", f"/{b}/obj", headers=h)
    assert g.status == 400 and b"<Code>InvalidArgument</Code>" in g.body
    h = ssec_headers(key)
    h["x-amz-server-side-encryption-customer-key"] = base64.b64encode(b"short").decode()
    h["x-amz-server-side-encryption-customer-key-md5"] = \
        base64.b64encode(hashlib.md5(b"short").digest()).decode()
    g = signed_request(sse_server, "PUT", f"/{b}/x", headers=h, body=b"abc")
    assert g.status == 400 and b"<Code>InvalidArgument</Code>" in g.body
    h = ssec_headers(key)
    h["x-amz-server-side-encryption-customer-algorithm"] = "AES128"
    g = signed_request(sse_server, "PUT", f"/{b}/x", headers=h, body=b"abc")
    assert g.status == 400 and b"<Code>InvalidEncryptionAlgorithmError</Code>" in g.body
    h = ssec_headers(key)
    del h["x-amz-server-side-encryption-customer-key"]
    g = signed_request(sse_server, "PUT", f"/{b}/x", headers=h, body=b"abc")
    assert g.status == 400 and b"<Code>InvalidArgument</Code>" in g.body
    # SSE-C together with x-amz-server-side-encryption.
    h = dict(ssec_headers(key), **{"x-amz-server-side-encryption": "AES256"})
    g = signed_request(sse_server, "PUT", f"/{b}/x", headers=h, body=b"abc")
    assert g.status == 400 and b"<Code>InvalidArgument</Code>" in g.body
    # SSE-C parameters for an object that is not SSE-C.
    c.put_object(Bucket=b, Key="plain", Body=b"plain")
    assert err(c.get_object, Bucket=b, Key="plain", **ssec_args(key)) == (400, "InvalidRequest")
    # Nothing was stored by the refused PUTs.
    assert err(c.head_object, Bucket=b, Key="x")[0] == 404
    # Versions listing and HEAD report the plaintext size.
    h = c.head_object(Bucket=b, Key="obj", **ssec_args(key))
    assert h["ContentLength"] == len(data)
    assert h["SSECustomerAlgorithm"] == "AES256"
    v = c.list_object_versions(Bucket=b, Prefix="obj")["Versions"]
    assert [x["Size"] for x in v] == [len(data)]
    # GetObjectAttributes of an SSE-C object needs its key.
    assert err(c.get_object_attributes, Bucket=b, Key="obj",
               ObjectAttributes=["ObjectSize"]) == (400, "InvalidRequest")
    # (raw: Debian's botocore does not encode SSE-C keys for GetObjectAttributes)
    a = signed_request(sse_server, "GET", f"/{b}/obj", query=[("attributes", "")],
                       headers=dict(ssec_headers(key), **{"x-amz-object-attributes": "ObjectSize"}))
    assert a.status == 200 and f"<ObjectSize>{len(data)}</ObjectSize>".encode() in a.body, a


def test_kms_keys_and_unknown_algorithms(c):
    # MINIO_KMS_SECRET_KEY's key serves aws:kms too (test_sse_kms.py covers SSE-KMS whole).
    b = new_bucket(c)
    assert err(c.put_object, Bucket=b, Key="k", Body=b"x",
               ServerSideEncryption="aws:kms", SSEKMSKeyId="any") == (400, "KMS.NotFoundException")
    assert err(c.put_object, Bucket=b, Key="k", Body=b"x",
               ServerSideEncryption="rot13") == (400, "InvalidArgument")
    assert err(c.head_object, Bucket=b, Key="k")[0] == 404
    r = c.put_object(Bucket=b, Key="k", Body=b"x", ServerSideEncryption="aws:kms")
    assert r["SSEKMSKeyId"] == "rdmastor-key"


def test_versioned_bucket_and_checksums(c):
    b = new_bucket(c)
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    k1, k2 = customer_key("v1"), customer_key("v2")
    d1, d2, d3 = seeded_bytes(1000, 1), seeded_bytes(PKG + 9, 2), seeded_bytes(77, 3)
    v1 = c.put_object(Bucket=b, Key="o", Body=d1, **ssec_args(k1))["VersionId"]
    v2 = c.put_object(Bucket=b, Key="o", Body=d2, **ssec_args(k2),
                      ChecksumAlgorithm="CRC32C")["VersionId"]
    v3 = c.put_object(Bucket=b, Key="o", Body=d3, ServerSideEncryption="AES256")["VersionId"]
    assert c.get_object(Bucket=b, Key="o", VersionId=v1, **ssec_args(k1))["Body"].read() == d1
    g = c.get_object(Bucket=b, Key="o", VersionId=v2, ChecksumMode="ENABLED", **ssec_args(k2))
    assert g["Body"].read() == d2 and g.get("ChecksumCRC32C")
    assert err(c.get_object, Bucket=b, Key="o", VersionId=v2, **ssec_args(k1))[0] == 403
    assert c.get_object(Bucket=b, Key="o")["Body"].read() == d3
    sizes = {v["VersionId"]: v["Size"] for v in c.list_object_versions(Bucket=b)["Versions"]}
    assert sizes == {v1: len(d1), v2: len(d2), v3: len(d3)}


def test_bucket_default_encryption(sse_server, c):
    b = new_bucket(c)
    assert err(c.get_bucket_encryption, Bucket=b) == \
        (404, "ServerSideEncryptionConfigurationNotFoundError")
    conf = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    c.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=conf)
    got = c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]
    assert got["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # The bucket record keeps tags and versioning next to the encryption.
    c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "team", "Value": "ml"}]})
    c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert c.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"]
    assert c.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "team", "Value": "ml"}]
    assert c.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    r = c.put_object(Bucket=b, Key="d", Body=b"defaulted")
    assert r["ServerSideEncryption"] == "AES256"
    assert c.head_object(Bucket=b, Key="d")["ServerSideEncryption"] == "AES256"
    # An SSE-C PUT into a bucket with a default is SSE-C.
    key = customer_key("default")
    r = c.put_object(Bucket=b, Key="cust", Body=b"mine", **ssec_args(key))
    assert "ServerSideEncryption" not in r and r["SSECustomerAlgorithm"] == "AES256"
    # Multipart uploads take the default too.
    up = c.create_multipart_upload(Bucket=b, Key="mp")
    assert up["ServerSideEncryption"] == "AES256"
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"])
    # An aws:kms default must name a key the KMS has; a malformed document is MalformedXML.
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                             "KMSMasterKeyID": "absent"}}]}
    assert err(c.put_bucket_encryption, Bucket=b,
               ServerSideEncryptionConfiguration=kms) == (400, "KMS.NotFoundException")
    r = signed_request(sse_server, "PUT", f"/{b}", query=[("encryption", "")],
                       body=b"<ServerSideEncryptionConfiguration><Rule><Foo/></Rule>"
                            b"</ServerSideEncryptionConfiguration>")
    assert r.status == 400 and b"<Code>MalformedXML</Code>" in r.body
    c.delete_bucket_encryption(Bucket=b)
    assert err(c.get_bucket_encryption, Bucket=b)[1] == \
        "ServerSideEncryptionConfigurationNotFoundError"
    assert "ServerSideEncryption" not in c.put_object(Bucket=b, Key="after", Body=b"x")
    assert c.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "team", "Value": "ml"}]
    assert err(c.get_bucket_encryption, Bucket=unique_bucket("nob")) == (404, "NoSuchBucket")


def test_multipart_sse_c_and_sse_s3(sse_server, c):
    b = new_bucket(c)
    key = customer_key("mp")
    parts_data = [seeded_bytes(5 * MiB + 1, 20), seeded_bytes(5 * MiB, 21), seeded_bytes(PKG + 1, 22)]
    up = c.create_multipart_upload(Bucket=b, Key="c", **ssec_args(key))
    uid = up["UploadId"]
    assert up["SSECustomerAlgorithm"] == "AES256"
    # A part without the key, or with another key, is refused.
    assert err(c.upload_part, Bucket=b, Key="c", UploadId=uid, PartNumber=1,
               Body=parts_data[0]) == (400, "InvalidRequest")
    assert err(c.upload_part, Bucket=b, Key="c", UploadId=uid, PartNumber=1, Body=parts_data[0],
               **ssec_args(customer_key("other")))[0] == 400
    etags = []
    for i, d in enumerate(parts_data, 1):
        r = c.upload_part(Bucket=b, Key="c", UploadId=uid, PartNumber=i, Body=d, **ssec_args(key))
        assert r["ETag"].strip('"') != md5_hex(d)
        etags.append(r["ETag"])
    listed = c.list_parts(Bucket=b, Key="c", UploadId=uid)["Parts"]
    assert [p["Size"] for p in listed] == [len(d) for d in parts_data]
    # Complete: another key is refused; without one (no checksum algorithm) it completes, as AWS.
    parts_xml = "".join(f"<Part><PartNumber>{i}</PartNumber><ETag>{e}</ETag></Part>"
                        for i, e in enumerate(etags, 1))
    r = signed_request(sse_server, "POST", f"/{b}/c", query=[("uploadId", uid)],
                       headers=ssec_headers(customer_key("other")),
                       body=f"<CompleteMultipartUpload>{parts_xml}</CompleteMultipartUpload>".encode())
    assert r.status == 400 and b"<Code>InvalidRequest</Code>" in r.body, r
    c.complete_multipart_upload(Bucket=b, Key="c", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]})
    whole = b"".join(parts_data)
    assert c.get_object(Bucket=b, Key="c", **ssec_args(key))["Body"].read() == whole
    h = c.head_object(Bucket=b, Key="c", **ssec_args(key))
    assert h["ContentLength"] == len(whole)
    # A range across the part boundary and a part by number.
    lo = len(parts_data[0]) - 10
    got = c.get_object(Bucket=b, Key="c", Range=f"bytes={lo}-{lo + 20}", **ssec_args(key))
    assert got["Body"].read() == whole[lo:lo + 21]
    got = c.get_object(Bucket=b, Key="c", PartNumber=2, **ssec_args(key))
    assert got["Body"].read() == parts_data[1]
    assert err(c.get_object, Bucket=b, Key="c")[0] == 400
    # SSE-S3 multipart with UploadPartCopy from an SSE-C source (its key as copy-source key).
    up = c.create_multipart_upload(Bucket=b, Key="s", ServerSideEncryption="AES256")
    uid = up["UploadId"]
    r1 = c.upload_part(Bucket=b, Key="s", UploadId=uid, PartNumber=1, Body=parts_data[0])
    assert r1["ServerSideEncryption"] == "AES256"
    assert err(c.upload_part_copy, Bucket=b, Key="s", UploadId=uid, PartNumber=2,
               CopySource={"Bucket": b, "Key": "c"}, CopySourceRange="bytes=0-99")[0] == 400
    r2 = c.upload_part_copy(Bucket=b, Key="s", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": b, "Key": "c"},
                            CopySourceRange=f"bytes={lo}-{lo + PKG}",
                            **ssec_args(key, "CopySourceSSECustomer"))
    c.complete_multipart_upload(Bucket=b, Key="s", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": r1["ETag"]},
        {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]}]})
    g = c.get_object(Bucket=b, Key="s")
    assert g["ServerSideEncryption"] == "AES256"
    assert g["Body"].read() == parts_data[0] + whole[lo:lo + PKG + 1]
    # S3's 5 MiB minimum applies to the part as sent: 5 MiB - 1 bytes encrypt to more than
    # 5 MiB stored, and the part is still too small.
    up = c.create_multipart_upload(Bucket=b, Key="small", ServerSideEncryption="AES256")
    uid = up["UploadId"]
    etags = [c.upload_part(Bucket=b, Key="small", UploadId=uid, PartNumber=i, Body=d)["ETag"]
             for i, d in enumerate([parts_data[1][:-1], b"tail"], 1)]
    assert err(c.complete_multipart_upload, Bucket=b, Key="small", UploadId=uid,
               MultipartUpload={"Parts": [{"PartNumber": i, "ETag": e}
                                          for i, e in enumerate(etags, 1)]}) == \
        (400, "EntityTooSmall")
    c.abort_multipart_upload(Bucket=b, Key="small", UploadId=uid)


def test_post_form_fields_encrypt_as_put_headers_do(sse_server, c):
    """A browser-form upload (PostObject) with x-amz-server-side-encryption or the SSE-C fields
    is encrypted as PutObject with those headers; what PutObject refuses is refused here."""
    b = new_bucket(c)
    data = seeded_bytes(3 * PKG + 9, 60)
    form = v4_form(sse_server, b, "s3", {"x-amz-server-side-encryption": "AES256"})
    r = post_form(sse_server, b, form, data)
    assert r.status == 204, r
    assert r.header("x-amz-server-side-encryption") == "AES256"
    assert r.header("ETag") == f'"{md5_hex(data)}"'
    g = c.get_object(Bucket=b, Key="s3")
    assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == data
    key = customer_key("post")
    r = post_form(sse_server, b, v4_form(sse_server, b, "c", ssec_headers(key)), data)
    assert r.status == 204, r
    assert r.header("x-amz-server-side-encryption-customer-algorithm") == "AES256"
    assert r.header("ETag") != f'"{md5_hex(data)}"'  # SSE-C: not the MD5 (AWS)
    g = c.get_object(Bucket=b, Key="c", **ssec_args(key))
    assert g["Body"].read() == data and g["ETag"] == r.header("ETag")
    assert err(c.get_object, Bucket=b, Key="c") == (400, "InvalidRequest")
    for fields, code, status in (
            ({"x-amz-server-side-encryption": "rot13"}, "InvalidArgument", 400),
            ({"x-amz-server-side-encryption": "aws:kms",
              "x-amz-server-side-encryption-aws-kms-key-id": "absent"},
             "KMS.NotFoundException", 400),
            (dict(ssec_headers(key), **{"x-amz-server-side-encryption": "AES256"}),
             "InvalidArgument", 400),
            ({"x-amz-server-side-encryption-customer-algorithm": "AES256"},
             "InvalidArgument", 400)):
        r = post_form(sse_server, b, v4_form(sse_server, b, "refused", fields), b"x")
        assert_s3_error(r.status, r.headers, r.body, code, status)
    assert err(c.head_object, Bucket=b, Key="refused")[0] == 404


def test_copy_between_keys(c):
    b = new_bucket(c)
    k1, k2 = customer_key("c1"), customer_key("c2")
    data = seeded_bytes(3 * PKG + 11, 30)
    c.put_object(Bucket=b, Key="src", Body=data, **ssec_args(k1))
    # Without the source key: refused.
    assert err(c.copy_object, Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src"})[0] \
        == 400
    # SSE-C -> SSE-C under another key.
    r = c.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src"},
                      **ssec_args(k1, "CopySourceSSECustomer"), **ssec_args(k2))
    assert r["SSECustomerAlgorithm"] == "AES256"
    assert c.get_object(Bucket=b, Key="dst", **ssec_args(k2))["Body"].read() == data
    assert err(c.get_object, Bucket=b, Key="dst", **ssec_args(k1))[0] == 403
    # SSE-C -> SSE-S3, SSE-C -> plain, SSE-S3 -> plain.
    r = c.copy_object(Bucket=b, Key="s3", CopySource={"Bucket": b, "Key": "src"},
                      ServerSideEncryption="AES256", **ssec_args(k1, "CopySourceSSECustomer"))
    assert r["ServerSideEncryption"] == "AES256"
    assert c.get_object(Bucket=b, Key="s3")["Body"].read() == data
    c.copy_object(Bucket=b, Key="plain", CopySource={"Bucket": b, "Key": "src"},
                  **ssec_args(k1, "CopySourceSSECustomer"))
    g = c.get_object(Bucket=b, Key="plain")
    assert g["Body"].read() == data and "ServerSideEncryption" not in g
    c.copy_object(Bucket=b, Key="plain2", CopySource={"Bucket": b, "Key": "s3"})
    assert c.get_object(Bucket=b, Key="plain2")["Body"].read() == data
    # Onto itself: re-keying an SSE-C object in place.
    c.copy_object(Bucket=b, Key="src", CopySource={"Bucket": b, "Key": "src"},
                  **ssec_args(k1, "CopySourceSSECustomer"), **ssec_args(k2))
    assert c.get_object(Bucket=b, Key="src", **ssec_args(k2))["Body"].read() == data


def test_tampered_ciphertext_served_from_parity_and_healed(sse_server, c):
    b = new_bucket(c)
    data = seeded_bytes(3 * MiB + 5, 40)
    key = customer_key("tamper")
    c.put_object(Bucket=b, Key="s3", Body=data, ServerSideEncryption="AES256")
    c.put_object(Bucket=b, Key="c", Body=data, **ssec_args(key))
    for name in ("s3", "c"):
        files = shard_files(sse_server.data_dirs[1], b, name)
        assert files, name
        original = {f: open(f, "rb").read() for f in files}
        for f in files:
            with open(f, "r+b") as fh:
                fh.seek(os.path.getsize(f) // 2)
                byte = fh.read(1)
                fh.seek(-1, os.SEEK_CUR)
                fh.write(bytes([byte[0] ^ 0x01]))
        extra = ssec_args(key) if name == "c" else {}
        # The shard checksums catch the flipped ciphertext; parity serves the read, which queues
        # the object for healing.
        assert c.get_object(Bucket=b, Key=name, **extra)["Body"].read() == data
        wait_heal_idle(sse_server)
        for f, content in original.items():
            with open(f, "rb") as fh:
                assert fh.read() == content, f"{f} not healed"
        assert c.get_object(Bucket=b, Key=name, **extra)["Body"].read() == data
    assert scrape(sse_server).get("rdmastor_sse_auth_failures_total", 0) == 0


def test_refusals_without_master_key_and_over_http(server_factory):
    srv = server_factory(name="nokey")  # plain HTTP, no master key, SSE-C not allowed over HTTP
    c = make_client(srv)
    b = new_bucket(c)
    r = signed_request(srv, "PUT", f"/{b}/a", headers={"x-amz-server-side-encryption": "AES256"},
                       body=b"abc")
    assert r.status == 501 and b"MINIO_KMS_SECRET_KEY" in r.body, r.body
    r = signed_request(srv, "PUT", f"/{b}/a", headers=ssec_headers(customer_key(1)), body=b"abc")
    assert r.status == 400 and b"<Code>InvalidRequest</Code>" in r.body
    assert b"secure connection" in r.body
    r = signed_request(srv, "GET", f"/{b}/a", headers=ssec_headers(customer_key(1)))
    assert r.status == 400 and b"secure connection" in r.body
    conf = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    assert err(c.put_bucket_encryption, Bucket=b,
               ServerSideEncryptionConfiguration=conf) == (501, "NotImplemented")
    r = signed_request(srv, "PUT", f"/{b}/a", headers={"x-amz-server-side-encryption": "aws:kms"},
                       body=b"abc")
    assert r.status == 501 and b"RDMASTOR_KMS_KEY_DIR" in r.body, r.body
    assert err(c.head_object, Bucket=b, Key="a")[0] == 404


def test_restart_with_master_key_from_environment(server_factory):
    base = tempfile.mkdtemp(prefix="rdmastor-it-sse-restart-", dir="/tmp")
    dirs = [os.path.join(base, f"d{i}") for i in range(4)]
    try:
        srv = server_factory(name="rk", data_dirs=dirs, env={"MINIO_KMS_SECRET_KEY": MASTER})
        c = make_client(srv)
        b = new_bucket(c)
        data = seeded_bytes(PKG * 3, 50)
        c.put_object(Bucket=b, Key="o", Body=data, ServerSideEncryption="AES256")
        # Older versions are re-sealed too (a delete marker on top: nothing to re-seal there).
        vb = new_bucket(c, "ssev")
        c.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
        versions = {c.put_object(Bucket=vb, Key="v", Body=body,
                                 ServerSideEncryption="AES256")["VersionId"]: body
                    for body in (b"first", b"second")}
        c.delete_object(Bucket=vb, Key="v")
        srv.kill()
        # Without the key the object cannot be read (and is not served as ciphertext).
        srv.extra_env = {}
        srv.start(port=srv.port)
        c = make_client(srv)
        assert err(c.get_object, Bucket=b, Key="o")[0] == 500
        srv.kill()
        # A new current key with the old one as previous: readable; the re-seal walk moves the
        # object keys to the new master key without touching the data.
        shards_before = {f: open(f, "rb").read() for d in dirs for f in shard_files(d, b)}
        srv.extra_env = {"MINIO_KMS_SECRET_KEY": OTHER_MASTER,
                         "RDMASTOR_KMS_PREVIOUS_SECRET_KEYS": MASTER,
                         "RDMASTOR_KMS_RESEAL": "on"}
        srv.start(port=srv.port)
        c = make_client(srv)
        assert c.get_object(Bucket=b, Key="o")["Body"].read() == data
        etag = c.head_object(Bucket=b, Key="o")["ETag"]
        deadline = time.monotonic() + 30
        while "re-seal under master key 'next-key' done" not in srv.log_text():
            assert time.monotonic() < deadline, srv.log_tail(20)
            time.sleep(0.2)
        assert "3 object version(s) scanned, 3 re-sealed, 0 failed" in srv.log_text(), \
            srv.log_tail(20)
        srv.kill()
        assert {f: open(f, "rb").read() for d in dirs for f in shard_files(d, b)} == shards_before
        # The previous key is no longer needed.
        srv.extra_env = {"MINIO_KMS_SECRET_KEY": OTHER_MASTER}
        srv.start(port=srv.port)
        c = make_client(srv)
        assert c.get_object(Bucket=b, Key="o")["Body"].read() == data
        assert c.head_object(Bucket=b, Key="o")["ETag"] == etag
        for vid, body in versions.items():
            assert c.get_object(Bucket=vb, Key="v", VersionId=vid)["Body"].read() == body
        srv.kill()
        # A malformed key refuses to start, naming the variable.
        env = _clean_env({"MINIO_KMS_SECRET_KEY": "no-colon"},
                         (srv.access_key, srv.secret_key))
        cp = subprocess.run(srv.command(), env=env, capture_output=True, text=True, timeout=30,
                            stdin=subprocess.DEVNULL)
        assert cp.returncode != 0 and "MINIO_KMS_SECRET_KEY" in cp.stderr + cp.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---- over HTTPS: boto3 (Debian's and a current one) and awscli, SSE-C without any allowance ----

SDK_SCRIPT = r'''
import hashlib, json, sys
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
endpoint, ak, sk, bucket, ca = sys.argv[1:6]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1", verify=ca,
                  config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                retries={"total_max_attempts": 1, "mode": "standard"}))
out = {"boto3": boto3.__version__}
def err(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")]
    return ["ok", None]
key = hashlib.sha256(b"sdk key").digest()
ssec = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
s3.create_bucket(Bucket=bucket)
data = bytes(range(256)) * 1000 + b"tail"
r = s3.put_object(Bucket=bucket, Key="c", Body=data, **ssec)
out["put c"] = r.get("SSECustomerAlgorithm")
out["get c"] = s3.get_object(Bucket=bucket, Key="c", **ssec)["Body"].read() == data
out["range c"] = s3.get_object(Bucket=bucket, Key="c", Range="bytes=65535-65537",
                               **ssec)["Body"].read() == data[65535:65538]
out["get c without key"] = err(s3.get_object, Bucket=bucket, Key="c")
out["head c other key"] = err(s3.head_object, Bucket=bucket, Key="c", SSECustomerAlgorithm="AES256",
                              SSECustomerKey=b"x" * 32)
r = s3.put_object(Bucket=bucket, Key="s3", Body=data, ServerSideEncryption="AES256")
out["put s3"] = r.get("ServerSideEncryption")
g = s3.get_object(Bucket=bucket, Key="s3")
out["get s3"] = [g.get("ServerSideEncryption"), g["Body"].read() == data]
# Multipart SSE-C through the transfer manager (parts of 5 MiB, the key on every request).
from boto3.s3.transfer import TransferConfig
import io
big = (bytes(range(251)) * 50000)[: 12 * 1024 * 1024 + 3]
s3.upload_fileobj(io.BytesIO(big), bucket, "mp", ExtraArgs=dict(ssec),
                  Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
buf = io.BytesIO()
s3.download_fileobj(bucket, "mp", buf, ExtraArgs=dict(ssec),
                    Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
out["mp"] = buf.getvalue() == big
out["copy"] = s3.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "c"},
                             CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=key,
                             ServerSideEncryption="AES256").get("ServerSideEncryption")
out["copy read"] = s3.get_object(Bucket=bucket, Key="c2")["Body"].read() == data
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def tls_sse_server(tmp_path_factory):
    from test_tls import TlsServer
    from tls_util import make_ca, make_certs_dir
    d = tmp_path_factory.mktemp("sse-pki")
    ca = make_ca(d)
    certs = make_certs_dir(d, ca)
    srv = TlsServer(ca["pem"], name="sse-tls", args=["--certs-dir", certs],
                    env={"MINIO_KMS_SECRET_KEY": MASTER})
    try:
        srv.start()
        yield srv
    finally:
        srv.cleanup()


def _sdk_interpreters():
    from test_conformance import _interpreters
    return _interpreters()


@pytest.mark.parametrize("py", _sdk_interpreters())
def test_boto3_over_https(tls_sse_server, tmp_path, py):
    script = tmp_path / "sse_sdk.py"
    script.write_text(SDK_SCRIPT)
    srv = tls_sse_server
    cp = subprocess.run([py, str(script), srv.endpoint, srv.access_key, srv.secret_key,
                         unique_bucket("ssesdk"), srv.ca], capture_output=True, text=True,
                        timeout=600, env=_clean_env())
    assert cp.returncode == 0, cp.stderr[-4000:]
    out = __import__("json").loads(cp.stdout.strip().splitlines()[-1])
    assert out["put c"] == "AES256" and out["get c"] and out["range c"], out
    assert out["get c without key"] == [400, "InvalidRequest"], out
    assert out["head c other key"][0] == 403, out
    assert out["put s3"] == "AES256" and out["get s3"] == ["AES256", True], out
    assert out["mp"], out
    assert out["copy"] == "AES256" and out["copy read"], out


def test_awscli_over_https(tls_sse_server, tmp_path):
    from conftest import AwsCli
    srv = tls_sse_server
    aws = AwsCli(srv, str(tmp_path))
    ca = ["--ca-bundle", srv.ca]
    bucket = unique_bucket("ssecli")
    aws(*ca, "s3", "mb", f"s3://{bucket}")
    src = tmp_path / "src.bin"
    data = seeded_bytes(9 * MiB + 11, 60)
    src.write_bytes(data)
    key = "k" * 32
    aws(*ca, "s3", "cp", str(src), f"s3://{bucket}/c.bin", "--sse-c", "AES256", "--sse-c-key", key)
    aws(*ca, "s3", "cp", str(src), f"s3://{bucket}/s.bin", "--sse", "AES256")
    head = aws.api(*ca, "head-object", "--bucket", bucket, "--key", "s.bin")
    assert head["ServerSideEncryption"] == "AES256" and head["ContentLength"] == len(data)
    aws(*ca, "s3", "cp", f"s3://{bucket}/c.bin", str(tmp_path / "c.out"), "--sse-c", "AES256",
        "--sse-c-key", key)
    assert (tmp_path / "c.out").read_bytes() == data
    denied = aws(*ca, "s3", "cp", f"s3://{bucket}/c.bin", str(tmp_path / "x.out"), check=False)
    assert denied.returncode != 0
    aws(*ca, "s3", "cp", f"s3://{bucket}/s.bin", str(tmp_path / "s.out"))
    assert (tmp_path / "s.out").read_bytes() == data
