"""boto3 (Debian's python3-boto3 1.26) against a real rdmastor server."""

import base64
import datetime
import email.utils
import hashlib
import os
import re
import socket
import time
import urllib.parse
import zlib

import pytest
import requests
from boto3.s3.transfer import TransferConfig
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from conftest import (REGION, empty_and_delete_bucket, file_md5, make_client, md5_hex,
                      seeded_bytes, unique_bucket, write_file)

MiB = 1 << 20


def err_code(exc):
    return exc.response["Error"]["Code"]


def http_status(exc):
    return exc.response["ResponseMetadata"]["HTTPStatusCode"]


# ---------------------------------------------------------------------------------------------
# buckets
# ---------------------------------------------------------------------------------------------

def test_bucket_lifecycle(s3):
    name = unique_bucket()
    s3.create_bucket(Bucket=name)
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.head_bucket(Bucket=name)
    # Its owner again, in us-east-1: AWS's legacy 200 (test_conformance has the other answers).
    s3.create_bucket(Bucket=name)
    s3.delete_bucket(Bucket=name)
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert http_status(e.value) == 404
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert err_code(e.value) == "NoSuchBucket"


def test_create_bucket_with_location_constraint(s3):
    name = unique_bucket()
    # us-east-1 must not be sent as a LocationConstraint by S3 rules; an explicit empty config works
    s3.create_bucket(Bucket=name)
    loc = s3.get_bucket_location(Bucket=name)
    assert loc.get("LocationConstraint") in (None, "", "us-east-1")
    s3.delete_bucket(Bucket=name)


@pytest.mark.parametrize("name", [
    "ab",                      # too short
    "a" * 64,                  # too long
    "UpperCase",               # capitals
    "under_score",             # underscore
    "-leading-dash",
    "trailing-dash-",
    "double..dot",
    "192.168.1.1",             # formatted like an IP address
    "dot-.dash",
])
def test_invalid_bucket_names(s3, name):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name)
    assert err_code(e.value) == "InvalidBucketName", e.value.response
    assert http_status(e.value) == 400


@pytest.mark.parametrize("name", ["abc", "a" * 63, "with.dots.ok", "0digits-9"])
def test_valid_bucket_names(s3, name):
    s3.create_bucket(Bucket=name)
    try:
        s3.head_bucket(Bucket=name)
    finally:
        s3.delete_bucket(Bucket=name)


def test_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert err_code(e.value) == "BucketNotEmpty"
    assert http_status(e.value) == 409
    s3.delete_object(Bucket=bucket, Key="x")
    s3.delete_bucket(Bucket=bucket)


# ---------------------------------------------------------------------------------------------
# put / get
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, MiB, 17 * MiB], ids=["0B", "1B", "1MiB", "17MiB"])
def test_put_get_roundtrip(s3, bucket, size):
    data = seeded_bytes(size, seed=size)
    put = s3.put_object(Bucket=bucket, Key=f"obj-{size}", Body=data)
    assert put["ETag"] == f'"{md5_hex(data)}"'
    got = s3.get_object(Bucket=bucket, Key=f"obj-{size}")
    assert got["ContentLength"] == size
    body = got["Body"].read()
    assert len(body) == size and body == data
    assert got["ETag"] == put["ETag"]
    head = s3.head_object(Bucket=bucket, Key=f"obj-{size}")
    assert head["ContentLength"] == size
    assert head["ETag"] == put["ETag"]
    assert isinstance(head["LastModified"], datetime.datetime)


def test_overwrite_replaces(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"first version")
    s3.put_object(Bucket=bucket, Key="k", Body=b"second")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"second"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["k"]


def test_upload_download_file_multipart(s3, bucket, tmp_path):
    src = tmp_path / "src.bin"
    size = 23 * MiB
    md5 = write_file(src, size, seed=23)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB,
                         max_concurrency=2, use_threads=True)
    s3.upload_file(str(src), bucket, "big/23mib.bin", Config=cfg)
    head = s3.head_object(Bucket=bucket, Key="big/23mib.bin")
    assert head["ContentLength"] == size
    assert re.fullmatch(r'"[0-9a-f]{32}-5"', head["ETag"]), head["ETag"]
    # multipart ETag = md5 of the concatenated binary part md5s
    part_md5s = []
    with open(src, "rb") as f:
        for piece in iter(lambda: f.read(5 * MiB), b""):
            part_md5s.append(hashlib.md5(piece).digest())
    assert head["ETag"] == '"%s-%d"' % (hashlib.md5(b"".join(part_md5s)).hexdigest(), len(part_md5s))
    dst = tmp_path / "dst.bin"
    s3.download_file(bucket, "big/23mib.bin", str(dst), Config=cfg)
    assert file_md5(dst) == md5


