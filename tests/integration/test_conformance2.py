"""S3 answers exactly as AWS documents them (issue 14, second part), against the real server.

As in test_conformance.py, the boto3-visible checks are one script (SDK_SCRIPT) run under Debian's
boto3 and, when the machine has one, a current boto3; here each also runs against both storage
layouts (one drive: the plain layout; four drives: erasure coding), since conditional writes, part
lists and stored attributes are decided in the object layer. Raw signed requests cover what an
SDK hides: timing of racing part uploads, bytes of header values, malformed URIs.
"""
import hashlib
import json
import os
import threading
import xml.etree.ElementTree as ET

import pytest

from conftest import (assert_s3_error, http_send, make_client, sdk_script_runner, sign_v4,
                      signed_request, unique_bucket)
from test_conformance import _interpreters

S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

SDK_SCRIPT = r'''
def with_headers(c, headers, fn, **kw):
    """err(fn) with extra (signed) request headers: Debian's boto3 has no IfMatch/IfNoneMatch
    parameters on writes, and both SDKs then send exactly the same request."""
    def add(request, **_):
        for k, v in headers.items():
            request.headers[k] = v
    c.meta.events.register_first("before-sign.s3", add)
    try:
        return err(fn, **kw)
    finally:
        c.meta.events.unregister("before-sign.s3", add)

bucket = prefix + "-main"
s3.create_bucket(Bucket=bucket)


def body_of(key):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


@section
def conditional_put():
    # 11. If-None-Match: * / If-Match on PutObject.
    out["inm new"] = with_headers(s3, {"If-None-Match": "*"}, s3.put_object, Bucket=bucket,
                                  Key="cond", Body=b"first")
    out["inm existing"] = with_headers(s3, {"If-None-Match": "*"}, s3.put_object, Bucket=bucket,
                                       Key="cond", Body=b"second")
    out["inm existing kept"] = body_of("cond").decode()
    etag = s3.head_object(Bucket=bucket, Key="cond")["ETag"]
    out["im wrong"] = with_headers(s3, {"If-Match": '"0123456789abcdef0123456789abcdef"'},
                                   s3.put_object, Bucket=bucket, Key="cond", Body=b"third")
    out["im wrong kept"] = body_of("cond").decode()
    out["im right"] = with_headers(s3, {"If-Match": etag}, s3.put_object, Bucket=bucket,
                                   Key="cond", Body=b"fourth")
    out["im right stored"] = body_of("cond").decode()
    out["im missing"] = with_headers(s3, {"If-Match": etag}, s3.put_object, Bucket=bucket,
                                     Key="cond-missing", Body=b"x")
    out["im missing stored"] = err(s3.head_object, Bucket=bucket, Key="cond-missing")


@section
def conditional_complete():
    # 11. The same conditions on CompleteMultipartUpload; a failed one leaves the upload intact.
    def upload(key, data):
        up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=data)["ETag"]
        return up, {"Parts": [{"PartNumber": 1, "ETag": e}]}

    s3.put_object(Bucket=bucket, Key="mcond", Body=b"existing")
    etag = s3.head_object(Bucket=bucket, Key="mcond")["ETag"]
    up, parts = upload("mcond", b"multipart")
    out["mpu inm existing"] = with_headers(s3, {"If-None-Match": "*"},
                                           s3.complete_multipart_upload, Bucket=bucket,
                                           Key="mcond", UploadId=up, MultipartUpload=parts)
    out["mpu im wrong"] = with_headers(s3, {"If-Match": '"ffffffffffffffffffffffffffffffff"'},
                                       s3.complete_multipart_upload, Bucket=bucket, Key="mcond",
                                       UploadId=up, MultipartUpload=parts)
    out["mpu kept"] = body_of("mcond").decode()
    out["mpu im right"] = with_headers(s3, {"If-Match": etag}, s3.complete_multipart_upload,
                                       Bucket=bucket, Key="mcond", UploadId=up,
                                       MultipartUpload=parts)
    out["mpu im right stored"] = body_of("mcond").decode()
    up, parts = upload("mcond-new", b"new")
    out["mpu im missing"] = with_headers(s3, {"If-Match": etag}, s3.complete_multipart_upload,
                                         Bucket=bucket, Key="mcond-new", UploadId=up,
                                         MultipartUpload=parts)
    out["mpu inm new"] = with_headers(s3, {"If-None-Match": "*"}, s3.complete_multipart_upload,
                                      Bucket=bucket, Key="mcond-new", UploadId=up,
                                      MultipartUpload=parts)
    out["mpu inm new stored"] = body_of("mcond-new").decode()


@section
def conditional_race():
    # 11. Racing writers: of N clients creating one key with If-None-Match: *, exactly one wins;
    # of N clients replacing a known version with If-Match, exactly one wins. Bodies of 2 MiB keep
    # the uploads in flight together; every body differs, so the survivor names the winner.
    n = 8
    clients = [client() for _ in range(n)]
    for kind in ("inm", "im"):
        key = "race-" + kind
        headers = {"If-None-Match": "*"}
        if kind == "im":
            s3.put_object(Bucket=bucket, Key=key, Body=b"base")
            headers = {"If-Match": s3.head_object(Bucket=bucket, Key=key)["ETag"]}
        barrier = threading.Barrier(n)
        results = [None] * n

        def run(i):
            data = bytes([65 + i]) * (2 << 20)
            barrier.wait(timeout=60)
            results[i] = with_headers(clients[i], headers, clients[i].put_object, Bucket=bucket,
                                      Key=key, Body=data)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        winners = [i for i, r in enumerate(results) if r == ["ok", None]]
        got = body_of(key)
        out["race " + kind] = {
            "winners": len(winners),
            "losers": sorted({json.dumps(r) for r in results if r != ["ok", None]}),
            "stored is winner": len(winners) == 1 and got == bytes([65 + winners[0]]) * (2 << 20),
        }



@section
def copy_range():
    # 4. UploadPartCopy with a range past the source's end: 400 InvalidArgument.
    s3.put_object(Bucket=bucket, Key="copy-src", Body=b"01234")
    up = s3.create_multipart_upload(Bucket=bucket, Key="copy-dst")["UploadId"]
    src = {"Bucket": bucket, "Key": "copy-src"}
    out["copy range outside"] = err(s3.upload_part_copy, Bucket=bucket, Key="copy-dst", UploadId=up,
                                    PartNumber=1, CopySource=src, CopySourceRange="bytes=0-21")
    out["copy range inside"] = err(s3.upload_part_copy, Bucket=bucket, Key="copy-dst", UploadId=up,
                                   PartNumber=1, CopySource=src, CopySourceRange="bytes=0-4")
    s3.abort_multipart_upload(Bucket=bucket, Key="copy-dst", UploadId=up)


@section
def list_echo():
    # 7. An empty continuation-token is echoed and lists from the start.
    s3.put_object(Bucket=bucket, Key="echo/a", Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, Prefix="echo/", ContinuationToken="")
    out["empty token"] = [r.get("ContinuationToken"), [o["Key"] for o in r.get("Contents", [])]]


@section
def metadata_bytes():
    # 8. A multi-valued header comes back as sent; a non-ASCII metadata value set the way the ceph
    # suite sets it comes back as the same bytes (botocore sends UTF-8; http.client decodes every
    # response header as ISO-8859-1, so the bytes are compared, not the decoded text).
    s3.put_object(Bucket=bucket, Key="enc", Body=b"x", ContentEncoding="deflate, gzip",
                  CacheControl="no-cache, no-store")
    h = s3.head_object(Bucket=bucket, Key="enc")
    out["content-encoding"] = [h.get("ContentEncoding"), h.get("CacheControl")]
    out["unicode meta put"] = with_headers(s3, {"x-amz-meta-meta1": "Hello World\xe9"},
                                           s3.put_object, Bucket=bucket, Key="uni", Body=b"bar")
    try:
        got = s3.get_object(Bucket=bucket, Key="uni")["Metadata"].get("meta1")
        out["unicode meta"] = got.encode("latin-1").decode("utf-8")
    except ClientError as e:
        out["unicode meta"] = e.response["Error"]["Code"]


@section
def list_buckets_pages():
    # 10. ListBuckets pagination as current SDKs send it (Debian's boto3 has no such parameters).
    members = s3.meta.service_model.operation_model("ListBuckets").input_shape
    if members is None or "MaxBuckets" not in members.members:
        out["list buckets"] = "unsupported by this boto3"
        return
    names = [f"{prefix}-lb{i}" for i in range(5)]
    for n in names:
        s3.create_bucket(Bucket=n)
    got, pages, token = [], 0, None
    for _ in range(10):
        kw = {"MaxBuckets": 2, "Prefix": prefix + "-lb"}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_buckets(**kw)
        pages += 1
        got += [b["Name"] for b in r["Buckets"]]
        regions = {b.get("BucketRegion") for b in r["Buckets"]}
        token = r.get("ContinuationToken")
        if not token:
            break
    out["list buckets"] = {"names": got, "pages": pages, "regions": sorted(map(str, regions)),
                           "prefix": r.get("Prefix")}
    pag = s3.get_paginator("list_buckets").paginate(Prefix=prefix + "-lb",
                                                     PaginationConfig={"PageSize": 3})
    out["list buckets paginator"] = [b["Name"] for p in pag for b in p["Buckets"]]
    out["list buckets region"] = [
        len(s3.list_buckets(Prefix=prefix + "-lb", BucketRegion=reg)["Buckets"])
        for reg in ("us-east-1", "eu-west-1")]


@section
def object_attributes():
    # 13. GetObjectAttributes: ETag, Checksum, ObjectParts (paged), StorageClass, ObjectSize.
    import base64
    every = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
    s3.put_object(Bucket=bucket, Key="attr-single", Body=b"hello", ChecksumAlgorithm="SHA256")
    r = s3.get_object_attributes(Bucket=bucket, Key="attr-single", ObjectAttributes=every)
    out["attr single"] = [r.get("ETag"), r.get("StorageClass"), r.get("ObjectSize"),
                          r.get("Checksum", {}).get("ChecksumSHA256"), "ObjectParts" in r,
                          r.get("LastModified") is not None]
    out["attr single want"] = [hashlib.md5(b"hello").hexdigest(), "STANDARD", 5,
                               base64.b64encode(hashlib.sha256(b"hello").digest()).decode()]
    r = s3.get_object_attributes(Bucket=bucket, Key="attr-single", ObjectAttributes=["ObjectSize"])
    out["attr only size"] = sorted(k for k in r if k != "ResponseMetadata")
    up = s3.create_multipart_upload(Bucket=bucket, Key="attr-multi")["UploadId"]
    sizes = [5 << 20, 5 << 20, 3]
    parts = []
    for i, size in enumerate(sizes, 1):
        e = s3.upload_part(Bucket=bucket, Key="attr-multi", UploadId=up, PartNumber=i,
                           Body=b"m" * size)["ETag"]
        parts.append({"PartNumber": i, "ETag": e})
    done = s3.complete_multipart_upload(Bucket=bucket, Key="attr-multi", UploadId=up,
                                        MultipartUpload={"Parts": parts})
    pages = []
    marker = 0
    for _ in range(5):
        r = s3.get_object_attributes(Bucket=bucket, Key="attr-multi", ObjectAttributes=every,
                                     MaxParts=2, PartNumberMarker=marker)
        op = r["ObjectParts"]
        pages.append([op.get("TotalPartsCount"), op.get("IsTruncated"),
                      [[p["PartNumber"], p["Size"]] for p in op.get("Parts", [])]])
        if not op.get("IsTruncated"):
            break
        marker = op["NextPartNumberMarker"]
    out["attr multi"] = [r.get("ETag") == done["ETag"].strip('"'), r.get("ObjectSize"), pages]
    out["attr bad name"] = err(s3.get_object_attributes, Bucket=bucket, Key="attr-single",
                               ObjectAttributes=["Bogus"])
    out["attr missing key"] = err(s3.get_object_attributes, Bucket=bucket, Key="attr-none",
                                  ObjectAttributes=["ETag"])


@section
def storage_class():
    # 16. STANDARD and REDUCED_REDUNDANCY stored and returned by HEAD/GET/List/attributes; a copy
    # onto itself is legal when it names a class or replaces the metadata.
    def head_class(key):
        return s3.head_object(Bucket=bucket, Key=key).get("StorageClass")

    s3.put_object(Bucket=bucket, Key="sc/rrs", Body=b"r", StorageClass="REDUCED_REDUNDANCY")
    s3.put_object(Bucket=bucket, Key="sc/std", Body=b"s", StorageClass="STANDARD")
    s3.put_object(Bucket=bucket, Key="sc/none", Body=b"n")
    g = s3.get_object(Bucket=bucket, Key="sc/rrs")
    out["sc head get"] = [head_class("sc/rrs"), g.get("StorageClass"), head_class("sc/std"),
                          head_class("sc/none")]
    out["sc list v2"] = {o["Key"]: o["StorageClass"] for o in
                         s3.list_objects_v2(Bucket=bucket, Prefix="sc/")["Contents"]}
    out["sc list v1"] = {o["Key"]: o["StorageClass"] for o in
                         s3.list_objects(Bucket=bucket, Prefix="sc/")["Contents"]}
    out["sc attributes"] = s3.get_object_attributes(
        Bucket=bucket, Key="sc/rrs", ObjectAttributes=["StorageClass"]).get("StorageClass")
    up = s3.create_multipart_upload(Bucket=bucket, Key="sc/mpu",
                                    StorageClass="REDUCED_REDUNDANCY")["UploadId"]
    e = s3.upload_part(Bucket=bucket, Key="sc/mpu", UploadId=up, PartNumber=1, Body=b"m")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="sc/mpu", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    out["sc mpu"] = head_class("sc/mpu")
    src = {"Bucket": bucket, "Key": "sc/std"}
    out["sc self copy plain"] = err(s3.copy_object, Bucket=bucket, Key="sc/std", CopySource=src)
    out["sc self copy class"] = err(s3.copy_object, Bucket=bucket, Key="sc/std", CopySource=src,
                                    StorageClass="REDUCED_REDUNDANCY")
    out["sc self copy class result"] = [head_class("sc/std"), body_of("sc/std").decode()]
    out["sc self copy back"] = err(s3.copy_object, Bucket=bucket, Key="sc/std", CopySource=src,
                                   StorageClass="STANDARD")
    out["sc self copy back result"] = head_class("sc/std")
    s3.put_object(Bucket=bucket, Key="sc/meta", Body=b"m", Metadata={"a": "1"},
                  StorageClass="REDUCED_REDUNDANCY")
    msrc = {"Bucket": bucket, "Key": "sc/meta"}
    out["sc self copy replace"] = err(s3.copy_object, Bucket=bucket, Key="sc/meta",
                                      CopySource=msrc, MetadataDirective="REPLACE",
                                      Metadata={"a": "2"})
    h = s3.head_object(Bucket=bucket, Key="sc/meta")
    out["sc self copy replace result"] = [h["Metadata"], h.get("StorageClass")]
    s3.copy_object(Bucket=bucket, Key="sc/copy", CopySource={"Bucket": bucket, "Key": "sc/rrs"})
    out["sc copy default"] = head_class("sc/copy")

print(json.dumps(out))
'''


