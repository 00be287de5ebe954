"""MinIO's S3 extensions that the MinIO SDKs use (issue 38 item 5), against the real binary with
boto3 and hand-signed requests: x-minio-force-delete on a prefix and on a bucket.
"""

import json

import pytest
from botocore.exceptions import ClientError

from conftest import assert_s3_error, make_client, rand_str, signed_request, unique_bucket
from test_iam import add_user, admin

FORCE = {"x-minio-force-delete": "true"}


def keys(s3, bucket):
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def versions(s3, bucket):
    r = s3.list_object_versions(Bucket=bucket)
    return sorted([v["Key"] for v in r.get("Versions", [])] +
                  [m["Key"] for m in r.get("DeleteMarkers", [])])


def test_force_delete_prefix_removes_key_and_what_is_under_it(server, s3, bucket):
    for k in ("a", "a/x", "a/y/z", "a!b", "ab", "b"):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    # A prefix ending in "/": everything under it (issue 38: this answered 204 and removed
    # nothing, as a DeleteObject of the key "a/" that does not exist).
    r = signed_request(server, "DELETE", f"/{bucket}/a/", headers=FORCE)
    assert r.status == 204, r.body
    assert keys(s3, bucket) == ["a", "a!b", "ab", "b"]
    # A key without the slash: the key itself and what lies under key/, not "a!b" nor "ab".
    s3.put_object(Bucket=bucket, Key="a/x", Body=b"again")
    r = signed_request(server, "DELETE", f"/{bucket}/a", headers=FORCE)
    assert r.status == 204, r.body
    assert keys(s3, bucket) == ["a!b", "ab", "b"]
    # false: a plain DeleteObject; a value ParseBool does not take: 400, nothing removed.
    r = signed_request(server, "DELETE", f"/{bucket}/b", headers={"x-minio-force-delete": "no"})
    assert_s3_error(r.status, r.headers, r.body, "InvalidRequest", 400, "x-minio-force-delete")
    r = signed_request(server, "DELETE", f"/{bucket}/ab",
                       headers={"x-minio-force-delete": "false"})
    assert r.status == 204, r.body
    assert keys(s3, bucket) == ["a!b", "b"]


def test_force_delete_prefix_in_a_versioned_bucket_removes_every_version(server, s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="logs/1", Body=b"1")
    s3.put_object(Bucket=bucket, Key="logs/1", Body=b"1b")
    s3.put_object(Bucket=bucket, Key="logs/2", Body=b"2")
    s3.delete_object(Bucket=bucket, Key="logs/2")  # a delete marker over a version
    s3.put_object(Bucket=bucket, Key="keep", Body=b"k")
    assert versions(s3, bucket) == ["keep", "logs/1", "logs/1", "logs/2", "logs/2"]
    r = signed_request(server, "DELETE", f"/{bucket}/logs/", headers=FORCE)
    assert r.status == 204, r.body
    assert versions(s3, bucket) == ["keep"]


def test_force_delete_prefix_checks_each_key(server, s3, bucket, tmp_path):
    """A user allowed s3:DeleteObject on the bucket but denied one key under the prefix: the
    force delete is refused and removes nothing (MinIO would remove the denied key too)."""
    for k in ("p/open", "p/secret/x"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:DeleteObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Deny", "Action": ["s3:DeleteObject"],
         "Resource": [f"arn:aws:s3:::{bucket}/p/secret/*"]}]}
    name = "fd-" + rand_str(8)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    admin(server, "policy", "create", name, str(path))
    ak, sk = add_user(server, [name])
    r = signed_request(server, "DELETE", f"/{bucket}/p/", headers=FORCE, access_key=ak,
                       secret_key=sk)
    assert_s3_error(r.status, r.headers, r.body, "AccessDenied", 403)
    assert keys(s3, bucket) == ["p/open", "p/secret/x"]
    # Without the denied key the same user may.
    s3.delete_object(Bucket=bucket, Key="p/secret/x")
    r = signed_request(server, "DELETE", f"/{bucket}/p/", headers=FORCE, access_key=ak,
                       secret_key=sk)
    assert r.status == 204, r.body
    assert keys(s3, bucket) == []


def test_force_delete_bucket(server, s3, tmp_path):
    b = unique_bucket("fdb")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    for i in range(3):
        s3.put_object(Bucket=b, Key=f"k{i}", Body=b"x")
        s3.put_object(Bucket=b, Key=f"k{i}", Body=b"y")
    s3.delete_object(Bucket=b, Key="k0")
    s3.create_multipart_upload(Bucket=b, Key="upload")
    r = signed_request(server, "DELETE", f"/{b}", headers={"x-minio-force-delete": "false"})
    assert_s3_error(r.status, r.headers, r.body, "BucketNotEmpty", 409)
    r = signed_request(server, "DELETE", f"/{b}", headers={"x-minio-force-delete": "maybe"})
    assert_s3_error(r.status, r.headers, r.body, "InvalidRequest", 400)

    # s3:DeleteBucket alone is not enough (MinIO: s3:ForceDeleteBucket as well).
    def user_with(actions):
        name = "fdb-" + rand_str(8)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": actions, "Resource": [f"arn:aws:s3:::{b}"]}]}))
        admin(server, "policy", "create", name, str(path))
        return add_user(server, [name])

    ak, sk = user_with(["s3:DeleteBucket"])
    r = signed_request(server, "DELETE", f"/{b}", headers=FORCE, access_key=ak, secret_key=sk)
    assert_s3_error(r.status, r.headers, r.body, "AccessDenied", 403)
    assert s3.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 200
    ak, sk = user_with(["s3:DeleteBucket", "s3:ForceDeleteBucket"])
    r = signed_request(server, "DELETE", f"/{b}", headers=FORCE, access_key=ak, secret_key=sk)
    assert r.status == 204, r.body
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=b)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # The name is free again, empty.
    s3.create_bucket(Bucket=b)
    assert versions(s3, b) == []
    assert s3.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    s3.delete_bucket(Bucket=b)
