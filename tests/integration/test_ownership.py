"""One owner notion (issue 38 items 11, 10, 9) against the real server with real IAM users:
every user has its own canonical id; a bucket belongs to its creator and an object to its
writer, as listings, ListMultipartUploads, ListParts and Get*Acl show; owners' rights (a user
with no policy on its own bucket, an initiator aborting its upload); OwnershipControls and
PublicAccessBlock (stored, answered and enforced as AWS); GetBucketPolicyStatus from ACLs; the
s3:ExistingObjectTag / s3:RequestObjectTag keys and the Arn operators; 404 for a missing key to
a caller who may list it; C1 control characters in keys; user metadata bytes as sent;
ListObjects v1's raw Prefix; x-amz-expected-bucket-owner for anonymous callers.

Clients: Debian's boto3, raw urllib for anonymous requests, hand-signed requests for bytes boto3
would not send."""
import json
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

from conftest import make_client, rand_str, signed_request, unique_bucket
from test_iam import add_user, admin

ROOT_ID = "02d6176db174dc93cb1b899f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4"


def status_code(fn, **kw):
    with pytest.raises(ClientError) as e:
        fn(**kw)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def anon(srv, method, path):
    req = urllib.request.Request(srv.url(path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def users(server, tmp_path_factory):
    """Two users whose only policy lets them create and list buckets: anything else they may do
    comes from ownership, ACLs or bucket policies."""
    doc = {"Version": "2012-10-17",
           "Statement": [{"Effect": "Allow", "Action": ["s3:CreateBucket", "s3:ListAllMyBuckets"],
                          "Resource": ["arn:aws:s3:::*"]}]}
    path = tmp_path_factory.mktemp("pol") / "creator.json"
    path.write_text(json.dumps(doc))
    name = "creator" + rand_str(6)
    admin(server, "policy", "create", name, str(path))
    out = []
    for _ in range(2):
        ak, sk = add_user(server, [name])
        out.append((ak, make_client(server, ak, sk)))
    return out


def test_owners_are_users(server, s3, users):
    (a_key, a), (b_key, b) = users
    root_owner = s3.list_buckets()["Owner"]
    a_owner = a.list_buckets()["Owner"]
    assert root_owner["ID"] == ROOT_ID
    assert a_owner["DisplayName"] == a_key and len(a_owner["ID"]) == 64
    assert a_owner["ID"] != ROOT_ID and a_owner["ID"] != b.list_buckets()["Owner"]["ID"]

    # A's bucket is A's: no policy grants A anything on it, its ownership does.
    mine = unique_bucket("own")
    a.create_bucket(Bucket=mine)
    acl = a.get_bucket_acl(Bucket=mine)
    assert acl["Owner"]["ID"] == a_owner["ID"]
    assert [(g["Grantee"]["ID"], g["Permission"]) for g in acl["Grants"]] == [
        (a_owner["ID"], "FULL_CONTROL")]
    a.put_object(Bucket=mine, Key="k", Body=b"mine")
    assert a.get_object(Bucket=mine, Key="k")["Body"].read() == b"mine"
    listed = a.list_objects_v2(Bucket=mine, FetchOwner=True)["Contents"]
    assert [c["Owner"]["ID"] for c in listed] == [a_owner["ID"]]
    assert a.get_object_acl(Bucket=mine, Key="k")["Owner"]["ID"] == a_owner["ID"]
    # Nobody else's: B is refused, root (the account) is not.
    assert status_code(b.get_object, Bucket=mine, Key="k") == (403, "AccessDenied")
    assert status_code(b.list_objects_v2, Bucket=mine) == (403, "AccessDenied")
    assert s3.get_object(Bucket=mine, Key="k")["Body"].read() == b"mine"
    # And root's private bucket is not A's.
    roots = unique_bucket("own")
    s3.create_bucket(Bucket=roots)
    assert status_code(a.list_objects_v2, Bucket=roots) == (403, "AccessDenied")

    # In root's public-read-write bucket, what B writes is B's: listings, ListMultipartUploads,
    # ListParts and GetObjectAcl show B; the initiator aborts its own upload (the ACL's WRITE
    # does not grant s3:AbortMultipartUpload).
    shared = unique_bucket("own")
    s3.create_bucket(Bucket=shared, ACL="public-read-write")
    b.put_object(Bucket=shared, Key="by-b", Body=b"b")
    s3.put_object(Bucket=shared, Key="by-root", Body=b"r")
    owners = {c["Key"]: c["Owner"]["ID"] for c in s3.list_objects(Bucket=shared)["Contents"]}
    b_id = b.list_buckets()["Owner"]["ID"]
    assert owners == {"by-b": b_id, "by-root": ROOT_ID}
    versions = s3.list_object_versions(Bucket=shared)["Versions"]
    assert {v["Key"]: v["Owner"]["ID"] for v in versions} == owners
    assert s3.get_object_acl(Bucket=shared, Key="by-b")["Owner"]["ID"] == b_id
    # B owns its object: it reads it although the bucket's ACL gives B no read of objects.
    assert b.get_object(Bucket=shared, Key="by-b")["Body"].read() == b"b"
    assert status_code(b.get_object, Bucket=shared, Key="by-root") == (403, "AccessDenied")
    up = b.create_multipart_upload(Bucket=shared, Key="mp")["UploadId"]
    s3.create_multipart_upload(Bucket=shared, Key="mp-root")
    uploads = {u["Key"]: (u["Initiator"]["ID"], u["Owner"]["ID"])
               for u in s3.list_multipart_uploads(Bucket=shared)["Uploads"]}
    assert uploads == {"mp": (b_id, b_id), "mp-root": (ROOT_ID, ROOT_ID)}
    assert b.list_parts(Bucket=shared, Key="mp", UploadId=up)["Initiator"]["ID"] == b_id
    a_up = s3.list_multipart_uploads(Bucket=shared)["Uploads"]
    root_up = [u["UploadId"] for u in a_up if u["Key"] == "mp-root"][0]
    assert status_code(b.abort_multipart_upload, Bucket=shared, Key="mp-root",
                       UploadId=root_up) == (403, "AccessDenied")
    b.abort_multipart_upload(Bucket=shared, Key="mp", UploadId=up)


def test_ownership_controls(server, s3, users):
    (_, a), _ = users
    bucket = unique_bucket("oc")
    s3.create_bucket(Bucket=bucket)
    assert status_code(s3.get_bucket_ownership_controls, Bucket=bucket) == (
        404, "OwnershipControlsNotFoundError")
    s3.put_bucket_ownership_controls(
        Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    # ACLs are off: every ACL but bucket-owner-full-control is refused, as AWS answers.
    for call, kw in [(s3.put_object, {"Key": "x", "ACL": "private"}),
                     (s3.put_bucket_acl, {"ACL": "private"}),
                     (s3.create_multipart_upload, {"Key": "x", "ACL": "public-read"})]:
        assert status_code(call, Bucket=bucket, **kw) == (400, "AccessControlListNotSupported")
    s3.put_object(Bucket=bucket, Key="x", Body=b"1", ACL="bucket-owner-full-control")
    # What another user writes belongs to the bucket's owner.
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:*",
                       "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}))
    a.put_object(Bucket=bucket, Key="from-a", Body=b"a")
    assert s3.get_object_acl(Bucket=bucket, Key="from-a")["Owner"]["ID"] == ROOT_ID
    assert status_code(s3.put_bucket_ownership_controls, Bucket=bucket,
                       OwnershipControls={"Rules": [{"ObjectOwnership": "Nobody"}]}) == (
        400, "MalformedXML")
    s3.delete_bucket_ownership_controls(Bucket=bucket)
    assert status_code(s3.get_bucket_ownership_controls, Bucket=bucket)[0] == 404
    # ObjectWriter (the default): the writer owns it.
    a.put_object(Bucket=bucket, Key="from-a2", Body=b"a")
    assert s3.get_object_acl(Bucket=bucket, Key="from-a2")["Owner"]["ID"] != ROOT_ID


def test_public_access_block(server, s3):
    bucket = unique_bucket("pab")
    s3.create_bucket(Bucket=bucket)
    assert status_code(s3.get_public_access_block, Bucket=bucket) == (
        404, "NoSuchPublicAccessBlockConfiguration")
    # Public through ACLs: GetBucketPolicyStatus says so without any policy.
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    s3.put_object(Bucket=bucket, Key="pub", Body=b"p", ACL="public-read")
    assert anon(server, "GET", f"/{bucket}/pub") == (200, b"p")

    conf = {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
            "RestrictPublicBuckets": False}
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=conf)
    got = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert got == conf
    # IgnorePublicAcls: the ACLs grant nothing any more; BlockPublicAcls: none can be set.
    assert anon(server, "GET", f"/{bucket}/pub")[0] == 403
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    assert status_code(s3.put_bucket_acl, Bucket=bucket, ACL="public-read")[0] == 403
    assert status_code(s3.put_object, Bucket=bucket, Key="p2", Body=b"", ACL="public-read")[0] == 403
    s3.put_object(Bucket=bucket, Key="p3", Body=b"", ACL="private")
    public_policy = json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                       "Resource": f"arn:aws:s3:::{bucket}/*"}]})
    # BlockPublicPolicy: a public policy is refused, for the owner too.
    assert status_code(s3.put_bucket_policy, Bucket=bucket, Policy=public_policy) == (
        403, "AccessDenied")
    # RestrictPublicBuckets: a public policy no longer lets anonymous callers in.
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
        "RestrictPublicBuckets": True})
    s3.put_bucket_policy(Bucket=bucket, Policy=public_policy)
    assert anon(server, "GET", f"/{bucket}/p3")[0] == 403
    s3.delete_public_access_block(Bucket=bucket)
    assert status_code(s3.get_public_access_block, Bucket=bucket)[0] == 404
    assert anon(server, "GET", f"/{bucket}/p3") == (200, b"")


