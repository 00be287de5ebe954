"""Bad input gets a clear S3 error (XML Code, HTTP status, x-amz-request-id), never a crash,
a hang, or a write outside the data directory. After each case the server must still answer."""

import base64
import datetime
import hashlib
import os
import time
import uuid

import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import (HOST, REGION, UNSIGNED, assert_s3_error, assert_server_alive,
                      aws_chunked_body, aws_chunked_length, flip_hex_digit, http_send,
                      make_client, parse_raw_response, raw_exchange, seeded_bytes, sign_v4,
                      signed_request, unique_bucket)

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _server_still_answers(server):
    yield
    assert_server_alive(server)


def check(resp, code, status, message_contains=None):
    return assert_s3_error(resp.status, resp.headers, resp.body, code, status, message_contains)


def check_requests(resp, code, status, message_contains=None):
    return assert_s3_error(resp.status_code, resp.headers, resp.content, code, status,
                           message_contains)


def botocore_signed(srv, method, path, body=b"", headers=None, secret=None, access=None):
    """A request signed by botocore's own S3 SigV4 signer; returns (url, headers)."""
    creds = Credentials(access or srv.access_key, secret or srv.secret_key)
    hdrs = dict(headers or {})
    if method in ("PUT", "POST"):
        hdrs.setdefault("Content-Length", str(len(body)))
    req = AWSRequest(method=method, url=srv.url(path), data=body, headers=hdrs)
    S3SigV4Auth(creds, "s3", REGION).add_auth(req)
    return req.url, dict(req.headers.items())


# ---------------------------------------------------------------------------------------------
# authentication
# ---------------------------------------------------------------------------------------------

def test_wrong_secret(server, bucket):
    r = signed_request(server, "GET", f"/{bucket}", secret_key="wrong-secret-key-123")
    check(r, "SignatureDoesNotMatch", 403)
    # boto3 sees the same
    client = make_client(server, secret_key="not-the-right-secret")
    with pytest.raises(Exception) as e:
        client.list_buckets()
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_unknown_access_key(server, bucket):
    r = signed_request(server, "GET", f"/{bucket}", access_key="AKNOSUCHUSER0000",
                       secret_key="whatever-secret")
    check(r, "InvalidAccessKeyId", 403)


def test_tampered_signature(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="obj", Body=b"payload")
    url, headers = botocore_signed(server, "GET", f"/{bucket}/obj")
    r = requests.get(url, headers=headers, timeout=30)
    assert r.status_code == 200 and r.content == b"payload"
    auth = headers["Authorization"]
    sig = auth.rsplit("Signature=", 1)[1]
    headers["Authorization"] = auth[: -len(sig)] + flip_hex_digit(sig, 17)
    r = requests.get(url, headers=headers, timeout=30)
    check_requests(r, "SignatureDoesNotMatch", 403)
    # a signed header changed after signing
    url, headers = botocore_signed(server, "PUT", f"/{bucket}/obj2", body=b"abc",
                                   headers={"x-amz-meta-color": "red"})
    headers["x-amz-meta-color"] = "blue"
    r = requests.put(url, headers=headers, data=b"abc", timeout=30)
    check_requests(r, "SignatureDoesNotMatch", 403)
    # a different key in the path than the one signed
    url, headers = botocore_signed(server, "GET", f"/{bucket}/obj")
    r = requests.get(url + "x", headers=headers, timeout=30)
    check_requests(r, "SignatureDoesNotMatch", 403)


def test_anonymous_requests_denied(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="private", Body=b"secret data")
    for method, path in [("GET", f"/{bucket}/private"), ("GET", f"/{bucket}"), ("GET", "/"),
                         ("PUT", f"/{bucket}/anon-put"), ("DELETE", f"/{bucket}/private")]:
        r = http_send(server, method, path, body=b"x" if method == "PUT" else b"")
        check(r, "AccessDenied", 403)
    r = http_send(server, "HEAD", f"/{bucket}/private")
    assert r.status == 403 and r.body == b""
    assert s3.get_object(Bucket=bucket, Key="private")["Body"].read() == b"secret data"
    with pytest.raises(Exception):
        s3.head_object(Bucket=bucket, Key="anon-put")


