"""Issue 32's attacks on access control and abuse limits, each replayed against the real binary
(a single-drive server; a second server or a cluster where the attack needs one):

- a repeated query parameter must not split authorization from execution (400 InvalidArgument);
- a browser POST upload is authorized by its form fields, never by its own unsigned headers;
- a flood of made-up access keys must not lock out IAM users;
- several addresses holding unauthenticated bodies must not starve other clients.
"""

import http.client
import json
import os
import shutil
import socket
import threading
import time
import urllib.parse
from types import SimpleNamespace

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import (HOST, UNSIGNED, Response, assert_s3_error, assert_server_alive,
                      http_send, make_client, rand_str, sign_v4, signed_request, unique_bucket,
                      uri_encode)
from test_auth_v2_post import multipart_body, v4_form
from test_iam import add_user, admin, code_of


@pytest.fixture(autouse=True)
def _server_still_answers(server):
    yield
    assert_server_alive(server)


def check(resp, code, status, message_contains=None):
    return assert_s3_error(resp.status, resp.headers, resp.body, code, status, message_contains)


def create_policy(srv, tmp_path, doc):
    name = "p-" + rand_str(8)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    admin(srv, "policy", "create", name, str(path))
    return name


def send_from(srv, source, method, path, headers=None, body=b"", timeout=10):
    """One request from loopback address `source` (127.0.0.0/8 is all local)."""
    conn = http.client.HTTPConnection(HOST, srv.port, timeout=timeout, source_address=(source, 0))
    try:
        hdrs = dict(headers or {})
        if "host" not in {k.lower() for k in hdrs}:
            hdrs["Host"] = srv.address
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return Response(resp.status, resp.getheaders(), resp.read(), resp.reason)
    finally:
        conn.close()


def signed_from(srv, source, method, path, access_key, secret_key, query=()):
    """SigV4-signed; the query goes on the wire in the order given (SigV4 signs it sorted)."""
    hdrs, _ = sign_v4(method, path, list(query), {"host": srv.address}, UNSIGNED, access_key,
                      secret_key)
    wire = "&".join(f"{uri_encode(k)}={uri_encode(v)}" for k, v in query)
    return send_from(srv, source, method, path + ("?" + wire if query else ""), hdrs)


# ---------------------------------------------------------------------------------------------
# High 1: one parsed value for conditions and handlers
# ---------------------------------------------------------------------------------------------

def test_repeated_prefix_cannot_widen_a_prefix_limited_listing(server, tmp_path):
    root = make_client(server)
    b = unique_bucket("dup")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="public/a", Body=b"a")
    root.put_object(Bucket=b, Key="secret/b", Body=b"b")
    name = create_policy(server, tmp_path, {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{b}"],
         "Condition": {"StringLike": {"s3:prefix": ["public/*"]}}}]})
    ak, sk = add_user(server, [name])
    ok = signed_request(server, "GET", f"/{b}", query=[("list-type", "2"), ("prefix", "public/")],
                        access_key=ak, secret_key=sk)
    assert ok.status == 200 and b"<Key>public/a</Key>" in ok.body, ok
    for order in (["secret/", "public/"], ["public/", "secret/"]):
        r = signed_from(server, "127.0.0.1", "GET", f"/{b}", ak, sk,
                        query=[("list-type", "2")] + [("prefix", p) for p in order])
        check(r, "InvalidArgument", 400, "specified more than once")
        assert b"secret/b" not in r.body
    # max-keys and delimiter likewise, even for root (the refusal is about the request's form).
    r = signed_request(server, "GET", f"/{b}", query=[("max-keys", "1"), ("max-keys", "1000")])
    check(r, "InvalidArgument", 400)
    assert "<ArgumentName>max-keys</ArgumentName>" in r.body.decode()


