"""MinIO's S3 extensions that the MinIO SDKs use (issue 38 item 5), against the real binary with
boto3 and hand-signed requests: x-minio-force-delete on a prefix and on a bucket, listings with
metadata=true, versioning's ExcludedPrefixes / ExcludeFolders.
"""

import base64
import hashlib
import json
import xml.etree.ElementTree as ET

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


S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def listed_metadata(server, bucket, **auth):
    """ListObjectsV2 with metadata=true as minio-py sends it: key -> (metadata dict, tags)."""
    r = signed_request(server, "GET", f"/{bucket}",
                       query=[("list-type", "2"), ("metadata", "true"), ("encoding-type", "url")],
                       **auth)
    assert r.status == 200, r.body
    out = {}
    for c in ET.fromstring(r.body).iter(S3_NS + "Contents"):
        meta = c.find(S3_NS + "UserMetadata")
        tags = c.find(S3_NS + "UserTags")
        out[c.find(S3_NS + "Key").text] = (
            {e.tag.replace(S3_NS, ""): e.text for e in meta} if meta is not None else None,
            tags.text if tags is not None else None)
    return out


def test_list_with_metadata_carries_user_metadata_and_tags(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="a", Body=b"1", ContentType="text/plain",
                  Metadata={"color": "blue"}, Tagging="team=storage&tier=hot")
    s3.put_object(Bucket=bucket, Key="b", Body=b"2")
    got = listed_metadata(server, bucket)
    # Before: plain Contents, neither UserMetadata nor UserTags.
    assert got["a"] == ({"content-type": "text/plain", "X-Amz-Meta-Color": "blue"},
                        "team=storage&tier=hot"), got
    assert got["b"][1] is None and got["b"][0]["content-type"] == "binary/octet-stream", got
    # A plain ListObjectsV2 is unchanged.
    plain = signed_request(server, "GET", f"/{bucket}", query=[("list-type", "2")])
    assert b"UserMetadata" not in plain.body and b"UserTags" not in plain.body

    # A user who may list but not read objects or their tags sees the listing without either.
    name = "lm-" + rand_str(8)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"]},
        {"Effect": "Allow", "Action": ["s3:GetObjectTagging"],
         "Resource": [f"arn:aws:s3:::{bucket}/*"]}]}))
    admin(server, "policy", "create", name, str(path))
    ak, sk = add_user(server, [name])
    got = listed_metadata(server, bucket, access_key=ak, secret_key=sk)
    assert got == {"a": (None, "team=storage&tier=hot"), "b": (None, None)}, got


def put_versioning(server, bucket, inner):
    body = f"<VersioningConfiguration>{inner}</VersioningConfiguration>".encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    return signed_request(server, "PUT", f"/{bucket}", query=[("versioning", "")], body=body,
                          headers={"content-md5": md5})


def test_versioning_excluded_prefixes_and_folders(server, s3, bucket):
    """minio-py's VersioningConfig(ENABLED, excluded_prefixes=[...], exclude_folders=True):
    before, 400 MalformedXML."""
    r = put_versioning(server, bucket, "<Status>Enabled</Status>"
                       "<ExcludedPrefixes><Prefix>tmp/</Prefix></ExcludedPrefixes>"
                       "<ExcludedPrefixes><Prefix>*/_staging/</Prefix></ExcludedPrefixes>"
                       "<ExcludeFolders>true</ExcludeFolders>")
    assert r.status == 200, r.body
    cfg = ET.fromstring(signed_request(server, "GET", f"/{bucket}",
                                       query=[("versioning", "")]).body)
    assert cfg.find(S3_NS + "Status").text == "Enabled"
    assert [p.text for p in cfg.iter(S3_NS + "Prefix")] == ["tmp/", "*/_staging/"]
    assert cfg.find(S3_NS + "ExcludeFolders").text == "true"
    # boto3 reads the status as before.
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    for key in ("tmp/a", "data/x", "dir/", "job/_staging/y"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"one")
        s3.put_object(Bucket=bucket, Key=key, Body=b"two")
    listed = s3.list_object_versions(Bucket=bucket)["Versions"]
    ids = {}
    for v in listed:
        ids.setdefault(v["Key"], []).append(v["VersionId"])
    assert ids["tmp/a"] == ["null"] and ids["dir/"] == ["null"], ids
    assert ids["job/_staging/y"] == ["null"], ids
    assert len(ids["data/x"]) == 2 and "null" not in ids["data/x"], ids
    assert s3.get_object(Bucket=bucket, Key="tmp/a")["Body"].read() == b"two"

    # MinIO's limits: 10 prefixes, and only with Enabled.
    many = "".join(f"<ExcludedPrefixes><Prefix>p{i}/</Prefix></ExcludedPrefixes>"
                   for i in range(11))
    r = put_versioning(server, bucket, "<Status>Enabled</Status>" + many)
    assert_s3_error(r.status, r.headers, r.body, "IllegalVersioningConfigurationException", 400,
                    "too many excluded prefixes")
    r = put_versioning(server, bucket, "<Status>Suspended</Status>"
                       "<ExcludedPrefixes><Prefix>tmp/</Prefix></ExcludedPrefixes>")
    assert_s3_error(r.status, r.headers, r.body, "IllegalVersioningConfigurationException", 400,
                    "only when versioning is enabled")
    # The refused configurations changed nothing.
    cfg = ET.fromstring(signed_request(server, "GET", f"/{bucket}",
                                       query=[("versioning", "")]).body)
    assert [p.text for p in cfg.iter(S3_NS + "Prefix")] == ["tmp/", "*/_staging/"]