def test_malformed_authorization_header(server, bucket):
    for value in ["AWS4-HMAC-SHA256 garbage", "Bearer abc",
                  "AWS4-HMAC-SHA256 Credential=AK/20200101/us-east-1/s3/aws4_request, "
                  "SignedHeaders=host, Signature=zz"]:
        r = http_send(server, "GET", f"/{bucket}", headers={
            "Authorization": value, "x-amz-date": "20200101T000000Z",
            "x-amz-content-sha256": UNSIGNED})
        assert r.status in (400, 403), r
        check(r, ("AuthorizationHeaderMalformed", "AccessDenied", "SignatureDoesNotMatch",
                  "InvalidArgument", "InvalidAccessKeyId", "RequestTimeTooSkewed",
                  "MissingSecurityHeader", "InvalidRequest", "NotImplemented"), r.status)


def test_wrong_region_in_scope(server, bucket):
    """A scope naming another region: AWS answers AuthorizationHeaderMalformed; MinIO without
    a configured region accepts any. Either is fine, but never a 5xx or a non-S3 error."""
    when = datetime.datetime.now(datetime.timezone.utc)
    hdrs, _ = sign_v4("GET", f"/{bucket}", [], {"host": server.address}, UNSIGNED,
                      server.access_key, server.secret_key, when=when, region="eu-west-7")
    r = http_send(server, "GET", f"/{bucket}", hdrs)
    assert r.status in (200, 400, 403), r
    if r.status != 200:
        check(r, ("AuthorizationHeaderMalformed", "SignatureDoesNotMatch", "InvalidRegion",
                  "AuthorizationQueryParametersError"), r.status)


def test_expired_presigned_url(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"soon gone")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"},
                                    ExpiresIn=1)
    time.sleep(2.2)
    r = requests.get(url, timeout=30)
    check_requests(r, "AccessDenied", 403, message_contains="expired")


def test_presigned_tampered_and_bad_expiry(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"},
                                    ExpiresIn=100)
    r = requests.get(url.replace("X-Amz-Expires=100", "X-Amz-Expires=1000"), timeout=30)
    check_requests(r, "SignatureDoesNotMatch", 403)
    # more than 7 days is refused outright
    r = requests.get(url.replace("X-Amz-Expires=100", "X-Amz-Expires=604801"), timeout=30)
    assert r.status_code in (400, 403)
    check_requests(r, ("AuthorizationQueryParametersError", "SignatureDoesNotMatch",
                       "AccessDenied", "InvalidArgument"), r.status_code)


def test_request_time_too_skewed(server, bucket):
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    r = signed_request(server, "GET", f"/{bucket}", when=old)
    check(r, "RequestTimeTooSkewed", 403)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=20)
    r = signed_request(server, "GET", f"/{bucket}", when=future)
    check(r, "RequestTimeTooSkewed", 403)
    # within 15 minutes is fine
    slightly = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    r = signed_request(server, "GET", f"/{bucket}", when=slightly)
    assert r.status == 200, r


# ---------------------------------------------------------------------------------------------
# payload integrity
# ---------------------------------------------------------------------------------------------

def _chunked_put(server, path, data, chunk_size, corrupt_chunk=None, decoded_len=None):
    enc_len = aws_chunked_length(len(data), chunk_size)
    headers = {
        "host": server.address,
        "content-encoding": "aws-chunked",
        "content-length": str(enc_len),
        "x-amz-decoded-content-length": str(len(data) if decoded_len is None else decoded_len),
    }
    hdrs, ctx = sign_v4("PUT", path, [], headers, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                        server.access_key, server.secret_key)
    body = aws_chunked_body(data, chunk_size, ctx, corrupt_chunk=corrupt_chunk)
    assert len(body) == enc_len
    return http_send(server, "PUT", path, hdrs, body, timeout=60)


