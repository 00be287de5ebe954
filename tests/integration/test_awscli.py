"""aws CLI (Debian's /usr/bin/aws) against a real rdmastor server: `aws s3` and `aws s3api`."""

import hashlib
import json
import os

import pytest

from conftest import empty_and_delete_bucket, file_md5, unique_bucket, write_file

MiB = 1 << 20


def _upload_tree(aws, tmp_path, bucket, keys):
    """Create small files named like keys and upload them all with one CLI call."""
    tree = tmp_path / "upload-tree"
    for k in keys:
        p = tree / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    aws("s3", "cp", "--recursive", str(tree), f"s3://{bucket}/")


@pytest.fixture
def cli_bucket(s3):
    """Made and removed with boto3: the aws CLI takes seconds per call, so it is kept for the
    operations under test."""
    name = unique_bucket("cli")
    s3.create_bucket(Bucket=name)
    yield name
    empty_and_delete_bucket(s3, name)


def test_mb_ls_rb(aws):
    name = unique_bucket("cli")
    res = aws("s3", "mb", f"s3://{name}")
    assert f"make_bucket: {name}" in res.stdout
    assert name in aws("s3", "ls").stdout
    res = aws("s3", "rb", f"s3://{name}")
    assert f"remove_bucket: {name}" in res.stdout
    assert name not in aws("s3", "ls").stdout


def test_mb_existing_bucket(aws, cli_bucket):
    # The owner's own bucket in us-east-1: AWS's legacy 200; elsewhere BucketAlreadyOwnedByYou.
    assert aws("s3", "mb", f"s3://{cli_bucket}").returncode == 0
    res = aws("s3", "mb", f"s3://{cli_bucket}", "--region", "eu-west-1", check=False)
    assert res.returncode != 0 and "BucketAlreadyOwnedByYou" in res.stderr, res


def test_cp_small_roundtrip(aws, cli_bucket, tmp_path):
    src = tmp_path / "small.bin"
    md5 = write_file(src, 12345, seed=1)
    aws("s3", "cp", str(src), f"s3://{cli_bucket}/dir/small.bin")
    ls = aws("s3", "ls", f"s3://{cli_bucket}/dir/").stdout
    assert "small.bin" in ls and "12345" in ls, ls
    dst = tmp_path / "back.bin"
    aws("s3", "cp", f"s3://{cli_bucket}/dir/small.bin", str(dst))
    assert file_md5(dst) == md5


def test_cp_20mib_multipart(aws, cli_bucket, tmp_path):
    src = tmp_path / "big.bin"
    md5 = write_file(src, 20 * MiB, seed=2)
    aws("s3", "cp", str(src), f"s3://{cli_bucket}/big.bin", timeout=300)
    head = aws.api("head-object", "--bucket", cli_bucket, "--key", "big.bin")
    assert head["ContentLength"] == 20 * MiB
    # aws s3 cp uses 8 MiB parts above an 8 MiB threshold: 3 parts.
    assert head["ETag"].strip('"').endswith("-3"), head["ETag"]
    dst = tmp_path / "big.back"
    aws("s3", "cp", f"s3://{cli_bucket}/big.bin", str(dst), timeout=300)
    assert file_md5(dst) == md5


def test_cp_recursive_tree_and_rm(aws, s3, cli_bucket, tmp_path):
    tree = tmp_path / "tree"
    files = {"a.txt": 10, "sub/b.bin": 2000, "sub/deeper/c.bin": 70000, "sub/deeper/d": 0,
             "other/e f.txt": 5}
    md5s = {}
    for rel, size in files.items():
        p = tree / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        md5s[rel] = write_file(p, size, seed=len(rel))
    aws("s3", "cp", "--recursive", str(tree), f"s3://{cli_bucket}/t/")
    listing = aws.api("list-objects-v2", "--bucket", cli_bucket, "--prefix", "t/")
    keys = sorted(o["Key"] for o in listing["Contents"])
    assert keys == sorted("t/" + k for k in files)
    out = tmp_path / "out"
    aws("s3", "cp", "--recursive", f"s3://{cli_bucket}/t/", str(out))
    for rel in files:
        assert file_md5(out / rel) == md5s[rel], rel
    ls = aws("s3", "ls", "--recursive", f"s3://{cli_bucket}/t/").stdout
    assert len([line for line in ls.splitlines() if line.strip()]) == len(files)
    aws("s3", "rm", f"s3://{cli_bucket}/t/a.txt")
    aws("s3", "rm", "--recursive", f"s3://{cli_bucket}/t/sub/")
    listing = s3.list_objects_v2(Bucket=cli_bucket)
    assert sorted(o["Key"] for o in listing.get("Contents", [])) == ["t/other/e f.txt"]