@pytest.fixture(params=["one-drive", "erasure"])
def srv(request, server, erasure_server):
    return server if request.param == "one-drive" else erasure_server


@pytest.fixture(scope="module")
def sdk_results(tmp_path_factory):
    """Runs SDK_SCRIPT once per (interpreter, server), cached: run(python, server, section)."""
    return sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "conformance2_sdk.py", "cg")


PRECONDITION_FAILED = [412, "PreconditionFailed"]
OK = ["ok", None]


@pytest.mark.parametrize("py", _interpreters())
def test_conditional_put(sdk_results, srv, py):
    out = sdk_results(py, srv, "conditional_put")
    assert out["inm new"] == OK
    assert out["inm existing"] == PRECONDITION_FAILED
    assert out["inm existing kept"] == "first"
    assert out["im wrong"] == PRECONDITION_FAILED
    assert out["im wrong kept"] == "first"
    assert out["im right"] == OK
    assert out["im right stored"] == "fourth"
    assert out["im missing"] == [404, "NoSuchKey"]
    assert out["im missing stored"] == [404, "404"]


@pytest.mark.parametrize("py", _interpreters())
def test_conditional_complete_multipart(sdk_results, srv, py):
    out = sdk_results(py, srv, "conditional_complete")
    assert out["mpu inm existing"] == PRECONDITION_FAILED
    assert out["mpu im wrong"] == PRECONDITION_FAILED
    assert out["mpu kept"] == "existing"
    assert out["mpu im right"] == OK  # the upload survived the failed conditions
    assert out["mpu im right stored"] == "multipart"
    assert out["mpu im missing"] == [404, "NoSuchKey"]
    assert out["mpu inm new"] == OK
    assert out["mpu inm new stored"] == "new"