def test_streaming_signed_payload_ok(server, s3, bucket):
    data = seeded_bytes(150 * 1024 + 3, seed=4)
    r = _chunked_put(server, f"/{bucket}/chunked-ok", data, 64 * 1024)
    assert r.status == 200, r
    assert r.header("ETag") == '"%s"' % hashlib.md5(data).hexdigest()
    got = s3.get_object(Bucket=bucket, Key="chunked-ok")
    assert got["Body"].read() == data
    assert got.get("ContentEncoding") in (None, ""), "aws-chunked must not be stored"


@pytest.mark.parametrize("corrupt", [0, 1, 3], ids=["first", "middle", "final-empty"])
def test_streaming_bad_chunk_signature(server, s3, bucket, corrupt):
    data = seeded_bytes(150 * 1024 + 3, seed=5)  # chunks: 64K, 64K, 22K+3, final 0
    key = f"chunked-bad-{corrupt}"
    r = _chunked_put(server, f"/{bucket}/{key}", data, 64 * 1024, corrupt_chunk=corrupt)
    check(r, "SignatureDoesNotMatch", 403)
    with pytest.raises(Exception) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert key not in [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_streaming_decoded_length_mismatch(server, s3, bucket):
    data = seeded_bytes(100 * 1024, seed=6)
    r = _chunked_put(server, f"/{bucket}/chunked-len", data, 64 * 1024, decoded_len=len(data) + 10)
    assert 400 <= r.status < 500, r
    check(r, ("IncompleteBody", "SignatureDoesNotMatch", "InvalidRequest", "InvalidArgument"),
          r.status)
    with pytest.raises(Exception):
        s3.head_object(Bucket=bucket, Key="chunked-len")


def test_content_sha256_mismatch(server, s3, bucket):
    body = b"the real body"
    wrong = hashlib.sha256(b"another body").hexdigest()
    r = signed_request(server, "PUT", f"/{bucket}/sha-mismatch", body=body, payload_hash=wrong)
    check(r, "XAmzContentSHA256Mismatch", 400)
    with pytest.raises(Exception):
        s3.head_object(Bucket=bucket, Key="sha-mismatch")
    # garbage in the header is rejected too
    r = signed_request(server, "PUT", f"/{bucket}/sha-garbage", body=body, payload_hash="nothex")
    assert r.status in (400, 403), r
    check(r, ("XAmzContentSHA256Mismatch", "InvalidArgument", "SignatureDoesNotMatch",
              "AuthorizationHeaderMalformed", "InvalidRequest"), r.status)


def test_unsigned_payload_accepted(server, s3, bucket):
    r = signed_request(server, "PUT", f"/{bucket}/unsigned", body=b"unsigned body",
                       payload_hash=UNSIGNED)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="unsigned")["Body"].read() == b"unsigned body"


def test_wrong_content_md5(server, s3, bucket):
    body = b"md5 body"
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    r = signed_request(server, "PUT", f"/{bucket}/md5", body=body, headers={"content-md5": bad})
    check(r, "BadDigest", 400)


def test_missing_content_length(server, bucket):
    hdrs, _ = sign_v4("PUT", f"/{bucket}/nolen", [], {"host": server.address}, UNSIGNED,
                      server.access_key, server.secret_key)
    req = f"PUT /{bucket}/nolen HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    buf = raw_exchange(server, (req + "Connection: close\r\n\r\n").encode(), timeout=10)
    status, headers, body = parse_raw_response(buf)
    assert status is not None, buf[:300]
    assert_s3_error(status, headers, body, "MissingContentLength", 411)


