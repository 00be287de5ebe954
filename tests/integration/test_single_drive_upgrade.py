"""Upgrading a single-drive server (issue 13): one drive is now a one-drive erasure set, and a drive
written by the retired single-drive layout (golden/single_drive_v1.tar.gz, made by that server;
see golden/make_single_drive_v1.py) is converted in place on the first start. Every object, its
metadata, tags, the bucket records and a multipart upload in progress must read back through S3,
before and after a restart, and the drive must be in the erasure layout afterwards."""
import glob
import hashlib
import json
import os
import tarfile

from single_drive_fixture import FIXTURE, body_of

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                      "single_drive_v1.tar.gz")
CONVERTING = "holds the single-drive layout of an earlier version"


def _expected(o):
    if o.get("parts"):
        bodies = [body_of(o["key"] + str(i), s) for i, s in enumerate(o["parts"], 1)]
        md5s = b"".join(hashlib.md5(b).digest() for b in bodies)
        return b"".join(bodies), f'"{hashlib.md5(md5s).hexdigest()}-{len(bodies)}"'
    body = body_of(o["key"], o["size"])
    return body, f'"{hashlib.md5(body).hexdigest()}"'


def _check_everything(c):
    names = {b["Name"] for b in c.list_buckets()["Buckets"]}
    assert set(FIXTURE["buckets"]) <= names, names
    tags = c.get_bucket_tagging(Bucket=FIXTURE["tagged_bucket"])["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == FIXTURE["bucket_tags"]
    listed = {o["Key"]: o for o in c.list_objects_v2(Bucket="legacy").get("Contents", [])}
    for o in FIXTURE["objects"]:
        body, etag = _expected(o)
        r = c.get_object(Bucket=o["bucket"], Key=o["key"])
        got = r["Body"].read()
        assert len(got) == len(body) and got == body, o["key"]
        assert r["ETag"] == etag, (o["key"], r["ETag"], etag)
        assert listed[o["key"]]["Size"] == len(body) and listed[o["key"]]["ETag"] == etag
        if o.get("content_type"):
            assert r["ContentType"] == o["content_type"], o["key"]
        if o.get("metadata"):
            assert r["Metadata"] == o["metadata"], o["key"]
        if o.get("tags"):
            ts = c.get_object_tagging(Bucket=o["bucket"], Key=o["key"])["TagSet"]
            assert {t["Key"]: t["Value"] for t in ts} == o["tags"], o["key"]
    # A range across a stripe boundary of a multi-stripe object.
    big = next(o for o in FIXTURE["objects"] if o["key"] == "dir/nested/stripes.bin")
    body, _ = _expected(big)
    lo, hi = (1 << 20) - 5, (1 << 20) + 9
    r = c.get_object(Bucket="legacy", Key=big["key"], Range=f"bytes={lo}-{hi}")
    assert r["Body"].read() == body[lo:hi + 1]
    assert c.list_objects_v2(Bucket="legacy-empty").get("KeyCount") == 0


def test_single_drive_layout_is_converted_on_first_start(server_factory, tmp_path):
    with tarfile.open(GOLDEN) as t:
        t.extractall(tmp_path)
    drive = str(tmp_path / "drive")
    assert not os.path.exists(os.path.join(drive, ".rdmastor.sys", "format.json"))
    srv = server_factory(data_dirs=[drive])
    c = srv.client()
    _check_everything(c)
    assert srv.log_text().count(CONVERTING) == 1, srv.log_tail()

    # The drive is in the erasure layout now: a format file, every metadata file with an
    # erasure block, no plain data left behind in the staging area.
    assert os.path.isfile(os.path.join(drive, ".rdmastor.sys", "format.json"))
    metas = glob.glob(os.path.join(drive, "legacy", "**", ".rdmastor.meta"), recursive=True)
    metas += glob.glob(os.path.join(drive, "legacy", "**", ".rdmastor.dirmeta"), recursive=True)
    assert len(metas) == len(FIXTURE["objects"]), metas
    for m in metas:
        with open(m) as f:
            e = json.load(f)["erasure"]
        assert (e["data"], e["parity"]) == (1, 0), m
    assert os.listdir(os.path.join(drive, ".rdmastor.sys", "tmp")) == []

    # The upload that was in progress completes with its old parts.
    p = FIXTURE["pending"]
    ups = c.list_multipart_uploads(Bucket=p["bucket"]).get("Uploads", [])
    assert [u["Key"] for u in ups] == [p["key"]], ups
    upload_id = ups[0]["UploadId"]
    parts = c.list_parts(Bucket=p["bucket"], Key=p["key"], UploadId=upload_id)["Parts"]
    assert [(x["PartNumber"], x["Size"]) for x in parts] == list(enumerate(p["parts"], 1))
    c.complete_multipart_upload(
        Bucket=p["bucket"], Key=p["key"], UploadId=upload_id,
        MultipartUpload={"Parts": [{"PartNumber": x["PartNumber"], "ETag": x["ETag"]}
                                   for x in parts]})
    want = b"".join(body_of(p["key"] + str(i), s) for i, s in enumerate(p["parts"], 1))
    assert c.get_object(Bucket=p["bucket"], Key=p["key"])["Body"].read() == want

    # Old objects are ordinary objects now: overwrite, delete, write new ones.
    c.put_object(Bucket="legacy", Key="small.txt", Body=b"replaced")
    c.delete_object(Bucket="legacy", Key="empty")
    c.put_object(Bucket="legacy-empty", Key="new", Body=b"x" * 300000)

    # A restart finds a formatted drive: no second conversion, everything still there.
    srv.restart()
    c = srv.client()
    assert srv.log_text().count(CONVERTING) == 1, srv.log_tail()
    assert c.get_object(Bucket="legacy", Key="small.txt")["Body"].read() == b"replaced"
    assert c.get_object(Bucket=p["bucket"], Key=p["key"])["Body"].read() == want
    assert c.get_object(Bucket="legacy-empty", Key="new")["Body"].read() == b"x" * 300000
    keys = {o["Key"] for o in c.list_objects_v2(Bucket="legacy")["Contents"]}
    assert "empty" not in keys and "mp.bin" in keys and "dir/" in keys
    big = next(o for o in FIXTURE["objects"] if o["key"] == "mp.bin")
    assert c.get_object(Bucket="legacy", Key="mp.bin")["Body"].read() == _expected(big)[0]


def test_half_converted_drive_resumes(server_factory, tmp_path):
    """A conversion cut short (some objects and part files converted, no format file yet) resumes
    on the next start: converted objects are skipped, the rest converted, nothing read wrong."""
    with tarfile.open(GOLDEN) as t:
        t.extractall(tmp_path / "a")
        t.extractall(tmp_path / "b")
    # Drive a: converted by a first server. Drive b: still plain. Move a's converted copy of
    # some objects and of the pending upload into b, as a conversion stopped midway leaves them.
    srv = server_factory(data_dirs=[str(tmp_path / "a" / "drive")])
    srv.stop()
    a, b = tmp_path / "a" / "drive", tmp_path / "b" / "drive"
    import shutil
    for rel in ["legacy/small.txt", "legacy/mp.bin", ".rdmastor.sys/multipart"]:
        shutil.rmtree(b / rel)
        shutil.copytree(a / rel, b / rel)
    srv2 = server_factory(data_dirs=[str(b)])
    c = srv2.client()
    _check_everything(c)
    p = FIXTURE["pending"]
    up = c.list_multipart_uploads(Bucket=p["bucket"])["Uploads"][0]["UploadId"]
    parts = c.list_parts(Bucket=p["bucket"], Key=p["key"], UploadId=up)["Parts"]
    c.complete_multipart_upload(
        Bucket=p["bucket"], Key=p["key"], UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": x["PartNumber"], "ETag": x["ETag"]}
                                   for x in parts]})
    want = b"".join(body_of(p["key"] + str(i), s) for i, s in enumerate(p["parts"], 1))
    assert c.get_object(Bucket=p["bucket"], Key=p["key"])["Body"].read() == want