def test_get_part_number(s3, bucket, tmp_path):
    src = tmp_path / "src.bin"
    write_file(src, 11 * MiB, seed=5)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=1)
    s3.upload_file(str(src), bucket, "parts", Config=cfg)
    data = src.read_bytes()
    got = s3.get_object(Bucket=bucket, Key="parts", PartNumber=2)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["Body"].read() == data[5 * MiB:10 * MiB]
    assert got.get("PartsCount") == 3


# ---------------------------------------------------------------------------------------------
# ranges and conditionals
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def ranged_obj(s3, bucket):
    data = seeded_bytes(1000, seed=42)
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    return bucket, data


@pytest.mark.parametrize("rng,sl,content_range", [
    ("bytes=0-0", slice(0, 1), "bytes 0-0/1000"),
    ("bytes=10-19", slice(10, 20), "bytes 10-19/1000"),
    ("bytes=-5", slice(995, 1000), "bytes 995-999/1000"),
    ("bytes=100-", slice(100, 1000), "bytes 100-999/1000"),
    ("bytes=990-5000", slice(990, 1000), "bytes 990-999/1000"),
    ("bytes=-5000", slice(0, 1000), "bytes 0-999/1000"),
])
def test_ranged_get(s3, ranged_obj, rng, sl, content_range):
    bucket, data = ranged_obj
    got = s3.get_object(Bucket=bucket, Key="r", Range=rng)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["ContentRange"] == content_range
    body = got["Body"].read()
    assert body == data[sl]
    assert got["ContentLength"] == len(body)
    assert got.get("AcceptRanges") == "bytes"


@pytest.mark.parametrize("rng", ["bytes=1000-", "bytes=1000-1005", "bytes=5000-6000"])
def test_ranged_get_unsatisfiable(s3, ranged_obj, rng):
    bucket, _ = ranged_obj
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="r", Range=rng)
    assert http_status(e.value) == 416
    assert err_code(e.value) == "InvalidRange"


def test_range_on_empty_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="empty", Range="bytes=0-0")
    assert http_status(e.value) == 416


def test_conditional_get(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="c", Body=b"conditional")
    etag = put["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="c")["LastModified"]

    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)["Body"].read() == b"conditional"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert http_status(e.value) == 412
    assert err_code(e.value) == "PreconditionFailed"

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert http_status(e.value) == 304
    got = s3.get_object(Bucket=bucket, Key="c", IfNoneMatch='"0123456789abcdef0123456789abcdef"')
    assert got["Body"].read() == b"conditional"

    future = lm + datetime.timedelta(hours=1)
    past = lm - datetime.timedelta(hours=1)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=future)
    assert http_status(e.value) == 304
    assert s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=past)["Body"].read() == b"conditional"

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=past)
    assert http_status(e.value) == 412
    assert s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=future)["Body"].read() == b"conditional"

    # HEAD honours the same conditions
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert http_status(e.value) == 304
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c", IfMatch='"ffffffffffffffffffffffffffffffff"')
    assert http_status(e.value) == 412


# ---------------------------------------------------------------------------------------------
# headers and metadata
# ---------------------------------------------------------------------------------------------

def test_response_header_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"hi", ContentType="text/plain")
    got = s3.get_object(Bucket=bucket, Key="o", ResponseContentType="application/x-custom",
                        ResponseContentDisposition='attachment; filename="x.bin"',
                        ResponseCacheControl="no-cache",
                        ResponseContentLanguage="de")
    assert got["ContentType"] == "application/x-custom"
    assert got["ContentDisposition"] == 'attachment; filename="x.bin"'
    assert got["CacheControl"] == "no-cache"
    assert got["ContentLanguage"] == "de"
    # stored content type unchanged
    assert s3.head_object(Bucket=bucket, Key="o")["ContentType"] == "text/plain"


def test_user_metadata_roundtrip(s3, bucket):
    meta = {"owner": "alice", "x-mixed": "Value With Spaces", "empty-ish": "-", "num": "42"}
    s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata=meta)
    head = s3.head_object(Bucket=bucket, Key="m")
    assert head["Metadata"] == meta
    got = s3.get_object(Bucket=bucket, Key="m")
    assert got["Metadata"] == meta