# ---------------------------------------------------------------------------------------------
# malformed XML bodies
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"<Delete><Object><Key>x</Key></Object>",          # truncated
    b"this is not xml",
    b"<Delete><Object><Key>x</Key></Object></Wrong>",
], ids=["truncated", "text", "mismatched"])
def test_delete_objects_malformed_xml(server, bucket, body):
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = signed_request(server, "POST", f"/{bucket}", query=[("delete", "")], body=body,
                       headers={"content-md5": md5, "content-type": "application/xml"})
    check(r, "MalformedXML", 400)


@pytest.mark.parametrize("body,codes", [
    (b"garbage", ("MalformedXML",)),
    (b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>", ("MalformedXML",)),
    (b"<CompleteMultipartUpload></CompleteMultipartUpload>", ("MalformedXML", "InvalidRequest")),
    (b"<CompleteMultipartUpload><Part><PartNumber>abc</PartNumber><ETag>x</ETag></Part>"
     b"</CompleteMultipartUpload>", ("MalformedXML", "InvalidArgument", "InvalidPart")),
], ids=["garbage", "truncated", "no-parts", "bad-number"])
def test_complete_multipart_malformed_xml(server, s3, bucket, body, codes):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=b"x" * 10)
    r = signed_request(server, "POST", f"/{bucket}/mp", query=[("uploadId", uid)], body=body,
                       headers={"content-type": "application/xml"})
    check(r, codes, 400)
    # the upload is still there and can be aborted
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid)


# ---------------------------------------------------------------------------------------------
# ranges, missing things, unsupported things
# ---------------------------------------------------------------------------------------------

def test_invalid_ranges(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=seeded_bytes(1000))
    for rng in ("bytes=1000-", "bytes=1000-2000", "bytes=99999-"):
        r = signed_request(server, "GET", f"/{bucket}/r", headers={"range": rng})
        err = check(r, "InvalidRange", 416)
        assert r.header("Content-Range") in (None, "bytes */1000"), r.header("Content-Range")
    # a syntactically invalid Range header is ignored (RFC 9110): full object
    r = signed_request(server, "GET", f"/{bucket}/r", headers={"range": "bytes=abc"})
    assert r.status in (200, 416), r
    if r.status == 200:
        assert len(r.body) == 1000


def test_no_such_bucket(server):
    name = unique_bucket("nob")
    r = signed_request(server, "GET", f"/{name}")
    err = check(r, "NoSuchBucket", 404)
    assert err.get("BucketName") in (None, name)
    r = signed_request(server, "GET", f"/{name}/some/key")
    check(r, "NoSuchBucket", 404)
    r = signed_request(server, "PUT", f"/{name}/some/key", body=b"data")
    check(r, "NoSuchBucket", 404)


def test_no_such_key(server, bucket):
    r = signed_request(server, "GET", f"/{bucket}/missing/key")
    err = check(r, "NoSuchKey", 404)
    assert err.get("Key") in (None, "missing/key")
    r = signed_request(server, "HEAD", f"/{bucket}/missing/key")
    assert r.status == 404
    assert r.body == b""
    assert r.header("x-amz-request-id")


def test_unsupported_subresource(server, bucket):
    r = signed_request(server, "PUT", f"/{bucket}", query=[("replication", "")],
                       body=b"<ReplicationConfiguration/>")
    check(r, "NotImplemented", 501)
    r = signed_request(server, "GET", f"/{bucket}", query=[("versioning", "")])
    assert r.status == 200, r
    assert b"VersioningConfiguration" in r.body
    assert b"<Status>Enabled</Status>" not in r.body


def test_method_not_allowed_or_not_implemented(server, bucket):
    r = signed_request(server, "PATCH", f"/{bucket}/x", body=b"")
    assert r.status in (400, 405, 501), r
    check(r, ("MethodNotAllowed", "NotImplemented", "InvalidRequest"), r.status)


# ---------------------------------------------------------------------------------------------
# keys that try to escape the data directory
# ---------------------------------------------------------------------------------------------

