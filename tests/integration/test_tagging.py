"""Object and bucket tagging (issue 15 item 5) against the real server, on one drive and on four
drives (erasure coding): x-amz-tagging on PutObject / CopyObject / CreateMultipartUpload,
Put/Get/DeleteObjectTagging, x-amz-tagging-count, Put/Get/DeleteBucketTagging, and AWS's limits
and errors. The SDK checks are one script run under Debian's boto3 and, when the machine has one,
a current boto3 (as test_conformance2.py); raw signed requests check the exact error codes and
messages for the x-amz-tagging header limits.
"""
import json
import os
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

from conftest import (admin_heal, assert_s3_error, sdk_script_runner, signed_request,
                      unique_bucket)
from test_conformance import _interpreters

S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

SDK_SCRIPT = r'''
err = err_message  # these checks compare AWS's messages too

def tags(key):
    ts = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    return sorted([t["Key"], t["Value"]] for t in ts)

def tagset(pairs):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in pairs]}

bucket = prefix + "-tags"
s3.create_bucket(Bucket=bucket)

@section
def object_tags():
    s3.put_object(Bucket=bucket, Key="obj", Body=b"hello", Tagging="a=1&b=two%20words",
                  Metadata={"m": "v"}, ContentType="text/plain")
    before = s3.head_object(Bucket=bucket, Key="obj")
    out["put tags"] = tags("obj")
    out["get count"] = s3.get_object(Bucket=bucket, Key="obj").get("TagCount")
    s3.put_object_tagging(Bucket=bucket, Key="obj",
                          Tagging=tagset([("x", "y"), ("k:é/@", "v +-=._:/@"), ("e", "")]))
    out["replaced tags"] = tags("obj")
    after = s3.head_object(Bucket=bucket, Key="obj")
    out["unchanged"] = [before["ETag"] == after["ETag"],
                        before["LastModified"] == after["LastModified"],
                        after["Metadata"], after["ContentType"],
                        s3.get_object(Bucket=bucket, Key="obj")["Body"].read().decode()]
    out["count after put"] = s3.get_object(Bucket=bucket, Key="obj").get("TagCount")
    s3.delete_object_tagging(Bucket=bucket, Key="obj")
    out["deleted tags"] = tags("obj")
    out["count after delete"] = s3.get_object(Bucket=bucket, Key="obj").get("TagCount")
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    out["untagged"] = tags("plain")
    out["missing key"] = err(s3.get_object_tagging, Bucket=bucket, Key="nope")[:2]
    out["put missing key"] = err(s3.put_object_tagging, Bucket=bucket, Key="nope",
                                 Tagging=tagset([("a", "b")]))[:2]
    out["ten ok"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                        Tagging=tagset([(f"k{i}", "v") for i in range(10)]))[:2]
    out["eleven"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                        Tagging=tagset([(f"k{i}", "v") for i in range(11)]))
    out["after eleven"] = len(tags("plain"))
    out["duplicate"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                           Tagging=tagset([("d", "1"), ("d", "2")]))
    out["value 256 unicode"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                                   Tagging=tagset([("u", "é" * 256)]))[:2]
    out["value 257"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                           Tagging=tagset([("u", "v" * 257)]))
    out["key 128 unicode"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                                 Tagging=tagset([("ü" * 128, "v")]))[:2]
    out["key 129"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                         Tagging=tagset([("k" * 129, "v")]))
    out["bad char"] = err(s3.put_object_tagging, Bucket=bucket, Key="plain",
                          Tagging=tagset([("a", "semi;colon")]))[:2]

@section
def copy_tags():
    s3.put_object(Bucket=bucket, Key="src", Body=b"source", Tagging="s=1&t=2")
    src = {"Bucket": bucket, "Key": "src"}
    s3.copy_object(Bucket=bucket, Key="copy-default", CopySource=src)
    out["copy default"] = tags("copy-default")
    s3.copy_object(Bucket=bucket, Key="copy-replace", CopySource=src, TaggingDirective="REPLACE",
                   Tagging="r=9")
    out["copy replace"] = tags("copy-replace")
    s3.copy_object(Bucket=bucket, Key="copy-none", CopySource=src, TaggingDirective="REPLACE")
    out["copy replace none"] = tags("copy-none")

@section
def multipart_tags():
    up = s3.create_multipart_upload(Bucket=bucket, Key="mpu", Tagging="m=1&n=two")["UploadId"]
    out["tags before complete"] = err(s3.get_object_tagging, Bucket=bucket, Key="mpu")[:2]
    e = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=1, Body=b"p" * 100)
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e["ETag"]}]})
    out["mpu tags"] = tags("mpu")
    out["mpu count"] = s3.get_object(Bucket=bucket, Key="mpu").get("TagCount")

@section
def bucket_tags():
    out["bucket untagged"] = err(s3.get_bucket_tagging, Bucket=bucket)
    r = s3.put_bucket_tagging(Bucket=bucket, Tagging=tagset([("team", "storage"), ("env", "ci")]))
    out["bucket put status"] = r["ResponseMetadata"]["HTTPStatusCode"]
    out["bucket tags"] = sorted([t["Key"], t["Value"]]
                                for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"])
    out["bucket fifty"] = err(s3.put_bucket_tagging, Bucket=bucket,
                              Tagging=tagset([(f"k{i}", "v") for i in range(50)]))[:2]
    out["bucket fifty-one"] = err(s3.put_bucket_tagging, Bucket=bucket,
                                  Tagging=tagset([(f"k{i}", "v") for i in range(51)]))[:2]
    out["bucket count"] = len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"])
    out["bucket duplicate"] = err(s3.put_bucket_tagging, Bucket=bucket,
                                  Tagging=tagset([("d", "1"), ("d", "2")]))[:2]
    r = s3.delete_bucket_tagging(Bucket=bucket)
    out["bucket delete status"] = r["ResponseMetadata"]["HTTPStatusCode"]
    out["bucket deleted"] = err(s3.get_bucket_tagging, Bucket=bucket)
    out["no such bucket"] = err(s3.get_bucket_tagging, Bucket=prefix + "-missing")[:2]

@section
def version_tags():
    # Versioning needs the erasure layout: run on the four-drive server only.
    def err2(fn, **kw):  # [status, code]
        return err(fn, **kw)[:2]

    vb = bucket + "-v"
    s3.create_bucket(Bucket=vb)
    s3.put_object(Bucket=vb, Key="plain", Body=b"p", Tagging="u=1")
    r = s3.get_object_tagging(Bucket=vb, Key="plain")
    out["never versioned id"] = r.get("VersionId")  # no x-amz-version-id, as AWS
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=vb, Key="k", Body=b"one", Tagging="gen=1")["VersionId"]
    v2 = s3.put_object(Bucket=vb, Key="k", Body=b"two", Tagging="gen=2")["VersionId"]
    out["ids"] = [v1, v2]

    def vtags(v=None):
        kw = {"VersionId": v} if v else {}
        r = s3.get_object_tagging(Bucket=vb, Key="k", **kw)
        return [r.get("VersionId"), sorted([t["Key"], t["Value"]] for t in r["TagSet"])]

    out["v1"] = vtags(v1)
    out["latest"] = vtags()
    r = s3.put_object_tagging(Bucket=vb, Key="k", VersionId=v1,
                              Tagging=tagset([("old", "yes"), ("gen", "1b")]))
    out["put v1 answers"] = r.get("VersionId")
    out["v1 after put"] = vtags(v1)
    out["latest after put"] = vtags()
    out["v1 count"] = s3.get_object(Bucket=vb, Key="k", VersionId=v1).get("TagCount")
    r = s3.put_object_tagging(Bucket=vb, Key="k", Tagging=tagset([("latest", "1")]))
    out["put latest answers"] = r.get("VersionId")
    out["v1 after latest put"] = vtags(v1)
    r = s3.delete_object_tagging(Bucket=vb, Key="k", VersionId=v1)
    out["delete v1 answers"] = r.get("VersionId")
    out["v1 after delete"] = vtags(v1)
    out["latest after delete"] = vtags()
    # A well-formed id that names no version of the key: NoSuchVersion, for all three calls.
    missing = "0" * len(v1)
    out["unknown get"] = err2(s3.get_object_tagging, Bucket=vb, Key="k", VersionId=missing)
    out["unknown put"] = err2(s3.put_object_tagging, Bucket=vb, Key="k", VersionId=missing,
                             Tagging=tagset([("a", "b")]))
    out["unknown delete"] = err2(s3.delete_object_tagging, Bucket=vb, Key="k",
                                 VersionId=missing)
    out["malformed"] = err2(s3.get_object_tagging, Bucket=vb, Key="k", VersionId="a/b")
    out["after refusals"] = [vtags(v1), vtags(v2)]
    # A delete marker has no tags: named, 405; as the latest, 404 NoSuchKey.
    marker = s3.delete_object(Bucket=vb, Key="k")["VersionId"]
    out["marker named"] = err2(s3.get_object_tagging, Bucket=vb, Key="k", VersionId=marker)
    out["marker latest"] = err2(s3.put_object_tagging, Bucket=vb, Key="k",
                               Tagging=tagset([("a", "b")]))
    out["v2 under marker"] = vtags(v2)
    # The null version of a Suspended bucket: "null" named or not.
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Suspended"})
    s3.put_object(Bucket=vb, Key="k", Body=b"null", Tagging="n=0")
    out["null latest"] = vtags()
    s3.put_object_tagging(Bucket=vb, Key="k", VersionId="null", Tagging=tagset([("n", "1")]))
    out["null named"] = vtags("null")

print(json.dumps(out))
'''