def test_repeated_version_id_cannot_escape_a_deny_on_one_version(server):
    root = make_client(server)
    b = unique_bucket("dupv")
    root.create_bucket(Bucket=b)
    root.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    denied = root.put_object(Bucket=b, Key="k", Body=b"denied body")["VersionId"]
    allowed = root.put_object(Bucket=b, Key="k", Body=b"allowed body")["VersionId"]
    ak, sk = add_user(server, ["readwrite"])
    root.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObjectVersion",
         "Resource": f"arn:aws:s3:::{b}/k",
         "Condition": {"StringEquals": {"s3:versionid": denied}}}]}))
    user = make_client(server, ak, sk)
    assert user.get_object(Bucket=b, Key="k", VersionId=allowed)["Body"].read() == b"allowed body"
    with pytest.raises(ClientError) as e:
        user.get_object(Bucket=b, Key="k", VersionId=denied)
    assert code_of(e) == "AccessDenied"
    for order in ([denied, allowed], [allowed, denied]):
        r = signed_from(server, "127.0.0.1", "GET", f"/{b}/k", ak, sk,
                        query=[("versionId", v) for v in order])
        check(r, "InvalidArgument", 400, "specified more than once")
        assert b"denied body" not in r.body


# ---------------------------------------------------------------------------------------------
# High 2: a browser POST is authorized by its form fields, not its own unsigned headers
# ---------------------------------------------------------------------------------------------

def user_post(srv, user, bucket, key, fields, headers=None, data=b"form upload"):
    """A V4-signed POST policy form of `user` (SimpleNamespace access_key/secret_key) covering
    every field, sent with extra (unsigned) HTTP headers."""
    form = v4_form(user, bucket, key, extra_fields=fields)
    body, ctype = multipart_body(form, data)
    return http_send(srv, "POST", f"/{bucket}", {"Content-Type": ctype, **(headers or {})}, body)


def bucket_with_deny(srv, statements):
    root = make_client(srv)
    b = unique_bucket("post")
    root.create_bucket(Bucket=b)
    root.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        dict(Effect="Deny", Principal="*", Action="s3:PutObject", Resource=f"arn:aws:s3:::{b}/*",
             **st) for st in statements]}))
    return root, b


def test_post_acl_field_is_the_condition_key_not_the_header(server):
    ak, sk = add_user(server, ["readwrite"])
    user = SimpleNamespace(access_key=ak, secret_key=sk)
    # "Deny public-read": the field asks for it, a header says private.
    root, b = bucket_with_deny(server, [
        {"Condition": {"StringEquals": {"s3:x-amz-acl": ["public-read"]}}}])
    r = user_post(server, user, b, "pub1", {"acl": "public-read"})
    check(r, "AccessDenied", 403)
    r = user_post(server, user, b, "pub2", {"acl": "public-read"}, {"x-amz-acl": "private"})
    check(r, "AccessDenied", 403)
    assert requests.get(server.url(f"/{b}/pub1"), timeout=10).status_code == 403
    assert requests.get(server.url(f"/{b}/pub2"), timeout=10).status_code == 403
    # A private upload through the same form passes; the header cannot make it public either.
    r = user_post(server, user, b, "priv", {"acl": "private"}, {"x-amz-acl": "public-read"})
    assert r.status in (200, 204), r
    assert requests.get(server.url(f"/{b}/priv"), timeout=10).status_code == 403
    # "Deny unless private" (the allow-list form): the header alone does not satisfy it.
    root, b = bucket_with_deny(server, [
        {"Condition": {"StringNotEquals": {"s3:x-amz-acl": ["private"]}}}])
    r = user_post(server, user, b, "pub3", {"acl": "public-read"}, {"x-amz-acl": "private"})
    check(r, "AccessDenied", 403)
    assert requests.get(server.url(f"/{b}/pub3"), timeout=10).status_code == 403
    r = user_post(server, user, b, "ok", {"acl": "private"})
    assert r.status in (200, 204), r


