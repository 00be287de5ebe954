"""Users, policies, bucket policies and anonymous access against the real server.

Users and policies are managed with `rdmastor admin user|policy` (the admin API), requests are
made with boto3 (Debian's), awscli and raw (unsigned or hand-signed) HTTP.
"""

import json
import os
import subprocess
import time

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import (RDMASTOR_BIN, AwsCli, _clean_env, http_send, make_client, rand_str,
                      s3_error, signed_request, unique_bucket)


def admin(srv, *args, input=None, check=True):
    env = _clean_env({"MINIO_ROOT_USER": srv.access_key, "MINIO_ROOT_PASSWORD": srv.secret_key})
    cp = subprocess.run([RDMASTOR_BIN, "admin", *args, "--endpoint", srv.endpoint], env=env,
                        capture_output=True, text=True, timeout=60, input=input)
    if check:
        assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
    return cp


def add_user(srv, policies=(), access_key=None, secret_key=None):
    ak = access_key or "user" + rand_str(8)
    sk = secret_key or rand_str(24)
    admin(srv, "user", "add", ak, sk)
    if policies:
        admin(srv, "policy", "attach", *policies, "--user", ak)
    return ak, sk


def code_of(exc_info):
    return exc_info.value.response["Error"]["Code"]


def anon_get(srv, path):
    return requests.get(srv.url(path), timeout=10)


PUBLIC_READ = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"],
                   "Resource": ["arn:aws:s3:::{b}/*"]}],
}


def policy_for(bucket, doc=PUBLIC_READ):
    return json.dumps(doc).replace("{b}", bucket)


# ---------------------------------------------------------------------------------------------
# users and identity policies
# ---------------------------------------------------------------------------------------------

def test_readonly_user_denied_writes(server):
    root = make_client(server)
    b = unique_bucket("iam")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"hello")
    ak, sk = add_user(server, ["readonly"])
    user = make_client(server, ak, sk)
    assert user.get_object(Bucket=b, Key="k")["Body"].read() == b"hello"
    with pytest.raises(ClientError) as e:
        user.put_object(Bucket=b, Key="k2", Body=b"x")
    assert code_of(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        user.delete_object(Bucket=b, Key="k")
    assert code_of(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        user.list_objects_v2(Bucket=b)  # MinIO's readonly has no s3:ListBucket
    assert code_of(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        user.create_bucket(Bucket=unique_bucket("iamx"))
    assert code_of(e) == "AccessDenied"
    # Copying into another bucket needs PutObject there; reading through a copy needs GetObject.
    with pytest.raises(ClientError) as e:
        user.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "k"})
    assert code_of(e) == "AccessDenied"


def test_user_without_policy_is_denied_everything(server):
    root = make_client(server)
    b = unique_bucket("iam")
    root.create_bucket(Bucket=b)
    ak, sk = add_user(server)
    user = make_client(server, ak, sk)
    for call in (lambda: user.list_buckets(), lambda: user.head_bucket(Bucket=b),
                 lambda: user.put_object(Bucket=b, Key="k", Body=b"x")):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_readwrite_user_full_round_trip_sigv4_sigv2_presigned(server):
    ak, sk = add_user(server, ["readwrite"])
    user = make_client(server, ak, sk)
    b = unique_bucket("iam")
    user.create_bucket(Bucket=b)
    user.put_object(Bucket=b, Key="a/b.txt", Body=b"data")
    assert [o["Key"] for o in user.list_objects_v2(Bucket=b)["Contents"]] == ["a/b.txt"]
    assert b in [x["Name"] for x in user.list_buckets()["Buckets"]]
    # A presigned URL by the user works without credentials on the request.
    url = user.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "a/b.txt"},
                                      ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"data"
    # SigV2 (legacy boto signature).
    v2 = boto3.session.Session().client(
        "s3", endpoint_url=server.endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name="us-east-1",
        config=Config(signature_version="s3", s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1}))
    assert v2.get_object(Bucket=b, Key="a/b.txt")["Body"].read() == b"data"
    # Multipart, DeleteObjects.
    mp = user.create_multipart_upload(Bucket=b, Key="mp")
    part = user.upload_part(Bucket=b, Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"p")
    user.complete_multipart_upload(Bucket=b, Key="mp", UploadId=mp["UploadId"],
                                   MultipartUpload={"Parts": [{"PartNumber": 1,
                                                               "ETag": part["ETag"]}]})
    out = user.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "mp"}, {"Key": "a/b.txt"}]})
    assert len(out["Deleted"]) == 2
    user.delete_bucket(Bucket=b)