ESCAPES = [
    "/{b}/../../{m}",
    "/{b}/../../../../../../../../tmp/{m}",
    "/{b}/%2e%2e/%2e%2e/{m}",
    "/{b}/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/tmp/{m}",
    "/{b}/..%2f..%2f..%2f..%2f..%2f..%2f..%2ftmp%2f{m}",
    "/{b}/%2e%2e%2f%2e%2e%2f{m}",
    "/{b}/a/../../../{m}",
    "/{b}/./{m}",
    "/{b}/a/%00b",
    "/{b}/a%00/{m}",
    "//tmp/{m}",
    "//{b}/../{m}",
    "/{b}/.rdmastor.sys/{m}",
    "/{b}/a//b/{m}",
    "/../{m}",
    "/%2e%2e/{m}",
]


def _files_named(root, name, limit=200000):
    found, n = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        n += len(filenames) + len(dirnames)
        if n > limit:
            break
        if name in filenames or name in dirnames:
            found.append(os.path.join(dirpath, name))
    return found


@pytest.mark.parametrize("template", ESCAPES, ids=[t.replace("{b}", "B").replace("{m}", "M")
                                                  .replace("//", "/<empty>/") for t in ESCAPES])
def test_path_escape_put_rejected(server, s3, bucket, template):
    marker = f"escape-{uuid.uuid4().hex[:12]}"
    path = template.format(b=bucket, m=marker)
    r = signed_request(server, "PUT", path, body=b"escaped!")
    assert 400 <= r.status < 500, f"PUT {path} -> {r}"
    check(r, ("XMinioInvalidObjectName", "InvalidArgument", "InvalidRequest", "InvalidURI",
              "InvalidBucketName", "NoSuchBucket", "KeyTooLongError", "MethodNotAllowed",
              "AccessDenied", "SignatureDoesNotMatch", "InvalidObjectName"), r.status)
    # nothing was written anywhere outside the data directory
    candidates = [f"/tmp/{marker}", f"/{marker}", f"/etc/{marker}",
                  os.path.join(os.getcwd(), marker),
                  os.path.join(server.base, marker),
                  os.path.join(os.path.dirname(server.datadir), marker)]
    for c in candidates:
        assert not os.path.exists(c), f"PUT {path} wrote {c}"
    outside = [p for p in _files_named(server.base, marker)
               if not os.path.abspath(p).startswith(os.path.abspath(server.datadir) + os.sep)]
    assert not outside, f"PUT {path} wrote outside the data dir: {outside}"
    # and no object appeared under a normalised name either
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert not any(marker in k for k in keys), keys


GET_ESCAPES = ["/{b}/../../etc/passwd", "//etc/passwd", "/{b}/%2e%2e/%2e%2e/etc/passwd",
               "/{b}/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd", "/../../../../../../etc/passwd"]


@pytest.mark.parametrize("path", GET_ESCAPES, ids=[p.replace("{b}", "B").replace("//", "/<empty>/")
                                                     for p in GET_ESCAPES])
def test_path_escape_get_rejected(server, bucket, path):
    path = path.format(b=bucket)
    r = signed_request(server, "GET", path)
    assert 400 <= r.status < 500, f"GET {path} -> {r}"
    assert b"root:" not in r.body
    check(r, ("XMinioInvalidObjectName", "InvalidArgument", "InvalidRequest", "InvalidURI",
              "InvalidBucketName", "NoSuchBucket", "NoSuchKey", "AccessDenied",
              "SignatureDoesNotMatch", "MethodNotAllowed", "InvalidObjectName"), r.status)


def test_path_escape_not_signature_error(server, bucket):
    """The rejection must come from key validation, not from the signer disagreeing."""
    r = signed_request(server, "PUT", f"/{bucket}/a/../../x", body=b"z")
    err = check(r, ("XMinioInvalidObjectName", "InvalidArgument", "InvalidRequest", "InvalidURI",
                    "InvalidObjectName"), 400)
    r = signed_request(server, "PUT", f"/{bucket}/a/%00b", body=b"z")
    check(r, ("XMinioInvalidObjectName", "InvalidArgument", "InvalidRequest", "InvalidURI",
              "InvalidObjectName"), 400)