def test_post_encryption_header_without_field_does_not_pass_an_encryption_policy(server):
    ak, sk = add_user(server, ["readwrite"])
    user = SimpleNamespace(access_key=ak, secret_key=sk)
    root, b = bucket_with_deny(server, [
        {"Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": ["AES256"]}}}])
    r = user_post(server, user, b, "clear", {}, {"x-amz-server-side-encryption": "AES256"})
    check(r, "AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        root.head_object(Bucket=b, Key="clear")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# ---------------------------------------------------------------------------------------------
# High 3: made-up access keys must not lock out IAM users
# ---------------------------------------------------------------------------------------------

class BogusKeyFlood:
    """Threads signing requests with made-up access keys as fast as they can, one keep-alive
    connection each, from several loopback addresses; counts what they sent."""

    def __init__(self, srv, sources=("127.0.0.2", "127.0.0.3", "127.0.0.4"), per_source=2):
        self.srv, self.sent, self.refused = srv, 0, 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(s,), daemon=True)
                        for s in sources for _ in range(per_source)]

    def _run(self, source):
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(HOST, self.srv.port, timeout=10,
                                                      source_address=(source, 0))
                hdrs, _ = sign_v4("GET", "/", [], {"host": self.srv.address}, UNSIGNED,
                                  "bogus" + rand_str(12), "x" * 16)
                conn.request("GET", "/", headers=hdrs)
                r = conn.getresponse()
                r.read()
                self.sent += 1
                self.refused += r.status == 403
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None

    def __enter__(self):
        for t in self.threads:
            t.start()
        time.sleep(1.0)  # let it drain whatever burst the server allows
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)


def test_bogus_key_flood_does_not_lock_out_users_after_a_restart(server_factory):
    srv = server_factory(name="lockout")
    users = [add_user(srv, ["readwrite"]) for _ in range(3)]
    srv.restart()  # nothing cached: every user must be read from storage again
    with BogusKeyFlood(srv) as flood:
        results = []
        for ak, sk in users * 3:
            r = signed_from(srv, "127.0.0.9", "GET", "/", ak, sk)
            results.append(r.status)
        sent = flood.sent
    assert sent > 100, sent  # the flood did run (far above any lookup budget)
    assert results == [200] * len(results), results
    assert flood.refused == flood.sent  # every made-up key was refused


# ---------------------------------------------------------------------------------------------
# High 4: bodies that stall from several addresses must not starve other clients
# ---------------------------------------------------------------------------------------------

def stalled(srv, source, head):
    """A connection from `source` that sent `head` (a request header and its first body bytes)
    and then nothing."""
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect((HOST, srv.port))
    s.sendall(head)
    return s


def test_stalled_bodies_from_several_addresses_do_not_starve_others(server_factory):
    srv = server_factory(name="starve")
    root = make_client(srv)
    b = unique_bucket("starve")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"k" * 4096)
    url = urllib.parse.urlsplit(root.generate_presigned_url(
        "put_object", Params={"Bucket": b, "Key": "trickle"}, ExpiresIn=600))
    heads = [
        # A browser-form POST: one boundary line of a 100,000-byte body.
        (f"POST /{b} HTTP/1.1\r\nHost: {srv.address}\r\nContent-Type: multipart/form-data; "
         "boundary=xyz\r\nContent-Length: 100000\r\n\r\n--xyz\r\n").encode(),
        # An anonymous DeleteObjects body.
        (f"POST /{b}?delete HTTP/1.1\r\nHost: {srv.address}\r\nContent-Length: 100000\r\n\r\n"
         "<Delete>").encode(),
        # A presigned PUT whose body has only begun.
        (f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: {srv.address}\r\n"
         "Content-Length: 1048576\r\n\r\n").encode() + b"x" * 1024,
    ]
    socks = []
    try:
        # 3 addresses x 33 connections: more than every worker (64) and than one address's
        # share (32), as the attack run had it.
        for n, source in enumerate(("127.0.0.2", "127.0.0.3", "127.0.0.4")):
            for i in range(33):
                socks.append(stalled(srv, source, heads[(n + i) % len(heads)]))
        time.sleep(1.0)  # every one of them is in its handler, waiting for its body
        slow = []
        for _ in range(9):
            start = time.monotonic()
            r = signed_from(srv, "127.0.0.9", "GET", f"/{b}/k", srv.access_key, srv.secret_key)
            took = time.monotonic() - start
            assert r.status == 200 and r.body == b"k" * 4096, r
            slow += [took] if took > 5 else []
        assert not slow, slow
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------------------------------------
# Medium and low items
# ---------------------------------------------------------------------------------------------