def test_policy_tag_keys_and_arn_operators(server, s3, users):
    (_, a), _ = users
    bucket = unique_bucket("tagpol")
    s3.create_bucket(Bucket=bucket)
    res = f"arn:aws:s3:::{bucket}/*"
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:GetObject",
             "Resource": res,
             "Condition": {"StringEquals": {"s3:ExistingObjectTag/Security": "public"}}},
            # (Tags on a write need s3:PutObjectTagging too, as AWS.)
            {"Effect": "Allow", "Principal": {"AWS": "*"},
             "Action": ["s3:PutObject", "s3:PutObjectTagging"], "Resource": res,
             "Condition": {"StringEquals": {"s3:RequestObjectTag/Security": "public"}}},
            # Arn operators: an absent key matches only the IfExists form.
            {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:GetObjectTagging",
             "Resource": res,
             "Condition": {"ArnLikeIfExists": {"aws:SourceArn": "arn:aws:s3:::nothing*"}}},
            {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:GetObjectAttributes",
             "Resource": res,
             "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"}}},
        ]}))
    s3.put_object(Bucket=bucket, Key="pub", Body=b"1", Tagging="Security=public")
    s3.put_object(Bucket=bucket, Key="priv", Body=b"2", Tagging="Security=private")
    s3.put_object(Bucket=bucket, Key="lower", Body=b"3", Tagging="security=public")
    assert a.get_object(Bucket=bucket, Key="pub")["Body"].read() == b"1"
    assert status_code(a.get_object, Bucket=bucket, Key="priv") == (403, "AccessDenied")
    # Tag keys are case-sensitive.
    assert status_code(a.get_object, Bucket=bucket, Key="lower") == (403, "AccessDenied")
    # The tag the write asks for decides.
    a.put_object(Bucket=bucket, Key="w1", Body=b"", Tagging="Security=public")
    assert status_code(a.put_object, Bucket=bucket, Key="w2", Body=b"",
                       Tagging="Security=secret") == (403, "AccessDenied")
    assert status_code(a.put_object, Bucket=bucket, Key="w3", Body=b"") == (403, "AccessDenied")
    a.get_object_tagging(Bucket=bucket, Key="pub")
    assert status_code(a.get_object_attributes, Bucket=bucket, Key="pub",
                       ObjectAttributes=["ETag"]) == (403, "AccessDenied")


