"""Conditional deletes (If-Match on DeleteObject, <ETag> in a DeleteObjects entry) against the real
server, as AWS answers them for general purpose buckets: a different ETag is 412
PreconditionFailed and nothing is deleted; a key with no object (none, or a delete marker on top)
is 404 NoSuchKey; `*` only asks that the object exist; an ETag condition needs s3:GetObject beside
s3:DeleteObject. Debian's boto3 (1.26) has no IfMatch on deletes, so those requests are signed by
hand; boto3 sets up and checks.
"""

import base64
import hashlib
import json

from botocore.exceptions import ClientError

from conftest import make_client, rand_str, s3_error, signed_request, unique_bucket
from test_iam import add_user, admin

WRONG = '"0123456789abcdef0123456789abcdef"'


def delete(srv, bucket, key, if_match=None, version=None, creds=()):
    headers = {"If-Match": if_match} if if_match is not None else {}
    query = [("versionId", version)] if version else []
    return signed_request(srv, "DELETE", f"/{bucket}/{key}", query=query, headers=headers,
                          **dict(zip(("access_key", "secret_key"), creds)))


def exists(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        assert e.response["Error"]["Code"] in ("404", "NoSuchKey")
        return False


def test_if_match_on_an_unversioned_bucket(server):
    s3 = make_client(server)
    b = unique_bucket("cdel")
    s3.create_bucket(Bucket=b)
    etag = s3.put_object(Bucket=b, Key="k", Body=b"one")["ETag"]
    r = delete(server, b, "k", WRONG)
    assert (r.status, s3_error(r.body)["Code"]) == (412, "PreconditionFailed"), r
    assert exists(s3, b, "k")  # nothing deleted
    # The object was replaced since the caller read its ETag: the old ETag no longer deletes.
    new_etag = s3.put_object(Bucket=b, Key="k", Body=b"two")["ETag"]
    assert delete(server, b, "k", etag).status == 412 and exists(s3, b, "k")
    assert delete(server, b, "k", new_etag).status == 204
    assert not exists(s3, b, "k")
    # Conditional on an object that is not there: NoSuchKey; unconditional: 204 as always.
    for cond in ("*", new_etag):
        r = delete(server, b, "k", cond)
        assert (r.status, s3_error(r.body)["Code"]) == (404, "NoSuchKey"), (cond, r)
    assert delete(server, b, "k").status == 204
    s3.put_object(Bucket=b, Key="k", Body=b"three")
    assert delete(server, b, "k", "*").status == 204 and not exists(s3, b, "k")


def test_if_match_on_a_versioned_bucket(server):
    s3 = make_client(server)
    b = unique_bucket("cdelv")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    put = s3.put_object(Bucket=b, Key="k", Body=b"v1")
    etag, version = put["ETag"], put["VersionId"]
    assert delete(server, b, "k", WRONG).status == 412
    r = delete(server, b, "k", etag)
    assert r.status == 204 and r.header("x-amz-delete-marker") == "true"
    # The current version is now a delete marker: no object to match.
    r = delete(server, b, "k", "*")
    assert (r.status, s3_error(r.body)["Code"]) == (404, "NoSuchKey"), r
    # A named version is compared with itself.
    r = delete(server, b, "k", WRONG, version=version)
    assert (r.status, s3_error(r.body)["Code"]) == (412, "PreconditionFailed"), r
    assert delete(server, b, "k", etag, version=version).status == 204
    r = delete(server, b, "k", etag, version=version)
    assert (r.status, s3_error(r.body)["Code"]) == (404, "NoSuchVersion"), r
    assert [v["VersionId"] for v in s3.list_object_versions(Bucket=b).get("Versions", [])] == []


def test_etag_per_entry_of_delete_objects(server):
    s3 = make_client(server)
    b = unique_bucket("cdelm")
    s3.create_bucket(Bucket=b)
    etags = {k: s3.put_object(Bucket=b, Key=k, Body=k.encode())["ETag"] for k in ("a", "b", "c")}
    body = ("<Delete>"
            f"<Object><Key>a</Key><ETag>{etags['a']}</ETag></Object>"
            f"<Object><Key>b</Key><ETag>{WRONG}</ETag></Object>"
            "<Object><Key>c</Key></Object>"
            f"<Object><Key>gone</Key><ETag>{etags['a']}</ETag></Object>"
            "</Delete>").encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = signed_request(server, "POST", f"/{b}", query=[("delete", "")], body=body,
                       headers={"Content-MD5": md5})
    assert r.status == 200, r
    text = r.body.decode()
    assert "<Deleted><Key>a</Key>" in text and "<Deleted><Key>c</Key>" in text, text
    assert "<Key>b</Key><Code>PreconditionFailed</Code>" in text, text
    assert "<Key>gone</Key><Code>NoSuchKey</Code>" in text, text
    assert exists(s3, b, "b") and not exists(s3, b, "a") and not exists(s3, b, "c")
    # An empty <ETag> is no condition AWS's schema allows.
    bad = b"<Delete><Object><Key>b</Key><ETag></ETag></Object></Delete>"
    r = signed_request(server, "POST", f"/{b}", query=[("delete", "")], body=bad,
                       headers={"Content-MD5": base64.b64encode(hashlib.md5(bad).digest()).decode()})
    assert (r.status, s3_error(r.body)["Code"]) == (400, "MalformedXML"), r


def test_an_etag_condition_needs_get_object(server, tmp_path):
    s3 = make_client(server)
    b = unique_bucket("cdelp")
    s3.create_bucket(Bucket=b)
    etag = s3.put_object(Bucket=b, Key="k", Body=b"x")["ETag"]
    name = "deleteonly" + rand_str(6)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:DeleteObject"], "Resource": [f"arn:aws:s3:::{b}/*"]}]}))
    admin(server, "policy", "create", name, str(path))
    creds = add_user(server, [name])
    r = delete(server, b, "k", etag, creds=creds)
    assert (r.status, s3_error(r.body)["Code"]) == (403, "AccessDenied"), r
    assert exists(s3, b, "k")
    # `*` asks only that the object exist: s3:DeleteObject is enough.
    assert delete(server, b, "k", "*", creds=creds).status == 204
    assert not exists(s3, b, "k")


def test_locked_version_with_if_match_stays(server):
    # Object Lock's check and If-Match run together under the key's lock: a matching ETag does
    # not lift a legal hold.
    s3 = make_client(server)
    b = unique_bucket("cdell")
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    put = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockLegalHoldStatus="ON",
                        ContentMD5=base64.b64encode(hashlib.md5(b"x").digest()).decode())
    r = delete(server, b, "k", put["ETag"], version=put["VersionId"])
    assert (r.status, s3_error(r.body)["Code"]) == (403, "AccessDenied"), r
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=put["VersionId"],
                             LegalHold={"Status": "OFF"})
    assert delete(server, b, "k", put["ETag"], version=put["VersionId"]).status == 204
