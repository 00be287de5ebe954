"""S3 answers exactly as AWS documents them (issue 14), against the real server.

The boto3-visible checks are one script (SDK_SCRIPT) run under Debian's boto3 (/usr/bin/python3)
and, when the machine has one, under a current boto3 (the pyenv interpreter): the SDKs differ in
what they send (current boto3 adds CRC32 checksums and headers), and both must get AWS's answers.
Raw requests cover what an SDK hides: both list parameters at once as minio-py sends them,
anonymous requests, MinIO-only headers.
"""
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_s3_error, http_send, sdk_script_runner, signed_request, unique_bucket
from test_current_sdk import _newer_boto3_python

S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

SDK_SCRIPT = r'''
bucket = prefix + "-main"
s3.create_bucket(Bucket=bucket)


@section
def listing():
    # 0. Pages after the first follow the token; start-after (sent as minio-py does: the token text,
    # or anything above the keys) is ignored. "0..." keys sort below base64 text, "z..." above it.
    for kp in ("0obj/", "zobj/"):
        for n in range(25):
            s3.put_object(Bucket=bucket, Key=f"{kp}{n:03d}", Body=b"x")
        for style in ("token-text", "above-all"):
            got, tok = [], None
            for _ in range(10):
                kw = {"Bucket": bucket, "Prefix": kp, "MaxKeys": 10}
                if tok:
                    kw["ContinuationToken"] = tok
                    kw["StartAfter"] = tok if style == "token-text" else "~~~"
                r = s3.list_objects_v2(**kw)
                got += [o["Key"] for o in r.get("Contents", [])]
                if not r["IsTruncated"]:
                    break
                tok = r["NextContinuationToken"]
            out[f"list {kp} {style}"] = got
        # The paginator repeats StartAfter on every page with the token.
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=kp, StartAfter=f"{kp}004", PaginationConfig={"PageSize": 7})
        out[f"paginate {kp}"] = [o["Key"] for p in pages for o in p.get("Contents", [])]


@section
def refusals():
    # Never claim what is not done: each refused, nothing stored.
    out["sse-s3 put"] = err(s3.put_object, Bucket=bucket, Key="sse", Body=b"x",
                            ServerSideEncryption="AES256")
    out["sse-kms put"] = err(s3.put_object, Bucket=bucket, Key="sse", Body=b"x",
                             ServerSideEncryption="aws:kms", SSEKMSKeyId="my-key")
    out["sse-c put"] = err(s3.put_object, Bucket=bucket, Key="sse", Body=b"x",
                           SSECustomerAlgorithm="AES256", SSECustomerKey="k" * 32)
    out["sse stored"] = err(s3.head_object, Bucket=bucket, Key="sse")
    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
    out["sse copy"] = err(s3.copy_object, Bucket=bucket, Key="copy", ServerSideEncryption="AES256",
                          CopySource={"Bucket": bucket, "Key": "plain"})
    out["sse-c copy source"] = err(s3.copy_object, Bucket=bucket, Key="copy",
                                   CopySource={"Bucket": bucket, "Key": "plain"},
                                   CopySourceSSECustomerAlgorithm="AES256",
                                   CopySourceSSECustomerKey="k" * 32)
    out["sse copy stored"] = err(s3.head_object, Bucket=bucket, Key="copy")
    out["sse mpu"] = err(s3.create_multipart_upload, Bucket=bucket, Key="mpu",
                         ServerSideEncryption="aws:kms")
    up = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    out["sse-c part"] = err(s3.upload_part, Bucket=bucket, Key="mpu", UploadId=up, PartNumber=1,
                            Body=b"x", SSECustomerAlgorithm="AES256", SSECustomerKey="k" * 32)
    out["sse-c part stored"] = len(s3.list_parts(Bucket=bucket, Key="mpu", UploadId=up).get("Parts", []))
    s3.abort_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up)

    out["class STANDARD"] = err(s3.put_object, Bucket=bucket, Key="sc", Body=b"x",
                                StorageClass="STANDARD")
    for sc in ("GLACIER", "STANDARD_IA", "BOGUS"):
        out[f"class {sc}"] = err(s3.put_object, Bucket=bucket, Key="sc-" + sc, Body=b"x",
                                 StorageClass=sc)
        out[f"class {sc} mpu"] = err(s3.create_multipart_upload, Bucket=bucket, Key="sc-" + sc,
                                     StorageClass=sc)
        out[f"class {sc} copy"] = err(s3.copy_object, Bucket=bucket, Key="sc-" + sc,
                                      CopySource={"Bucket": bucket, "Key": "plain"}, StorageClass=sc)
        out[f"class {sc} stored"] = err(s3.head_object, Bucket=bucket, Key="sc-" + sc)

    lock_bucket = prefix + "-lock"
    out["object lock bucket"] = err(s3.create_bucket, Bucket=lock_bucket,
                                    ObjectLockEnabledForBucket=True)
    out["object lock bucket stored"] = err(s3.head_bucket, Bucket=lock_bucket)
    out["object lock false"] = err(s3.create_bucket, Bucket=prefix + "-nolock",
                                   ObjectLockEnabledForBucket=False)
    out["snowball"] = err(s3.put_object, Bucket=bucket, Key="snow.tar", Body=b"x",
                          Metadata={"Snowball-Auto-Extract": "true"})
    out["snowball stored"] = err(s3.head_object, Bucket=bucket, Key="snow.tar")
    out["tagging"] = err(s3.put_object, Bucket=bucket, Key="tagged", Body=b"x", Tagging="a=b")
    out["lock mode"] = err(s3.put_object, Bucket=bucket, Key="locked", Body=b"x",
                           ObjectLockLegalHoldStatus="ON")


@section
def part_numbers_and_complete_retry():
    # 3. partNumber: beyond the parts is 400 InvalidPartNumber; part 1 of a plain object is all of it.
    single = s3.put_object(Bucket=bucket, Key="single", Body=b"single body")["ETag"]
    r = s3.get_object(Bucket=bucket, Key="single", PartNumber=1)
    out["part1 single"] = [r["Body"].read().decode(), r["ETag"] == single, r["ContentLength"]]
    out["part2 single get"] = err(s3.get_object, Bucket=bucket, Key="single", PartNumber=2)
    out["part2 single head"] = err(s3.head_object, Bucket=bucket, Key="single", PartNumber=2)
    up = s3.create_multipart_upload(Bucket=bucket, Key="multi")["UploadId"]
    p1 = s3.upload_part(Bucket=bucket, Key="multi", UploadId=up, PartNumber=1,
                        Body=b"a" * (5 << 20))["ETag"]
    p2 = s3.upload_part(Bucket=bucket, Key="multi", UploadId=up, PartNumber=2, Body=b"tail")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": p1}, {"PartNumber": 2, "ETag": p2}]}
    # 1. A retried Complete of a completed upload succeeds again with the same ETag.
    c1 = s3.complete_multipart_upload(Bucket=bucket, Key="multi", UploadId=up, MultipartUpload=parts)
    try:
        c2 = s3.complete_multipart_upload(Bucket=bucket, Key="multi", UploadId=up,
                                          MultipartUpload=parts)
        out["complete retry"] = [c1["ETag"], c2["ETag"]]
    except ClientError as e:
        out["complete retry"] = [c1["ETag"], e.response["Error"]["Code"]]
    other = {"Parts": [{"PartNumber": 1, "ETag": p2}]}
    out["complete retry other parts"] = err(s3.complete_multipart_upload, Bucket=bucket, Key="multi",
                                            UploadId=up, MultipartUpload=other)
    r = s3.get_object(Bucket=bucket, Key="multi", PartNumber=2)
    out["part2 multi"] = [r["Body"].read().decode(), r.get("PartsCount"), r["ContentLength"]]
    out["part3 multi get"] = err(s3.get_object, Bucket=bucket, Key="multi", PartNumber=3)
    out["part3 multi head"] = err(s3.head_object, Bucket=bucket, Key="multi", PartNumber=3)


@section
def create_bucket():
    # 9. CreateBucket of an existing bucket; LocationConstraint.
    out["create again"] = err(s3.create_bucket, Bucket=bucket)
    out["create again public"] = err(s3.create_bucket, Bucket=bucket, ACL="public-read")
    out["create again eu"] = err(s3.create_bucket, Bucket=bucket,
                                 CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    out["location same"] = err(s3.create_bucket, Bucket=prefix + "-loc",
                               CreateBucketConfiguration={"LocationConstraint": "us-east-1"})
    out["location other"] = err(s3.create_bucket, Bucket=prefix + "-eu",
                                CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    out["location other stored"] = err(s3.head_bucket, Bucket=prefix + "-eu")
    out["location aws-global"] = err(s3.create_bucket, Bucket=prefix + "-global",
                                     CreateBucketConfiguration={"LocationConstraint": "aws-global"})


@section
def presigned():
    # 6. Presigned URLs: expiry out of range or over is 403, with AWS's codes; PUT as GET.
    import time, urllib.error, urllib.request
    import xml.etree.ElementTree as ET

    def fetch(url, method="GET", data=None):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method),
                                        timeout=30) as r:
                return [r.status, None, None]
        except urllib.error.HTTPError as e:
            root = ET.fromstring(e.read())
            return [e.code, root.findtext("Code"), root.findtext("Message")]

    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    def presign(method, key, expires):
        # botocore's own SigV4 query signer: Debian's botocore hands generate_presigned_url to
        # awscrt, which refuses to sign ExpiresIn=0.
        req = AWSRequest(method=method, url=f"{endpoint}/{bucket}/{key}")
        S3SigV4QueryAuth(Credentials(ak, sk), "s3", "us-east-1", expires=expires).add_auth(req)
        return req.url

    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
    for secs in (0, 604801, 604800):
        out[f"presigned get {secs}"] = fetch(presign("GET", "plain", secs))
    put = {"Bucket": bucket, "Key": "presigned-put"}
    out["presigned put fresh"] = fetch(presign("PUT", "presigned-put", 60), "PUT", b"fresh")
    late = presign("PUT", "presigned-put", 1)
    time.sleep(2.2)
    out["presigned put expired"] = fetch(late, "PUT", b"late")
    try:
        out["presigned put kept"] = s3.get_object(**put)["Body"].read().decode()
    except ClientError as e:
        out["presigned put kept"] = e.response["Error"]["Code"]

print(json.dumps(out))
'''