def test_standard_headers_kept(s3, bucket):
    s3.put_object(Bucket=bucket, Key="h", Body=b"\x1f\x8bfake", ContentEncoding="gzip",
                  CacheControl="max-age=3600", ContentDisposition="inline",
                  ContentLanguage="en", ContentType="application/octet-stream",
                  Expires=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc))
    head = s3.head_object(Bucket=bucket, Key="h")
    assert head["ContentEncoding"] == "gzip"
    assert head["CacheControl"] == "max-age=3600"
    assert head["ContentDisposition"] == "inline"
    assert head["ContentLanguage"] == "en"
    assert head["ContentType"] == "application/octet-stream"
    assert head["Expires"].year == 2030
    got = s3.get_object(Bucket=bucket, Key="h")
    assert got["ContentEncoding"] == "gzip"
    assert got["CacheControl"] == "max-age=3600"


def test_default_content_type(s3, bucket):
    s3.put_object(Bucket=bucket, Key="noct", Body=b"x")
    ct = s3.head_object(Bucket=bucket, Key="noct")["ContentType"]
    assert ct in ("binary/octet-stream", "application/octet-stream")


# ---------------------------------------------------------------------------------------------
# checksums and digests
# ---------------------------------------------------------------------------------------------

def _crc32c(data):
    poly = 0x82F63B78
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _expected_checksum(alg, data):
    if alg == "CRC32":
        raw = (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    elif alg == "CRC32C":
        raw = _crc32c(data).to_bytes(4, "big")
    elif alg == "SHA1":
        raw = hashlib.sha1(data).digest()
    else:
        raw = hashlib.sha256(data).digest()
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("alg", ["CRC32", "CRC32C", "SHA1", "SHA256"])
def test_put_checksum_algorithm(s3, bucket, alg):
    data = seeded_bytes(70000, seed=3)
    expected = _expected_checksum(alg, data)
    put = s3.put_object(Bucket=bucket, Key=f"ck-{alg}", Body=data, ChecksumAlgorithm=alg)
    assert put.get(f"Checksum{alg}") in (None, expected)
    got = s3.get_object(Bucket=bucket, Key=f"ck-{alg}", ChecksumMode="ENABLED")
    assert got["Body"].read() == data
    assert got.get(f"Checksum{alg}") == expected, got
    head = s3.head_object(Bucket=bucket, Key=f"ck-{alg}", ChecksumMode="ENABLED")
    assert head.get(f"Checksum{alg}") == expected, head


@pytest.mark.parametrize("alg", ["CRC32", "SHA256"])
def test_put_wrong_checksum_rejected(s3, bucket, alg):
    data = b"some payload"
    wrong = _expected_checksum(alg, b"other payload")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad-ck", Body=data, **{f"Checksum{alg}": wrong})
    assert http_status(e.value) == 400
    assert err_code(e.value) in ("XAmzContentChecksumMismatch", "BadDigest", "InvalidRequest")
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="bad-ck")