def test_rb_force(aws, s3, tmp_path):
    name = unique_bucket("cli")
    aws("s3", "mb", f"s3://{name}")
    _upload_tree(aws, tmp_path, name, ["k0", "k1", "k2"])
    res = aws("s3", "rb", f"s3://{name}", check=False)
    assert res.returncode != 0 and "BucketNotEmpty" in res.stderr, res
    aws("s3", "rb", f"s3://{name}", "--force")
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_s3api_put_get_head_metadata(aws, cli_bucket, tmp_path):
    body = tmp_path / "body.json"
    body.write_bytes(b'{"hello": "world"}')
    put = aws.api("put-object", "--bucket", cli_bucket, "--key", "meta/obj.json",
                  "--body", str(body), "--content-type", "application/json",
                  "--metadata", "owner=alice,project=rdma")
    assert put["ETag"] == '"%s"' % hashlib.md5(body.read_bytes()).hexdigest()
    head = aws.api("head-object", "--bucket", cli_bucket, "--key", "meta/obj.json")
    assert head["ContentType"] == "application/json"
    assert head["ContentLength"] == len(body.read_bytes())
    assert head["Metadata"] == {"owner": "alice", "project": "rdma"}
    assert head["ETag"] == put["ETag"]
    out = tmp_path / "out.json"
    got = aws.api("get-object", "--bucket", cli_bucket, "--key", "meta/obj.json", str(out))
    assert got["Metadata"] == {"owner": "alice", "project": "rdma"}
    assert got["ContentType"] == "application/json"
    assert out.read_bytes() == body.read_bytes()
    res = aws("s3api", "head-object", "--bucket", cli_bucket, "--key", "nope", check=False)
    assert res.returncode != 0
    assert "404" in res.stderr or "Not Found" in res.stderr, res


def test_s3api_list_objects_v2_prefix_delimiter(aws, cli_bucket, tmp_path):
    keys = ["photos/2023/a.jpg", "photos/2023/b.jpg", "photos/2024/c.jpg", "photos/top.jpg",
            "docs/readme.md", "root.txt"]
    _upload_tree(aws, tmp_path, cli_bucket, keys)
    res = aws.api("list-objects-v2", "--bucket", cli_bucket, "--delimiter", "/")
    assert [o["Key"] for o in res["Contents"]] == ["root.txt"]
    assert [p["Prefix"] for p in res["CommonPrefixes"]] == ["docs/", "photos/"]
    res = aws.api("list-objects-v2", "--bucket", cli_bucket, "--prefix", "photos/",
                  "--delimiter", "/")
    assert [o["Key"] for o in res["Contents"]] == ["photos/top.jpg"]
    assert [p["Prefix"] for p in res["CommonPrefixes"]] == ["photos/2023/", "photos/2024/"]
    res = aws.api("list-objects-v2", "--bucket", cli_bucket, "--prefix", "photos/2023/")
    assert [o["Key"] for o in res["Contents"]] == ["photos/2023/a.jpg", "photos/2023/b.jpg"]
    # the CLI paginates by itself with a small page size
    res = aws.api("list-objects-v2", "--bucket", cli_bucket, "--page-size", "2")
    assert [o["Key"] for o in res["Contents"]] == sorted(keys)