def _interpreters():
    newer = _newer_boto3_python()
    return [pytest.param("/usr/bin/python3", id="debian-boto3"),
            pytest.param(newer, id="current-boto3",
                         marks=pytest.mark.skipif(newer is None,
                                                  reason="no interpreter with boto3 >= 1.36"))]


@pytest.fixture(scope="module")
def sdk_results(server, tmp_path_factory):
    """Runs SDK_SCRIPT once per interpreter (cached): run(python, section)."""
    run = sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "conformance_sdk.py", "cf")
    return lambda py, section: run(py, server, section)


NOT_IMPLEMENTED = [501, "NotImplemented"]


@pytest.mark.parametrize("py", _interpreters())
def test_list_v2_token_wins_over_start_after(sdk_results, py):
    out = sdk_results(py, "listing")
    for kp in ("0obj/", "zobj/"):
        want = [f"{kp}{n:03d}" for n in range(25)]
        assert out[f"list {kp} token-text"] == want, (out["boto3"], kp)
        assert out[f"list {kp} above-all"] == want, (out["boto3"], kp)
        assert out[f"paginate {kp}"] == want[5:], (out["boto3"], kp)


@pytest.mark.parametrize("py", _interpreters())
def test_encryption_refused_not_ignored(sdk_results, py):
    out = sdk_results(py, "refusals")
    # This server has no master key (SSE-S3: 501 naming MINIO_KMS_SECRET_KEY), no KMS (aws:kms:
    # 501) and serves plain HTTP (SSE-C: 400 InvalidRequest, as AWS); test_sse.py covers the rest.
    for case in ("sse-s3 put", "sse-kms put", "sse copy", "sse mpu"):
        assert out[case] == NOT_IMPLEMENTED, (out["boto3"], case, out[case])
    for case in ("sse-c put", "sse-c copy source", "sse-c part"):
        assert out[case] == [400, "InvalidRequest"], (out["boto3"], case, out[case])
    assert out["sse stored"] == [404, "404"]
    assert out["sse copy stored"] == [404, "404"]
    assert out["sse-c part stored"] == 0


