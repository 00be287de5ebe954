"""Bucket CORS (issue 38 item 4) against the real server: Put/Get/DeleteBucketCors with boto3, the
preflight OPTIONS a browser sends (no credentials; 400 without Origin, 403 when no rule allows
it), and the Access-Control-* headers of other requests whose Origin a rule allows, errors
included. The expectations are AWS's (s3-tests' test_cors_*)."""
import pytest
import requests

from conftest import boto3_error_code, make_client, unique_bucket


@pytest.fixture(scope="module")
def s3(server):
    return make_client(server)


err = boto3_error_code  # [status, code] of a call that must fail


RULES = {"CORSRules": [
    {"AllowedMethods": ["GET"], "AllowedOrigins": ["*suffix"]},
    {"AllowedMethods": ["GET"], "AllowedOrigins": ["start*end"],
     "AllowedHeaders": ["x-amz-*"], "ExposeHeaders": ["x-amz-meta-a", "ETag"], "MaxAgeSeconds": 60},
    {"AllowedMethods": ["PUT", "POST"], "AllowedOrigins": ["*.put"]},
]}


@pytest.fixture(scope="module")
def bucket(s3):
    b = unique_bucket("cors")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_acl(Bucket=b, ACL="public-read")
    s3.put_object(Bucket=b, Key="obj", Body=b"hello", ACL="public-read")
    return b


def check(r, status, origin, methods):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers.get("access-control-allow-origin") == origin, r.headers
    assert r.headers.get("access-control-allow-methods") == methods, r.headers


def test_configuration_crud(s3, bucket):
    assert err(s3.get_bucket_cors, Bucket=bucket) == [404, "NoSuchCORSConfiguration"]
    bad = {"CORSRules": [{"AllowedMethods": ["PATCH"], "AllowedOrigins": ["*"]}]}
    assert err(s3.put_bucket_cors, Bucket=bucket, CORSConfiguration=bad) == [400, "InvalidRequest"]
    bad = {"CORSRules": [{"AllowedMethods": ["GET"], "AllowedOrigins": ["*a*"]}]}
    assert err(s3.put_bucket_cors, Bucket=bucket, CORSConfiguration=bad) == [400, "InvalidRequest"]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert [r["AllowedOrigins"] for r in got] == [["*suffix"], ["start*end"], ["*.put"]]
    assert got[1]["ExposeHeaders"] == ["x-amz-meta-a", "ETag"] and got[1]["MaxAgeSeconds"] == 60
    s3.delete_bucket_cors(Bucket=bucket)
    assert err(s3.get_bucket_cors, Bucket=bucket) == [404, "NoSuchCORSConfiguration"]


def test_preflight(s3, server, bucket):
    url = server.url(f"/{bucket}")
    obj = server.url(f"/{bucket}/obj")
    # CORS off: the preflight is refused, with its reason.
    r = requests.options(obj, headers={"Origin": "a.suffix", "Access-Control-Request-Method": "GET"},
                         timeout=10)
    assert r.status_code == 403 and b"CORS is not enabled for this bucket" in r.content, r.content
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    try:
        r = requests.options(url, timeout=10)
        assert r.status_code == 400 and b"Origin request header needed" in r.content, r.content
        check(requests.options(url, headers={"Origin": "a.suffix"}, timeout=10), 400, None, None)
        check(requests.options(obj, headers={"Origin": "a.suffix",
                                             "Access-Control-Request-Method": "GET"}, timeout=10),
              200, "a.suffix", "GET")
        check(requests.options(url, headers={"Origin": "foo.bar",
                                             "Access-Control-Request-Method": "GET"}, timeout=10),
              403, None, None)
        check(requests.options(url, headers={"Origin": "a.suffix",
                                             "Access-Control-Request-Method": "PUT"}, timeout=10),
              403, None, None)
        r = requests.options(obj, headers={"Origin": "start-x-end", "Access-Control-Request-Method": "GET",
                                           "Access-Control-Request-Headers": "X-Amz-Date, x-amz-meta-b"},
                             timeout=10)
        check(r, 200, "start-x-end", "GET")
        assert r.headers["access-control-allow-headers"] == "x-amz-date, x-amz-meta-b"
        assert r.headers["access-control-max-age"] == "60"
        assert r.headers["access-control-expose-headers"] == "x-amz-meta-a, ETag"
        assert r.headers["access-control-allow-credentials"] == "true"
        assert "Origin" in r.headers["vary"]
        # A header no AllowedHeader names: refused.
        check(requests.options(obj, headers={"Origin": "start-x-end", "Access-Control-Request-Method": "GET",
                                             "Access-Control-Request-Headers": "content-type"},
                               timeout=10), 403, None, None)
        check(requests.options(obj, headers={"Origin": "x.put", "Access-Control-Request-Method": "POST"},
                               timeout=10), 200, "x.put", "PUT, POST")
        # A presigned URL's query changes nothing: the preflight needs no signature.
        signed = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "obj"})
        check(requests.options(signed, headers={"Origin": "a.suffix",
                                                "Access-Control-Request-Method": "GET"}, timeout=10),
              200, "a.suffix", "GET")
    finally:
        s3.delete_bucket_cors(Bucket=bucket)


def test_simple_requests_get_the_headers(s3, server, bucket):
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    try:
        obj = server.url(f"/{bucket}/obj")
        r = requests.get(obj, timeout=10)
        check(r, 200, None, None)
        r = requests.get(obj, headers={"Origin": "a.suffix"}, timeout=10)
        check(r, 200, "a.suffix", "GET")
        assert r.content == b"hello" and "Origin" in r.headers["vary"]
        r = requests.get(obj, headers={"Origin": "foo.bar"}, timeout=10)
        check(r, 200, None, None)
        assert "Origin" in r.headers["vary"]
        # Errors carry them too (a browser must be able to read the error).
        check(requests.get(server.url(f"/{bucket}/missing"), headers={"Origin": "a.suffix"},
                           timeout=10), 404, "a.suffix", "GET")  # public-read: anyone may list
        signed = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "missing"})
        check(requests.get(signed, headers={"Origin": "a.suffix"}, timeout=10), 404, "a.suffix", "GET")
        check(requests.put(server.url(f"/{bucket}/anon"), headers={"Origin": "x.put"}, data=b"x",
                           timeout=10), 403, "x.put", "PUT, POST")
        check(requests.put(server.url(f"/{bucket}/anon"), headers={"Origin": "a.suffix"}, data=b"x",
                           timeout=10), 403, None, None)
    finally:
        s3.delete_bucket_cors(Bucket=bucket)