def test_content_md5(s3, bucket):
    data = b"content md5 check"
    good = base64.b64encode(hashlib.md5(data).digest()).decode()
    s3.put_object(Bucket=bucket, Key="md5ok", Body=data, ContentMD5=good)
    wrong = base64.b64encode(hashlib.md5(b"something else").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5bad", Body=data, ContentMD5=wrong)
    assert err_code(e.value) == "BadDigest"
    assert http_status(e.value) == 400
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5bad", Body=data, ContentMD5="not-base64!!")
    assert err_code(e.value) == "InvalidDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="md5bad")
    assert http_status(e.value) == 404


# ---------------------------------------------------------------------------------------------
# listing
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def many_keys(server):
    """A bucket holding ~250 keys with a few directory levels (module scoped: built once)."""
    client = make_client(server)
    name = unique_bucket("list")
    client.create_bucket(Bucket=name)
    keys = set()
    for i in range(120):
        keys.add(f"flat-{i:04d}")
    for d in range(5):
        for i in range(20):
            keys.add(f"dir{d}/file-{i:03d}")
    for i in range(30):
        keys.add(f"dir2/sub/{i:02d}")
    for k in sorted(keys):
        client.put_object(Bucket=name, Key=k, Body=k.encode())
    yield name, sorted(keys)
    empty_and_delete_bucket(client, name)


def test_list_v2_maxkeys_pagination(s3, many_keys):
    name, keys = many_keys
    assert len(keys) == 250
    seen, token, pages = [], None, 0
    for _ in range(100):  # bounded: 250 / 7 = 36 pages
        kw = {"Bucket": name, "MaxKeys": 7}
        if token:
            kw["ContinuationToken"] = token
        resp = s3.list_objects_v2(**kw)
        pages += 1
        contents = [o["Key"] for o in resp.get("Contents", [])]
        assert len(contents) <= 7
        assert resp["KeyCount"] == len(contents)
        seen.extend(contents)
        if not resp["IsTruncated"]:
            break
        token = resp["NextContinuationToken"]
        assert token
    assert seen == keys
    assert pages == 36


def test_list_v1_marker_pagination(s3, many_keys):
    name, keys = many_keys
    seen, marker = [], ""
    for _ in range(100):
        resp = s3.list_objects(Bucket=name, MaxKeys=7, Marker=marker)
        contents = [o["Key"] for o in resp.get("Contents", [])]
        seen.extend(contents)
        if not resp["IsTruncated"]:
            break
        marker = resp.get("NextMarker") or contents[-1]
    assert seen == keys


def test_list_v1_delimiter_pagination(s3, many_keys):
    name, keys = many_keys
    seen_keys, seen_prefixes, marker = [], [], ""
    for _ in range(100):
        resp = s3.list_objects(Bucket=name, MaxKeys=7, Marker=marker, Delimiter="/")
        seen_keys.extend(o["Key"] for o in resp.get("Contents", []))
        seen_prefixes.extend(p["Prefix"] for p in resp.get("CommonPrefixes", []))
        if not resp["IsTruncated"]:
            break
        marker = resp["NextMarker"]  # required when a delimiter is given
    assert seen_keys == [k for k in keys if "/" not in k]
    assert seen_prefixes == [f"dir{d}/" for d in range(5)]


def test_list_v2_delimiter_paginated(s3, many_keys):
    name, _ = many_keys
    prefixes, token = [], None
    for _ in range(50):
        kw = {"Bucket": name, "Delimiter": "/", "Prefix": "dir2/", "MaxKeys": 3}
        if token:
            kw["ContinuationToken"] = token
        resp = s3.list_objects_v2(**kw)
        prefixes.extend(p["Prefix"] for p in resp.get("CommonPrefixes", []))
        if not resp["IsTruncated"]:
            break
        token = resp["NextContinuationToken"]
    assert prefixes == ["dir2/sub/"]


def test_list_v2_start_after(s3, many_keys):
    name, keys = many_keys
    resp = s3.list_objects_v2(Bucket=name, StartAfter="dir4/file-010", MaxKeys=1000)
    assert [o["Key"] for o in resp["Contents"]] == [k for k in keys if k > "dir4/file-010"]
    resp = s3.list_objects_v2(Bucket=name, StartAfter="zzz")
    assert resp.get("KeyCount") == 0 and not resp.get("Contents")


def test_list_v2_prefix_and_fetch_owner(s3, many_keys):
    name, keys = many_keys
    resp = s3.list_objects_v2(Bucket=name, Prefix="dir3/", FetchOwner=True)
    got = resp["Contents"]
    assert [o["Key"] for o in got] == [k for k in keys if k.startswith("dir3/")]
    for o in got:
        assert o["Size"] == len(o["Key"])
        assert o["ETag"] == f'"{md5_hex(o["Key"].encode())}"'
        assert "Owner" in o
        assert o.get("StorageClass", "STANDARD") == "STANDARD"


def test_list_encoding_type_url(s3, bucket):
    keys = ["plain", "with space", "plus+sign", "uni-\u00e9\u4e2d", "ctl\x01char", "pct%41"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    # Asked for explicitly, boto3 hands back the keys exactly as encoded on the wire
    # (it only decodes when it added EncodingType itself, as in every other listing here).
    resp = s3.list_objects_v2(Bucket=bucket, EncodingType="url")
    assert resp["EncodingType"] == "url"
    wire = [o["Key"] for o in resp["Contents"]]
    assert "with%20space" in wire or "with+space" in wire, wire
    assert "plus%2Bsign" in wire, wire
    assert "ctl%01char" in wire, wire
    assert "pct%2541" in wire, wire
    assert sorted(urllib.parse.unquote_plus(k) for k in wire) == sorted(keys)
    resp = s3.list_objects(Bucket=bucket, EncodingType="url")
    assert sorted(urllib.parse.unquote_plus(o["Key"]) for o in resp["Contents"]) == sorted(keys)
    # prefix and delimiter results are encoded too
    s3.put_object(Bucket=bucket, Key="dir with space/x", Body=b"")
    resp = s3.list_objects_v2(Bucket=bucket, EncodingType="url", Delimiter="/")
    prefixes = [urllib.parse.unquote_plus(p["Prefix"]) for p in resp.get("CommonPrefixes", [])]
    assert prefixes == ["dir with space/"]


def test_list_object_versions_unversioned(s3, bucket):
    for k in ("v1", "v2"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    resp = s3.list_object_versions(Bucket=bucket)
    versions = resp["Versions"]
    assert [v["Key"] for v in versions] == ["v1", "v2"]
    for v in versions:
        assert v["VersionId"] == "null"
        assert v["IsLatest"] is True
    assert not resp.get("DeleteMarkers")
    vers = s3.get_bucket_versioning(Bucket=bucket)
    assert vers.get("Status") in (None, "")


def test_list_empty_bucket_and_missing_bucket(s3, bucket):
    resp = s3.list_objects_v2(Bucket=bucket)
    assert resp["KeyCount"] == 0 and "Contents" not in resp and resp["IsTruncated"] is False
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=unique_bucket("missing"))
    assert err_code(e.value) == "NoSuchBucket"


# ---------------------------------------------------------------------------------------------
# delete
# ---------------------------------------------------------------------------------------------

def test_delete_object_idempotent(s3, bucket):
    s3.put_object(Bucket=bucket, Key="d", Body=b"x")
    assert s3.delete_object(Bucket=bucket, Key="d")["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.delete_object(Bucket=bucket, Key="d")["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="d")
    assert err_code(e.value) == "NoSuchKey"


def test_delete_objects(s3, bucket):
    for i in range(10):
        s3.put_object(Bucket=bucket, Key=f"del/{i}", Body=b"x")
    resp = s3.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": f"del/{i}"} for i in range(5)] + [{"Key": "del/absent"}]})
    assert sorted(d["Key"] for d in resp["Deleted"]) == sorted([f"del/{i}" for i in range(5)] + ["del/absent"])
    assert not resp.get("Errors")
    resp = s3.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": f"del/{i}"} for i in range(5, 10)], "Quiet": True})
    assert not resp.get("Deleted")
    assert not resp.get("Errors")
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


# ---------------------------------------------------------------------------------------------
# copy
# ---------------------------------------------------------------------------------------------

def test_copy_object_metadata_directives(s3, bucket):
    data = seeded_bytes(3000, seed=8)
    s3.put_object(Bucket=bucket, Key="src", Body=data, Metadata={"a": "1", "b": "2"},
                  ContentType="text/x-src")
    res = s3.copy_object(Bucket=bucket, Key="copy-keep", CopySource={"Bucket": bucket, "Key": "src"})
    assert res["CopyObjectResult"]["ETag"] == f'"{md5_hex(data)}"'
    head = s3.head_object(Bucket=bucket, Key="copy-keep")
    assert head["Metadata"] == {"a": "1", "b": "2"}
    assert head["ContentType"] == "text/x-src"
    assert s3.get_object(Bucket=bucket, Key="copy-keep")["Body"].read() == data

    s3.copy_object(Bucket=bucket, Key="copy-repl", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", Metadata={"c": "3"}, ContentType="text/x-new")
    head = s3.head_object(Bucket=bucket, Key="copy-repl")
    assert head["Metadata"] == {"c": "3"}
    assert head["ContentType"] == "text/x-new"
    assert s3.get_object(Bucket=bucket, Key="copy-repl")["Body"].read() == data

    # copying onto itself is only allowed with REPLACE
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src")
    assert err_code(e.value) == "InvalidRequest"
    s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", Metadata={"new": "yes"})
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"new": "yes"}
    assert s3.get_object(Bucket=bucket, Key="src")["Body"].read() == data


def test_copy_object_errors(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{bucket}/does-not-exist")
    assert err_code(e.value) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{unique_bucket('nob')}/x")
    assert err_code(e.value) == "NoSuchBucket"


def test_copy_object_conditional(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="cs", Body=b"cond copy")
    s3.copy_object(Bucket=bucket, Key="cd", CopySource=f"{bucket}/cs", CopySourceIfMatch=put["ETag"])
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="cd2", CopySource=f"{bucket}/cs",
                       CopySourceIfMatch='"00000000000000000000000000000000"')
    assert http_status(e.value) == 412


def test_upload_part_copy_with_range(s3, bucket):
    size = 12 * MiB + 77
    data = seeded_bytes(size, seed=12)
    s3.put_object(Bucket=bucket, Key="big-src", Body=data)
    up = s3.create_multipart_upload(Bucket=bucket, Key="assembled")
    uid = up["UploadId"]
    ranges = [(0, 5 * MiB - 1), (5 * MiB, 10 * MiB - 1), (10 * MiB, size - 1)]
    parts = []
    for n, (a, b) in enumerate(ranges, start=1):
        r = s3.upload_part_copy(Bucket=bucket, Key="assembled", UploadId=uid, PartNumber=n,
                                CopySource={"Bucket": bucket, "Key": "big-src"},
                                CopySourceRange=f"bytes={a}-{b}")
        assert r["CopyPartResult"]["ETag"] == f'"{md5_hex(data[a:b + 1])}"'
        parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="assembled", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    got = s3.get_object(Bucket=bucket, Key="assembled")["Body"].read()
    assert got == data
    # a range outside the source is rejected
    up = s3.create_multipart_upload(Bucket=bucket, Key="bad-range")
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="bad-range", UploadId=up["UploadId"], PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "big-src"},
                            CopySourceRange=f"bytes={size}-{size + 10}")
    assert err_code(e.value) in ("InvalidRange", "InvalidArgument", "InvalidRequest")
    s3.abort_multipart_upload(Bucket=bucket, Key="bad-range", UploadId=up["UploadId"])