def listed_version_metadata(server, bucket, **auth):
    """ListObjectVersions with metadata=true as minio-py sends it (list_objects(include_version=
    True, include_user_meta=True)): [(element, key, size, metadata dict, tags)] in listed order."""
    r = signed_request(server, "GET", f"/{bucket}",
                       query=[("versions", ""), ("metadata", "true"), ("encoding-type", "url")],
                       **auth)
    assert r.status == 200, r.body
    out = []
    for v in ET.fromstring(r.body):
        element = v.tag.replace(S3_NS, "")
        if element not in ("Version", "DeleteMarker"):
            continue
        meta = v.find(S3_NS + "UserMetadata")
        tags = v.find(S3_NS + "UserTags")
        size = v.find(S3_NS + "Size")
        out.append((element, v.find(S3_NS + "Key").text,
                    size.text if size is not None else None,
                    {e.tag.replace(S3_NS, ""): e.text for e in meta} if meta is not None else None,
                    tags.text if tags is not None else None))
    return out


def test_list_versions_with_metadata_carries_each_versions_own(server, s3, bucket, tmp_path):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="a", Body=b"1", ContentType="text/plain",
                  Metadata={"color": "blue"}, Tagging="v=1")
    s3.put_object(Bucket=bucket, Key="a", Body=b"22", ContentType="text/plain",
                  Metadata={"color": "green"}, Tagging="v=2")
    s3.put_object(Bucket=bucket, Key="b", Body=b"3")
    s3.delete_object(Bucket=bucket, Key="b")
    # Before: plain Version entries, neither UserMetadata nor UserTags.
    blue = {"content-type": "text/plain", "X-Amz-Meta-Color": "blue"}
    green = {"content-type": "text/plain", "X-Amz-Meta-Color": "green"}
    plain_b = {"content-type": "binary/octet-stream"}
    assert listed_version_metadata(server, bucket) == [
        ("Version", "a", "2", green, "v=2"),
        ("Version", "a", "1", blue, "v=1"),
        ("DeleteMarker", "b", None, None, None),
        ("Version", "b", "1", plain_b, None)]
    # A plain ListObjectVersions is unchanged.
    plain = signed_request(server, "GET", f"/{bucket}", query=[("versions", "")])
    assert b"UserMetadata" not in plain.body and b"UserTags" not in plain.body

    # Reading versions takes s3:GetObjectVersion / s3:GetObjectVersionTagging: a user who may
    # list versions, s3:GetObject and s3:GetObjectVersionTagging sees the tags only.
    name = "lvm-" + rand_str(8)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucketVersions"],
         "Resource": [f"arn:aws:s3:::{bucket}"]},
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersionTagging"],
         "Resource": [f"arn:aws:s3:::{bucket}/*"]}]}))
    admin(server, "policy", "create", name, str(path))
    ak, sk = add_user(server, [name])
    assert listed_version_metadata(server, bucket, access_key=ak, secret_key=sk) == [
        ("Version", "a", "2", None, "v=2"),
        ("Version", "a", "1", None, "v=1"),
        ("DeleteMarker", "b", None, None, None),
        ("Version", "b", "1", None, None)]
