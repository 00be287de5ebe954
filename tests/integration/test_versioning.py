"""Bucket versioning (issue 15 item 4) against a 4-drive erasure-coded server (EC 2+2):
Put/GetBucketVersioning (Enabled / Suspended, MFA delete refused), version ids, delete markers,
ListObjectVersions (markers, prefix, delimiter), GET / HEAD / DELETE / CopyObject by versionId,
DeleteObjects with versions, the null version, 404 vs 405 for delete markers, multipart Complete
creating a version; a lost drive healed with every version; kill -9 during a versioned PUT leaves
the old versions intact. The SDK checks are one script run under Debian's boto3 and, when the
machine has one, a current boto3 (as test_tagging.py); raw signed requests check exact headers.
"""
import glob
import json
import os
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import (AwsCli, admin_heal, assert_s3_error, make_client, sdk_script_runner,
                      seeded_bytes, signed_request, unique_bucket)
from test_conformance import _interpreters
from test_crash import PartialPut

MiB = 1 << 20
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

SDK_SCRIPT = r'''
def body(**kw):
    return s3.get_object(**kw)["Body"].read().decode()

def versions(bucket, **kw):
    r = s3.list_object_versions(Bucket=bucket, **kw)
    v = [[x["Key"], x["VersionId"], x["IsLatest"], "v", x["Size"]] for x in r.get("Versions", [])]
    m = [[x["Key"], x["VersionId"], x["IsLatest"], "m", 0] for x in r.get("DeleteMarkers", [])]
    return v, m, r

@section
def config():
    b = prefix + "-cfg"
    s3.create_bucket(Bucket=b)
    out["initial"] = s3.get_bucket_versioning(Bucket=b).get("Status")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    out["enabled"] = s3.get_bucket_versioning(Bucket=b).get("Status")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    out["suspended"] = s3.get_bucket_versioning(Bucket=b).get("Status")
    out["mfa"] = err(s3.put_bucket_versioning, Bucket=b,
                     VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})
    out["after mfa"] = s3.get_bucket_versioning(Bucket=b).get("Status")
    out["missing bucket"] = err(s3.put_bucket_versioning, Bucket=prefix + "-nobucket",
                                VersioningConfiguration={"Status": "Enabled"})

@section
def round_trip():
    b = prefix + "-rt"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two" * 100000)["VersionId"]  # data dir
    out["ids distinct"] = v1 != v2 and "null" not in (v1, v2)
    out["latest"] = body(Bucket=b, Key="k")[:3]
    out["by id"] = [body(Bucket=b, Key="k", VersionId=v1),
                    body(Bucket=b, Key="k", VersionId=v2)[:3]]
    h = s3.head_object(Bucket=b, Key="k", VersionId=v1)
    out["head by id"] = [h["VersionId"] == v1, h["ContentLength"]]
    out["head latest id"] = s3.head_object(Bucket=b, Key="k")["VersionId"] == v2
    d = s3.delete_object(Bucket=b, Key="k")
    marker = d["VersionId"]
    out["delete"] = [d.get("DeleteMarker"), marker not in (v1, v2, "null")]
    out["get after delete"] = err(s3.get_object, Bucket=b, Key="k")
    out["head after delete"] = err(s3.head_object, Bucket=b, Key="k")
    out["get marker"] = err(s3.get_object, Bucket=b, Key="k", VersionId=marker)
    out["head marker"] = err(s3.head_object, Bucket=b, Key="k", VersionId=marker)
    out["old still there"] = body(Bucket=b, Key="k", VersionId=v1)
    out["listed v2"] = s3.list_objects_v2(Bucket=b).get("KeyCount")
    v, m, _ = versions(b)
    out["versions"] = [x[2:] for x in v] + [x[2:] for x in m]
    out["version ids"] = [x[1] for x in v] == [v2, v1] and [x[1] for x in m] == [marker]
    # Restore v1: copy it onto its own key (a new version, the latest).
    c = s3.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "k", "VersionId": v1})
    out["restore"] = [c.get("CopySourceVersionId") == v1, c["VersionId"] not in (v1, v2, marker)]
    out["restored"] = body(Bucket=b, Key="k")
    out["copy marker"] = err(s3.copy_object, Bucket=b, Key="x",
                             CopySource={"Bucket": b, "Key": "k", "VersionId": marker})
    out["copy missing version"] = err(s3.copy_object, Bucket=b, Key="x",
                                      CopySource={"Bucket": b, "Key": "k",
                                                  "VersionId": "00000000-0000-0000-0000-000000000000"})
    # Remove the marker and v2 for good.
    d = s3.delete_object(Bucket=b, Key="k", VersionId=marker)
    out["delete marker by id"] = [d.get("DeleteMarker"), d["VersionId"] == marker]
    d = s3.delete_object(Bucket=b, Key="k", VersionId=v2)
    out["delete v2"] = [d.get("DeleteMarker", False), d["VersionId"] == v2]
    out["v2 gone"] = err(s3.get_object, Bucket=b, Key="k", VersionId=v2)
    out["bad id"] = err(s3.get_object, Bucket=b, Key="k", VersionId="not/an id")
    v, m, _ = versions(b)
    out["left"] = [len(v), len(m)]
    # Tagging the latest version keeps the versions.
    s3.put_object_tagging(Bucket=b, Key="k", Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
    v, m, _ = versions(b)
    out["after tagging"] = [len(v), len(m), body(Bucket=b, Key="k", VersionId=v1)]

@section
def null_version():
    b = prefix + "-null"
    s3.create_bucket(Bucket=b)
    r = s3.put_object(Bucket=b, Key="k", Body=b"unversioned")
    out["unversioned put id"] = r.get("VersionId")
    # A bucket never versioned answers reads without x-amz-version-id (as AWS).
    out["unversioned read ids"] = [s3.get_object(Bucket=b, Key="k").get("VersionId"),
                                   s3.head_object(Bucket=b, Key="k").get("VersionId")]
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket=b, Key="k", Body=b"versioned")["VersionId"]
    out["null readable"] = body(Bucket=b, Key="k", VersionId="null")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    s3.put_object(Bucket=b, Key="k", Body=b"suspended 1")
    s3.put_object(Bucket=b, Key="k", Body=b"suspended 2")  # replaces the null version
    vs, ms, _ = versions(b)
    out["suspended versions"] = [[x[1] == "null", x[2]] for x in vs]
    out["suspended null"] = body(Bucket=b, Key="k", VersionId="null")
    # The latest is the null version: GET and HEAD name it ("null"), as AWS answers.
    out["suspended read ids"] = [s3.get_object(Bucket=b, Key="k").get("VersionId"),
                                 s3.head_object(Bucket=b, Key="k").get("VersionId")]
    out["kept"] = body(Bucket=b, Key="k", VersionId=v)
    d = s3.delete_object(Bucket=b, Key="k")
    out["suspended delete"] = [d.get("DeleteMarker"), d.get("VersionId")]
    vs, ms, _ = versions(b)
    out["after suspended delete"] = [[x[1] for x in vs] == [v], [x[1] for x in ms]]

@section
def paging():
    b = prefix + "-page"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    want = []
    for k in ["a", "b/1", "b/2", "c"]:
        ids = [s3.put_object(Bucket=b, Key=k, Body=k.encode() * i)["VersionId"] for i in range(3)]
        want += [[k, i] for i in reversed(ids)]
    s3.delete_object(Bucket=b, Key="c")
    got, pages, kw = [], 0, {}
    while True:
        r = s3.list_object_versions(Bucket=b, MaxKeys=2, **kw)
        pages += 1
        entries = sorted([[x["Key"], x["VersionId"], x["LastModified"].timestamp(),
                           "DeleteMarker" if "ETag" not in x else "Version"]
                          for x in r.get("Versions", []) + r.get("DeleteMarkers", [])],
                         key=lambda e: (e[0], -e[2]))
        got += [[e[0], e[1]] for e in entries if e[3] == "Version"]
        if not r["IsTruncated"] or pages > 20:
            break
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
    out["paged"] = [got == want, pages]
    v, m, r = versions(b, Prefix="b/")
    out["prefix"] = [x[0] for x in v]
    v, m, r = versions(b, Delimiter="/")
    out["delimiter"] = [sorted({x[0] for x in v}), [p["Prefix"] for p in r.get("CommonPrefixes", [])],
                        [x[0] for x in m]]
    out["no vid without key"] = err(s3.list_object_versions, Bucket=b, VersionIdMarker=want[0][1])

@section
def multi_delete():
    b = prefix + "-multi"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="x", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="x", Body=b"2")["VersionId"]
    s3.put_object(Bucket=b, Key="y", Body=b"y")
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "x", "VersionId": v1}, {"Key": "y"},
        {"Key": "x", "VersionId": "bad id"}]})
    dl = sorted([d["Key"], d.get("VersionId") == v1, d.get("DeleteMarker", False),
                 bool(d.get("DeleteMarkerVersionId"))] for d in r.get("Deleted", []))
    out["multi deleted"] = dl
    out["multi errors"] = [[e["Key"], e["Code"]] for e in r.get("Errors", [])]
    vs, ms, _ = versions(b)
    out["multi left"] = [sorted(x[0] for x in vs), [x[0] for x in ms], body(Bucket=b, Key="x")]

@section
def multipart():
    b = prefix + "-mpu"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="m", Body=b"small")["VersionId"]
    up = s3.create_multipart_upload(Bucket=b, Key="m")["UploadId"]
    e1 = s3.upload_part(Bucket=b, Key="m", UploadId=up, PartNumber=1, Body=b"a" * (5 << 20))["ETag"]
    e2 = s3.upload_part(Bucket=b, Key="m", UploadId=up, PartNumber=2, Body=b"b")["ETag"]
    c = s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    v2 = c.get("VersionId")
    out["mpu version"] = [bool(v2) and v2 != v1, s3.head_object(Bucket=b, Key="m")["ContentLength"],
                          body(Bucket=b, Key="m", VersionId=v1)]

print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    return sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "versioning_sdk.py", "vr", timeout=300)


@pytest.mark.parametrize("py", _interpreters())
def test_versioning_configuration(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "config")
    assert out["initial"] is None
    assert out["enabled"] == "Enabled"
    assert out["suspended"] == "Suspended"
    assert out["mfa"] == [403, "AccessDenied"]  # MFA delete needs x-amz-mfa, which we refuse
    assert out["after mfa"] == "Suspended"
    assert out["missing bucket"] == [404, "NoSuchBucket"]


@pytest.mark.parametrize("py", _interpreters())
def test_overwrite_delete_restore(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "round_trip")
    assert out["ids distinct"] is True
    assert out["latest"] == "two"
    assert out["by id"] == ["one", "two"]
    assert out["head by id"] == [True, 3]
    assert out["head latest id"] is True
    assert out["delete"] == [True, True]
    assert out["get after delete"] == [404, "NoSuchKey"]
    assert out["head after delete"] == [404, "404"]
    assert out["get marker"] == [405, "MethodNotAllowed"]
    assert out["head marker"] == [405, "405"]
    assert out["old still there"] == "one"
    assert out["listed v2"] == 0
    assert out["versions"] == [[False, "v", 300000], [False, "v", 3], [True, "m", 0]]
    assert out["version ids"] is True
    assert out["restore"] == [True, True]
    assert out["restored"] == "one"
    assert out["copy marker"] == [400, "InvalidRequest"]
    assert out["copy missing version"] == [404, "NoSuchVersion"]
    assert out["delete marker by id"] == [True, True]
    assert out["delete v2"] == [False, True]
    assert out["v2 gone"] == [404, "NoSuchVersion"]
    assert out["bad id"] == [400, "InvalidArgument"]
    assert out["left"] == [2, 0]  # v1 and the restored copy
    assert out["after tagging"] == [2, 0, "one"]


@pytest.mark.parametrize("py", _interpreters())
def test_null_version(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "null_version")
    assert out["unversioned put id"] is None
    assert out["unversioned read ids"] == [None, None]
    assert out["null readable"] == "unversioned"
    # Suspended writes replace the null version; the Enabled one stays.
    assert out["suspended versions"] == [[True, True], [False, False]]
    assert out["suspended null"] == "suspended 2"
    assert out["suspended read ids"] == ["null", "null"]
    assert out["kept"] == "versioned"
    assert out["suspended delete"] == [True, "null"]
    assert out["after suspended delete"] == [True, ["null"]]


@pytest.mark.parametrize("py", _interpreters())
def test_list_versions_paging(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "paging")
    assert out["paged"][0] is True, out
    assert out["paged"][1] >= 7  # 12 versions + 1 marker, two per page
    assert out["prefix"] == ["b/1"] * 3 + ["b/2"] * 3
    assert out["delimiter"] == [["a", "c"], ["b/"], ["c"]]
    assert out["no vid without key"] == [400, "InvalidArgument"]


@pytest.mark.parametrize("py", _interpreters())
def test_delete_objects_with_versions(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "multi_delete")
    assert out["multi deleted"] == [["x", True, False, False], ["y", False, True, True]]
    assert out["multi errors"] == [["x", "NoSuchVersion"]]
    assert out["multi left"] == [["x", "y"], ["y"], "2"]


@pytest.mark.parametrize("py", _interpreters())
def test_multipart_creates_version(sdk, erasure_server, py):
    out = sdk(py, erasure_server, "multipart")
    assert out["mpu version"] == [True, (5 << 20) + 1, "small"]


def _versioned_bucket(srv, prefix="vraw"):
    bucket = unique_bucket(prefix)
    assert signed_request(srv, "PUT", f"/{bucket}").status == 200
    body = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<Status>Enabled</Status></VersioningConfiguration>")
    r = signed_request(srv, "PUT", f"/{bucket}", query=[("versioning", "")], body=body)
    assert r.status == 200, r.body
    return bucket


def test_delete_marker_headers(erasure_server):
    """404 for a key whose latest version is a delete marker (with the marker's headers), 405
    MethodNotAllowed with Allow: DELETE for the marker's own version id, as AWS documents."""
    srv = erasure_server
    bucket = _versioned_bucket(srv)
    r = signed_request(srv, "PUT", f"/{bucket}/k", body=b"data")
    vid = r.header("x-amz-version-id")
    assert r.status == 200 and vid and vid != "null"
    r = signed_request(srv, "DELETE", f"/{bucket}/k")
    assert r.status == 204 and r.header("x-amz-delete-marker") == "true"
    marker = r.header("x-amz-version-id")
    assert marker and marker != vid
    r = signed_request(srv, "GET", f"/{bucket}/k")
    assert_s3_error(r.status, r.headers, r.body, "NoSuchKey", 404)
    assert r.header("x-amz-delete-marker") == "true" and r.header("x-amz-version-id") == marker
    for method in ("GET", "HEAD"):
        r = signed_request(srv, method, f"/{bucket}/k", query=[("versionId", marker)])
        assert r.status == 405, (method, r.status)
        assert r.header("x-amz-delete-marker") == "true"
        assert r.header("x-amz-version-id") == marker
        assert r.header("allow") == "DELETE"
    assert_s3_error(r.status, r.headers, signed_request(
        srv, "GET", f"/{bucket}/k", query=[("versionId", marker)]).body, "MethodNotAllowed", 405)
    r = signed_request(srv, "GET", f"/{bucket}/k", query=[("versionId", vid)])
    assert r.status == 200 and r.body == b"data" and r.header("x-amz-version-id") == vid
    r = signed_request(srv, "GET", f"/{bucket}/k", query=[("versionId", "../../etc")])
    assert_s3_error(r.status, r.headers, r.body, "InvalidArgument", 400, "Invalid version id")
    # Removing the marker by id brings the object back.
    r = signed_request(srv, "DELETE", f"/{bucket}/k", query=[("versionId", marker)])
    assert r.status == 204 and r.header("x-amz-delete-marker") == "true"
    assert signed_request(srv, "GET", f"/{bucket}/k").body == b"data"


def test_versioning_xml_errors(erasure_server):
    srv = erasure_server
    bucket = _versioned_bucket(srv)
    for body in (b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>",
                 b"<Nope/>", b"not xml"):
        r = signed_request(srv, "PUT", f"/{bucket}", query=[("versioning", "")], body=body)
        assert_s3_error(r.status, r.headers, r.body, "MalformedXML", 400)
    mfa = (b"<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete>"
           b"</VersioningConfiguration>")
    r = signed_request(srv, "PUT", f"/{bucket}", query=[("versioning", "")], body=mfa,
                       headers={"x-amz-mfa": "123456 654321"})
    assert_s3_error(r.status, r.headers, r.body, "NotImplemented", 501)
    r = signed_request(srv, "GET", f"/{bucket}", query=[("versioning", "")])
    assert r.status == 200 and b"<Status>Enabled</Status>" in r.body


def test_awscli_versions(erasure_server, tmp_path):
    srv = erasure_server
    aws = AwsCli(srv, str(tmp_path))
    bucket = unique_bucket("vcli")
    aws.api("create-bucket", "--bucket", bucket)
    aws("s3api", "put-bucket-versioning", "--bucket", bucket,
        "--versioning-configuration", "Status=Enabled")
    assert aws.api("get-bucket-versioning", "--bucket", bucket)["Status"] == "Enabled"
    f = tmp_path / "body"
    ids = []
    for text in (b"first", b"second"):
        f.write_bytes(text)
        ids.append(aws.api("put-object", "--bucket", bucket, "--key", "obj",
                           "--body", str(f))["VersionId"])
    listed = aws.api("list-object-versions", "--bucket", bucket)
    assert [v["VersionId"] for v in listed["Versions"]] == ids[::-1]
    out = tmp_path / "out"
    got = aws.api("get-object", "--bucket", bucket, "--key", "obj", "--version-id", ids[0],
                  str(out))
    assert out.read_bytes() == b"first" and got["VersionId"] == ids[0]
    gone = aws.api("delete-object", "--bucket", bucket, "--key", "obj", "--version-id", ids[1])
    assert gone["VersionId"] == ids[1]
    listed = aws.api("list-object-versions", "--bucket", bucket)
    assert [v["VersionId"] for v in listed["Versions"]] == [ids[0]]


def _meta(d, bucket, key):
    with open(os.path.join(d, bucket, key, ".rdmastor.meta")) as f:
        return json.load(f)


def test_lost_drive_heals_every_version(server_factory, tmp_path):
    """A drive wiped and replaced gets every version back (data, inline shards, delete markers)
    from a heal; each version then reads with the two other drives gone."""
    dirs = [str(tmp_path / f"d{i}") for i in range(4)]
    srv = server_factory(data_dirs=dirs, env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
    bucket = _versioned_bucket(srv, "vheal")
    bodies = {}
    for i, size in enumerate((1000, 3 * MiB + 5, 200)):
        data = seeded_bytes(size, seed=40 + i)
        r = signed_request(srv, "PUT", f"/{bucket}/obj", body=data)
        assert r.status == 200
        bodies[r.header("x-amz-version-id")] = data
    marker = signed_request(srv, "DELETE", f"/{bucket}/obj").header("x-amz-version-id")
    want = _meta(dirs[1], bucket, "obj")
    assert len(want["versions"]) == 4
    srv.kill()
    shutil.rmtree(dirs[0])
    os.makedirs(dirs[0])
    srv.start(port=srv.port)
    res = admin_heal(srv)
    assert res.returncode == 0 and res.counts["failed"] == 0, res
    got = _meta(dirs[0], bucket, "obj")
    assert [v.get("version_id") for v in got["versions"]] == \
        [v.get("version_id") for v in want["versions"]]
    assert got["versions"][0].get("delete_marker") is True
    for v in got["versions"]:
        if v["data_dir"]:
            assert v["erasure"]["inline"] or os.path.isdir(
                os.path.join(dirs[0], bucket, "obj", v["data_dir"])), v
    # Only the healed drive and one more: every version must read from them.
    srv.kill()
    for d in dirs[2:]:
        shutil.rmtree(d)
        os.makedirs(d)
    srv.start(port=srv.port)
    for vid, data in bodies.items():
        r = signed_request(srv, "GET", f"/{bucket}/obj", query=[("versionId", vid)])
        assert r.status == 200 and r.body == data, (vid, r.status)
    r = signed_request(srv, "HEAD", f"/{bucket}/obj", query=[("versionId", marker)])
    assert r.status == 405


def test_kill_during_versioned_put_keeps_old_versions(server_factory, tmp_path):
    """kill -9 in the middle of a versioned PUT: after a restart the old versions are intact and
    listed, the interrupted one is not, and no stray data is left once healed."""
    dirs = [str(tmp_path / f"d{i}") for i in range(4)]
    srv = server_factory(data_dirs=dirs, env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
    bucket = _versioned_bucket(srv, "vcrash")
    old = {}
    for i, size in enumerate((5000, 4 * MiB + 3)):
        data = seeded_bytes(size, seed=60 + i)
        r = signed_request(srv, "PUT", f"/{bucket}/obj", body=data)
        assert r.status == 200
        old[r.header("x-amz-version-id")] = data
    put = PartialPut(srv, f"/{bucket}/obj", 64 * MiB, seed=70)
    try:
        put.send_until(32 * MiB)
        time.sleep(0.3)  # let the server encode what was sent
        srv.kill()
    finally:
        put.close()
    srv.start(port=srv.port)
    client = make_client(srv)
    listed = client.list_object_versions(Bucket=bucket)
    assert sorted(v["VersionId"] for v in listed["Versions"]) == sorted(old)
    for vid, data in old.items():
        got = client.get_object(Bucket=bucket, Key="obj", VersionId=vid)["Body"].read()
        assert got == data, vid
    res = admin_heal(srv)
    assert res.returncode == 0 and res.counts["failed"] == 0, res
    for d in dirs:
        assert glob.glob(os.path.join(d, ".rdmastor.sys", "tmp", "*")) == [], d
        named = {v["data_dir"] for v in _meta(d, bucket, "obj")["versions"]}
        on_disk = {os.path.basename(p) for p in
                   glob.glob(os.path.join(d, bucket, "obj", ".rdmastor.data.*"))}
        assert on_disk <= named, (d, on_disk - named)