def public_bucket(srv, actions=("s3:GetObject", "s3:PutObject")):
    root = make_client(srv)
    b = unique_bucket("pub")
    root.create_bucket(Bucket=b)
    root.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": list(actions),
         "Resource": f"arn:aws:s3:::{b}/*"}]}))
    return root, b


def test_rdma_headers_are_refused_on_unsigned_requests(server):
    # 6: S3 over RDMA is for signed requests only, even on a public bucket.
    root, b = public_bucket(server)
    root.put_object(Bucket=b, Key="k", Body=b"public")
    token = "AAAA" * 8
    for method, headers in (("GET", {"x-amz-rdma-token": token}),
                            ("GET", {"x-amz-rdma-agent": "cuobj"}),
                            ("PUT", {"x-amz-rdma-token": token, "Content-Length": "0"})):
        r = http_send(server, method, f"/{b}/k", headers)
        check(r, "AccessDenied", 403, "headers present in the request which were not signed")
        assert b"<HeadersNotSigned>x-amz-rdma-" in r.body, r
    # Without them the bucket stays public.
    assert http_send(server, "GET", f"/{b}/k").body == b"public"


def test_response_overrides_are_refused_on_anonymous_gets(server):
    # 10: a public text/plain object cannot be served as text/html to anonymous callers.
    root, b = public_bucket(server)
    root.put_object(Bucket=b, Key="note.txt", Body=b"<script>x</script>", ContentType="text/plain")
    r = http_send(server, "GET", f"/{b}/note.txt?response-content-type=text%2Fhtml")
    check(r, "InvalidRequest", 400, "cannot be used for anonymous GET requests")
    r = http_send(server, "GET", f"/{b}/note.txt")
    assert r.status == 200 and r.hdict["content-type"] == "text/plain", r
    # Signed requests keep them.
    r = signed_request(server, "GET", f"/{b}/note.txt",
                       query=[("response-content-type", "text/html")])
    assert r.status == 200 and r.hdict["content-type"] == "text/html", r


def test_user_name_root_is_reserved(server):
    # 11: a user called "root" would match the account-root principal of bucket policies.
    cp = admin(server, "user", "add", "root", "secret-for-root-1", check=False)
    assert cp.returncode == 1 and "InvalidArgument" in cp.stderr and "reserved" in cp.stderr, cp
    assert "root" not in admin(server, "user", "list").stdout.split()