@pytest.mark.parametrize("py", _interpreters())
def test_conditional_put_racing_writers(sdk_results, srv, py):
    out = sdk_results(py, srv, "conditional_race")
    for kind in ("inm", "im"):
        r = out["race " + kind]
        assert r["winners"] == 1, (kind, r)
        assert r["losers"] == [json.dumps(PRECONDITION_FAILED)], (kind, r)
        assert r["stored is winner"], (kind, r)


# ---------------------------------------------------------------------------------------------
# raw requests
# ---------------------------------------------------------------------------------------------

def _xml(body):
    return ET.fromstring(body)


def _create_upload(srv, bucket, key):
    r = signed_request(srv, "POST", f"/{bucket}/{key}", query=[("uploads", "")])
    assert r.status == 200, r.body
    return _xml(r.body).find(S3_NS + "UploadId").text


def _complete_xml(parts):
    items = "".join(f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
                    for n, e in parts)
    return f"<CompleteMultipartUpload>{items}</CompleteMultipartUpload>".encode()


def test_part_reuploaded_while_first_in_flight(srv):
    """2. Part 1 is sent again while its first upload is still streaming; the first finishes last,
    so it is the part stored; Complete lists both uploads of part 1 in the order they finished."""
    client = make_client(srv)
    bucket = unique_bucket("cr")
    client.create_bucket(Bucket=bucket)
    key = "resend"
    up = _create_upload(srv, bucket, key)
    size = 256 << 10
    first_sent, go_on = threading.Event(), threading.Event()
    result = {}

    def slow_body():
        yield b"A" * (size // 2)
        first_sent.set()
        go_on.wait(timeout=60)
        yield b"A" * (size - size // 2)

    def upload_a():
        result["a"] = signed_request(srv, "PUT", f"/{bucket}/{key}",
                                     query=[("partNumber", "1"), ("uploadId", up)],
                                     headers={"Content-Length": str(size)}, body=slow_body(),
                                     timeout=60)

    t = threading.Thread(target=upload_a)
    t.start()
    assert first_sent.wait(timeout=30)
    etag_b = client.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1,
                                Body=b"B" * size)["ETag"]
    go_on.set()
    t.join(timeout=60)
    ra = result["a"]
    assert ra.status == 200, ra.body
    etag_a = ra.header("ETag")
    assert etag_a == '"%s"' % hashlib.md5(b"A" * size).hexdigest()
    r = signed_request(srv, "POST", f"/{bucket}/{key}", query=[("uploadId", up)],
                       body=_complete_xml([(1, etag_b), (1, etag_a)]))
    assert r.status == 200, r.body
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == b"A" * size
    # Numbers going down are still out of order.
    up = _create_upload(srv, bucket, key)
    e1 = client.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1,
                            Body=b"x" * (5 << 20))["ETag"]
    e2 = client.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=b"y")["ETag"]
    r = signed_request(srv, "POST", f"/{bucket}/{key}", query=[("uploadId", up)],
                       body=_complete_xml([(2, e2), (1, e1)]))
    assert_s3_error(r.status, r.headers, r.body, "InvalidPartOrder", 400)