# ---------------------------------------------------------------------------------------------
# multipart errors
# ---------------------------------------------------------------------------------------------

def _upload_parts(s3, bucket, key, sizes, seed=0):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts, datas = [], []
    for n, size in enumerate(sizes, start=1):
        d = seeded_bytes(size, seed=seed + n)
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=d)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
        datas.append(d)
    return uid, parts, datas


def test_complete_invalid_part_etag(s3, bucket):
    uid, parts, _ = _upload_parts(s3, bucket, "ip", [5 * MiB, 100])
    parts[1]["ETag"] = '"0123456789abcdef0123456789abcdef"'
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="ip", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert err_code(e.value) == "InvalidPart"
    assert http_status(e.value) == 400
    # unknown part number
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="ip", UploadId=uid, MultipartUpload={
            "Parts": [parts[0], {"PartNumber": 7, "ETag": parts[0]["ETag"]}]})
    assert err_code(e.value) == "InvalidPart"
    s3.abort_multipart_upload(Bucket=bucket, Key="ip", UploadId=uid)


def test_complete_invalid_part_order(s3, bucket):
    uid, parts, _ = _upload_parts(s3, bucket, "ipo", [5 * MiB, 5 * MiB])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="ipo", UploadId=uid,
                                     MultipartUpload={"Parts": [parts[1], parts[0]]})
    assert err_code(e.value) == "InvalidPartOrder"
    assert http_status(e.value) == 400
    s3.abort_multipart_upload(Bucket=bucket, Key="ipo", UploadId=uid)