@pytest.fixture(params=["one-drive", "erasure"])
def srv(request, server, erasure_server):
    return server if request.param == "one-drive" else erasure_server


@pytest.fixture(scope="module")
def sdk_results(tmp_path_factory):
    """Runs SDK_SCRIPT once per (interpreter, server), cached: run(python, server, section)."""
    return sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "tagging_sdk.py", "tg", timeout=300)


@pytest.mark.parametrize("py", _interpreters())
def test_version_tagging(sdk_results, erasure_server, py):
    """Put/Get/DeleteObjectTagging with versionId act on that version and answer its
    x-amz-version-id; an unknown version is 404 NoSuchVersion; a delete marker has no tags."""
    out = sdk_results(py, erasure_server, "version_tags")
    v1, v2 = out["ids"]
    assert out["never versioned id"] is None
    assert out["v1"] == [v1, [["gen", "1"]]]
    assert out["latest"] == [v2, [["gen", "2"]]]
    assert out["put v1 answers"] == v1
    assert out["v1 after put"] == [v1, [["gen", "1b"], ["old", "yes"]]]
    assert out["latest after put"] == [v2, [["gen", "2"]]]  # the latest kept its own
    assert out["v1 count"] == 2
    assert out["put latest answers"] == v2
    assert out["v1 after latest put"] == [v1, [["gen", "1b"], ["old", "yes"]]]
    assert out["delete v1 answers"] == v1
    assert out["v1 after delete"] == [v1, []]
    assert out["latest after delete"] == [v2, [["latest", "1"]]]
    for call in ("unknown get", "unknown put", "unknown delete"):
        assert out[call] == [404, "NoSuchVersion"], call
    assert out["malformed"] == [400, "InvalidArgument"]
    assert out["after refusals"] == [[v1, []], [v2, [["latest", "1"]]]]
    assert out["marker named"] == [405, "MethodNotAllowed"]
    assert out["marker latest"] == [404, "NoSuchKey"]
    assert out["v2 under marker"] == [v2, [["latest", "1"]]]
    assert out["null latest"] == ["null", [["n", "0"]]]
    assert out["null named"] == ["null", [["n", "1"]]]