@pytest.mark.parametrize("rng", ["bytes=0-21", "bytes=20-21", "bytes=5-5"])
def test_upload_part_copy_range_outside_source(srv, rng):
    """4. A copy-source range past the source's end is 400 InvalidArgument (not GET's 416)."""
    client = make_client(srv)
    bucket = unique_bucket("cr")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="src", Body=b"01234")
    up = _create_upload(srv, bucket, "dst")
    r = signed_request(srv, "PUT", f"/{bucket}/dst", query=[("partNumber", "1"), ("uploadId", up)],
                       headers={"x-amz-copy-source": f"/{bucket}/src",
                                "x-amz-copy-source-range": rng})
    assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400,
                    "Range specified is not valid for source object of size: 5")
    assert _xml(r.body).findtext("ArgumentName") == "x-amz-copy-source-range"
    # A range inside the source still copies.
    r = signed_request(srv, "PUT", f"/{bucket}/dst", query=[("partNumber", "1"), ("uploadId", up)],
                       headers={"x-amz-copy-source": f"/{bucket}/src",
                                "x-amz-copy-source-range": "bytes=1-4"})
    assert r.status == 200, r.body


def _signed_bytes(srv, method, path, headers, body=b"", canonical_value=None, query=None):
    """A SigV4 request whose header values are bytes, sent exactly as given. The canonical request
    holds canonical_value(v) for each value (default: the bytes themselves, as Go clients sign)."""
    import datetime
    import hmac
    from conftest import canonical_query, signing_key
    canonical_value = canonical_value or (lambda v: v)
    when = datetime.datetime.now(datetime.timezone.utc)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    scope = f"{when.strftime('%Y%m%d')}/us-east-1/s3/aws4_request"
    payload = hashlib.sha256(body).hexdigest()
    hdrs = {"host": srv.address.encode(), "x-amz-date": amz_date.encode(),
            "x-amz-content-sha256": payload.encode()}
    hdrs.update({k.lower(): v for k, v in headers.items()})
    names = sorted(hdrs)
    cq = canonical_query(query or [])
    creq = b"\n".join([method.encode(), path.encode(), cq.encode(),
                       b"".join(k.encode() + b":" + canonical_value(hdrs[k]).strip() + b"\n"
                                for k in names),
                       ";".join(names).encode(), payload.encode()])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq).hexdigest()])
    sig = hmac.new(signing_key(srv.secret_key, when.strftime("%Y%m%d")), sts.encode(),
                   hashlib.sha256).hexdigest()
    hdrs["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={srv.access_key}/{scope}, "
                             f"SignedHeaders={';'.join(names)}, Signature={sig}").encode()
    return http_send(srv, method, path + ("?" + cq if cq else ""), hdrs, body)