def test_missing_key_and_names(server, s3):
    bucket = unique_bucket("miss")
    s3.create_bucket(Bucket=bucket)
    # May list under public/: a missing key there is 404, elsewhere 403 (AWS).
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
                       "Resource": f"arn:aws:s3:::{bucket}",
                       "Condition": {"StringLike": {"s3:prefix": "public/*"}}}]}))
    status, body = anon(server, "GET", f"/{bucket}/public/none")
    assert status == 404 and b"<Code>NoSuchKey</Code>" in body
    assert anon(server, "HEAD", f"/{bucket}/public/none")[0] == 404
    assert anon(server, "GET", f"/{bucket}/private/none")[0] == 403
    s3.put_object(Bucket=bucket, Key="public/there", Body=b"x")
    assert anon(server, "GET", f"/{bucket}/public/there")[0] == 403  # exists: no read grant

    # A C1 control character in a key: AWS cannot parse the URI (400 InvalidURI).
    assert status_code(s3.get_object, Bucket=bucket, Key="\xae\x8a-") == (400, "InvalidURI")

    # User metadata comes back byte for byte (an ISO-8859-1 0xE9 stays one byte).
    r = signed_request(server, "PUT", f"/{bucket}/meta", headers={"x-amz-meta-v": "caf\xe9"},
                       body=b"m")
    assert r.status == 200, r.body
    r = signed_request(server, "GET", f"/{bucket}/meta")
    assert r.status == 200
    # http.client reads header bytes as ISO-8859-1: one character per byte sent.
    assert [v for k, v in r.headers if k.lower() == "x-amz-meta-v"] == ["caf\xe9"]

    # ListObjects v1 with encoding-type=url writes its top-level Prefix as sent.
    s3.put_object(Bucket=bucket, Key="\nx", Body=b"")
    got = s3.list_objects(Bucket=bucket, Prefix="\n")
    assert got["Prefix"] == "\n" and [c["Key"] for c in got["Contents"]] == ["\nx"]


def test_expected_bucket_owner(server, s3):
    bucket = unique_bucket("ebo")
    s3.create_bucket(Bucket=bucket, ACL="public-read-write")
    # The deployment's account id passes; another is 403, a malformed one 400 to a signed caller.
    assert status_code(s3.list_objects, Bucket=bucket, ExpectedBucketOwner="000000000000") == (
        403, "AccessDenied")
    assert status_code(s3.list_objects, Bucket=bucket, ExpectedBucketOwner="x" + ROOT_ID) == (
        400, "InvalidBucketOwnerAWSAccountID")
    # An anonymous caller learns nothing but "denied".
    req = urllib.request.Request(server.url(f"/{bucket}"),
                                 headers={"x-amz-expected-bucket-owner": ROOT_ID + "foo"})
    try:
        urllib.request.urlopen(req, timeout=10)
        code = 200
    except urllib.error.HTTPError as e:
        code, body = e.code, e.read()
    assert code == 403 and b"<Code>AccessDenied</Code>" in body