@pytest.mark.parametrize("py", _interpreters())
def test_object_tagging(sdk_results, srv, py):
    out = sdk_results(py, srv, "object_tags")
    assert out["put tags"] == [["a", "1"], ["b", "two words"]]
    assert out["get count"] == 2
    assert out["replaced tags"] == [["e", ""], ["k:é/@", "v +-=._:/@"], ["x", "y"]]
    # Only the tags change: ETag, Last-Modified, metadata, content type and body stay.
    assert out["unchanged"] == [True, True, {"m": "v"}, "text/plain", "hello"]
    assert out["count after put"] == 3
    assert out["deleted tags"] == []
    assert out["count after delete"] is None
    assert out["untagged"] == []
    assert out["missing key"] == [404, "NoSuchKey"]
    assert out["put missing key"] == [404, "NoSuchKey"]
    assert out["ten ok"] == ["ok", None]
    assert out["eleven"] == [400, "BadRequest", "Object tags cannot be greater than 10"]
    assert out["after eleven"] == 10  # the refused set changed nothing
    assert out["duplicate"] == [400, "InvalidTag", "Cannot provide multiple Tags with the same key"]
    assert out["value 256 unicode"] == ["ok", None]
    assert out["value 257"] == [400, "InvalidTag",
                                "The TagValue you have provided is too long, max 256"]
    assert out["key 128 unicode"] == ["ok", None]
    assert out["key 129"] == [400, "InvalidTag", "The TagKey you have provided is too long, max 128"]
    assert out["bad char"] == [400, "InvalidTag"]