def _raw_header(r, name):
    """A response header's bytes as they came (http.client decodes them as ISO-8859-1)."""
    values = [v.encode("latin-1") for k, v in r.headers if k.lower() == name]
    return values[0] if len(values) == 1 else values


@pytest.mark.parametrize("py", _interpreters())
def test_upload_part_copy_range_sdk(sdk_results, srv, py):
    out = sdk_results(py, srv, "copy_range")
    assert out["copy range outside"] == [400, "InvalidArgument"]
    assert out["copy range inside"] == OK


@pytest.mark.parametrize("py", _interpreters())
def test_list_empty_continuation_token_echoed(sdk_results, srv, py):
    out = sdk_results(py, srv, "list_echo")
    assert out["empty token"] == ["", ["echo/a"]]


@pytest.mark.parametrize("py", _interpreters())
def test_metadata_round_trips_as_sent_sdk(sdk_results, srv, py):
    out = sdk_results(py, srv, "metadata_bytes")
    assert out["content-encoding"] == ["deflate, gzip", "no-cache, no-store"]
    assert out["unicode meta put"] == OK
    assert out["unicode meta"] == "Hello World\xe9"


@pytest.mark.parametrize("py", _interpreters())
def test_list_buckets_pagination_sdk(sdk_results, srv, py):
    out = sdk_results(py, srv, "list_buckets_pages")
    if out["list buckets"] == "unsupported by this boto3":
        pytest.skip(f"boto3 {out['boto3']} has no ListBuckets pagination (raw test covers it)")
    lb = out["list buckets"]
    names = [n for n in lb["names"]]
    assert len(names) == 5 and names == sorted(names), lb
    assert lb["pages"] == 3 and lb["regions"] == ["us-east-1"], lb
    assert lb["prefix"] and lb["prefix"].endswith("-lb"), lb
    assert out["list buckets paginator"] == names
    assert out["list buckets region"] == [5, 0]