# ---------------------------------------------------------------------------------------------
# protocol abuse
# ---------------------------------------------------------------------------------------------

def _expect_400_or_close(buf, extra_ok=()):
    if not buf:
        return None  # connection closed without a response: acceptable
    status, headers, body = parse_raw_response(buf)
    assert status is not None, f"unparseable response: {buf[:200]!r}"
    assert status in (400, 413, 414, 431, 501, 505) + tuple(extra_ok), buf[:500]
    if body:
        assert_s3_error(status, headers, body, None, status)
    return status, headers, body


def test_oversized_header(server, bucket):
    big = "a" * (64 * 1024)
    req = (f"GET /{bucket}/x HTTP/1.1\r\nHost: {server.address}\r\nX-Big: {big}\r\n"
           "Connection: close\r\n\r\n").encode()
    res = _expect_400_or_close(raw_exchange(server, req, timeout=15))
    if res and res[0] == 400 and res[2]:
        assert_s3_error(res[0], res[1], res[2], ("RequestHeaderSectionTooLarge", "InvalidRequest",
                                                 "MetadataTooLarge", "InvalidArgument"), 400)
    assert_server_alive(server)
    # many headers instead of one huge one
    many = "".join(f"X-H{i}: {'v' * 100}\r\n" for i in range(2000))
    req = (f"GET /{bucket}/x HTTP/1.1\r\nHost: {server.address}\r\n{many}"
           "Connection: close\r\n\r\n").encode()
    _expect_400_or_close(raw_exchange(server, req, timeout=15))
    assert_server_alive(server)
    # huge request line
    req = f"GET /{bucket}/{'k' * 70000} HTTP/1.1\r\nHost: {server.address}\r\n\r\n".encode()
    _expect_400_or_close(raw_exchange(server, req, timeout=15))


@pytest.mark.parametrize("data,extra_ok", [
    (b"GARBAGE\r\n\r\n", ()),
    (b"GET\r\n\r\n", ()),
    (b"\x00\x01\x02\x03\xff\xfe binary junk\r\n\r\n", ()),
    (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", ()),
    (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", ()),
    (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", ()),
    # anonymous: a 403 before the body is read is as good as a 400 for the framing error
    (b"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", (403,)),
    (b"GET / HTTP/1.1\r\nNoColonHeader\r\n\r\n", ()),
    (b"\r\n\r\n\r\n", ()),
], ids=["word", "no-target", "binary", "version", "neg-length", "huge-length", "bad-chunk",
        "no-colon", "blank-lines"])
def test_garbage_requests(server, data, extra_ok):
    _expect_400_or_close(raw_exchange(server, data, timeout=10), extra_ok)
    assert_server_alive(server)


def test_truncated_request_does_not_hang_server(server, bucket):
    import socket
    # half a request line, then close; the server must keep serving others meanwhile
    socks = []
    try:
        for _ in range(5):
            s = socket.create_connection((HOST, server.port), timeout=5)
            s.sendall(b"GET /" + bucket.encode() + b" HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        assert_server_alive(server)
        r = signed_request(server, "GET", f"/{bucket}")
        assert r.status == 200
    finally:
        for s in socks:
            s.close()
    # a PUT that promises more body than it sends, then closes
    hdrs, _ = sign_v4("PUT", f"/{bucket}/short", [], {"host": server.address,
                                                      "content-length": "100000"},
                      UNSIGNED, server.access_key, server.secret_key)
    with socket.create_connection((HOST, server.port), timeout=5) as s:
        s.sendall((f"PUT /{bucket}/short HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
                   + "\r\n").encode() + b"x" * 1000)
    time.sleep(0.5)
    assert_server_alive(server)
    r = signed_request(server, "HEAD", f"/{bucket}/short")
    assert r.status == 404, "a truncated PUT must not create an object"