@pytest.mark.parametrize("py", _interpreters())
def test_copy_object_tagging_directive(sdk_results, srv, py):
    out = sdk_results(py, srv, "copy_tags")
    assert out["copy default"] == [["s", "1"], ["t", "2"]]
    assert out["copy replace"] == [["r", "9"]]
    assert out["copy replace none"] == []


@pytest.mark.parametrize("py", _interpreters())
def test_multipart_tagging_applied_at_complete(sdk_results, srv, py):
    out = sdk_results(py, srv, "multipart_tags")
    assert out["tags before complete"] == [404, "NoSuchKey"]
    assert out["mpu tags"] == [["m", "1"], ["n", "two"]]
    assert out["mpu count"] == 2


@pytest.mark.parametrize("py", _interpreters())
def test_bucket_tagging(sdk_results, srv, py):
    out = sdk_results(py, srv, "bucket_tags")
    assert out["bucket untagged"] == [404, "NoSuchTagSet", "The TagSet does not exist"]
    assert out["bucket tags"] == [["env", "ci"], ["team", "storage"]]
    # MinIO's 200 (minio-js accepts nothing else; AWS answers 204); delete: 204 in both.
    assert out["bucket put status"] == 200 and out["bucket delete status"] == 204, out
    assert out["bucket fifty"] == ["ok", None]
    assert out["bucket fifty-one"] == [400, "BadRequest"]
    assert out["bucket count"] == 50
    assert out["bucket duplicate"] == [400, "InvalidTag"]
    assert out["bucket deleted"] == [404, "NoSuchTagSet", "The TagSet does not exist"]
    assert out["no such bucket"] == [404, "NoSuchBucket"]


def _bucket(srv):
    name = unique_bucket("tr")
    r = signed_request(srv, "PUT", f"/{name}")
    assert r.status == 200, r.body
    return name


def _put(srv, bucket, key, tagging):
    return signed_request(srv, "PUT", f"/{bucket}/{key}", headers={"x-amz-tagging": tagging},
                          body=b"data")


