"""rdmastor-cli's S3 commands against the real server over HTTP: listings read as XML (keys with
XML's special characters, prefixes that need percent-encoding, more than one page of keys)."""

import concurrent.futures
import os

import pytest

from test_rdma_cli import CLI, cli


@pytest.fixture(autouse=True)
def _built():
    if not os.path.exists(CLI):
        pytest.fail(f"{CLI} is not built")


def test_ls_prints_keys_as_stored(server):
    # Before pugixml the CLI printed the XML text: a&amp;b &lt;c&gt;.txt
    s3 = server.client()
    s3.create_bucket(Bucket="cli-xml")
    keys = {"a&b <c>.txt", "quote\"'s.txt", "plus+and%25.txt", "unicode-é.txt"}
    for k in keys:
        s3.put_object(Bucket="cli-xml", Key=k, Body=b"x")
    rc, out, err = cli(server, "ls", "cli-xml")
    assert rc == 0, err
    assert sorted(out.splitlines()) == sorted(keys)
    rc, out, err = cli(server, "ls")
    assert rc == 0 and "cli-xml" in out.splitlines(), err


def test_ls_prefix_with_space(server):
    # Before: the prefix went unencoded into the query and the request failed.
    s3 = server.client()
    s3.create_bucket(Bucket="cli-space")
    for k in ("dir one/x", "dir one/y z", "dir two/x", "dir+one/x"):
        s3.put_object(Bucket="cli-space", Key=k, Body=b"x")
    rc, out, err = cli(server, "ls", "cli-space/dir one/")
    assert rc == 0, err
    assert out.splitlines() == ["dir one/x", "dir one/y z"]
    rc, out, err = cli(server, "ls", "cli-space/dir+one")
    assert rc == 0 and out.splitlines() == ["dir+one/x"], err


def test_ls_follows_continuation_past_1000_keys(server):
    # Before: the CLI printed the first page (1,000 keys) and stopped.
    s3 = server.client()
    s3.create_bucket(Bucket="cli-many")
    keys = [f"k/{i:05d}" for i in range(1001)]
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket="cli-many", Key=k, Body=b""), keys))
    rc, out, err = cli(server, "ls", "cli-many/k/")
    assert rc == 0, err
    assert out.splitlines() == keys
