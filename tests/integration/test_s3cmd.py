"""s3cmd (Debian's /usr/bin/s3cmd, SigV4, path style) against a real rdmastor server."""

import pytest

from conftest import file_md5, unique_bucket, write_file

MiB = 1 << 20


@pytest.fixture
def sc_bucket(s3cmd):
    name = unique_bucket("sc")
    res = s3cmd("mb", f"s3://{name}")
    assert f"Bucket 's3://{name}/' created" in res.stdout, res
    yield name
    s3cmd("rb", "--recursive", "--force", f"s3://{name}", check=False)


def test_mb_ls_rb(s3cmd):
    name = unique_bucket("sc")
    s3cmd("mb", f"s3://{name}")
    assert f"s3://{name}" in s3cmd("ls").stdout
    res = s3cmd("rb", f"s3://{name}")
    assert f"Bucket 's3://{name}/' removed" in res.stdout, res
    assert f"s3://{name}" not in s3cmd("ls").stdout


def test_put_ls_get_del(s3cmd, sc_bucket, tmp_path):
    files = {"one.bin": 1, "kilo.bin": 1024, "odd size.bin": 123457, "empty.bin": 0}
    md5s = {}
    for name, size in files.items():
        p = tmp_path / name
        md5s[name] = write_file(p, size, seed=size)
        s3cmd("put", str(p), f"s3://{sc_bucket}/dir/{name}")
    ls = s3cmd("ls", f"s3://{sc_bucket}/dir/").stdout
    for name, size in files.items():
        line = next((l for l in ls.splitlines() if l.endswith(f"s3://{sc_bucket}/dir/{name}")), None)
        assert line is not None, ls
        assert str(size) in line.split(), line
    top = s3cmd("ls", f"s3://{sc_bucket}").stdout
    assert "DIR" in top and f"s3://{sc_bucket}/dir/" in top, top
    for name in files:
        out = tmp_path / f"got-{name}"
        s3cmd("get", f"s3://{sc_bucket}/dir/{name}", str(out))
        assert file_md5(out) == md5s[name], name
    info = s3cmd("info", f"s3://{sc_bucket}/dir/kilo.bin").stdout
    assert md5s["kilo.bin"] in info, info
    for name in files:
        res = s3cmd("del", f"s3://{sc_bucket}/dir/{name}")
        assert "delete:" in res.stdout, res
    assert s3cmd("ls", f"s3://{sc_bucket}/dir/").stdout.strip() == ""


def test_get_missing_object_fails(s3cmd, sc_bucket, tmp_path):
    res = s3cmd("get", f"s3://{sc_bucket}/nope", str(tmp_path / "x"), check=False)
    assert res.returncode != 0
    err = res.stderr.lower()
    assert "404" in err or "nosuchkey" in err or "not found" in err or "does not exist" in err, res


def test_put_20mib_multipart(s3cmd, s3, sc_bucket, tmp_path):
    src = tmp_path / "big.bin"
    md5 = write_file(src, 20 * MiB, seed=20)
    s3cmd("put", str(src), f"s3://{sc_bucket}/big.bin", timeout=300)
    # 15 MiB chunks: two parts, so a multipart ETag
    etag = s3.head_object(Bucket=sc_bucket, Key="big.bin")["ETag"]
    assert etag.strip('"').endswith("-2"), etag
    out = tmp_path / "big.back"
    s3cmd("get", f"s3://{sc_bucket}/big.bin", str(out), timeout=300)
    assert file_md5(out) == md5
    ls = s3cmd("ls", f"s3://{sc_bucket}/big.bin").stdout
    assert str(20 * MiB) in ls, ls


def test_sync_and_recursive_del(s3cmd, sc_bucket, tmp_path):
    tree = tmp_path / "tree"
    for rel, size in {"a": 3, "b/c": 300, "b/d/e": 3000}.items():
        p = tree / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        write_file(p, size, seed=size)
    s3cmd("sync", str(tree) + "/", f"s3://{sc_bucket}/t/")
    ls = s3cmd("ls", "--recursive", f"s3://{sc_bucket}/t/").stdout
    assert sorted(l.split()[-1] for l in ls.splitlines() if l.strip()) == \
        [f"s3://{sc_bucket}/t/{k}" for k in ("a", "b/c", "b/d/e")]
    # a second sync uploads nothing (ETags match)
    res = s3cmd("sync", str(tree) + "/", f"s3://{sc_bucket}/t/")
    assert "upload:" not in res.stdout, res
    s3cmd("del", "--recursive", "--force", f"s3://{sc_bucket}/t/")
    assert s3cmd("ls", "--recursive", f"s3://{sc_bucket}").stdout.strip() == ""


def test_rb_nonempty_fails(s3cmd, sc_bucket, tmp_path):
    p = tmp_path / "x"
    write_file(p, 10)
    s3cmd("put", str(p), f"s3://{sc_bucket}/x")
    res = s3cmd("rb", f"s3://{sc_bucket}", check=False)
    assert res.returncode != 0
    assert "BucketNotEmpty" in res.stderr or "not empty" in res.stderr.lower(), res