@pytest.mark.parametrize("tagging, code, message", [
    ("&".join(f"k{i}=v" for i in range(11)), "BadRequest", "Object tags cannot be greater than 10"),
    ("a=1&a=2", "InvalidTag", "Cannot provide multiple Tags with the same key"),
    ("a=" + "v" * 257, "InvalidTag", "The TagValue you have provided is too long, max 256"),
    ("k" * 129 + "=v", "InvalidTag", "The TagKey you have provided is too long, max 128"),
    ("a=b%3Bc", "InvalidTag", "The TagValue you have provided is invalid"),
    ("=v", "InvalidTag", "The TagKey you have provided is invalid"),
    ("a=%zz", "InvalidArgument", None),
], ids=["eleven", "duplicate", "value-257", "key-129", "bad-char", "empty-key", "bad-escape"])
def test_tagging_header_limits(srv, tagging, code, message):
    bucket = _bucket(srv)
    r = _put(srv, bucket, "obj", tagging)
    err = assert_s3_error(r.status, r.headers, r.body, code, 400)
    if message:
        assert err["Message"] == message
    # Nothing was stored.
    h = signed_request(srv, "HEAD", f"/{bucket}/obj")
    assert h.status == 404


def test_tagging_header_at_limits_and_count(srv):
    bucket = _bucket(srv)
    ten = "&".join(f"k{i}=v{i}" for i in range(9)) + "&" + urllib.parse.quote("é" * 128) + "=" + \
        urllib.parse.quote("ü" * 256)
    r = _put(srv, bucket, "obj", ten)
    assert r.status == 200, r.body
    for method in ("HEAD", "GET"):
        h = signed_request(srv, method, f"/{bucket}/obj")
        assert h.status == 200
        assert dict((k.lower(), v) for k, v in h.headers)["x-amz-tagging-count"] == "10"
    g = signed_request(srv, "GET", f"/{bucket}/obj", query=[("tagging", "")])
    assert g.status == 200, g.body
    root = ET.fromstring(g.body)
    got = {t.find(S3_NS + "Key").text: t.find(S3_NS + "Value").text
           for t in root.iter(S3_NS + "Tag")}
    assert got["é" * 128] == "ü" * 256 and len(got) == 10
    # An object without tags has no x-amz-tagging-count.
    r = signed_request(srv, "PUT", f"/{bucket}/plain", body=b"x")
    assert r.status == 200
    h = signed_request(srv, "HEAD", f"/{bucket}/plain")
    assert "x-amz-tagging-count" not in dict((k.lower(), v) for k, v in h.headers)


@pytest.mark.parametrize("body", [b"", b"<Tagging>", b"<Tagging></Tagging>",
                                  b"<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
                                  b"<Other><TagSet/></Other>",
                                  b"<!DOCTYPE x [<!ENTITY e 'v'>]><Tagging><TagSet><Tag><Key>a"
                                  b"</Key><Value>&e;</Value></Tag></TagSet></Tagging>"],
                         ids=["empty", "unclosed", "no-tagset", "no-value", "other-root", "doctype"])
def test_put_object_tagging_malformed_xml(srv, body):
    bucket = _bucket(srv)
    assert signed_request(srv, "PUT", f"/{bucket}/obj", body=b"x").status == 200
    r = signed_request(srv, "PUT", f"/{bucket}/obj", query=[("tagging", "")], body=body)
    assert_s3_error(r.status, r.headers, r.body, "MalformedXML", 400)


def test_unknown_tagging_directive(srv):
    bucket = _bucket(srv)
    assert signed_request(srv, "PUT", f"/{bucket}/src", body=b"x").status == 200
    r = signed_request(srv, "PUT", f"/{bucket}/dst",
                       headers={"x-amz-copy-source": f"/{bucket}/src",
                                "x-amz-tagging-directive": "MERGE"})
    assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400)


