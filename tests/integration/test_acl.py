"""Canned ACLs (issue 15 item 3) against the real server: x-amz-acl on CreateBucket, PutObject,
CopyObject, CreateMultipartUpload and Put*Acl (header and an equivalent AccessControlPolicy body),
Get*Acl in AWS's XML, and enforcement through the policy evaluator: anonymous reads allowed by
public-read (raw urllib GETs), anonymous writes by public-read-write, any user of the server by
authenticated-read, explicit denies in bucket policies still winning, and the s3:x-amz-acl
condition key. Also the ...Version IAM actions of requests that name a version.

The SDK checks are one script run under Debian's boto3 and, when the machine has one, a current
boto3 (as test_tagging.py); the rest uses Debian's boto3, awscli and raw HTTP.
"""
import json
import os
import subprocess
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import (AwsCli, assert_s3_error, make_client, rand_str, s3_error, sdk_script_runner,
                      signed_request, unique_bucket)
from test_conformance import _interpreters
from test_iam import add_user, admin, code_of

S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
ROOT_ID = "02d6176db174dc93cb1b899f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4"


def anon(srv, method, path, body=None):
    """An unsigned request through urllib: (status, body bytes)."""
    req = urllib.request.Request(srv.url(path), data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def anon_code(srv, method, path, body=None):
    status, data = anon(srv, method, path, body)
    if status < 300 or not data:
        return status, None
    return status, s3_error(data)["Code"]


def grants_of(resp):
    """Get*Acl grants as comparable tuples."""
    out = []
    for g in resp["Grants"]:
        ge = g["Grantee"]
        out.append((ge["Type"], ge.get("URI") or ge.get("ID"), g["Permission"]))
    return sorted(out)


SDK_SCRIPT = r'''
import json, sys
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
endpoint, ak, sk, prefix = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                retries={"total_max_attempts": 1, "mode": "standard"}))
out = {"boto3": boto3.__version__}

def err(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")]
    return ["ok", None]

def grants(resp):
    return sorted([g["Grantee"]["Type"], g["Grantee"].get("URI") or g["Grantee"].get("ID"),
                   g["Permission"]] for g in resp["Grants"])

def section(fn):
    import traceback
    try:
        fn()
    except Exception:
        out["crash " + fn.__name__] = traceback.format_exc()[-2000:]

bucket = prefix + "-acl"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"

@section
def bucket_acl():
    s3.create_bucket(Bucket=bucket, ACL="public-read")
    got = s3.get_bucket_acl(Bucket=bucket)
    out["owner"] = [got["Owner"]["ID"], got["Owner"].get("DisplayName")]
    out["created public-read"] = grants(got)
    s3.put_bucket_acl(Bucket=bucket, ACL="authenticated-read")
    out["authenticated-read"] = grants(s3.get_bucket_acl(Bucket=bucket))
    # The document GetBucketAcl returned, trimmed to the owner's grant: private.
    doc = s3.get_bucket_acl(Bucket=bucket)
    policy = {"Owner": doc["Owner"], "Grants": [g for g in doc["Grants"]
                                                if g["Grantee"]["Type"] == "CanonicalUser"]}
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy=policy)
    out["body private"] = grants(s3.get_bucket_acl(Bucket=bucket))
    policy["Grants"].append({"Grantee": {"Type": "Group", "URI": ALL_USERS},
                             "Permission": "READ"})
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy=policy)
    out["body public-read"] = grants(s3.get_bucket_acl(Bucket=bucket))
    email = dict(policy, Grants=policy["Grants"] + [
        {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "a@example.com"},
         "Permission": "READ"}])
    out["body email grant"] = err(s3.put_bucket_acl, Bucket=bucket, AccessControlPolicy=email)
    out["canned and body"] = err(s3.put_bucket_acl, Bucket=bucket, ACL="private",
                                 AccessControlPolicy=policy)
    bad_perm = dict(policy, Grants=policy["Grants"] + [
        {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "EVERYTHING"}])
    out["body bad permission"] = err(s3.put_bucket_acl, Bucket=bucket,
                                     AccessControlPolicy=bad_perm)
    bad_group = dict(policy, Grants=policy["Grants"] + [
        {"Grantee": {"Type": "Group", "URI": "http://example.com/groups/everyone"},
         "Permission": "READ"}])
    out["body bad group"] = err(s3.put_bucket_acl, Bucket=bucket, AccessControlPolicy=bad_group)
    out["grant header"] = err(s3.put_bucket_acl, Bucket=bucket, GrantRead="uri=" + ALL_USERS)
    out["grant and canned"] = err(s3.put_bucket_acl, Bucket=bucket, ACL="private", GrantRead="id=x")
    out["bogus canned"] = err(s3.put_bucket_acl, Bucket=bucket, ACL="bogus")
    out["after refusals"] = grants(s3.get_bucket_acl(Bucket=bucket))
    out["missing bucket"] = err(s3.get_bucket_acl, Bucket=prefix + "-missing")

@section
def object_acl():
    s3.put_object(Bucket=bucket, Key="pub", Body=b"p", ACL="public-read")
    out["put public-read"] = grants(s3.get_object_acl(Bucket=bucket, Key="pub"))
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    out["put default"] = grants(s3.get_object_acl(Bucket=bucket, Key="plain"))
    s3.put_object(Bucket=bucket, Key="bofc", Body=b"x", ACL="bucket-owner-full-control")
    out["bucket-owner-full-control"] = grants(s3.get_object_acl(Bucket=bucket, Key="bofc"))
    before = s3.head_object(Bucket=bucket, Key="plain")
    s3.put_object_acl(Bucket=bucket, Key="plain", ACL="public-read-write")
    after = s3.head_object(Bucket=bucket, Key="plain")
    out["put_object_acl"] = grants(s3.get_object_acl(Bucket=bucket, Key="plain"))
    out["acl changes nothing else"] = [before["ETag"] == after["ETag"],
                                       before["LastModified"] == after["LastModified"]]
    s3.copy_object(Bucket=bucket, Key="copy-default", CopySource={"Bucket": bucket, "Key": "pub"})
    out["copy default"] = grants(s3.get_object_acl(Bucket=bucket, Key="copy-default"))
    s3.copy_object(Bucket=bucket, Key="copy-auth", CopySource={"Bucket": bucket, "Key": "pub"},
                   ACL="authenticated-read")
    out["copy authenticated-read"] = grants(s3.get_object_acl(Bucket=bucket, Key="copy-auth"))
    mp = s3.create_multipart_upload(Bucket=bucket, Key="mpu", ACL="public-read")
    part = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=mp["UploadId"], PartNumber=1,
                          Body=b"m")
    s3.complete_multipart_upload(
        Bucket=bucket, Key="mpu", UploadId=mp["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    out["multipart"] = grants(s3.get_object_acl(Bucket=bucket, Key="mpu"))
    out["missing key"] = err(s3.get_object_acl, Bucket=bucket, Key="nope")
    out["put missing key"] = err(s3.put_object_acl, Bucket=bucket, Key="nope", ACL="private")
    doc = s3.get_object_acl(Bucket=bucket, Key="pub")
    out["object canned and body"] = err(
        s3.put_object_acl, Bucket=bucket, Key="pub", ACL="private",
        AccessControlPolicy={"Owner": doc["Owner"], "Grants": doc["Grants"]})
    out["bogus on put"] = err(s3.put_object, Bucket=bucket, Key="bogus", Body=b"x", ACL="bogus")
    out["bogus not stored"] = err(s3.head_object, Bucket=bucket, Key="bogus")
    out["grant on put"] = err(s3.put_object, Bucket=bucket, Key="g", Body=b"x",
                              GrantRead="id=" + "a" * 64)
    out["bad grant id on put"] = err(s3.put_object, Bucket=bucket, Key="g", Body=b"x",
                                     GrantRead="id=x")
    out["exec-read"] = err(s3.put_object, Bucket=bucket, Key="e", Body=b"x", ACL="aws-exec-read")

print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def sdk_results(tmp_path_factory):
    return sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "acl_sdk.py", "acl", timeout=300)


def owner_grant(owner_id=ROOT_ID):
    return ["CanonicalUser", owner_id, "FULL_CONTROL"]


@pytest.mark.parametrize("py", _interpreters())
def test_sdk_bucket_acl(sdk_results, server, py):
    out = sdk_results(py, server, "bucket_acl")
    assert out["owner"] == [ROOT_ID, "rdmastor"]
    assert out["created public-read"] == sorted([owner_grant(), ["Group", ALL_USERS, "READ"]])
    assert out["authenticated-read"] == sorted([owner_grant(), ["Group", AUTH_USERS, "READ"]])
    assert out["body private"] == [owner_grant()]
    assert out["body public-read"] == sorted([owner_grant(), ["Group", ALL_USERS, "READ"]])
    # No account here has an e-mail address: AWS's answer for one it cannot resolve.
    assert out["body email grant"] == [400, "UnresolvableGrantByEmailAddress"]
    assert out["canned and body"] == [400, "UnexpectedContent"]
    assert out["body bad permission"] == [400, "MalformedACLError"]
    assert out["body bad group"] == [400, "InvalidArgument"]
    assert out["grant header"] == [501, "NotImplemented"]
    assert out["grant and canned"] == [400, "InvalidRequest"]
    assert out["bogus canned"] == [400, "InvalidArgument"]
    assert out["after refusals"] == out["body public-read"]  # refused requests changed nothing
    assert out["missing bucket"] == [404, "NoSuchBucket"]


@pytest.mark.parametrize("py", _interpreters())
def test_sdk_object_acl(sdk_results, server, py):
    out = sdk_results(py, server, "object_acl")
    public_read = sorted([owner_grant(), ["Group", ALL_USERS, "READ"]])
    assert out["put public-read"] == public_read
    assert out["put default"] == [owner_grant()]
    assert out["bucket-owner-full-control"] == [owner_grant()]  # the object owner is the bucket's
    assert out["put_object_acl"] == sorted([owner_grant(), ["Group", ALL_USERS, "READ"],
                                            ["Group", ALL_USERS, "WRITE"]])
    assert out["acl changes nothing else"] == [True, True]
    assert out["copy default"] == [owner_grant()]  # a copy does not take the source's ACL
    assert out["copy authenticated-read"] == sorted([owner_grant(), ["Group", AUTH_USERS, "READ"]])
    assert out["multipart"] == public_read
    assert out["missing key"] == [404, "NoSuchKey"]
    assert out["put missing key"] == [404, "NoSuchKey"]
    assert out["object canned and body"] == [400, "UnexpectedContent"]
    assert out["bogus on put"] == [400, "InvalidArgument"]
    assert out["bogus not stored"] == [404, "404"]
    assert out["grant on put"] == [501, "NotImplemented"]
    assert out["bad grant id on put"] == [400, "InvalidArgument"]
    assert out["exec-read"] == [501, "NotImplemented"]


def test_get_acl_xml_field_by_field(server):
    root = make_client(server)
    b = unique_bucket("aclx")
    root.create_bucket(Bucket=b, ACL="public-read-write")
    r = signed_request(server, "GET", f"/{b}", query=[("acl", "")])
    assert r.status == 200, r
    assert r.header("content-type") == "application/xml"
    doc = ET.fromstring(r.body)
    assert doc.tag == S3_NS + "AccessControlPolicy"
    assert [c.tag for c in doc] == [S3_NS + "Owner", S3_NS + "AccessControlList"]
    owner = doc.find(S3_NS + "Owner")
    assert owner.findtext(S3_NS + "ID") == ROOT_ID
    assert owner.findtext(S3_NS + "DisplayName") == "rdmastor"
    grants = doc.findall(f"{S3_NS}AccessControlList/{S3_NS}Grant")
    assert len(grants) == 3
    # The groups' grants first, the owner's last (the order s3-tests expects of S3).
    last = grants[2].find(S3_NS + "Grantee")
    assert last.get(XSI_TYPE) == "CanonicalUser"
    assert [c.tag for c in last] == [S3_NS + "ID", S3_NS + "DisplayName"]
    assert last.findtext(S3_NS + "ID") == ROOT_ID
    assert grants[2].findtext(S3_NS + "Permission") == "FULL_CONTROL"
    for g, perm in zip(grants[:2], ["READ", "WRITE"]):
        grantee = g.find(S3_NS + "Grantee")
        assert grantee.get(XSI_TYPE) == "Group"
        assert [c.tag for c in grantee] == [S3_NS + "URI"]
        assert grantee.findtext(S3_NS + "URI") == ALL_USERS
        assert g.findtext(S3_NS + "Permission") == perm
    # The raw text declares the xsi namespace on the Grantee, as AWS writes it.
    assert (b'<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group">'
            in r.body)


def test_anonymous_access_by_canned_acls(server):
    root = make_client(server)
    b = unique_bucket("acla")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="pub", Body=b"public", ACL="public-read")
    root.put_object(Bucket=b, Key="priv", Body=b"private")
    root.put_object(Bucket=b, Key="auth", Body=b"auth", ACL="authenticated-read")
    assert anon(server, "GET", f"/{b}/pub") == (200, b"public")
    assert anon(server, "HEAD", f"/{b}/pub")[0] == 200
    assert anon_code(server, "GET", f"/{b}/priv") == (403, "AccessDenied")
    assert anon_code(server, "GET", f"/{b}/auth") == (403, "AccessDenied")  # anonymous: no
    assert anon_code(server, "GET", f"/{b}/missing") == (403, "AccessDenied")
    # Object ACLs grant reads only: no overwrite, no delete, no ACL read.
    assert anon_code(server, "PUT", f"/{b}/pub", b"x") == (403, "AccessDenied")
    assert anon_code(server, "DELETE", f"/{b}/pub") == (403, "AccessDenied")
    assert anon_code(server, "GET", f"/{b}/pub?acl") == (403, "AccessDenied")
    # The bucket is private: no anonymous listing.
    assert anon_code(server, "GET", f"/{b}?list-type=2") == (403, "AccessDenied")
    # Turning ACLs around takes effect at once.
    root.put_object_acl(Bucket=b, Key="priv", ACL="public-read")
    root.put_object_acl(Bucket=b, Key="pub", ACL="private")
    assert anon(server, "GET", f"/{b}/priv") == (200, b"private")
    assert anon_code(server, "GET", f"/{b}/pub") == (403, "AccessDenied")
    # A public-read bucket lists (and answers HEAD) but does not open its private objects.
    root.put_bucket_acl(Bucket=b, ACL="public-read")
    status, body = anon(server, "GET", f"/{b}?list-type=2")
    assert status == 200 and b"<Key>pub</Key>" in body
    assert anon(server, "HEAD", f"/{b}")[0] == 200
    assert anon_code(server, "GET", f"/{b}/pub") == (403, "AccessDenied")
    assert anon_code(server, "PUT", f"/{b}/new", b"x") == (403, "AccessDenied")
    # public-read-write: anonymous writes and deletes objects, but not the bucket's ACL.
    root.put_bucket_acl(Bucket=b, ACL="public-read-write")
    assert anon(server, "PUT", f"/{b}/dropped", b"anon data")[0] == 200
    assert root.get_object(Bucket=b, Key="dropped")["Body"].read() == b"anon data"
    assert anon(server, "DELETE", f"/{b}/dropped")[0] == 204
    assert anon_code(server, "PUT", f"/{b}?acl", b"") == (403, "AccessDenied")
    assert anon_code(server, "DELETE", f"/{b}") == (403, "AccessDenied")
    # An explicit Deny in the bucket policy wins over every ACL grant.
    deny = {"Statement": [{"Effect": "Deny", "Principal": "*", "Action": ["s3:GetObject",
                                                                          "s3:PutObject"],
                           "Resource": f"arn:aws:s3:::{b}/*"}]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(deny))
    assert anon_code(server, "GET", f"/{b}/priv") == (403, "AccessDenied")
    assert anon_code(server, "PUT", f"/{b}/dropped", b"x") == (403, "AccessDenied")
    root.delete_bucket_policy(Bucket=b)
    assert anon(server, "GET", f"/{b}/priv") == (200, b"private")
    root.put_bucket_acl(Bucket=b, ACL="private")
    assert anon_code(server, "PUT", f"/{b}/dropped", b"x") == (403, "AccessDenied")
    assert anon_code(server, "GET", f"/{b}?list-type=2") == (403, "AccessDenied")


def test_authenticated_read_for_another_user(server):
    root = make_client(server)
    b = unique_bucket("aclu")
    root.create_bucket(Bucket=b, ACL="authenticated-read")
    root.put_object(Bucket=b, Key="shared", Body=b"s", ACL="authenticated-read")
    root.put_object(Bucket=b, Key="public", Body=b"p", ACL="public-read")
    root.put_object(Bucket=b, Key="private", Body=b"x")
    ak, sk = add_user(server)  # no policy at all: only the ACLs can let it in
    user = make_client(server, ak, sk)
    assert user.get_object(Bucket=b, Key="shared")["Body"].read() == b"s"
    assert user.get_object(Bucket=b, Key="public")["Body"].read() == b"p"
    assert sorted(o["Key"] for o in user.list_objects_v2(Bucket=b)["Contents"]) == [
        "private", "public", "shared"]
    for call in (lambda: user.get_object(Bucket=b, Key="private"),
                 lambda: user.put_object(Bucket=b, Key="shared", Body=b"overwrite"),
                 lambda: user.get_object_acl(Bucket=b, Key="shared"),
                 lambda: user.put_bucket_acl(Bucket=b, ACL="public-read")):
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == "AccessDenied"
    assert anon_code(server, "GET", f"/{b}/shared") == (403, "AccessDenied")
    assert anon_code(server, "GET", f"/{b}?list-type=2") == (403, "AccessDenied")
    # A bucket a user creates records that user as its owner.
    rw_ak, rw_sk = add_user(server, ["readwrite"])
    rw = make_client(server, rw_ak, rw_sk)
    ub = unique_bucket("aclo")
    rw.create_bucket(Bucket=ub, ACL="public-read")
    got = rw.get_bucket_acl(Bucket=ub)
    assert got["Owner"]["DisplayName"] == rw_ak
    assert len(got["Owner"]["ID"]) == 64 and got["Owner"]["ID"] != ROOT_ID
    assert grants_of(got) == sorted([("CanonicalUser", got["Owner"]["ID"], "FULL_CONTROL"),
                                     ("Group", ALL_USERS, "READ")])
    rw.put_object(Bucket=ub, Key="k", Body=b"v")
    assert make_client(server).get_object_acl(Bucket=ub, Key="k")["Owner"] == got["Owner"]
    # CreateBucket on an existing name: its owner asking for what it has gets us-east-1's 200
    # (the bucket kept); anyone else 409 BucketAlreadyExists, root included.
    assert rw.create_bucket(Bucket=ub, ACL="public-read")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert rw.list_objects_v2(Bucket=ub)["KeyCount"] == 1
    for who, name in ((root, ub), (rw, b)):
        with pytest.raises(ClientError) as e:
            who.create_bucket(Bucket=name)
        assert code_of(e) == "BucketAlreadyExists" and e.value.response[
            "ResponseMetadata"]["HTTPStatusCode"] == 409


def test_bucket_policy_sees_x_amz_acl(server):
    root = make_client(server)
    b = unique_bucket("aclc")
    root.create_bucket(Bucket=b)
    ak, sk = add_user(server)
    arn = f"arn:aws:iam::123456789012:user/{ak}"
    doc = {"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": [arn]}, "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{b}/*",
         "Condition": {"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{b}/*",
         "Condition": {"StringEquals": {"s3:x-amz-acl": ["public-read", "public-read-write"]}}}]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    user = make_client(server, ak, sk)
    user.put_object(Bucket=b, Key="ok", Body=b"x", ACL="bucket-owner-full-control")
    for acl in (None, "private", "public-read"):
        kw = {"ACL": acl} if acl else {}
        with pytest.raises(ClientError) as e:
            user.put_object(Bucket=b, Key="no", Body=b"x", **kw)
        assert code_of(e) == "AccessDenied", acl
    # The deny applies to a user with every right too (root is never refused).
    rw_ak, rw_sk = add_user(server, ["readwrite"])
    rw = make_client(server, rw_ak, rw_sk)
    rw.put_object(Bucket=b, Key="rw", Body=b"x", ACL="authenticated-read")
    with pytest.raises(ClientError) as e:
        rw.put_object(Bucket=b, Key="rw2", Body=b"x", ACL="public-read-write")
    assert code_of(e) == "AccessDenied"
    root.put_object(Bucket=b, Key="root", Body=b"x", ACL="public-read")


def test_awscli_put_object_acl(server, tmp_path):
    cli = AwsCli(server, str(tmp_path))
    b = unique_bucket("aclcli")
    cli("s3api", "create-bucket", "--bucket", b)
    src = tmp_path / "f.txt"
    src.write_bytes(b"cli body")
    cli("s3api", "put-object", "--bucket", b, "--key", "f.txt", "--body", str(src))
    assert anon_code(server, "GET", f"/{b}/f.txt") == (403, "AccessDenied")
    cli("s3api", "put-object-acl", "--bucket", b, "--key", "f.txt", "--acl", "public-read")
    assert anon(server, "GET", f"/{b}/f.txt") == (200, b"cli body")
    got = cli.api("get-object-acl", "--bucket", b, "--key", "f.txt")
    assert grants_of(got) == sorted([("CanonicalUser", ROOT_ID, "FULL_CONTROL"),
                                     ("Group", ALL_USERS, "READ")])
    cli("s3api", "put-bucket-acl", "--bucket", b, "--acl", "public-read")
    assert anon(server, "GET", f"/{b}?list-type=2")[0] == 200
    res = cli("s3api", "put-bucket-acl", "--bucket", b, "--grant-read",
              "id=" + "ab" * 32, check=False)
    assert res.returncode != 0 and "NotImplemented" in res.stderr
    # aws s3 cp --acl goes through PutObject's x-amz-acl.
    cli("s3", "cp", str(src), f"s3://{b}/cp.txt", "--acl", "public-read")
    assert anon(server, "GET", f"/{b}/cp.txt") == (200, b"cli body")


def test_acl_requests_hostile_and_malformed(server):
    root = make_client(server)
    b = unique_bucket("aclh")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"v")
    # A huge x-amz-acl value: InvalidArgument, the value echoed bounded.
    r = signed_request(server, "PUT", f"/{b}/k", headers={"x-amz-acl": "x" * 6000}, body=b"v")
    err = s3_error(r.body)
    assert (r.status, err["Code"], err["ArgumentName"]) == (400, "InvalidArgument", "x-amz-acl")
    assert len(err["ArgumentValue"]) <= 64
    # Neither header nor body; both; a body that is not an ACL; a DOCTYPE; another owner.
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")])
    assert (r.status, s3_error(r.body)["Code"]) == (400, "MissingSecurityHeader")
    acl_doc = signed_request(server, "GET", f"/{b}", query=[("acl", "")]).body
    # Header and body, on a bucket and an object: AWS's UnexpectedContent.
    for path in (f"/{b}", f"/{b}/k"):
        r = signed_request(server, "PUT", path, query=[("acl", "")],
                           headers={"x-amz-acl": "private"}, body=acl_doc)
        assert_s3_error(r.status, r.hdict, r.body, "UnexpectedContent", 400,
                        "This request does not support content.")
    # Documents that are not an AccessControlPolicy AWS's schema allows: MalformedACLError.
    owner = b"<Owner><ID>" + ROOT_ID.encode() + b"</ID></Owner>"

    def policy(grants, owner=owner):
        return (b"<AccessControlPolicy>" + owner + b"<AccessControlList>" + grants +
                b"</AccessControlList></AccessControlPolicy>")

    def grant(grantee_type, inner, permission=b"READ"):
        return (b'<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                b'xsi:type="' + grantee_type + b'">' + inner + b"</Grantee><Permission>" +
                permission + b"</Permission></Grant>")

    owner_grant = grant(b"CanonicalUser", b"<ID>" + ROOT_ID.encode() + b"</ID>", b"FULL_CONTROL")
    all_users = b"<URI>" + ALL_USERS.encode() + b"</URI>"
    for body in (b"<Nope/>", b"not xml",
                 b'<!DOCTYPE a [<!ENTITY x "y">]><AccessControlPolicy><AccessControlList/>'
                 b"</AccessControlPolicy>",
                 policy(b"<Grant><Permission>READ</Permission></Grant>"),
                 policy(owner_grant, owner=b""),  # no Owner
                 b"<AccessControlPolicy>" + owner + b"</AccessControlPolicy>",  # no list
                 policy(grant(b"Group", all_users, b"EVERYTHING")),
                 policy(grant(b"Robot", all_users)),
                 # A large body (within the XML limit) parses in bounded time and is refused.
                 b"<AccessControlPolicy>" + b" " * (2 << 20) + b"</AccessControlPolicy>"):
        r = signed_request(server, "PUT", f"/{b}/k", query=[("acl", "")], body=body)
        assert_s3_error(r.status, r.hdict, r.body, "MalformedACLError", 400,
                        "The XML you provided was not well-formed or did not validate against "
                        "our published schema.")
    # Grantees that cannot exist: InvalidArgument naming the element (as AWS), an e-mail address
    # no account has: UnresolvableGrantByEmailAddress.
    for body, name, value in (
            (policy(owner_grant, owner=b"<Owner><ID>not-an-id</ID></Owner>"), "CanonicalUser/ID",
             "not-an-id"),
            (policy(owner_grant + grant(b"CanonicalUser", b"<ID>42</ID>")), "CanonicalUser/ID",
             "42"),
            (policy(owner_grant + grant(b"Group", b"<URI>http://acs.amazonaws.com/groups/global/"
                                                  b"Everyone</URI>")),
             "Group/URI", "http://acs.amazonaws.com/groups/global/Everyone")):
        r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")], body=body)
        err = assert_s3_error(r.status, r.hdict, r.body, "InvalidArgument", 400)
        assert (err["ArgumentName"], err["ArgumentValue"]) == (name, value), r.body
    email = grant(b"AmazonCustomerByEmail", b"<EmailAddress>a@example.com</EmailAddress>")
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")],
                       body=policy(owner_grant + email))
    assert_s3_error(r.status, r.hdict, r.body, "UnresolvableGrantByEmailAddress", 400,
                    "The email address you provided does not match any account on record.")
    # Valid but not a canned ACL's grants (LogDelivery, another owner): not implemented here.
    log = grant(b"Group", b"<URI>http://acs.amazonaws.com/groups/s3/LogDelivery</URI>", b"WRITE")
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")], body=policy(owner_grant + log))
    assert (r.status, s3_error(r.body)["Code"]) == (501, "NotImplemented")
    other = acl_doc.replace(ROOT_ID.encode(), b"f" * 64)
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")], body=other)
    assert (r.status, s3_error(r.body)["Code"]) == (501, "NotImplemented")
    # x-amz-grant-* headers are checked as AWS checks them before they are refused as not
    # implemented: the form, ids, groups, e-mail addresses.
    for value, name, arg in (("nobody", "x-amz-grant-read", "nobody"),
                             ('id="42"', "id", "42"),
                             ("uri=http://acs.amazonaws.com/groups/global/Everyone, id=1", "uri",
                              "http://acs.amazonaws.com/groups/global/Everyone")):
        r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")],
                           headers={"x-amz-grant-read": value})
        err = assert_s3_error(r.status, r.hdict, r.body, "InvalidArgument", 400)
        assert (err["ArgumentName"], err["ArgumentValue"]) == (name, arg), r.body
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")],
                       headers={"x-amz-grant-read": 'emailAddress="a@example.com"'})
    assert_s3_error(r.status, r.hdict, r.body, "UnresolvableGrantByEmailAddress", 400)
    r = signed_request(server, "PUT", f"/{b}", query=[("acl", "")],
                       headers={"x-amz-grant-read": f'uri="{ALL_USERS}", id={"c" * 64}'})
    assert (r.status, s3_error(r.body)["Code"]) == (501, "NotImplemented")
    # The document built here with the owner grant alone is private: accepted.
    r = signed_request(server, "PUT", f"/{b}/k", query=[("acl", "")], body=policy(owner_grant))
    assert r.status == 200, r.body
    # Nothing of that changed the ACLs.
    assert grants_of(root.get_bucket_acl(Bucket=b)) == [("CanonicalUser", ROOT_ID, "FULL_CONTROL")]
    assert grants_of(root.get_object_acl(Bucket=b, Key="k")) == [
        ("CanonicalUser", ROOT_ID, "FULL_CONTROL")]
    # The system bucket is out of reach here too.
    r = signed_request(server, "GET", "/rdmastor.sys", query=[("acl", "")])
    assert (r.status, s3_error(r.body)["Code"]) == (403, "AllAccessDisabled")


def test_versioned_object_acls_and_version_actions(erasure_server, tmp_path):
    server = erasure_server
    root = make_client(server)
    b = unique_bucket("aclv")
    root.create_bucket(Bucket=b)
    root.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = root.put_object(Bucket=b, Key="k", Body=b"one", ACL="public-read")["VersionId"]
    v2 = root.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    # Each version has its own ACL.
    assert anon_code(server, "GET", f"/{b}/k") == (403, "AccessDenied")
    assert anon(server, "GET", f"/{b}/k?versionId={v1}") == (200, b"one")
    got = root.get_object_acl(Bucket=b, Key="k", VersionId=v1)
    assert ("Group", ALL_USERS, "READ") in grants_of(got)
    assert got["ResponseMetadata"]["HTTPHeaders"]["x-amz-version-id"] == v1
    root.put_object_acl(Bucket=b, Key="k", VersionId=v2, ACL="public-read")
    root.put_object_acl(Bucket=b, Key="k", VersionId=v1, ACL="private")
    assert anon(server, "GET", f"/{b}/k") == (200, b"two")
    assert anon_code(server, "GET", f"/{b}/k?versionId={v1}") == (403, "AccessDenied")
    # A delete marker has no ACL.
    marker = root.delete_object(Bucket=b, Key="k")["VersionId"]
    r = signed_request(server, "GET", f"/{b}/k", query=[("acl", ""), ("versionId", marker)])
    assert (r.status, s3_error(r.body)["Code"]) == (405, "MethodNotAllowed")
    assert anon(server, "GET", f"/{b}/k?versionId={v2}") == (200, b"two")

    # The ...Version actions: s3:GetObject alone does not read a named version.
    doc = {"Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:DeleteObject",
                                                        "s3:GetObjectTagging"],
                          "Resource": [f"arn:aws:s3:::{b}/*"]}]}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(doc))
    plain = "plain-" + rand_str(6)
    admin(server, "policy", "create", plain, str(path))
    ak, sk = add_user(server, [plain])
    user = make_client(server, ak, sk)
    root.put_object(Bucket=b, Key="k2", Body=b"latest")
    assert user.get_object(Bucket=b, Key="k2")["Body"].read() == b"latest"
    for call in (lambda: user.get_object(Bucket=b, Key="k", VersionId=v1),
                 lambda: user.get_object_tagging(Bucket=b, Key="k", VersionId=v1),
                 lambda: user.delete_object(Bucket=b, Key="k", VersionId=v1)):
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == "AccessDenied"
    out = user.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v1}]})
    assert [(x["Key"], x["Code"]) for x in out["Errors"]] == [("k", "AccessDenied")]
    doc["Statement"][0]["Action"] += ["s3:GetObjectVersion", "s3:DeleteObjectVersion"]
    path.write_text(json.dumps(doc))
    versioned = "versioned-" + rand_str(6)
    admin(server, "policy", "create", versioned, str(path))
    admin(server, "policy", "set", versioned, "--user", ak)
    assert user.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"one"
    user.delete_object(Bucket=b, Key="k", VersionId=v1)
    with pytest.raises(ClientError) as e:
        root.head_object(Bucket=b, Key="k", VersionId=v1)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_acls_survive_restart_and_a_lost_drive(erasure_server):
    srv = erasure_server
    root = make_client(srv)
    b = unique_bucket("acld")
    root.create_bucket(Bucket=b, ACL="public-read")
    root.put_object(Bucket=b, Key="pub", Body=b"durable", ACL="public-read")
    root.put_object(Bucket=b, Key="priv", Body=b"hidden")
    root.put_object_acl(Bucket=b, Key="priv", ACL="authenticated-read")
    srv.restart()
    assert anon(srv, "GET", f"/{b}/pub") == (200, b"durable")
    assert anon(srv, "GET", f"/{b}?list-type=2")[0] == 200
    assert anon_code(srv, "GET", f"/{b}/priv") == (403, "AccessDenied")
    assert grants_of(root.get_object_acl(Bucket=b, Key="priv")) == sorted([
        ("CanonicalUser", ROOT_ID, "FULL_CONTROL"), ("Group", AUTH_USERS, "READ")])
    # Lose a drive (wiped while the server is down): EC 2+2 keeps every ACL.
    srv.stop()
    lost = srv.data_dirs[1]
    for entry in os.listdir(lost):
        subprocess.run(["rm", "-rf", os.path.join(lost, entry)], check=True, timeout=60)
    srv.start()
    assert anon(srv, "GET", f"/{b}/pub") == (200, b"durable")
    assert anon(srv, "GET", f"/{b}?list-type=2")[0] == 200
    assert grants_of(root.get_bucket_acl(Bucket=b)) == sorted([
        ("CanonicalUser", ROOT_ID, "FULL_CONTROL"), ("Group", ALL_USERS, "READ")])
    # A deleted bucket forgets its ACL: the same name, created again, is private.
    for k in ("pub", "priv"):
        root.delete_object(Bucket=b, Key=k)
    root.delete_bucket(Bucket=b)
    root.create_bucket(Bucket=b)
    assert anon_code(srv, "GET", f"/{b}?list-type=2") == (403, "AccessDenied")


def test_post_object_acl_field(server):
    root = make_client(server)
    b = unique_bucket("aclp")
    root.create_bucket(Bucket=b)
    for key, acl in (("form-pub", "public-read"), ("form-priv", "private")):
        post = root.generate_presigned_post(b, key, Fields={"acl": acl},
                                            Conditions=[{"acl": acl}], ExpiresIn=300)
        r = requests.post(post["url"], data=post["fields"],
                          files={"file": ("f", b"form " + key.encode())}, timeout=30)
        assert r.status_code == 204, r.text
    assert anon(server, "GET", f"/{b}/form-pub") == (200, b"form form-pub")
    assert anon_code(server, "GET", f"/{b}/form-priv") == (403, "AccessDenied")
    post = root.generate_presigned_post(b, "bad", Fields={"acl": "bogus"},
                                        Conditions=[{"acl": "bogus"}], ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": ("f", b"x")}, timeout=30)
    assert (r.status_code, s3_error(r.content)["Code"]) == (400, "InvalidArgument")