def test_acl_and_tags_on_a_write_need_their_own_actions(server, tmp_path):
    # 5: s3:PutObject alone does not let a user make objects public or tag them.
    root = make_client(server)
    b = unique_bucket("acl5")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="src", Body=b"source")
    name = create_policy(server, tmp_path, {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"],
         "Resource": [f"arn:aws:s3:::{b}/*"]},
        {"Effect": "Deny", "Action": ["s3:PutObjectAcl", "s3:PutObjectTagging"],
         "Resource": [f"arn:aws:s3:::{b}/*"]}]})
    ak, sk = add_user(server, [name])
    user = make_client(server, ak, sk)
    user.put_object(Bucket=b, Key="plain", Body=b"x")
    # ACLs that grant nothing to others need s3:PutObject alone (the cross-account pattern).
    user.put_object(Bucket=b, Key="owner", Body=b"x", ACL="bucket-owner-full-control")
    user.put_object(Bucket=b, Key="private", Body=b"x", ACL="private")
    user.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "src"})
    attempts = [
        lambda: user.put_object(Bucket=b, Key="p1", Body=b"x", ACL="public-read"),
        lambda: user.copy_object(Bucket=b, Key="p2", CopySource={"Bucket": b, "Key": "src"},
                                 ACL="public-read"),
        lambda: user.create_multipart_upload(Bucket=b, Key="p3", ACL="public-read"),
        lambda: user.put_object(Bucket=b, Key="t1", Body=b"x", Tagging="a=b"),
    ]
    for attempt in attempts:
        with pytest.raises(ClientError) as e:
            attempt()
        assert code_of(e) == "AccessDenied"
    for key in ("p1", "p2", "t1"):
        assert requests.get(server.url(f"/{b}/{key}"), timeout=10).status_code in (403, 404)
        with pytest.raises(ClientError):
            root.head_object(Bucket=b, Key=key)
    assert root.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    # The POST form's acl field likewise.
    r = user_post(server, SimpleNamespace(access_key=ak, secret_key=sk), b, "p4",
                  {"acl": "public-read"})
    check(r, "AccessDenied", 403)


def half_open_headers(srv, sources, per_source):
    socks = []
    for source in sources:
        for _ in range(per_source):
            s = socket.socket()
            s.bind((source, 0))
            s.settimeout(5)
            try:
                s.connect((HOST, srv.port))
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a header that never ends
            except OSError:
                pass  # closed at once: over its address's share
            socks.append(s)
    return socks


@pytest.mark.parametrize("sources,per_source", [
    (("127.0.0.2",), 200),                                   # one address, many connections
    (tuple(f"127.0.2.{i}" for i in range(1, 7)), 20),        # several, each under its share
])
def test_half_open_header_connections_do_not_lock_out_other_clients(server_factory, sources,
                                                                    per_source):
    # 7: one address took every connection slot with half-sent headers; now each address has a
    # share, and at the limit connections waiting for a header give way, oldest first.
    srv = server_factory(name="conns", env={"RDMASTOR_API_CONNECTIONS_MAX": "64"})
    socks = half_open_headers(srv, sources, per_source)
    try:
        time.sleep(0.5)
        for _ in range(4):
            start = time.monotonic()
            r = signed_from(srv, "127.0.0.9", "GET", "/", srv.access_key, srv.secret_key)
            assert r.status == 200, r
            assert time.monotonic() - start < 5
    finally:
        for s in socks:
            s.close()


def test_a_deleted_buckets_policy_does_not_apply_to_a_new_bucket_of_its_name(server, tmp_path):
    # Also from reading the code: removing a deleted bucket's policy is best effort, and a policy
    # left behind applied to the next bucket of that name (public read of its private objects).
    root, b = public_bucket(server, actions=("s3:GetObject",))
    record = os.path.join(server.datadir, "rdmastor.sys", "buckets", b, "policy.json")
    assert os.path.isdir(record), record
    shutil.copytree(record, tmp_path / "policy.json")
    root.delete_bucket(Bucket=b)
    shutil.copytree(tmp_path / "policy.json", record)  # as if its removal had failed
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="new", Body=b"private data")
    assert requests.get(server.url(f"/{b}/new"), timeout=10).status_code == 403
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=b)
    assert code_of(e) == "NoSuchBucketPolicy"


# ---------------------------------------------------------------------------------------------
# Medium 8: open multipart uploads are paged, and abandoned ones expire
# ---------------------------------------------------------------------------------------------