@pytest.mark.parametrize("py", _interpreters())
def test_storage_class(sdk_results, py):
    out = sdk_results(py, "refusals")
    assert out["class STANDARD"] == ["ok", None]
    for sc, want in [("GLACIER", [400, "InvalidStorageClass"]),
                     ("STANDARD_IA", [400, "InvalidStorageClass"]),
                     ("BOGUS", [400, "InvalidStorageClass"])]:
        for op in ("", " mpu", " copy"):
            assert out[f"class {sc}{op}"] == want, (out["boto3"], sc, op)
        assert out[f"class {sc} stored"] == [404, "404"], sc


@pytest.mark.parametrize("py", _interpreters())
def test_unsupported_bucket_and_object_features(sdk_results, py):
    out = sdk_results(py, "refusals")
    # Implemented (issue 38 item 1; test_object_lock.py).
    assert out["object lock bucket"] == ["ok", None]
    assert out["object lock bucket stored"] == ["ok", None]
    assert out["object lock false"] == ["ok", None]
    assert out["snowball"] == NOT_IMPLEMENTED
    assert out["snowball stored"] == [404, "404"]
    assert out["tagging"] == ["ok", None]  # implemented (issue 15 item 5; test_tagging.py)
    assert out["lock mode"] == [400, "InvalidRequest"]  # the bucket has no Object Lock