def test_complete_entity_too_small(s3, bucket):
    uid, parts, _ = _upload_parts(s3, bucket, "small", [MiB, MiB])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="small", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert err_code(e.value) == "EntityTooSmall"
    assert http_status(e.value) == 400
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="small")
    # a single small part is fine (the last part may be small)
    s3.complete_multipart_upload(Bucket=bucket, Key="small", UploadId=uid,
                                 MultipartUpload={"Parts": parts[:1]})
    assert s3.head_object(Bucket=bucket, Key="small")["ContentLength"] == MiB


def test_no_such_upload_after_abort(s3, bucket):
    uid, parts, _ = _upload_parts(s3, bucket, "ab", [1000])
    s3.abort_multipart_upload(Bucket=bucket, Key="ab", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="ab", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert err_code(e.value) == "NoSuchUpload"
    assert http_status(e.value) == 404
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="ab", UploadId=uid, PartNumber=2, Body=b"x")
    assert err_code(e.value) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="ab", UploadId="bogus-upload-id")
    assert err_code(e.value) == "NoSuchUpload"


def test_multipart_part_overwrite_and_listing(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ow")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=1, Body=b"a" * 100)
    r = s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=1, Body=b"b" * 200)
    lp = s3.list_parts(Bucket=bucket, Key="ow", UploadId=uid)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in lp["Parts"]] == [(1, 200, r["ETag"])]
    s3.complete_multipart_upload(Bucket=bucket, Key="ow", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="ow")["Body"].read() == b"b" * 200
    # in-progress uploads do not show up as objects
    uid2 = s3.create_multipart_upload(Bucket=bucket, Key="pending")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="pending", UploadId=uid2, PartNumber=1, Body=b"x")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["ow"]
    ups = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("pending", uid2)]
    s3.abort_multipart_upload(Bucket=bucket, Key="pending", UploadId=uid2)


# ---------------------------------------------------------------------------------------------
# presigned URLs
# ---------------------------------------------------------------------------------------------

def test_presigned_get_and_put(s3, bucket):
    data = seeded_bytes(4000, seed=77)
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre/x"},
                                        ExpiresIn=300)
    assert "X-Amz-Signature=" in put_url
    r = requests.put(put_url, data=data, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == f'"{md5_hex(data)}"'
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre/x"},
                                        ExpiresIn=300)
    r = requests.get(get_url, timeout=30)
    assert r.status_code == 200
    assert r.content == data
    r = requests.get(get_url, headers={"Range": "bytes=0-9"}, timeout=30)
    assert r.status_code == 206 and r.content == data[:10]
    # the presigned GET URL does not authorise a different key
    other = get_url.replace("/pre/x?", "/pre/y?")
    r = requests.get(other, timeout=30)
    assert r.status_code == 403
    # nor a different method
    r = requests.delete(get_url, timeout=30)
    assert r.status_code == 403
    assert s3.head_object(Bucket=bucket, Key="pre/x")["ContentLength"] == len(data)