def test_tags_survive_restart(server_factory, tmp_path):
    """Object and bucket tags are on the drives: a restarted server (erasure, 4 drives) has them."""
    srv = server_factory(data_dirs=[str(tmp_path / f"d{i}") for i in range(4)])
    bucket = _bucket(srv)
    assert _put(srv, bucket, "obj", "a=1&b=2").status == 200
    body = (b"<Tagging><TagSet><Tag><Key>team</Key><Value>x</Value></Tag></TagSet></Tagging>")
    r = signed_request(srv, "PUT", f"/{bucket}", query=[("tagging", "")], body=body)
    assert r.status == 200, r.body  # PutBucketTagging: MinIO's 200
    srv.restart()
    g = signed_request(srv, "GET", f"/{bucket}/obj", query=[("tagging", "")])
    assert g.status == 200 and b"<Key>a</Key><Value>1</Value>" in g.body, g.body
    g = signed_request(srv, "GET", f"/{bucket}", query=[("tagging", "")])
    assert g.status == 200 and b"<Key>team</Key><Value>x</Value>" in g.body, g.body


def test_tags_read_quorum_wins_over_a_stale_drive(server_factory, tmp_path):
    """A drive that missed a PutObjectTagging (its metadata file put back to the copy it had
    before, as after an outage) must not answer reads of the tags: GetObjectTagging and
    x-amz-tagging-count come from the copy the other three drives agree on, as for the ACL; a heal
    then brings the stale drive up to date. The stale drive is the first: before the fix the first
    drive's copy answered whatever the others said."""
    dirs = [str(tmp_path / f"d{i}") for i in range(4)]
    srv = server_factory(data_dirs=dirs)
    bucket = _bucket(srv)
    data = os.urandom(300 << 10)  # beyond the inline limit: shards on every drive
    r = signed_request(srv, "PUT", f"/{bucket}/k", headers={"x-amz-tagging": "v=old"}, body=data)
    assert r.status == 200, r.body
    meta = os.path.join(dirs[0], bucket, "k", ".rdmastor.meta")
    with open(meta, "rb") as f:
        before = f.read()
    body = (b"<Tagging><TagSet><Tag><Key>v</Key><Value>new</Value></Tag>"
            b"<Tag><Key>w</Key><Value>2</Value></Tag></TagSet></Tagging>")
    r = signed_request(srv, "PUT", f"/{bucket}/k", query=[("tagging", "")], body=body)
    assert r.status == 200, r.body
    srv.stop()
    with open(meta, "wb") as f:  # drive 0 missed the update
        f.write(before)
    srv.start()
    quorum = b"<Key>v</Key><Value>new</Value>"
    for attempt in range(3):  # the same answer every time, not by chance
        g = signed_request(srv, "GET", f"/{bucket}/k", query=[("tagging", "")])
        assert g.status == 200 and quorum in g.body and b"old" not in g.body, (attempt, g.body)
        g = signed_request(srv, "GET", f"/{bucket}/k")
        assert g.status == 200 and g.body == data
        assert g.header("x-amz-tagging-count") == "2", g.headers
        h = signed_request(srv, "HEAD", f"/{bucket}/k")
        assert h.status == 200 and h.header("x-amz-tagging-count") == "2", h.headers
    # The reads queued a heal of the stale copy; an admin heal (done by then or not) leaves the
    # drive with the quorum's tags.
    res = admin_heal(srv, bucket)
    assert res.returncode == 0 and res.counts["failed"] == 0, res
    assert res.counts["healed"] in (0, 1), res
    with open(meta) as f:
        assert json.load(f)["versions"][0]["tags"] == "v=new&w=2"


def test_metadata_only_update_keeps_every_shard(srv):
    """A metadata-only rewrite (PutObjectTagging, CopyObject onto itself with REPLACE) keeps each
    drive's own shard index: the object still reads afterwards, on four drives too. (Before the
    fix every drive was given one drive's index; test_object_tagging[erasure-*] caught it.)"""
    bucket = _bucket(srv)
    data = os.urandom(1000)
    assert signed_request(srv, "PUT", f"/{bucket}/self", body=data).status == 200
    r = signed_request(srv, "PUT", f"/{bucket}/self",
                       headers={"x-amz-copy-source": f"/{bucket}/self",
                                "x-amz-metadata-directive": "REPLACE",
                                "x-amz-meta-new": "1"})
    assert r.status == 200, r.body
    g = signed_request(srv, "GET", f"/{bucket}/self")
    assert g.status == 200 and g.body == data
