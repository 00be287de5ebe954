"""Issue 11's S3-layer attacks, each replayed against the real binary (a single-drive server, plus
one with the soft RDMA fabric):

- unsigned x-amz-* headers: a presigned PUT / UploadPart URL (only host signed) plus an added
  x-amz-copy-source must not copy another bucket's object (403 AccessDenied, HeadersNotSigned);
  boto3's presigned URLs and signed requests keep working;
- response-* overrides with CR/LF must not inject headers (400 InvalidArgument);
- a soft-fabric token must not tell a closed port from an open non-RDMA one;
- a metrics bearer JWT with claims of the wrong JSON type is a 403, not a 500;
- a list prefix longer than any key is an empty listing, not a 500;
- the bucket name "minio" is reserved (403 AllAccessDisabled, as MinIO);
- Transfer-Encoding other than chunked is 501 NotImplemented, and nothing is stored.
"""

import base64
import hashlib
import hmac
import json
import re
import socket
import threading
import time
import urllib.parse

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import (HOST, UNSIGNED, Server, assert_s3_error, assert_server_alive, free_port,
                      http_send, make_client, parse_raw_response, raw_exchange, sign_v4,
                      signed_request, unique_bucket)


@pytest.fixture(autouse=True)
def _server_still_answers(server):
    yield
    assert_server_alive(server)


def check(resp, code, status, message_contains=None):
    return assert_s3_error(resp.status, resp.headers, resp.body, code, status, message_contains)


def headers_not_signed(body):
    m = re.search(rb"<HeadersNotSigned>([^<]*)</HeadersNotSigned>", body)
    return m.group(1).decode() if m else None