def test_presigned_get_with_response_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="dl", Body=b"download me")
    url = s3.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "dl", "ResponseContentDisposition": "attachment; filename=dl.txt",
        "ResponseContentType": "text/plain"}, ExpiresIn=60)
    r = requests.get(url, timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Disposition"] == "attachment; filename=dl.txt"
    assert r.headers["Content-Type"] == "text/plain"


# ---------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------

def test_directory_like_keys_coexist(server, s3, bucket):
    # "a/" is written through a fresh client: see test_empty_put_then_put_same_connection for
    # what botocore 1.29 does on a kept-alive connection after an empty PUT.
    s3.put_object(Bucket=bucket, Key="a", Body=b"file a")
    make_client(server).put_object(Bucket=bucket, Key="a/", Body=b"")
    s3.put_object(Bucket=bucket, Key="a/b", Body=b"file a/b")
    assert s3.get_object(Bucket=bucket, Key="a")["Body"].read() == b"file a"
    assert s3.get_object(Bucket=bucket, Key="a/")["Body"].read() == b""
    assert s3.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"file a/b"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["a", "a/", "a/b"]
    resp = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [o["Key"] for o in resp["Contents"]] == ["a"]
    assert [p["Prefix"] for p in resp["CommonPrefixes"]] == ["a/"]
    resp = s3.list_objects_v2(Bucket=bucket, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in resp["Contents"]] == ["a/", "a/b"]
    # deleting "a" leaves the others
    s3.delete_object(Bucket=bucket, Key="a")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["a/", "a/b"]
    s3.delete_object(Bucket=bucket, Key="a/b")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["a/"]
    # the other creation order: deep key first, then its "directory" and the plain name
    s3.put_object(Bucket=bucket, Key="x/y/z", Body=b"z")
    make_client(server).put_object(Bucket=bucket, Key="x/y/", Body=b"")
    s3.put_object(Bucket=bucket, Key="x/y", Body=b"y")
    s3.put_object(Bucket=bucket, Key="x", Body=b"x")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="x")["Contents"]]
    assert keys == ["x", "x/y", "x/y/", "x/y/z"]
    assert [s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys] == [b"x", b"y", b"", b"z"]


def test_empty_put_then_put_same_connection(server, bucket):
    """boto3 sends 'Expect: 100-continue' on every PutObject, also with an empty body. If the
    server answers the empty one without a '100 Continue', botocore 1.29 keeps that response's
    status line for the connection, misreads the next Expect request's response (no headers, so
    it reads to EOF) and stalls until the server's idle timeout. AWS S3 answers with 100 first.
    """
    client = make_client(server, read_timeout=5)
    client.put_object(Bucket=bucket, Key="k1", Body=b"first")
    client.put_object(Bucket=bucket, Key="empty/", Body=b"")
    t0 = time.monotonic()
    resp = client.put_object(Bucket=bucket, Key="k2", Body=b"second")
    assert resp["ETag"] == f'"{md5_hex(b"second")}"', resp["ResponseMetadata"]
    assert time.monotonic() - t0 < 5
    assert client.get_object(Bucket=bucket, Key="k2")["Body"].read() == b"second"


SPECIAL_KEYS = [
    "with space.txt",
    "plus+sign",
    "percent%20literal",
    "question?mark",
    "hash#tag",
    "amp&equals=",
    "unicode-\u00fc\u00e9\u00e8-\u4e2d\u6587-\U0001f600",
    "semi;colon,comma",
    "tilde~star*quote'paren()",
    "deep/nested/path/with spaces/and+plus",
    "/".join(["x" * 200] * 5),   # 1004 bytes in segments a filesystem can hold
]