@pytest.mark.parametrize("path", ["/%FF%FE", "/{bucket}/%C3%28", "/{bucket}/ok%80key"])
def test_non_utf8_uri_is_invalid_uri(srv, path):
    """7. A path that is not UTF-8 once decoded: 400 InvalidURI, signed or anonymous."""
    client = make_client(srv)
    bucket = unique_bucket("cu")
    client.create_bucket(Bucket=bucket)
    path = path.format(bucket=bucket)
    for r in (http_send(srv, "GET", path),
              http_send(srv, "PUT", path, body=b"x"),
              _signed_bytes(srv, "PUT", path, {}, b"x")):
        assert_s3_error(r.status, r.headers, r.body, "InvalidURI", 400,
                        "Couldn't parse the specified URI.")
    assert client.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


@pytest.mark.parametrize("prefix", ["\n", "\r", "\t", "a\r\nb", "x\x7f"])
def test_list_prefix_control_characters_echoed(srv, prefix):
    """7. Without encoding-type=url the prefix comes back as sent (CR survives as &#13;)."""
    client = make_client(srv)
    bucket = unique_bucket("cp")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key=prefix + "k", Body=b"")
    for query in ([("list-type", "2")], []):
        r = signed_request(srv, "GET", f"/{bucket}", query=query + [("prefix", prefix)])
        assert r.status == 200, r.body
        root = _xml(r.body)
        assert root.findtext(S3_NS + "Prefix") == prefix
        assert [c.findtext(S3_NS + "Key") for c in root.findall(S3_NS + "Contents")] == \
            [prefix + "k"]


def test_list_v2_empty_continuation_token_raw(srv):
    client = make_client(srv)
    bucket = unique_bucket("ct")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="a", Body=b"")
    r = signed_request(srv, "GET", f"/{bucket}", query=[("list-type", "2"),
                                                          ("continuation-token", "")])
    assert r.status == 200, r.body
    root = _xml(r.body)
    token = root.find(S3_NS + "ContinuationToken")
    assert token is not None and (token.text or "") == ""
    assert root.findtext(S3_NS + "KeyCount") == "1"
    # Without the parameter there is no element.
    r = signed_request(srv, "GET", f"/{bucket}", query=[("list-type", "2")])
    assert _xml(r.body).find(S3_NS + "ContinuationToken") is None