def test_custom_policy_limits_to_prefix(server, tmp_path):
    root = make_client(server)
    b = unique_bucket("iam")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="team/x", Body=b"1")
    root.put_object(Bucket=b, Key="other/y", Body=b"2")
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": [f"arn:aws:s3:::{b}/team/*"]},
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{b}"],
         "Condition": {"StringLike": {"s3:prefix": ["team/*"]}}},
        {"Effect": "Deny", "Action": ["s3:DeleteObject"], "Resource": [f"arn:aws:s3:::{b}/team/keep*"]}]}
    path = tmp_path / "team.json"
    path.write_text(json.dumps(doc))
    name = "team-" + rand_str(6)
    admin(server, "policy", "create", name, str(path))
    assert name in admin(server, "policy", "list").stdout.split()
    ak, sk = add_user(server, [name])
    user = make_client(server, ak, sk)
    assert user.get_object(Bucket=b, Key="team/x")["Body"].read() == b"1"
    with pytest.raises(ClientError) as e:
        user.get_object(Bucket=b, Key="other/y")
    assert code_of(e) == "AccessDenied"
    user.put_object(Bucket=b, Key="team/new", Body=b"n")
    user.put_object(Bucket=b, Key="team/keep1", Body=b"k")
    with pytest.raises(ClientError) as e:
        user.delete_object(Bucket=b, Key="team/keep1")  # explicit deny wins
    assert code_of(e) == "AccessDenied"
    user.delete_object(Bucket=b, Key="team/new")
    assert user.list_objects_v2(Bucket=b, Prefix="team/")["KeyCount"] >= 1
    with pytest.raises(ClientError) as e:
        user.list_objects_v2(Bucket=b, Prefix="other/")
    assert code_of(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        user.list_objects_v2(Bucket=b)  # no prefix: the condition does not match
    assert code_of(e) == "AccessDenied"
    # DeleteObjects checks each key on its own.
    out = user.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "team/x"}, {"Key": "other/y"}]})
    assert [d["Key"] for d in out.get("Deleted", [])] == ["team/x"]
    assert [(x["Key"], x["Code"]) for x in out["Errors"]] == [("other/y", "AccessDenied")]
    assert root.get_object(Bucket=b, Key="other/y")["Body"].read() == b"2"


def test_admin_cli_user_lifecycle_and_errors(server, tmp_path):
    ak, sk = add_user(server)
    listed = admin(server, "user", "list").stdout
    assert ak in listed
    # Attaching a policy that does not exist is refused.
    cp = admin(server, "policy", "attach", "no-such-policy", "--user", ak, check=False)
    assert cp.returncode == 1 and "XMinioAdminNoSuchPolicy" in cp.stderr
    cp = admin(server, "policy", "attach", "readonly", "--user", "nobody-" + rand_str(6), check=False)
    assert cp.returncode == 1 and "XMinioAdminNoSuchUser" in cp.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"Statement": [{"Effect": "Allow", "Action": "s3:Fly", "Resource": "*"}]}')
    cp = admin(server, "policy", "create", "bad", str(bad), check=False)
    assert cp.returncode == 1 and "MalformedPolicy" in cp.stderr
    # A short secret, the root's own access key.
    cp = admin(server, "user", "add", "shorty", "1234", check=False)
    assert cp.returncode == 1 and "InvalidArgument" in cp.stderr
    cp = admin(server, "user", "add", server.access_key, "longenoughsecret", check=False)
    assert cp.returncode == 1
    # The secret from standard input.
    ak2 = "stdin" + rand_str(6)
    admin(server, "user", "add", ak2, "-", input="secret-from-stdin\n")
    admin(server, "policy", "attach", "readwrite", "--user", ak2)
    make_client(server, ak2, "secret-from-stdin").list_buckets()
    # Removal takes effect at once on this node.
    admin(server, "user", "remove", ak2)
    with pytest.raises(ClientError) as e:
        make_client(server, ak2, "secret-from-stdin").list_buckets()
    assert code_of(e) == "InvalidAccessKeyId"
    cp = admin(server, "user", "remove", ak2, check=False)
    assert cp.returncode == 1 and "XMinioAdminNoSuchUser" in cp.stderr


def test_users_cannot_use_the_admin_api_and_anonymous_neither(server):
    ak, sk = add_user(server, ["readwrite"])
    for path in ("/minio/admin/v3/list-users", "/minio/admin/v3/add-user?accessKey=evil"):
        r = http_send(server, "GET", path)
        assert r.status in (403,), r
        r = signed_request(server, "PUT", path.split("?")[0],
                           query=[("accessKey", "evil")], body=b'{"secretKey":"evilevilevil"}',
                           access_key=ak, secret_key=sk)
        assert r.status == 403, r
    assert "evil" not in admin(server, "user", "list").stdout.split()


def test_system_bucket_is_unreachable(server):
    add_user(server, ["readonly"])
    root = make_client(server)
    assert "rdmastor.sys" not in [b["Name"] for b in root.list_buckets()["Buckets"]]
    with pytest.raises(ClientError) as e:
        root.list_objects_v2(Bucket="rdmastor.sys")
    assert code_of(e) == "AllAccessDisabled"
    b = unique_bucket("iam")
    root.create_bucket(Bucket=b)
    with pytest.raises(ClientError) as e:
        root.copy_object(Bucket=b, Key="stolen",
                         CopySource={"Bucket": "rdmastor.sys", "Key": "iam/users/x.json"})
    assert code_of(e) == "AccessDenied"
    r = anon_get(server, "/rdmastor.sys/iam/users/")
    assert r.status_code == 403


def test_unknown_access_key_flood_is_rate_limited(server):
    # Many bogus keys: every one is refused, and the server stays responsive.
    start = time.monotonic()
    for i in range(200):
        r = signed_request(server, "GET", "/", access_key="bogus" + rand_str(10), secret_key="x" * 10)
        assert r.status == 403 and s3_error(r.body).get("Code") == "InvalidAccessKeyId"
    assert time.monotonic() - start < 60
    make_client(server).list_buckets()


# ---------------------------------------------------------------------------------------------
# bucket policies and anonymous access
# ---------------------------------------------------------------------------------------------

def test_bucket_policy_crud_and_anonymous_get(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="pub/x.txt", Body=b"public")
    # No policy: anonymous is refused; GetBucketPolicy says NoSuchBucketPolicy; the status comes
    # from the (private) ACL alone (issue 38 item 10; test_ownership.py has the public ACL).
    assert anon_get(server, f"/{b}/pub/x.txt").status_code == 403
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=b)
    assert code_of(e) == "NoSuchBucketPolicy"
    assert root.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    doc = policy_for(b)
    root.put_bucket_policy(Bucket=b, Policy=doc)
    assert json.loads(root.get_bucket_policy(Bucket=b)["Policy"]) == json.loads(doc)
    assert root.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
    r = anon_get(server, f"/{b}/pub/x.txt")
    assert r.status_code == 200 and r.content == b"public"
    # GET only: listing, writing and deleting stay refused.
    assert anon_get(server, f"/{b}").status_code == 403
    assert requests.put(server.url(f"/{b}/evil"), data=b"x", timeout=10).status_code == 403
    assert requests.delete(server.url(f"/{b}/pub/x.txt"), timeout=10).status_code == 403
    # Missing keys under a readable policy: NoSuchKey (AWS answers 403 without ListBucket).
    assert anon_get(server, f"/{b}/pub/none").status_code in (403, 404)
    root.delete_bucket_policy(Bucket=b)
    assert anon_get(server, f"/{b}/pub/x.txt").status_code == 403
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=b)
    assert code_of(e) == "NoSuchBucketPolicy"
    # Policy on a missing bucket.
    with pytest.raises(ClientError) as e:
        root.put_bucket_policy(Bucket=unique_bucket("nob"), Policy=doc)
    assert code_of(e) == "NoSuchBucket"


def test_malformed_bucket_policies(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    cases = [
        ("not json", "Policies must be valid JSON and the first byte must be '{'"),
        ('{"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", '
         f'"Resource": "arn:aws:s3:::{b}/*"}}]}}', "Missing required field Principal"),
        ('{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", '
         '"Resource": "arn:aws:s3:::otherbucket/*"}]}', "Policy has invalid resource"),
        ('{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:Teleport", '
         f'"Resource": "arn:aws:s3:::{b}/*"}}]}}', "Policy has invalid action"),
        ('{"Statement": [{"Effect": "Allow", "Principal": {"AWS": "someone"}, '
         f'"Action": "s3:GetObject", "Resource": "arn:aws:s3:::{b}/*"}}]}}',
         "Invalid principal in policy"),
    ]
    for doc, message in cases:
        with pytest.raises(ClientError) as e:
            root.put_bucket_policy(Bucket=b, Policy=doc)
        assert code_of(e) == "MalformedPolicy", doc
        assert e.value.response["Error"]["Message"] == message
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_hostile_policy_documents_are_bounded(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    huge = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                      "Resource": f"arn:aws:s3:::{b}/" + "a" * 100}] * 400})
    r = signed_request(server, "PUT", f"/{b}", query=[("policy", "")], body=huge.encode())
    assert r.status == 400 and s3_error(r.body).get("Code") == "PolicyTooLarge", r
    deep = '{"Statement": ' + "[" * 5000 + "]" * 5000 + "}"
    r = signed_request(server, "PUT", f"/{b}", query=[("policy", "")], body=deep.encode())
    assert r.status == 400 and s3_error(r.body).get("Code") == "MalformedPolicy", r
    # Many stars in a resource, matched against long keys: accepted, evaluated quickly.
    stars = "*a" * 2000 + "b"
    doc = json.dumps({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                     "Resource": f"arn:aws:s3:::{b}/{stars}"}]})
    root.put_bucket_policy(Bucket=b, Policy=doc)
    key = "/".join(["a" * 200] * 5)
    root.put_object(Bucket=b, Key=key, Body=b"x")
    start = time.monotonic()
    for _ in range(20):
        assert anon_get(server, f"/{b}/{key}").status_code == 403
    assert time.monotonic() - start < 10
    root.delete_bucket_policy(Bucket=b)


def test_bucket_policy_for_a_named_user_and_conditions(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"v")
    ak, sk = add_user(server)  # no identity policy at all
    other_ak, other_sk = add_user(server)
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam::123456789012:user/{ak}"]},
         "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{b}", f"arn:aws:s3:::{b}/*"]},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/*",
         "Condition": {"IpAddress": {"aws:SourceIp": "10.99.0.0/16"}}}]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    assert make_client(server, ak, sk).get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    assert make_client(server, ak, sk).list_objects_v2(Bucket=b)["KeyCount"] == 1
    with pytest.raises(ClientError) as e:
        make_client(server, other_ak, other_sk).get_object(Bucket=b, Key="k")
    assert code_of(e) == "AccessDenied"
    # 127.0.0.1 is not in 10.99/16: anonymous stays refused.
    assert anon_get(server, f"/{b}/k").status_code == 403
    assert root.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    # Deny over HTTP (aws:SecureTransport false) for everyone, root excepted.
    deny = {"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:*",
                           "Resource": [f"arn:aws:s3:::{b}/*"],
                           "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
                          doc["Statement"][0]]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(deny))
    with pytest.raises(ClientError) as e:
        make_client(server, ak, sk).get_object(Bucket=b, Key="k")
    assert code_of(e) == "AccessDenied"
    assert root.get_object(Bucket=b, Key="k")["Body"].read() == b"v"


def test_anonymous_listing_with_prefix_condition_and_public_write(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="pub/a", Body=b"a")
    root.put_object(Bucket=b, Key="priv/b", Body=b"b")
    doc = {"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": "s3:ListBucket",
         "Resource": f"arn:aws:s3:::{b}", "Condition": {"StringEquals": {"s3:prefix": "pub/"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{b}/drop/*"}]}
    root.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    r = anon_get(server, f"/{b}?list-type=2&prefix=pub/")
    assert r.status_code == 200 and b"<Key>pub/a</Key>" in r.content and b"priv" not in r.content
    assert anon_get(server, f"/{b}?list-type=2&prefix=priv/").status_code == 403
    assert anon_get(server, f"/{b}?list-type=2").status_code == 403
    r = requests.put(server.url(f"/{b}/drop/file"), data=b"dropped", timeout=10)
    assert r.status_code == 200, r.text
    assert root.get_object(Bucket=b, Key="drop/file")["Body"].read() == b"dropped"
    assert requests.put(server.url(f"/{b}/elsewhere"), data=b"x", timeout=10).status_code == 403


def test_awscli_bucket_policy(server, tmp_path):
    cli = AwsCli(server, str(tmp_path))
    b = unique_bucket("cli")
    cli("s3api", "create-bucket", "--bucket", b)
    cli("s3api", "put-bucket-policy", "--bucket", b, "--policy", policy_for(b))
    out = cli("s3api", "get-bucket-policy", "--bucket", b).json()
    assert json.loads(out["Policy"])["Statement"][0]["Action"] == ["s3:GetObject"]
    out = cli("s3api", "get-bucket-policy-status", "--bucket", b).json()
    assert out["PolicyStatus"]["IsPublic"] is True
    cli("s3api", "delete-bucket-policy", "--bucket", b)
    res = cli("s3api", "get-bucket-policy", "--bucket", b, check=False)
    assert res.returncode != 0 and "NoSuchBucketPolicy" in res.stderr


def test_deleted_bucket_forgets_its_policy(server):
    root = make_client(server)
    b = unique_bucket("pol")
    root.create_bucket(Bucket=b)
    root.put_bucket_policy(Bucket=b, Policy=policy_for(b))
    root.delete_bucket(Bucket=b)
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=b)
    assert code_of(e) == "NoSuchBucketPolicy"
    assert anon_get(server, f"/{b}/k").status_code == 403


# ---------------------------------------------------------------------------------------------
# durability: restart and a lost drive
# ---------------------------------------------------------------------------------------------

def test_users_and_policies_survive_restart_and_a_lost_drive(erasure_server):
    srv = erasure_server
    root = make_client(srv)
    b = unique_bucket("dur")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"durable")
    root.put_bucket_policy(Bucket=b, Policy=policy_for(b))
    ak, sk = add_user(srv, ["readonly"])
    srv.restart()
    assert make_client(srv, ak, sk).get_object(Bucket=b, Key="k")["Body"].read() == b"durable"
    assert anon_get(srv, f"/{b}/k").status_code == 200
    # Lose a drive (its contents wiped while the server is down): EC 2+2 still reads.
    srv.stop()
    lost = srv.data_dirs[0]
    for entry in os.listdir(lost):
        subprocess.run(["rm", "-rf", os.path.join(lost, entry)], check=True, timeout=60)
    srv.start()
    assert make_client(srv, ak, sk).get_object(Bucket=b, Key="k")["Body"].read() == b"durable"
    assert anon_get(srv, f"/{b}/k").status_code == 200
    with pytest.raises(ClientError) as e:
        make_client(srv, ak, sk).put_object(Bucket=b, Key="w", Body=b"x")
    assert code_of(e) == "AccessDenied"
    assert ak in admin(srv, "user", "list").stdout


def test_admin_json_output_and_one_usage_line(server, tmp_path):
    """--json prints one JSON object per command (users and policies listed as data); a usage
    error prints the command's own usage line(s), not the whole help (issue 33, item 10)."""
    import json
    ak = "json" + rand_str(8)
    out = json.loads(admin(server, "user", "add", ak, rand_str(24), "--json").stdout)
    assert out == {"status": "success", "command": "user add", "accessKey": ak}, out
    admin(server, "policy", "attach", "readonly", "--user", ak)
    users = json.loads(admin(server, "user", "list", "--json").stdout)["users"]
    assert {"accessKey": ak, "status": "enabled", "policyName": "readonly"} in users, users
    policies = json.loads(admin(server, "policy", "list", "--json").stdout)["policies"]
    assert {"readwrite", "readonly", "writeonly"} <= set(policies), policies
    assert policies["readonly"]["Statement"], policies["readonly"]
    cp = admin(server, "user", "remove", "nobody" + rand_str(6), "--json", check=False)
    assert cp.returncode == 1, cp
    err = json.loads(cp.stdout)
    assert err["status"] == "error" and "XMinioAdminNoSuchUser" in err["error"], err
    for args, names in ((["user", "add"], "rdmastor admin user add|remove|list"),
                        (["policy", "attach", "readonly"], "policy attach POLICY... --user AK"),
                        (["heal", "--bogus"], "rdmastor admin heal")):
        cp = admin(server, *args, check=False)
        assert cp.returncode == 2, cp
        assert names in cp.stderr, cp.stderr
        assert "prometheus-token" not in cp.stderr and len(cp.stderr.splitlines()) <= 9, cp.stderr


def test_admin_user_info_enable_disable_and_policy_info_detach(server):
    """`admin user info|enable|disable` and `admin policy info|detach` (issue 33, item 10): a
    disabled user's key is refused as unknown until it is enabled again."""
    import json
    b = unique_bucket("iamst")
    make_client(server).create_bucket(Bucket=b)
    ak, sk = add_user(server, ["readwrite", "readonly"])
    user = make_client(server, ak, sk)
    user.head_bucket(Bucket=b)
    info = json.loads(admin(server, "user", "info", ak, "--json").stdout)
    assert info == {"status": "success", "command": "user info", "accessKey": ak,
                    "userStatus": "enabled", "policyName": "readwrite,readonly"}, info
    assert "Status: enabled" in admin(server, "user", "info", ak).stdout
    assert admin(server, "user", "disable", ak).stdout.strip() == f"user {ak} disabled"
    with pytest.raises(ClientError) as e:
        user.head_bucket(Bucket=b)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as e:
        user.list_objects_v2(Bucket=b)
    assert code_of(e) == "InvalidAccessKeyId"
    users = json.loads(admin(server, "user", "list", "--json").stdout)["users"]
    assert {"accessKey": ak, "status": "disabled", "policyName": "readwrite,readonly"} in users
    admin(server, "user", "enable", ak)
    user.head_bucket(Bucket=b)
    # policy info: the document; detach removes one policy, a second detach is refused.
    doc = json.loads(admin(server, "policy", "info", "readonly").stdout)
    assert doc["Statement"] and doc["Version"] == "2012-10-17", doc
    out = json.loads(admin(server, "policy", "info", "readonly", "--json").stdout)
    assert out["policyInfo"] == doc, out
    cp = admin(server, "policy", "info", "nosuch" + rand_str(6), check=False)
    assert cp.returncode == 1 and "XMinioAdminNoSuchPolicy" in cp.stderr, cp.stderr
    admin(server, "policy", "detach", "readwrite", "--user", ak)
    assert "PolicyName: readonly\n" in admin(server, "user", "info", ak).stdout + "\n"
    with pytest.raises(ClientError) as e:
        user.put_object(Bucket=b, Key="k", Body=b"x")
    assert code_of(e) == "AccessDenied"
    cp = admin(server, "policy", "detach", "readwrite", "--user", ak, check=False)
    assert cp.returncode == 1 and "already in effect" in cp.stderr, cp.stderr
    cp = admin(server, "user", "info", "nobody" + rand_str(6), check=False)
    assert cp.returncode == 1 and "XMinioAdminNoSuchUser" in cp.stderr, cp.stderr
    # Usage errors name the command's own lines.
    for args in (["user", "enable"], ["policy", "detach", "readonly"], ["policy", "info"]):
        cp = admin(server, *args, check=False)
        assert cp.returncode == 2 and "rdmastor admin" in cp.stderr, cp.stderr
        assert "prometheus-token" not in cp.stderr and len(cp.stderr.splitlines()) <= 12, cp.stderr


def test_admin_unknown_command_lists_the_commands_only():
    cp = subprocess.run([RDMASTOR_BIN, "admin", "frobnicate"], capture_output=True, text=True,
                        timeout=20, env=_clean_env(), stdin=subprocess.DEVNULL)
    assert cp.returncode == 2 and "unknown command 'frobnicate'" in cp.stderr, cp.stderr
    for cmd in ("prometheus-token", "info", "heal", "user", "policy"):
        assert f"rdmastor admin {cmd} " in cp.stderr, cp.stderr
    assert "policy detach POLICY" not in cp.stderr and len(cp.stderr.splitlines()) <= 9, cp.stderr


def test_rotated_secret_stops_working_at_once(server):
    """SigV4 signing keys are cached per (secret, date, region, service) (s3/sigv4.cc): a secret
    replaced through the admin API (MinIO's add-user on an existing user) must stop working on
    the very next request, presigned URLs signed with it included, and the new one work."""
    ak, old = add_user(server, ["readwrite"])
    c_old = make_client(server, ak, old)
    for _ in range(3):  # the old secret's signing key is derived and cached
        c_old.list_buckets()
    url = c_old.generate_presigned_url("list_buckets", ExpiresIn=600)
    assert requests.get(url, timeout=10).status_code == 200
    new = rand_str(24)
    admin(server, "user", "add", ak, new)
    with pytest.raises(ClientError) as e:
        c_old.list_buckets()
    assert code_of(e) == "SignatureDoesNotMatch"
    assert requests.get(url, timeout=10).status_code == 403
    make_client(server, ak, new).list_buckets()
    # Back to the first secret: the new one stops at once in turn (both keys were cached).
    admin(server, "user", "add", ak, old)
    c_old.list_buckets()
    with pytest.raises(ClientError) as e:
        make_client(server, ak, new).list_buckets()
    assert code_of(e) == "SignatureDoesNotMatch"
    admin(server, "user", "remove", ak)
    with pytest.raises(ClientError) as e:
        c_old.list_buckets()
    assert code_of(e) == "InvalidAccessKeyId"