def test_list_multipart_uploads_pages_with_key_and_upload_id_markers(server):
    root = make_client(server)
    b = unique_bucket("mpu")
    root.create_bucket(Bucket=b)
    made = set()
    for key in ("a", "b", "b", "b", "c"):  # three uploads of one key: the upload-id marker
        made.add((key, root.create_multipart_upload(Bucket=b, Key=key)["UploadId"]))
    seen, kw, pages = [], {}, 0
    while pages < 10:
        r = root.list_multipart_uploads(Bucket=b, MaxUploads=2, **kw)
        pages += 1
        assert r["MaxUploads"] == 2
        seen += [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        assert len(r.get("Uploads", [])) <= 2
        if not r["IsTruncated"]:
            assert "NextKeyMarker" not in r or not r["NextKeyMarker"]
            break
        # AWS: the markers of the next page are the last upload listed.
        assert (r["NextKeyMarker"], r["NextUploadIdMarker"]) == seen[-1]
        kw = {"KeyMarker": r["NextKeyMarker"], "UploadIdMarker": r["NextUploadIdMarker"]}
    assert pages == 3 and len(seen) == 5 and set(seen) == made
    assert [k for k, _ in seen] == ["a", "b", "b", "b", "c"]
    # A key marker alone lists the keys after it; more than 1000 is 1000.
    r = root.list_multipart_uploads(Bucket=b, KeyMarker="b", MaxUploads=5000)
    assert [u["Key"] for u in r["Uploads"]] == ["c"] and r["MaxUploads"] == 1000
    for key, upload_id in made:
        root.abort_multipart_upload(Bucket=b, Key=key, UploadId=upload_id)


def test_stale_multipart_uploads_are_aborted_and_their_parts_freed(server_factory):
    srv = server_factory(name="expiry", env={"MINIO_API_STALE_UPLOADS_EXPIRY": "3s",
                                             "MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL": "200ms"})
    c = make_client(srv)
    b = unique_bucket("stale")
    c.create_bucket(Bucket=b)
    old = c.create_multipart_upload(Bucket=b, Key="old")["UploadId"]
    c.upload_part(Bucket=b, Key="old", UploadId=old, PartNumber=1, Body=b"x" * (1 << 20))
    mp = os.path.join(srv.datadir, ".rdmastor.sys", "multipart", b)
    assert os.listdir(mp) == [old]
    time.sleep(1.5)
    young = c.create_multipart_upload(Bucket=b, Key="young")["UploadId"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ids = [u["UploadId"] for u in c.list_multipart_uploads(Bucket=b).get("Uploads", [])]
        if old not in ids:
            break
        time.sleep(0.2)
    assert ids == [young]  # the old one went at about 3 s; the young one is 1.5 s younger
    with pytest.raises(ClientError) as e:
        c.list_parts(Bucket=b, Key="old", UploadId=old)
    assert code_of(e) == "NoSuchUpload"
    assert os.listdir(mp) == [young]  # the part's files are gone with it
    assert "aborted 1 stale multipart upload(s)" in srv.log_tail(200)


# ---------------------------------------------------------------------------------------------
# A bucket policy that is stored but cannot be read fails closed
# ---------------------------------------------------------------------------------------------

def test_a_stored_bucket_policy_that_cannot_be_read_denies(server_factory):
    # Also from reading the code: a policy whose stored copy was unreadable counted as "no policy",
    # so its Deny statements stopped applying. The metadata file of the policy document is
    # overwritten on the drive of the running server; the user's identity policy allows the GET,
    # only the bucket policy denies it.
    srv = server_factory(name="policy-closed", env={"RDMASTOR_IAM_REFRESH": "200ms"})
    root = make_client(srv)
    b = unique_bucket("closed")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="secret", Body=b"secret data")
    ak, sk = add_user(srv, policies=("readwrite",))
    user = make_client(srv, ak, sk)
    assert user.get_object(Bucket=b, Key="secret")["Body"].read() == b"secret data"
    root.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/secret"}]}))
    with pytest.raises(ClientError) as e:
        user.get_object(Bucket=b, Key="secret")
    assert code_of(e) == "AccessDenied"
    meta = os.path.join(srv.datadir, "rdmastor.sys", "buckets", b, "policy.json", ".rdmastor.meta")
    assert os.path.isfile(meta), meta
    with open(meta, "wb") as f:
        f.write(b"not a metadata file")
    time.sleep(0.5)  # past RDMASTOR_IAM_REFRESH: the policy is read again
    for _ in range(2):  # the first read and the cached failure
        with pytest.raises(ClientError) as e:
            user.get_object(Bucket=b, Key="secret")
        assert code_of(e) == "AccessDenied"
    # The policy is not reported absent either; putting it anew repairs it.
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=b)
    assert code_of(e) == "InternalError"
    root.delete_bucket_policy(Bucket=b)
    assert user.get_object(Bucket=b, Key="secret")["Body"].read() == b"secret data"
    assert "policy of bucket " + b in srv.log_tail(200)