@pytest.mark.parametrize("value,botocore_style", [
    (b"caf\xc3\xa9", False),   # UTF-8, signed as sent (Go, Java, curl)
    (b"caf\xe9", False),        # ISO-8859-1, signed as sent
    (b"caf\xe9", True),         # ISO-8859-1 on the wire, its UTF-8 form signed (botocore)
    (b"a,  b ,c", False),       # commas and a run of spaces
])
def test_metadata_bytes_round_trip_raw(srv, value, botocore_style):
    """8. User metadata comes back byte for byte, whatever the bytes: single PUT, multipart
    upload, and a copy of the object."""
    client = make_client(srv)
    bucket = unique_bucket("cm")
    client.create_bucket(Bucket=bucket)

    def canonical(v):
        if botocore_style:
            v = v.decode("latin-1").encode("utf-8")
        return b" ".join(p for p in v.split(b" ") if p)  # SigV4 squeezes runs of spaces

    meta = {"x-amz-meta-v": value}
    r = _signed_bytes(srv, "PUT", f"/{bucket}/k", meta, b"x", canonical_value=canonical)
    assert r.status == 200, r.body
    r = _signed_bytes(srv, "POST", f"/{bucket}/mpu", meta, canonical_value=canonical,
                      query=[("uploads", "")])
    assert r.status == 200, r.body
    up = _xml(r.body).find(S3_NS + "UploadId").text
    e = client.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
    client.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    client.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "k"})
    for key in ("k", "mpu", "copy"):
        r = signed_request(srv, "HEAD", f"/{bucket}/{key}")
        assert _raw_header(r, "x-amz-meta-v") == value, key


def test_header_on_several_lines_joined(srv):
    """8. A header sent on two lines is one comma-joined value (RFC 9110), as S3 stores it."""
    client = make_client(srv)
    bucket = unique_bucket("cl")
    client.create_bucket(Bucket=bucket)
    import http.client
    hdrs, _ = sign_v4("PUT", f"/{bucket}/k", [], {"host": srv.address,
                                                  "x-amz-meta-multi": "one,two",
                                                  "content-encoding": "deflate,gzip"},
                      "UNSIGNED-PAYLOAD", srv.access_key, srv.secret_key)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        conn.putrequest("PUT", f"/{bucket}/k", skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            if k in ("x-amz-meta-multi", "content-encoding"):
                for part in v.split(","):
                    conn.putheader(k, part)
            else:
                conn.putheader(k, v)
        conn.putheader("Content-Length", "1")
        conn.endheaders()
        conn.send(b"x")
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
    finally:
        conn.close()
    h = client.head_object(Bucket=bucket, Key="k")
    assert h["Metadata"]["multi"] == "one,two"
    assert h["ContentEncoding"] == "deflate,gzip"


@pytest.mark.parametrize("py", _interpreters())
def test_get_object_attributes(sdk_results, srv, py):
    out = sdk_results(py, srv, "object_attributes")
    assert out["attr single"] == out["attr single want"] + [False, True]
    assert out["attr only size"] == ["LastModified", "ObjectSize"]
    same_etag, size, pages = out["attr multi"]
    assert same_etag and size == (10 << 20) + 3
    assert pages == [[3, True, [[1, 5 << 20], [2, 5 << 20]]], [3, False, [[3, 3]]]]
    assert out["attr bad name"] == [400, "InvalidArgument"]
    assert out["attr missing key"] == [404, "NoSuchKey"]


def test_get_object_attributes_header_missing(srv):
    client = make_client(srv)
    bucket = unique_bucket("ca")
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="k", Body=b"x")
    r = signed_request(srv, "GET", f"/{bucket}/k", query=[("attributes", "")])
    assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400,
                    "x-amz-object-attributes header")
    r = signed_request(srv, "GET", f"/{bucket}/k", query=[("attributes", "")],
                       headers={"x-amz-object-attributes": "ObjectSize, ETag"})
    assert r.status == 200, r.body
    root = _xml(r.body)
    assert root.tag == S3_NS + "GetObjectAttributesResponse"
    assert root.findtext(S3_NS + "ObjectSize") == "1"
    assert root.findtext(S3_NS + "ETag") == hashlib.md5(b"x").hexdigest()


def test_list_buckets_pagination_raw(srv):
    """10. ListBuckets pages by max-buckets / continuation-token, filtered by prefix and region
    (raw: Debian's boto3 has no such parameters)."""
    client = make_client(srv)
    prefix = unique_bucket("lbr")
    names = sorted(f"{prefix}-{i}" for i in range(5))
    for n in names:
        client.create_bucket(Bucket=n)

    def page(params):
        r = signed_request(srv, "GET", "/", query=params)
        assert r.status == 200, r.body
        root = _xml(r.body)
        got = [b.findtext(S3_NS + "Name") for b in root.iter(S3_NS + "Bucket")]
        regions = {b.findtext(S3_NS + "BucketRegion") for b in root.iter(S3_NS + "Bucket")}
        return got, root.findtext(S3_NS + "ContinuationToken"), root.findtext(S3_NS + "Prefix"), \
            regions

    got, token, echoed, seen = [], None, None, set()
    for _ in range(5):
        params = [("max-buckets", "2"), ("prefix", prefix)]
        if token:
            params.append(("continuation-token", token))
        names_page, token, echoed, regions = page(params)
        got += names_page
        seen |= regions
        if not token:
            break
    assert got == names and echoed == prefix and seen == {"us-east-1"}
    assert page([("prefix", prefix), ("bucket-region", "us-east-1")])[0] == names
    assert page([("prefix", prefix), ("bucket-region", "eu-west-1")])[0] == []
    # Without parameters: every bucket, no token, no Prefix element.
    everything, token, echoed, _ = page([])
    assert set(names) <= set(everything) and token is None and echoed is None
    for bad in ("0", "10001", "x"):
        r = signed_request(srv, "GET", "/", query=[("max-buckets", bad)])
        assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400, "max-buckets")