@pytest.mark.parametrize("py", _interpreters())
def test_part_number(sdk_results, py):
    out = sdk_results(py, "part_numbers_and_complete_retry")
    assert out["part1 single"] == ["single body", True, 11]
    assert out["part2 single get"] == [400, "InvalidPartNumber"]
    assert out["part2 single head"] == [400, "400"]
    assert out["part2 multi"] == ["tail", 2, 4]
    assert out["part3 multi get"] == [400, "InvalidPartNumber"]
    assert out["part3 multi head"] == [400, "400"]


@pytest.mark.parametrize("py", _interpreters())
def test_complete_multipart_retry(sdk_results, py):
    out = sdk_results(py, "part_numbers_and_complete_retry")
    first, second = out["complete retry"]
    assert first.endswith('-2"') and second == first, out["complete retry"]
    # A retry naming other parts is not the completed upload: it stays NoSuchUpload.
    assert out["complete retry other parts"] == [404, "NoSuchUpload"]


@pytest.mark.parametrize("py", _interpreters())
def test_create_bucket_existing_and_location(sdk_results, py):
    out = sdk_results(py, "create_bucket")
    # The owner again, in us-east-1: AWS's legacy 200, the bucket kept; asking for another ACL:
    # 409 BucketAlreadyExists (as RGW, s3-tests); another region: 409 BucketAlreadyOwnedByYou.
    assert out["create again"] == ["ok", None]
    assert out["create again public"] == [409, "BucketAlreadyExists"]
    assert out["create again eu"] == [409, "BucketAlreadyOwnedByYou"]
    assert out["location same"] == ["ok", None]
    # No MINIO_REGION / MINIO_SITE_REGION: any constraint is taken, as MinIO does (awscli v2 with
    # no region sends "aws-global"); test_region_from_minio_region covers the configured case.
    assert out["location other"] == ["ok", None]
    assert out["location other stored"] == ["ok", None]
    assert out["location aws-global"] == ["ok", None]


# ---------------------------------------------------------------------------------------------
# raw requests
# ---------------------------------------------------------------------------------------------

def _list_v2_raw(srv, bucket, params):
    r = signed_request(srv, "GET", f"/{bucket}", query=[("list-type", "2")] + params)
    assert r.status == 200, r.body[:500]
    root = ET.fromstring(r.body)
    keys = [c.find(S3_NS + "Key").text for c in root.findall(S3_NS + "Contents")]
    token = root.find(S3_NS + "NextContinuationToken")
    return keys, (token.text if token is not None else None)


def _fill(s3, bucket, prefixes, n):
    for kp in prefixes:
        for i in range(n):
            s3.put_object(Bucket=bucket, Key=f"{kp}{i:03d}", Body=b"x")


def _check_minio_py_listing(srv, bucket, prefixes, n):
    """Pages as minio-py asks for them: continuation-token and start-after = the token text."""
    for kp in prefixes:
        got, tok = [], None
        for _ in range(n):
            params = [("prefix", kp), ("max-keys", "4")]
            if tok:
                params += [("continuation-token", tok), ("start-after", tok)]
            keys, tok = _list_v2_raw(srv, bucket, params)
            got += keys
            if tok is None:
                break
        assert got == [f"{kp}{i:03d}" for i in range(n)], kp


