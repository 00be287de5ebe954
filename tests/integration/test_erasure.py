"""Erasure-coded deployments on the real binary: 4, 8 and 16 drive directories.

One server per geometry (the drive check is off: RDMASTOR_DRIVE_CHECK_INTERVAL=off, so only
`rdmastor admin heal` repairs drives, and the test proves it does). Per geometry:
- objects of 0 B, 1 B, stripe-1, stripe, stripe+1, 10 MiB and a 50 MiB multipart upload whose
  parts straddle the loss of a drive (parts are coded per part; the geometry stays the one of the
  set: checked in every drive's metadata);
- drives are removed one at a time up to `parity`: writes succeed while write quorum holds and
  fail with 503 SlowDown, leaving nothing visible or on disk, when it does not; every object reads
  back byte-identical (SHA-256) with `parity` drives gone;
- one more drive refuses writes ("read-only"): writes are refused cleanly, reads still work;
- the removed drives come back empty; `rdmastor admin heal` formats them and restores every shard
  (compared on disk with the copies written before the damage); metrics show it;
- bytes are flipped in every shard file of `parity` other drives; `admin heal` restores them;
- a different set of `parity` drives is removed: the healed copies carry every read.

"Removing" a drive deletes its directory. "Read-only": root ignores permissions, so when the
tests run as root the drive's staging directory is replaced by a file (every write there fails,
its data stays readable); otherwise the drive directory tree is chmod'ed read-only.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

import pytest
from botocore.exceptions import ClientError

from conftest import (RDMASTOR_BIN, _clean_env, admin_heal, scrape, seeded_bytes, signed_request,
                      wait_heal_idle)

MiB = 1 << 20
SIZES = [0, 1, MiB - 1, MiB, MiB + 1, 10 * MiB]
PARITY = {4: 2, 8: 4, 16: 4}
ENV = {"RDMASTOR_DRIVE_CHECK_INTERVAL": "off", "MINIO_PROMETHEUS_AUTH_TYPE": "public"}
INLINE_BLOCK = 128 << 10  # MINIO_STORAGE_CLASS_INLINE_BLOCK's default
HASH = 8  # the bitrot hash framing each shard block


def shard_file_size(size, data):
    """What a drive's shard file holds for an object of `size` on `data` data shards: per 1 MiB
    stripe, [8-byte hash][ceil(stripe bytes / data)]."""
    full, rest = divmod(size, MiB)
    out = full * (HASH + -(-MiB // data))
    return out + (HASH + -(-rest // data) if rest else 0)


def is_inline(size, data):
    """MinIO's rule: inline when the shard file would be at most the inline block."""
    return shard_file_size(size, data) <= INLINE_BLOCK


def sha(b):
    return hashlib.sha256(b).hexdigest()


def make_server(server_factory, n, env=ENV):
    base = tempfile.mkdtemp(prefix="rdmastor-ec-", dir="/tmp")
    dirs = [os.path.join(base, f"d{i}") for i in range(1, n + 1)]
    srv = server_factory(data_dirs=dirs, env=env)
    return srv, dirs, base


def shard_files(d, bucket):
    return sorted(glob.glob(os.path.join(d, bucket, "**", ".rdmastor.data.*", "part.*"),
                            recursive=True))


def metas(d, bucket):
    return sorted(glob.glob(os.path.join(d, bucket, "**", ".rdmastor.meta"), recursive=True))


def system_records(d):
    """Objects the server keeps in its system bucket (rdmastor.sys: bucket ownership and ACL
    records, IAM users and policies); a full heal scans and heals them like user objects."""
    return len(metas(d, "rdmastor.sys"))


def snapshot(dirs, bucket):
    """{drive: {relative shard file path: sha256}}."""
    out = {}
    for d in dirs:
        out[d] = {}
        for f in shard_files(d, bucket):
            with open(f, "rb") as fh:
                out[d][os.path.relpath(f, d)] = sha(fh.read())
    return out


def meta_of(d, bucket, key):
    """The latest version's record in the drive's metadata file (format 2: a list of versions)."""
    with open(os.path.join(d, bucket, key, ".rdmastor.meta")) as f:
        return json.load(f)["versions"][0]