def test_s3api_multipart_full_cycle(aws, s3, cli_bucket, tmp_path):
    key = "mp/object.bin"
    up = aws.api("create-multipart-upload", "--bucket", cli_bucket, "--key", key,
                 "--content-type", "application/x-test")
    upload_id = up["UploadId"]
    assert upload_id
    listed = aws.api("list-multipart-uploads", "--bucket", cli_bucket)
    assert any(u["UploadId"] == upload_id and u["Key"] == key for u in listed.get("Uploads", []))

    sizes = [5 * MiB, 5 * MiB, 1234]
    parts, whole = [], hashlib.md5()
    md5s = []
    for n, size in enumerate(sizes, start=1):
        p = tmp_path / f"part{n}"
        md5s.append(write_file(p, size, seed=100 + n))
        whole.update(p.read_bytes())
        res = aws.api("upload-part", "--bucket", cli_bucket, "--key", key, "--upload-id",
                      upload_id, "--part-number", str(n), "--body", str(p))
        assert res["ETag"] == f'"{md5s[-1]}"'
        parts.append({"ETag": res["ETag"], "PartNumber": n})

    lp = aws.api("list-parts", "--bucket", cli_bucket, "--key", key, "--upload-id", upload_id)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in lp["Parts"]] == \
        [(i + 1, s, f'"{m}"') for i, (s, m) in enumerate(zip(sizes, md5s))]

    mpu = tmp_path / "mpu.json"
    mpu.write_text(json.dumps({"Parts": parts}))
    done = aws.api("complete-multipart-upload", "--bucket", cli_bucket, "--key", key,
                   "--upload-id", upload_id, "--multipart-upload", f"file://{mpu}")
    expected_etag = hashlib.md5(b"".join(bytes.fromhex(m) for m in md5s)).hexdigest() + "-3"
    assert done["ETag"] == f'"{expected_etag}"'
    assert done["Key"] == key

    head = s3.head_object(Bucket=cli_bucket, Key=key)
    assert head["ContentLength"] == sum(sizes)
    assert head["ContentType"] == "application/x-test"
    got = s3.get_object(Bucket=cli_bucket, Key=key)["Body"].read()
    assert hashlib.md5(got).hexdigest() == whole.hexdigest()
    listed = s3.list_multipart_uploads(Bucket=cli_bucket)
    assert not any(u["UploadId"] == upload_id for u in listed.get("Uploads", []))


def test_s3api_abort_multipart(aws, s3, cli_bucket, tmp_path):
    key = "mp/aborted"
    upload_id = aws.api("create-multipart-upload", "--bucket", cli_bucket, "--key", key)["UploadId"]
    p = tmp_path / "p"
    write_file(p, 1000)
    aws.api("upload-part", "--bucket", cli_bucket, "--key", key, "--upload-id", upload_id,
            "--part-number", "1", "--body", str(p))
    aws("s3api", "abort-multipart-upload", "--bucket", cli_bucket, "--key", key,
        "--upload-id", upload_id)
    res = aws("s3api", "list-parts", "--bucket", cli_bucket, "--key", key, "--upload-id",
              upload_id, check=False)
    assert res.returncode != 0 and "NoSuchUpload" in res.stderr, res
    assert not s3.list_multipart_uploads(Bucket=cli_bucket).get("Uploads")
    assert s3.list_objects_v2(Bucket=cli_bucket)["KeyCount"] == 0


def test_s3api_copy_object(aws, s3, cli_bucket, tmp_path):
    src = tmp_path / "src"
    md5 = write_file(src, 4096, seed=9)
    aws.api("put-object", "--bucket", cli_bucket, "--key", "orig", "--body", str(src),
            "--metadata", "k=v")
    other = unique_bucket("cli")
    s3.create_bucket(Bucket=other)
    try:
        res = aws.api("copy-object", "--bucket", other, "--key", "copy",
                      "--copy-source", f"{cli_bucket}/orig")
        assert res["CopyObjectResult"]["ETag"] == f'"{md5}"'
        head = s3.head_object(Bucket=other, Key="copy")
        assert head["Metadata"] == {"k": "v"}
        assert head["ContentLength"] == 4096
        assert hashlib.md5(s3.get_object(Bucket=other, Key="copy")["Body"].read()).hexdigest() == md5
    finally:
        empty_and_delete_bucket(s3, other)


def test_s3api_delete_objects(aws, s3, cli_bucket, tmp_path):
    _upload_tree(aws, tmp_path, cli_bucket, ["d1", "d2", "d3", "keep"])
    spec = {"Objects": [{"Key": "d1"}, {"Key": "d2"}, {"Key": "d3"}, {"Key": "never-existed"}],
            "Quiet": False}
    res = aws.api("delete-objects", "--bucket", cli_bucket, "--delete", json.dumps(spec))
    assert sorted(d["Key"] for d in res["Deleted"]) == ["d1", "d2", "d3", "never-existed"]
    assert not res.get("Errors")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=cli_bucket)["Contents"]] == ["keep"]


def test_s3api_bucket_location_head_and_list(aws, cli_bucket):
    res = aws.api("get-bucket-location", "--bucket", cli_bucket)
    # us-east-1 is reported as an empty LocationConstraint (null) by S3; MinIO may say us-east-1
    assert res.get("LocationConstraint") in (None, "", "us-east-1"), res
    aws("s3api", "head-bucket", "--bucket", cli_bucket)
    names = [b["Name"] for b in aws.api("list-buckets")["Buckets"]]
    assert cli_bucket in names
    res = aws("s3api", "head-bucket", "--bucket", unique_bucket("missing"), check=False)
    assert res.returncode != 0 and "404" in res.stderr, res