# ---------------------------------------------------------------------------------------------
# x-amz-expected-bucket-owner
# ---------------------------------------------------------------------------------------------

def account_id_of(srv):
    with open(srv.log_path, errors="replace") as f:
        log = f.read()
    for line in log.splitlines():
        if "account id: " in line:
            return line.split("account id: ")[1].split()[0]
    raise AssertionError("no account id in the start-up log")


def test_expected_bucket_owner_is_checked_against_the_account_id(server, server_factory):
    # Also from reading the code: the header was ignored, so a request meant for another
    # account's bucket of the same name went through. AWS: 403 when the account differs.
    account = account_id_of(server)
    assert len(account) == 12 and account.isdigit()
    other = "%012d" % ((int(account) + 1) % 10 ** 12)
    root = make_client(server)
    b = unique_bucket("owner")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"x", ExpectedBucketOwner=account)
    root.head_bucket(Bucket=b, ExpectedBucketOwner=account)
    assert root.list_objects_v2(Bucket=b, ExpectedBucketOwner=account)["KeyCount"] == 1
    root.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"},
                     ExpectedBucketOwner=account, ExpectedSourceBucketOwner=account)
    refused = [
        (lambda: root.put_object(Bucket=b, Key="k2", Body=b"x", ExpectedBucketOwner=other),
         "AccessDenied"),
        (lambda: root.get_object(Bucket=b, Key="k", ExpectedBucketOwner=other), "AccessDenied"),
        (lambda: root.list_objects_v2(Bucket=b, ExpectedBucketOwner=other), "AccessDenied"),
        (lambda: root.delete_object(Bucket=b, Key="k", ExpectedBucketOwner=other), "AccessDenied"),
        (lambda: root.copy_object(Bucket=b, Key="c2", CopySource={"Bucket": b, "Key": "k"},
                                  ExpectedSourceBucketOwner=other), "AccessDenied"),
        (lambda: root.get_object(Bucket=b, Key="k", ExpectedBucketOwner="not-an-id"),
         "InvalidBucketOwnerAWSAccountID"),
    ]
    for call, code in refused:
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == code
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == (
            403 if code == "AccessDenied" else 400)
    with pytest.raises(ClientError) as e:  # HEAD: the status alone
        root.head_bucket(Bucket=b, ExpectedBucketOwner=other)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert root.get_object(Bucket=b, Key="k")["Body"].read() == b"x"  # nothing was deleted
    with pytest.raises(ClientError):
        root.head_object(Bucket=b, Key="k2")
    # A configured account id (RDMASTOR_ACCOUNT_ID) is the one checked.
    srv = server_factory(name="account", env={"RDMASTOR_ACCOUNT_ID": "123456789012"})
    assert account_id_of(srv) == "123456789012"
    c = make_client(srv)
    c.create_bucket(Bucket=b)
    c.head_bucket(Bucket=b, ExpectedBucketOwner="123456789012")
    with pytest.raises(ClientError) as e:
        c.list_objects_v2(Bucket=b, ExpectedBucketOwner=account)
    assert code_of(e) == "AccessDenied"