def test_list_v2_raw_both_parameters(server, s3, bucket):
    _fill(s3, bucket, ["0a/", "Za/", "za/"], 10)
    _check_minio_py_listing(server, bucket, ["0a/", "Za/", "za/"], 10)
    # The first page honours start-after; an empty token is the first page too.
    keys, _ = _list_v2_raw(server, bucket, [("prefix", "za/"), ("start-after", "za/006")])
    assert keys == ["za/007", "za/008", "za/009"]
    keys, _ = _list_v2_raw(server, bucket, [("prefix", "za/"), ("start-after", "za/006"),
                                            ("continuation-token", "")])
    assert keys == ["za/007", "za/008", "za/009"]


def test_list_v2_both_parameters_across_erasure_sets(server_factory):
    """The multi-set merge takes its lower bound from the S3 layer: same rule there."""
    srv = server_factory(data_dirs=None, start=False)
    srv.data_dirs = [os.path.join(srv.base, f"d{i}") for i in range(24)]
    for d in srv.data_dirs:
        os.makedirs(d, exist_ok=True)
    srv.start()
    assert "2 set(s)" in srv.log_text(), srv.log_tail(20)
    client = srv.client()
    bucket = unique_bucket()
    client.create_bucket(Bucket=bucket)
    _fill(client, bucket, ["0s/", "zs/"], 12)
    _check_minio_py_listing(srv, bucket, ["0s/", "zs/"], 12)


def test_sse_invalid_method_is_invalid_argument(server, bucket):
    r = signed_request(server, "PUT", f"/{bucket}/k", body=b"x",
                       headers={"x-amz-server-side-encryption": "rot13"})
    assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400,
                    "encryption method specified is not supported")


@pytest.mark.parametrize("path", ["/{bucket}", "/"])
def test_listen_notification_refused(server, bucket, path):
    r = signed_request(server, "GET", path.format(bucket=bucket),
                       query=[("events", "s3:ObjectCreated:*"), ("prefix", ""), ("suffix", "")])
    assert_s3_error(r.status, r.headers, r.body, "NotImplemented", 501, "notification")


def test_anonymous_missing_bucket_is_no_such_bucket(server, s3, bucket):
    missing = unique_bucket("gone")
    for method, path in [("GET", f"/{missing}"), ("GET", f"/{missing}/k"),
                         ("PUT", f"/{missing}/k")]:
        r = http_send(server, method, path, body=b"x" if method == "PUT" else b"")
        assert_s3_error(r.status, r.headers, r.body, "NoSuchBucket", 404)
    r = http_send(server, "HEAD", f"/{missing}")
    assert r.status == 404
    # An existing bucket (present or missing key) still refuses the anonymous caller.
    for path in [f"/{bucket}", f"/{bucket}/missing-key"]:
        r = http_send(server, "GET", path)
        assert_s3_error(r.status, r.headers, r.body, "AccessDenied", 403)


def test_part_number_with_range_is_invalid(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"0123456789")
    r = signed_request(server, "GET", f"/{bucket}/k", query=[("partNumber", "1")],
                       headers={"Range": "bytes=0-1"})
    assert_s3_error(r.status, r.headers, r.body, "InvalidRequest", 400, "partNumber")


def test_region_from_minio_region(server_factory):
    srv = server_factory(env={"MINIO_REGION": "eu-central-1"})
    body = (b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>")
    r = signed_request(srv, "PUT", "/in-region", body=body % b"eu-central-1")
    assert r.status == 200, r.body
    r = signed_request(srv, "PUT", "/elsewhere", body=body % b"us-east-1")
    assert_s3_error(r.status, r.headers, r.body, "IllegalLocationConstraintException", 400,
                    "us-east-1 location constraint")
    srv = server_factory(env={"MINIO_SITE_REGION": "eu-west-3"})
    r = signed_request(srv, "PUT", "/site-elsewhere", body=body % b"aws-global")
    assert_s3_error(r.status, r.headers, r.body, "IllegalLocationConstraintException", 400,
                    "aws-global location constraint")


@pytest.mark.parametrize("py", _interpreters())
def test_presigned_expiry(sdk_results, py):
    out = sdk_results(py, "presigned")
    assert out["presigned get 0"] == [403, "AccessDenied", "Request has expired"]
    code = out["presigned get 604801"]
    assert code[:2] == [403, "AuthorizationQueryParametersError"], code
    assert "less than 604800 seconds" in code[2]
    assert out["presigned get 604800"] == [200, None, None]
    assert out["presigned put fresh"] == [200, None, None]
    assert out["presigned put expired"] == [403, "AccessDenied", "Request has expired"]
    assert out["presigned put kept"] == "fresh"