@pytest.mark.parametrize("py", _interpreters())
def test_storage_class_stored_and_returned(sdk_results, srv, py):
    out = sdk_results(py, srv, "storage_class")
    rrs = "REDUCED_REDUNDANCY"
    # HEAD/GET name the class only when it is not STANDARD (as AWS).
    assert out["sc head get"] == [rrs, rrs, None, None]
    want = {"sc/rrs": rrs, "sc/std": "STANDARD", "sc/none": "STANDARD"}
    assert out["sc list v2"] == want and out["sc list v1"] == want
    assert out["sc attributes"] == rrs
    assert out["sc mpu"] == rrs
    assert out["sc self copy plain"] == [400, "InvalidRequest"]
    assert out["sc self copy class"] == OK
    assert out["sc self copy class result"] == [rrs, "s"]
    assert out["sc self copy back"] == OK and out["sc self copy back result"] is None
    assert out["sc self copy replace"] == OK
    # REPLACE without a class header makes it STANDARD, as a copy without one does.
    assert out["sc self copy replace result"] == [{"a": "2"}, None]
    assert out["sc copy default"] is None


@pytest.mark.parametrize("size", [5, 300 << 10])
def test_self_copy_keeps_object_readable(srv, size):
    """A copy onto itself rewrites the metadata only; on the erasure layout every drive must keep
    its own shard index (on main each drive got one drive's index, and the object could no
    longer be read: 'only 1 of 4 shards readable')."""
    client = make_client(srv)
    bucket = unique_bucket("cs")
    client.create_bucket(Bucket=bucket)
    data = os.urandom(size)
    client.put_object(Bucket=bucket, Key="k", Body=data, Metadata={"a": "1"})
    src = {"Bucket": bucket, "Key": "k"}
    client.copy_object(Bucket=bucket, Key="k", CopySource=src, MetadataDirective="REPLACE",
                       Metadata={"a": "2"})
    got = client.get_object(Bucket=bucket, Key="k")
    assert got["Metadata"] == {"a": "2"} and got["Body"].read() == data
    client.copy_object(Bucket=bucket, Key="k", CopySource=src, StorageClass="REDUCED_REDUNDANCY")
    got = client.get_object(Bucket=bucket, Key="k")
    assert got["StorageClass"] == "REDUCED_REDUNDANCY" and got["Body"].read() == data


def test_conditional_put_race_across_cluster_nodes():
    """11. Racing conditional writers on different nodes of a cluster: the check runs under the
    distributed key lock, so exactly one If-None-Match: * writer wins there too."""
    from botocore.exceptions import ClientError
    from cluster_util import Cluster
    c = Cluster(nodes=2, drives=2)
    try:
        c.start()
        clients = [c.client(i % 2) for i in range(6)]
        bucket = unique_bucket("cc")
        clients[0].create_bucket(Bucket=bucket)
        for round_ in range(2):
            key = f"race-{round_}"
            barrier = threading.Barrier(len(clients))
            results = [None] * len(clients)

            def run(i):
                def add(request, **_):
                    request.headers["If-None-Match"] = "*"
                cl = clients[i]
                cl.meta.events.register_first("before-sign.s3.PutObject", add)
                try:
                    barrier.wait(timeout=60)
                    cl.put_object(Bucket=bucket, Key=key, Body=bytes([65 + i]) * (1 << 20))
                    results[i] = "ok"
                except ClientError as e:
                    results[i] = e.response["Error"]["Code"]
                finally:
                    cl.meta.events.unregister("before-sign.s3.PutObject", add)

            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            winners = [i for i, r in enumerate(results) if r == "ok"]
            assert len(winners) == 1, results
            assert sorted(set(results) - {"ok"}) == ["PreconditionFailed"], results
            got = clients[1].get_object(Bucket=bucket, Key=key)["Body"].read()
            assert got == bytes([65 + winners[0]]) * (1 << 20)
    finally:
        c.cleanup()