def test_special_keys_roundtrip(s3, bucket):
    for i, k in enumerate(SPECIAL_KEYS):
        s3.put_object(Bucket=bucket, Key=k, Body=f"body-{i}".encode())
    for i, k in enumerate(SPECIAL_KEYS):
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == f"body-{i}".encode(), k
        assert s3.head_object(Bucket=bucket, Key=k)["ContentLength"] == len(f"body-{i}")
    listed = []
    token = None
    for _ in range(10):
        kw = {"Bucket": bucket, "MaxKeys": 5}
        if token:
            kw["ContinuationToken"] = token
        resp = s3.list_objects_v2(**kw)
        listed.extend(o["Key"] for o in resp.get("Contents", []))
        if not resp["IsTruncated"]:
            break
        token = resp["NextContinuationToken"]
    assert listed == sorted(SPECIAL_KEYS, key=lambda k: k.encode("utf-8"))
    s3.copy_object(Bucket=bucket, Key="copied+ \u00fc", CopySource={"Bucket": bucket, "Key": SPECIAL_KEYS[6]})
    assert s3.get_object(Bucket=bucket, Key="copied+ \u00fc")["Body"].read() == b"body-6"
    resp = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in SPECIAL_KEYS]})
    assert len(resp["Deleted"]) == len(SPECIAL_KEYS)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["copied+ \u00fc"]


def test_key_too_long(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="/".join(["k" * 200] * 6), Body=b"x")
    assert err_code(e.value) in ("KeyTooLongError", "XMinioInvalidObjectName")
    assert http_status(e.value) == 400
    # like MinIO, one path segment is limited to 255 bytes (it becomes a file name)
    s3.put_object(Bucket=bucket, Key="s" * 255, Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="s" * 256, Body=b"x")
    assert err_code(e.value) in ("KeyTooLongError", "XMinioInvalidObjectName")
    assert http_status(e.value) == 400


# ---------------------------------------------------------------------------------------------
# virtual-host-style addressing
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def vhost_server(server_factory):
    return server_factory(name="vhost", env={"MINIO_DOMAIN": "localhost"})


@pytest.fixture
def resolve_localhost(monkeypatch):
    """Make 'localhost' and '*.localhost' resolve to 127.0.0.1 inside this process only.

    glibc on Debian 12 does not resolve 'bucket.localhost' (no nss-myhostname), so the
    name lookup of the boto3 connection is pinned to the loopback address here.
    """
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if isinstance(host, str) and (host == "localhost" or host.endswith(".localhost")):
            return real("127.0.0.1", port, socket.AF_INET, *args[1:], **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def test_virtual_host_style_boto3(vhost_server, resolve_localhost):
    client = make_client(vhost_server, addressing_style="virtual",
                         endpoint=f"http://localhost:{vhost_server.port}")
    name = unique_bucket("vh")
    seen_hosts = []
    client.meta.events.register("before-send.s3", lambda request, **kw: seen_hosts.append(
        urllib.parse.urlsplit(request.url).netloc))
    client.create_bucket(Bucket=name)
    client.put_object(Bucket=name, Key="dir/vh object", Body=b"virtual")
    assert client.get_object(Bucket=name, Key="dir/vh object")["Body"].read() == b"virtual"
    resp = client.list_objects_v2(Bucket=name, Prefix="dir/")
    assert [o["Key"] for o in resp["Contents"]] == ["dir/vh object"]
    assert all(h == f"{name}.localhost:{vhost_server.port}" for h in seen_hosts), seen_hosts
    # the same object is visible path-style
    path_client = make_client(vhost_server)
    assert path_client.get_object(Bucket=name, Key="dir/vh object")["Body"].read() == b"virtual"
    client.delete_object(Bucket=name, Key="dir/vh object")
    client.delete_bucket(Bucket=name)


def test_virtual_host_style_signed_host_header(vhost_server):
    """Send Host: bucket.localhost:PORT to 127.0.0.1 with a botocore-signed request."""
    name = unique_bucket("vh")
    make_client(vhost_server).create_bucket(Bucket=name)
    creds = Credentials(vhost_server.access_key, vhost_server.secret_key)
    host = f"{name}.localhost:{vhost_server.port}"

    def send(method, path, body=b""):
        req = AWSRequest(method=method, url=f"http://{host}{path}", data=body,
                         headers={"Content-Length": str(len(body))} if method == "PUT" else {})
        S3SigV4Auth(creds, "s3", REGION).add_auth(req)
        headers = dict(req.headers.items())
        headers["Host"] = host
        return requests.request(method, f"http://127.0.0.1:{vhost_server.port}{path}",
                                headers=headers, data=body, timeout=30)

    r = send("PUT", "/hello.txt", b"vhost body")
    assert r.status_code == 200, r.text
    r = send("GET", "/hello.txt")
    assert r.status_code == 200 and r.content == b"vhost body", r.text
    r = send("GET", "/?list-type=2")
    assert r.status_code == 200 and "<Key>hello.txt</Key>" in r.text, r.text
    r = send("DELETE", "/hello.txt")
    assert r.status_code == 204
    make_client(vhost_server).delete_bucket(Bucket=name)
