"""rdmastor-cli's S3 commands against the real server over HTTP: listings read as XML (keys with
XML's special characters, prefixes that need percent-encoding, more than one page of keys)."""

import concurrent.futures
import json
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


def test_json_output_of_every_command(server, tmp_path):
    # --json (issue 33 item 10): one JSON object on stdout per command, errors included.
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789" * 1000)
    rc, out, err = cli(server, "--json", "mb", "cli-json")
    assert rc == 0 and json.loads(out) == {"status": "success", "command": "mb",
                                           "bucket": "cli-json"}, (out, err)
    rc, out, err = cli(server, "--json", "put", "cli-json/d/a&b.bin", str(src))
    doc = json.loads(out)
    assert rc == 0 and doc["status"] == "success" and doc["command"] == "put", (out, err)
    assert doc["bytes"] == 10000 and doc["transport"] == "http" and doc["key"] == "d/a&b.bin", doc
    rc, out, err = cli(server, "ls", "cli-json/d/", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["status"] == "success" and doc["bucket"] == "cli-json", (out, err)
    [obj] = doc["objects"]
    etag = server.client().head_object(Bucket="cli-json", Key="d/a&b.bin")["ETag"]
    assert obj["key"] == "d/a&b.bin" and obj["size"] == 10000 and obj["etag"] == etag, obj
    assert obj["storageClass"] == "STANDARD" and obj["lastModified"].endswith("Z"), obj
    rc, out, err = cli(server, "--json", "ls")
    assert rc == 0 and "cli-json" in [b["name"] for b in json.loads(out)["buckets"]], out
    rc, out, err = cli(server, "--json", "get", "cli-json/d/a&b.bin", str(tmp_path / "dst.bin"))
    doc = json.loads(out)
    assert rc == 0 and doc["command"] == "get" and doc["bytes"] == 10000, (out, err)
    assert (tmp_path / "dst.bin").read_bytes() == src.read_bytes()
    rc, out, err = cli(server, "--json", "ls", "cli-nosuch-bucket")
    doc = json.loads(out)
    assert rc == 1 and doc["status"] == "error" and doc["command"] == "ls", (out, err)
    assert "NoSuchBucket" in doc["error"], doc
    rc, out, err = cli(server, "--json", "rm", "cli-json/d/a&b.bin")
    assert rc == 0 and json.loads(out)["status"] == "success", (out, err)
    rc, out, err = cli(server, "--json", "rm", "cli-json")
    assert rc == 0 and json.loads(out) == {"status": "success", "command": "rm",
                                           "bucket": "cli-json", "key": ""}, (out, err)


@pytest.mark.parametrize("args,line", [
    (["put", "b/k"], "put BUCKET/KEY FILE"),
    (["get", "b"], "get BUCKET/KEY FILE"),
    (["mb"], "mb BUCKET"),
    (["--fabric", "ib", "ls"], "--fabric soft|verbs"),
])
def test_usage_error_prints_the_one_relevant_line(server, args, line):
    rc, out, err = cli(server, *args)
    assert rc == 2 and out == "", (out, err)
    assert line in err, err
    # Only that command's (or flag's) line: no other command, not the whole help.
    others = [c for c in ("mb BUCKET ", "ls BUCKET", "put BUCKET", "get BUCKET", "rm BUCKET")
              if c.strip() not in line]
    assert not any(c in err for c in others), err
    assert len(err.splitlines()) <= 6, err


def test_flag_errors_help_per_command_and_command_words_as_buckets(server):
    """CLI11 (issue 33, item 10): an unknown flag or a flag without its value exits 2 naming it;
    `COMMAND --help` shows that command; flags may follow the command; a bucket named like a
    command ("get") is a bucket after the command."""
    rc, out, err = cli(server, "--bogus", "ls")
    assert rc == 2 and out == "" and "rdmastor-cli: unknown argument '--bogus'" in err, err
    rc, out, err = cli(server, "ls", "--fabric")
    assert rc == 2 and "rdmastor-cli: --fabric needs a value" in err, err
    assert "--fabric soft|verbs" in err and "put BUCKET" not in err, err
    rc, out, err = cli(server, "put", "--help")
    assert rc == 0 and "put BUCKET/KEY FILE" in out and "BUCKET/KEY" in out, (out, err)
    assert "get BUCKET" not in out and "mb BUCKET" not in out, out
    rc, out, err = cli(server, "--help")
    assert rc == 0 and all(f"  {c} " in out for c in ("mb", "ls", "put", "get", "rm")), out
    assert cli(server, "mb", "get")[0] == 0
    rc, out, err = cli(server, "ls", "--json")
    assert rc == 0 and "get" in [b["name"] for b in json.loads(out)["buckets"]], (out, err)
    rc, out, err = cli(server, "rm", "get", "--json")
    assert rc == 0 and json.loads(out)["bucket"] == "get", (out, err)