def send_url(srv, method, url, headers=None, body=b""):
    """Send to a (presigned) URL exactly as given, with extra headers."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    return http_send(srv, method, target, headers or {}, body)


def object_exists(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        return False


# ---------------------------------------------------------------------------------------------
# 4. every x-amz-* header must be signed
# ---------------------------------------------------------------------------------------------

def test_presigned_put_with_unsigned_copy_source_is_refused(server, s3, bucket):
    other = unique_bucket("victim")
    s3.create_bucket(Bucket=other)
    s3.put_object(Bucket=other, Key="secret", Body=b"top secret bytes")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "upload"},
                                    ExpiresIn=300)
    assert "X-Amz-SignedHeaders=host&" in url or url.endswith("X-Amz-SignedHeaders=host")
    r = send_url(server, "PUT", url, {"x-amz-copy-source": f"/{other}/secret"})
    check(r, "AccessDenied", 403,
          "There were headers present in the request which were not signed")
    assert headers_not_signed(r.body) == "x-amz-copy-source"
    assert not object_exists(s3, bucket, "upload")

    # Several unsigned headers are all named; x-amz-content-sha256 is exempt.
    r = send_url(server, "PUT", url, {"x-amz-copy-source": f"/{other}/secret",
                                      "x-amz-metadata-directive": "REPLACE",
                                      "x-amz-content-sha256": UNSIGNED})
    check(r, "AccessDenied", 403)
    assert headers_not_signed(r.body) == "x-amz-copy-source, x-amz-metadata-directive"
    assert not object_exists(s3, bucket, "upload")

    # The URL itself still does what it was signed for (an unsigned x-amz-content-sha256 too).
    r = send_url(server, "PUT", url, {"x-amz-content-sha256": UNSIGNED}, body=b"mine")
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="upload")["Body"].read() == b"mine"


def test_presigned_upload_part_with_unsigned_copy_source_is_refused(server, s3, bucket):
    other = unique_bucket("victim")
    s3.create_bucket(Bucket=other)
    s3.put_object(Bucket=other, Key="secret", Body=b"x" * (5 << 20))
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    url = s3.generate_presigned_url(
        "upload_part",
        Params={"Bucket": bucket, "Key": "mp", "UploadId": up, "PartNumber": 1}, ExpiresIn=300)
    r = send_url(server, "PUT", url, {"x-amz-copy-source": f"/{other}/secret",
                                      "x-amz-copy-source-range": "bytes=0-99"})
    check(r, "AccessDenied", 403)
    assert headers_not_signed(r.body) == "x-amz-copy-source, x-amz-copy-source-range"
    assert s3.list_parts(Bucket=bucket, Key="mp", UploadId=up).get("Parts", []) == []
    # The presigned part upload itself works.
    r = send_url(server, "PUT", url, body=b"part one")
    assert r.status == 200, r
    assert len(s3.list_parts(Bucket=bucket, Key="mp", UploadId=up)["Parts"]) == 1
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up)


def test_header_signed_request_with_an_added_amz_header_is_refused(server, s3, bucket):
    other = unique_bucket("victim")
    s3.create_bucket(Bucket=other)
    s3.put_object(Bucket=other, Key="secret", Body=b"top secret")
    hdrs, _ = sign_v4("PUT", f"/{bucket}/k", [], {"host": server.address}, UNSIGNED,
                      server.access_key, server.secret_key)
    hdrs["x-amz-copy-source"] = f"/{other}/secret"
    r = http_send(server, "PUT", f"/{bucket}/k", hdrs, b"")
    check(r, "AccessDenied", 403)
    assert headers_not_signed(r.body) == "x-amz-copy-source"
    assert not object_exists(s3, bucket, "k")
    # Signed, the same copy is fine.
    r = signed_request(server, "PUT", f"/{bucket}/k",
                       headers={"x-amz-copy-source": f"/{other}/secret"})
    assert r.status == 200, r


def test_boto3_presigned_and_signed_requests_keep_working(server, s3, bucket):
    # Metadata and content type in the signature: the sender must send exactly those headers.
    url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": "p", "ContentType": "text/plain",
                              "Metadata": {"a": "1"}}, ExpiresIn=300)
    r = requests.put(url, data=b"hello", headers={"Content-Type": "text/plain",
                                                  "x-amz-meta-a": "1"}, timeout=10)
    assert r.status_code == 200, r.text
    head = s3.head_object(Bucket=bucket, Key="p")
    assert head["Metadata"] == {"a": "1"} and head["ContentType"] == "text/plain"
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"},
                                    ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"hello"
    # SDK calls sending many x-amz-* headers (all signed by botocore).
    s3.copy_object(Bucket=bucket, Key="q", CopySource={"Bucket": bucket, "Key": "p"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"})
    assert s3.head_object(Bucket=bucket, Key="q")["Metadata"] == {"b": "2"}
    s3.put_object(Bucket=bucket, Key="c", Body=b"abc", ChecksumAlgorithm="SHA256")
    assert s3.get_object(Bucket=bucket, Key="c")["Body"].read() == b"abc"


# ---------------------------------------------------------------------------------------------
# 5. response-* overrides cannot inject headers
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    "text/html\r\nSet-Cookie: session=stolen",
    "text/html\nSet-Cookie: session=stolen",
    "text/html\rX: y",
    "text/html\x00",
    "text/html\x7f",
])
def test_response_override_with_control_characters_is_refused(server, s3, bucket, value):
    s3.put_object(Bucket=bucket, Key="page", Body=b"<script>alert(1)</script>")
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "page", "ResponseContentType": value},
        ExpiresIn=300)
    parts = urllib.parse.urlsplit(url)
    raw = (f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {server.address}\r\n"
           "Connection: close\r\n\r\n").encode()
    status, headers, body = parse_raw_response(raw_exchange(server, raw))
    names = [k.lower() for k, _ in headers]
    assert "set-cookie" not in names and "x" not in names, headers
    assert_s3_error(status, headers, body, "InvalidArgument", 400, "response-content-type")
    assert b"<ArgumentName>response-content-type</ArgumentName>" in body
    assert b"<script>" not in body


def test_documented_response_overrides_still_apply(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="doc", Body=b"data", ContentType="text/plain")
    got = s3.get_object(Bucket=bucket, Key="doc", ResponseContentType="application/x-test",
                        ResponseContentDisposition='attachment; filename="a b.txt"',
                        ResponseCacheControl="no-cache", ResponseContentLanguage="fr",
                        ResponseContentEncoding="identity",
                        ResponseExpires="Thu, 01 Dec 2044 16:00:00 GMT")
    h = got["ResponseMetadata"]["HTTPHeaders"]
    assert h["content-type"] == "application/x-test"
    assert h["content-disposition"] == 'attachment; filename="a b.txt"'
    assert h["cache-control"] == "no-cache"
    assert h["content-language"] == "fr"
    assert h["content-encoding"] == "identity"
    assert h["expires"] == "Thu, 01 Dec 2044 16:00:00 GMT"
    # Other response-* names are not overrides: nothing is echoed.
    r = signed_request(server, "GET", f"/{bucket}/doc",
                       query=[("response-set-cookie", "a=b"), ("response-x-foo", "bar")],
                       payload_hash=hashlib.sha256(b"").hexdigest())
    assert r.status == 200
    assert "set-cookie" not in r.hdict and "x-foo" not in r.hdict


# ---------------------------------------------------------------------------------------------
# 7. a soft-fabric token is not a port scanner
# ---------------------------------------------------------------------------------------------

def soft_token(port, qpn=1):
    # raddr:rsize:rkey:lid:qpn:has_gid:gid; the soft fabric reaches lid as a TCP port of the
    # IPv4-mapped gid (::ffff:127.0.0.1).
    return "%016x:%08x:%08x:%04x:%06x:%01x:%016x%016x" % (
        0x10000, 4096, 7, port, qpn, 1, 0, 0x0000ffff7f000001)


def test_soft_fabric_connect_failures_look_alike(server_factory):
    srv = server_factory(name="soft", env={"MINIO_RDMA_FABRIC": "soft"})
    s3 = srv.client()
    s3.create_bucket(Bucket="rdma")
    s3.put_object(Bucket="rdma", Key="o", Body=b"abc")

    closed = free_port()
    # An open port that is no soft-fabric target: answers something else and hangs up.
    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(8)
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        for _ in range(600):  # bounded: at most ~2 minutes
            if stop.is_set():
                return
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        bodies = []
        for port in (closed, listener.getsockname()[1]):
            r = signed_request(srv, "GET", "/rdma/o", headers={"x-amz-rdma-token": soft_token(port)},
                               payload_hash=hashlib.sha256(b"").hexdigest())
            assert r.status == 501, r
            assert r.header("x-amz-rdma-reply") == "501"
            body = re.sub(rb"<(RequestId|HostId)>[^<]*</\1>", b"", r.body)
            bodies.append(body)
        assert bodies[0] == bodies[1], bodies
        assert str(closed).encode() not in bodies[0]
        assert b"refused" not in bodies[0].lower()
    finally:
        stop.set()
        t.join(timeout=5)
        listener.close()


# ---------------------------------------------------------------------------------------------
# 9. smaller ones
# ---------------------------------------------------------------------------------------------

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(header, claims, secret):
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    sig = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(sig)


def test_metrics_jwt_with_claims_of_the_wrong_type_is_403(server):
    url = server.url("/minio/v2/metrics/cluster")
    far = int(time.time()) + 3600
    good = jwt({"alg": "HS256", "typ": "JWT"}, {"exp": far, "sub": server.access_key},
               server.secret_key)
    assert requests.get(url, headers={"Authorization": "Bearer " + good},
                        timeout=10).status_code == 200
    # Without the secret: a non-string alg (the signature is never checked).
    for header in ({"alg": 5}, {"alg": ["HS256"]}, {"alg": {"x": 1}}, {"alg": None}):
        token = jwt(header, {"exp": far, "sub": server.access_key}, "not-the-secret")
        r = requests.get(url, headers={"Authorization": "Bearer " + token}, timeout=10)
        assert r.status_code == 403, (header, r.status_code, r.text)
        assert "<Code>AccessDenied</Code>" in r.text
    # With it: claims of the wrong type.
    for claims in ({"exp": far, "sub": 7}, {"exp": far, "sub": [server.access_key]},
                   {"exp": far, "sub": server.access_key, "iss": {}}, {"exp": 1e300, "sub": "a"}):
        token = jwt({"alg": "HS256"}, claims, server.secret_key)
        r = requests.get(url, headers={"Authorization": "Bearer " + token}, timeout=10)
        assert r.status_code == 403, (claims, r.status_code, r.text)


def test_list_prefix_longer_than_any_key_is_an_empty_listing(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a/b", Body=b"x")
    for prefix in ("a/" * 2100, "a/" * 513, "x" * 1025):
        got = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
        assert got["KeyCount"] == 0 and "Contents" not in got, len(prefix)
        got = s3.list_objects(Bucket=bucket, Prefix=prefix)
        assert "Contents" not in got
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="a/")["Contents"]] == ["a/b"]
    assert "InternalError" not in server.log_text()


def test_bucket_minio_is_reserved(server, s3):
    for call in (lambda: s3.create_bucket(Bucket="minio"),
                 lambda: s3.put_object(Bucket="minio", Key="k", Body=b"x"),
                 lambda: s3.list_objects_v2(Bucket="minio")):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AllAccessDisabled"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    r = signed_request(server, "PUT", "/minio/health/x", body=b"x")
    check(r, "AllAccessDisabled", 403, "All access to this Amazon S3 resource has been disabled.")
    assert "minio" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # The server's own endpoints under /minio/ are unaffected.
    assert requests.get(server.url("/minio/health/cluster"), timeout=5).status_code == 200


@pytest.mark.parametrize("coding", ["gzip, chunked", "deflate,chunked", "chunked, chunked, gzip"])
def test_transfer_codings_other_than_chunked_are_not_implemented(server, s3, bucket, coding):
    hdrs, _ = sign_v4("PUT", f"/{bucket}/te", [], {"host": server.address}, UNSIGNED,
                      server.access_key, server.secret_key)
    head = "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    raw = (f"PUT /{bucket}/te HTTP/1.1\r\n{head}Transfer-Encoding: {coding}\r\n"
           "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n").encode()
    status, headers, body = parse_raw_response(raw_exchange(server, raw))
    assert_s3_error(status, headers, body, "NotImplemented", 501)
    assert b"<Header>Transfer-Encoding</Header>" in body
    assert not object_exists(s3, bucket, "te")