def expect_drives(srv, online, offline, timeout=5.0):
    """The cluster drive gauges become (online, offline): drive state is sampled at most once a
    second, so a scrape right after a drive came or went may still show the last sample."""
    deadline = time.monotonic() + timeout
    for _ in range(1000):
        m = scrape(srv, "cluster")
        got = (m["minio_cluster_drive_online_total"], m["minio_cluster_drive_offline_total"])
        if got == (online, offline) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got == (online, offline)


def check_all(c, bucket, objs):
    for k, want in objs.items():
        got = c.get_object(Bucket=bucket, Key=k)["Body"].read()
        assert sha(got) == want, f"{k}: content differs"


def remove_drive(srv, d):
    # The healer (heal-on-read) may be writing into the drive: wait until it is idle, so rmtree
    # does not race a directory being filled ("Directory not empty").
    wait_heal_idle(srv)
    shutil.rmtree(d)


def make_readonly(d):
    if os.geteuid() == 0:
        tmp = os.path.join(d, ".rdmastor.sys", "tmp")
        shutil.rmtree(tmp)
        open(tmp, "w").close()
    else:
        for root, dnames, fnames in os.walk(d):
            for name in dnames + fnames:
                p = os.path.join(root, name)
                os.chmod(p, os.stat(p).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        os.chmod(d, 0o555)


def undo_readonly(d):
    if os.geteuid() == 0:
        tmp = os.path.join(d, ".rdmastor.sys", "tmp")
        os.unlink(tmp)
        os.makedirs(tmp)
    else:
        os.chmod(d, 0o755)
        for root, dnames, fnames in os.walk(d):
            for name in dnames:
                os.chmod(os.path.join(root, name), 0o755)
            for name in fnames:
                os.chmod(os.path.join(root, name), 0o644)


def assert_refused(srv, c, dirs, bucket, key, size):
    # Sent without `Expect: 100-continue` (hand-signed): the server refuses before reading the
    # body and, when the client asked for 100-continue, closes the connection; a client that then
    # sends the body anyway (botocore does after waiting 1 s on a loaded machine) sees the
    # connection reset instead of the 503. Without Expect the server drains the body and answers.
    r = signed_request(srv, "PUT", f"/{bucket}/{key}", body=seeded_bytes(size, 5))
    assert r.status == 503 and r.error.get("Code") == "SlowDown", r
    with pytest.raises(ClientError) as e:
        c.head_object(Bucket=bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    for d in dirs:
        assert not os.path.exists(os.path.join(d, bucket, key)), f"{key} left on {d}"


def flip_bytes(path):
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        for off in sorted({3, 9, size // 2, size - 1}):
            if 0 <= off < size:
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ 0xFF]))


@pytest.mark.parametrize("n", [4, 8, 16])
def test_erasure_matrix_heal(server_factory, n):
    srv, dirs, base = make_server(server_factory, n)
    p = PARITY[n]
    data = n - p
    write_quorum = data + (1 if data == p else 0)
    block = -(-MiB // data)
    try:
        c = srv.client()
        bucket = f"ec{n}"
        c.create_bucket(Bucket=bucket)
        objs = {}
        for s in SIZES:
            body = seeded_bytes(s, seed=s + 11)
            c.put_object(Bucket=bucket, Key=f"obj-{s}", Body=body)
            objs[f"obj-{s}"] = sha(body)
        snap = snapshot(dirs, bucket)
        # One shard file (1 part) per object whose shards are above the inline block (on 16
        # drives, 12+4, objects up to ~1.5 MiB are inline).
        with_file = sum(1 for s in SIZES if not is_inline(s, data))
        assert with_file == {4: 4, 8: 4, 16: 1}[n]
        assert all(len(v) == with_file for v in snap.values()), snap

        # Multipart, 5 x 10 MiB; the first drive is lost between parts 2 and 3.
        up = c.create_multipart_upload(Bucket=bucket, Key="multi/50m")["UploadId"]
        parts, h = [], hashlib.sha256()
        for pn in range(1, 6):
            if pn == 3:
                remove_drive(srv, dirs[0])
            body = seeded_bytes(10 * MiB, seed=100 + pn)
            h.update(body)
            r = c.upload_part(Bucket=bucket, Key="multi/50m", UploadId=up, PartNumber=pn, Body=body)
            parts.append({"ETag": r["ETag"], "PartNumber": pn})
        c.complete_multipart_upload(Bucket=bucket, Key="multi/50m", UploadId=up,
                                    MultipartUpload={"Parts": parts})
        objs["multi/50m"] = h.hexdigest()
        # Coded per part with the set's geometry, the same on every drive.
        ms = [meta_of(d, bucket, "multi/50m") for d in dirs[1:]]
        assert {(m["erasure"]["data"], m["erasure"]["parity"]) for m in ms} == {(data, p)}
        assert len({json.dumps(m["erasure"]["distribution"]) for m in ms}) == 1
        assert len({m["erasure"]["index"] for m in ms}) == n - 1  # one shard per drive
        for d, m in zip(dirs[1:], ms):
            assert [x["size"] for x in m["parts"]] == [10 * MiB] * 5
            ddir = os.path.join(d, bucket, "multi/50m", m["data_dir"])
            files = sorted(os.listdir(ddir))
            assert files == [f"part.{i}" for i in range(1, 6)], files
            for f in files:  # 10 stripes of [8-byte XXH3][ceil(1 MiB / data)]
                assert os.path.getsize(os.path.join(ddir, f)) == 10 * (8 + block)

        # Lose drives one at a time up to parity: writes succeed exactly while quorum holds.
        degraded_writes = {}
        for k in range(1, p + 1):
            if k > 1:
                remove_drive(srv, dirs[k - 1])
            key, size = f"written-{k}-lost", 200 * 1024
            if n - k >= write_quorum:
                body = seeded_bytes(size, seed=k)
                c.put_object(Bucket=bucket, Key=key, Body=body)
                objs[key] = sha(body)
                degraded_writes[key] = k
            else:
                assert_refused(srv, c, dirs, bucket, key, size)
        check_all(c, bucket, objs)  # `parity` drives gone: reconstructed from parity
        expect_drives(srv, online=n - p, offline=p)

        # One more drive refuses writes: below write quorum; reads still work.
        make_readonly(dirs[p])
        assert_refused(srv, c, dirs, bucket, "refused", 3 * MiB)
        check_all(c, bucket, objs)
        wait_heal_idle(srv)
        undo_readonly(dirs[p])

        # The lost drives come back empty; admin heal formats them and rewrites every copy.
        for d in dirs[:p]:
            os.makedirs(d)
        before = scrape(srv)
        res = admin_heal(srv)
        assert res.returncode == 0, res
        # Every object lacks exactly the `parity` lost drives' copies (objects written while
        # degraded lost theirs when the later drives went).
        # The full heal covers the system bucket's records as well (the bucket's ACL record).
        healed_objs = len(objs) + system_records(dirs[-1])
        want_shards = p * healed_objs
        assert res.counts == {"scanned": healed_objs, "healed": healed_objs,
                              "shards": want_shards, "failed": 0}, res
        assert f"replaced drive(s) formatted: {p}" in res.stdout, res
        assert res.stdout.count("healed ") >= healed_objs, res
        after = scrape(srv)
        assert after["rdmastor_heal_running"] == 0
        assert after["minio_heal_objects_heal_total"] == healed_objs
        assert after["rdmastor_heal_shards_written_total"] == want_shards
        assert after["rdmastor_drives_replaced_total"] - before["rdmastor_drives_replaced_total"] == p
        assert after["rdmastor_healed_shards_total"] - before["rdmastor_healed_shards_total"] == \
            want_shards
        expect_drives(srv, online=n, offline=0)

        # Shard digests per drive differ (each drive holds its own shard), so compare each drive
        # with what it held before; the drives that were lost held their files before too.
        now = snapshot(dirs, bucket)
        for d in dirs:
            assert len(metas(d, bucket)) == len(objs), d
            assert sorted(now[d]) == sorted(now[dirs[-1]]), f"{d}: shard files differ"
            for rel, dg in snap[d].items():
                assert now[d].get(rel) == dg, f"{d}/{rel} not restored byte for byte"
        healed_snap = now

        # Bitrot: flip bytes in every shard file of `parity` other drives; heal rewrites them.
        rotten = dirs[-p:]
        for d in rotten:
            for f in shard_files(d, bucket):
                flip_bytes(f)
        res = admin_heal(srv, bucket)
        assert res.returncode == 0, res
        with_files = len({os.path.dirname(os.path.dirname(r)) for r in healed_snap[dirs[-1]]})
        assert res.counts == {"scanned": len(objs), "healed": with_files,
                              "shards": with_files * p, "failed": 0}, res
        assert snapshot(dirs, bucket) == healed_snap

        # A different set of `parity` drives is lost: the healed copies carry every read.
        for d in dirs[:p]:
            remove_drive(srv, d)
        check_all(c, bucket, objs)
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def admin_run(srv, *args):
    env = _clean_env({"MINIO_ROOT_USER": srv.access_key, "MINIO_ROOT_PASSWORD": srv.secret_key})
    return subprocess.run([RDMASTOR_BIN, "admin", *args, "--endpoint", srv.endpoint], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def admin_json(srv, *args):
    cp = admin_run(srv, *args, "--json")
    assert cp.returncode == 0, cp
    return json.loads(cp.stdout)


def test_heal_names_offline_drives(server_factory):
    """A heal that cannot rebuild copies because their drive is offline says so: it counts the
    objects as incomplete, names the drive, and exits 1 (never a clean `0 failed` summary)."""
    srv, dirs, base = make_server(server_factory, 4)
    try:
        c = srv.client()
        bucket = "heal-offline"
        c.create_bucket(Bucket=bucket)
        objs = {}
        for i, size in enumerate((0, 5000, 200 << 10, 2 * MiB + 1)):
            data = seeded_bytes(size, seed=i)
            c.put_object(Bucket=bucket, Key=f"k{i}", Body=data)
            objs[f"k{i}"] = sha(data)
        remove_drive(srv, dirs[1])
        # `admin info` shows the drive offline, the others with their usage, one set of four.
        # Drive samples are cached for a second (the last scrape may have taken one): poll.
        for _ in range(15):
            info = admin_json(srv, "info")
            assert info["status"] == "success", info
            if info["info"]["backend"]["offlineDisks"]:
                break
            time.sleep(0.2)
        info = info["info"]
        assert info["backend"]["backendType"] == "Erasure", info
        assert info["backend"]["onlineDisks"] == 3 and info["backend"]["offlineDisks"] == 1, info
        assert info["backend"]["totalSets"] == [1], info
        assert info["backend"]["totalDrivesPerSet"] == [4], info
        assert info["uptime"] >= 0 and info["version"], info
        [node] = info["servers"]
        drives = {d["endpoint"]: d for d in node["drives"]}
        assert set(drives) == set(dirs), drives
        assert drives[dirs[1]]["state"] == "offline", drives
        for d in (dirs[0], dirs[2], dirs[3]):
            assert drives[d]["state"] == "ok" and drives[d]["totalspace"] > 0, drives
            assert 0 < drives[d]["usedspace"] <= drives[d]["totalspace"], drives
        assert sorted(d["disk_index"] for d in drives.values()) == [0, 1, 2, 3], drives
        text = admin_run(srv, "info")
        assert text.returncode == 0 and "3 drive(s) online, 1 offline" in text.stdout, text
        assert "offline set 1 drive 2" in text.stdout, text.stdout
        res = admin_heal(srv)
        assert res.returncode == 1, res
        sys_objs = system_records(dirs[0])
        assert res.counts["failed"] == 0 and res.incomplete == len(objs) + sys_objs, res
        assert res.missed_drives == [dirs[1]], res
        check_all(c, bucket, objs)
        wait_heal_idle(srv)  # heal-on-read of the degraded reads is done before the drive returns
        # The drive comes back: the heal completes it and is clean again.
        os.makedirs(dirs[1])
        res = admin_heal(srv)
        assert res.returncode == 0 and res.incomplete == 0 and res.missed_drives == [], res
        assert res.counts["shards"] == len(objs) + sys_objs, res
        # --json: one object with the final state and counts, nothing else on stdout.
        cp = admin_run(srv, "heal", "--json", bucket)
        assert cp.returncode == 0, cp
        out = json.loads(cp.stdout)
        assert out["status"] == "success" and out["command"] == "heal", out
        assert out["state"] == "done" and out["counts"]["scanned"] == len(objs), out
        assert out["counts"]["failed"] == 0 and out["items"] == [], out
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_heal_admin_api_refusals(server_factory):
    """Root-signed only, S3 error XML otherwise; a single-drive deployment has nothing to heal."""
    srv, dirs, base = make_server(server_factory, 4)
    try:
        r = signed_request(srv, "POST", "/minio/admin/v3/heal/", secret_key="wrong-secret-123")
        assert r.status == 403 and r.error.get("Code") == "SignatureDoesNotMatch", r
        r = signed_request(srv, "POST", "/minio/admin/v3/heal/", access_key="NOTROOT")
        assert r.status == 403 and r.error.get("Code") == "InvalidAccessKeyId", r
        from conftest import http_send
        r = http_send(srv, "POST", "/minio/admin/v3/heal/")
        assert r.status == 403 and r.error.get("Code") == "AccessDenied", r
        r = signed_request(srv, "GET", "/minio/admin/v3/heal/")
        assert r.status == 405 and r.error.get("Code") == "MethodNotAllowed", r
        r = signed_request(srv, "POST", "/minio/admin/v3/heal/nosuchbucket")
        assert r.status == 404 and r.error.get("Code") == "NoSuchBucket", r
        r = signed_request(srv, "POST", "/minio/admin/v3/heal/", query=[("clientToken", "nope")])
        assert r.error.get("Code") == "XMinioHealNoSuchProcess", r
        res = admin_heal(srv, secret="wrong-secret-123")
        assert res.returncode == 1 and "SignatureDoesNotMatch" in res.stderr, res
        # Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY work too; empty server.
        res = admin_heal(srv, cred_vars=("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
        assert res.returncode == 0 and res.counts == {"scanned": 0, "healed": 0, "shards": 0,
                                                      "failed": 0}, res
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)
    one = server_factory(env=ENV)
    res = admin_heal(one)
    assert res.returncode == 1 and "single-drive" in res.stderr, res
    r = signed_request(one, "POST", "/minio/admin/v3/heal/")
    assert r.status == 501 and r.error.get("Code") == "XMinioHealNotImplemented", r


def test_erasure_bitrot_is_detected_repaired_on_read(server_factory):
    srv, dirs, base = make_server(server_factory, 4,
                                  env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "300ms",
                                       "MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    try:
        c = srv.client()
        c.create_bucket(Bucket="rot")
        objs = {}
        for s in SIZES:
            body = seeded_bytes(s, seed=s + 11)
            c.put_object(Bucket="rot", Key=f"obj-{s}", Body=body)
            objs[f"obj-{s}"] = sha(body)
        before = {f: open(f, "rb").read() for d in dirs[:2] for f in shard_files(d, "rot")}
        assert before
        for f in before:  # flip bytes in `parity` drives' shard files
            flip_bytes(f)
        check_all(c, "rot", objs)  # verified, reconstructed, and queued for healing
        wait_heal_idle(srv)
        # Healing rewrote the copies with the original bytes.
        for f, data in before.items():
            with open(f, "rb") as fh:
                assert fh.read() == data, f"{f} not healed"
        assert scrape(srv)["rdmastor_healed_objects_total"] >= 4
        # Now corrupt the other two drives: the healed copies must carry the reads.
        for d in dirs[2:]:
            for f in shard_files(d, "rot"):
                with open(f, "r+b") as fh:
                    fh.seek(20)
                    fh.write(b"\x00\x01\x02\x03")
        check_all(c, "rot", objs)
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_erasure_config_errors(server_factory):
    import subprocess
    from conftest import RDMASTOR_BIN, _clean_env
    base = tempfile.mkdtemp(prefix="rdmastor-ec-", dir="/tmp")
    try:
        def run(args, env=None):
            p = subprocess.run([RDMASTOR_BIN, "server", "--address", "127.0.0.1:0"] + args,
                               env=_clean_env(env), capture_output=True, timeout=20)
            return p.returncode, p.stderr.decode()
        rc, err = run([f"{base}/x{{1...4}}"], {"MINIO_STORAGE_CLASS_STANDARD": "EC:3"})
        assert rc != 0 and "MINIO_STORAGE_CLASS_STANDARD" in err
        for bad in ("lots", "2MiB"):
            rc, err = run([f"{base}/x{{1...4}}"], {"MINIO_STORAGE_CLASS_INLINE_BLOCK": bad})
            assert rc != 0 and f"MINIO_STORAGE_CLASS_INLINE_BLOCK='{bad}' is invalid" in err, err
        rc, err = run([f"{base}/a{{1...4}}", f"{base}/b{{1...4}}"])
        assert rc != 0 and "pools" in err
        rc, err = run(["http://node{1...4}:9000/mnt/d{1...4}"])
        # Distributed mode: this process is none of node1..4 (they are not this host).
        assert rc != 0 and "none of the nodes" in err
        rc, err = run([f"{base}/x{{1...17}}"])
        assert rc != 0 and "erasure sets" in err
        # Drives of another deployment / in another order are refused.
        srv1 = server_factory(data_dirs=[f"{base}/p{i}" for i in range(1, 5)])
        srv1.kill()
        srv2 = server_factory(data_dirs=[f"{base}/q{i}" for i in range(1, 5)])
        srv2.kill()
        rc, err = run([f"{base}/p1", f"{base}/p2", f"{base}/p3", f"{base}/q4"])
        assert rc != 0 and "different deployments" in err, err
        rc, err = run([f"{base}/p2", f"{base}/p1", f"{base}/p3", f"{base}/p4"])
        assert rc != 0 and "original order" in err, err
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_replaced_drive_heal_logs_a_summary_not_a_line_per_object(server_factory):
    """A replaced drive heals every object onto it: the log gets one summary for the run and one
    line per drive, not one line per object (journald on a full drive); each object's line is
    at debug (issue 33, item 14)."""
    n = 40
    srv, dirs, base = make_server(server_factory, 4, env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "300ms"})
    try:
        c = srv.client()
        c.create_bucket(Bucket="logs")
        for i in range(n):
            c.put_object(Bucket="logs", Key=f"k{i}", Body=seeded_bytes(300 * 1024, seed=i))
        expected = n + system_records(dirs[0])
        for entry in os.listdir(dirs[2]):  # the drive is swapped for an empty one
            path = os.path.join(dirs[2], entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
        deadline = time.monotonic() + 60
        while "heal: replaced drive(s) done:" not in srv.log_text():
            assert time.monotonic() < deadline, srv.log_tail()
            time.sleep(0.2)
        time.sleep(0.5)  # the per-drive lines follow the summary
        log = srv.log_text().splitlines()
        summary = [ln for ln in log if "heal: replaced drive(s) done:" in ln]
        assert len(summary) == 1 and f"{expected} healed" in summary[0], summary
        per_drive = [ln for ln in log if re.search(r"heal: replaced drive\(s\): drive ", ln)]
        assert per_drive == [ln for ln in per_drive if f"drive {dirs[2]}: {expected} copy(ies) "
                             "rewritten" in ln] and len(per_drive) == 1, per_drive
        heal_lines = [ln for ln in log if "heal:" in ln]
        assert not [ln for ln in heal_lines if "/k" in ln], heal_lines  # no object named
        assert len(heal_lines) < 10, heal_lines
        for i in range(n):
            assert c.get_object(Bucket="logs", Key=f"k{i}")["Body"].read() == \
                seeded_bytes(300 * 1024, seed=i)
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)
