"""Erasure-coded deployments on the real binary: 4, 8 and 16 drive directories.

Per geometry: objects of 0 B, 1 B, stripe-1, stripe, stripe+1, 10 MiB and a 50 MiB multipart
upload read back byte-identical (SHA-256) with `parity` drives removed and with bytes flipped in
shard files; writes succeed while write quorum holds and fail with 503 SlowDown when it does not;
removed drives come back as empty directories, are detected by the drive check
(RDMASTOR_DRIVE_CHECK_INTERVAL), formatted and healed, and heal restores every shard (checked on
disk). "Removing" a drive replaces its directory by nothing (rmtree): unlike chmod, which root
ignores, that really fails every read and write on it.
"""

import glob
import hashlib
import os
import shutil
import time

import pytest
from botocore.exceptions import ClientError

from conftest import seeded_bytes

MiB = 1 << 20
SIZES = [0, 1, MiB - 1, MiB, MiB + 1, 10 * MiB]
PARITY = {4: 2, 8: 4, 16: 4}
ENV = {"RDMASTOR_DRIVE_CHECK_INTERVAL": "300ms"}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def make_server(server_factory, n):
    import tempfile
    base = tempfile.mkdtemp(prefix="rdmastor-ec-", dir="/tmp")
    dirs = [os.path.join(base, f"d{i}") for i in range(1, n + 1)]
    srv = server_factory(data_dirs=dirs, env=ENV)
    return srv, dirs, base


def put_all(c, bucket, with_multipart=True):
    objs = {}
    for i, s in enumerate(SIZES):
        data = seeded_bytes(s, seed=s + 11)
        c.put_object(Bucket=bucket, Key=f"obj-{s}", Body=data)
        objs[f"obj-{s}"] = sha(data)
    if with_multipart:
        up = c.create_multipart_upload(Bucket=bucket, Key="multi/50m")
        parts, h = [], hashlib.sha256()
        for n in range(1, 6):
            data = seeded_bytes(10 * MiB, seed=100 + n)
            h.update(data)
            r = c.upload_part(Bucket=bucket, Key="multi/50m", UploadId=up["UploadId"],
                              PartNumber=n, Body=data)
            parts.append({"ETag": r["ETag"], "PartNumber": n})
        c.complete_multipart_upload(Bucket=bucket, Key="multi/50m", UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": parts})
        objs["multi/50m"] = h.hexdigest()
    return objs


def check_all(c, bucket, objs):
    for k, want in objs.items():
        got = c.get_object(Bucket=bucket, Key=k)["Body"].read()
        assert sha(got) == want, f"{k}: content differs"


def shard_files(d, bucket):
    return sorted(glob.glob(os.path.join(d, bucket, "**", ".rdmastor.data.*", "part.*"),
                            recursive=True))


def metas(d, bucket):
    return sorted(glob.glob(os.path.join(d, bucket, "**", ".rdmastor.meta"), recursive=True))


def wait_healed(dirs, bucket, objs, reference, timeout=60):
    """Every drive holds metadata for every object and as many shard files as `reference`."""
    want_shards = len(shard_files(reference, bucket))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(len(metas(d, bucket)) == len(objs) and
               len(shard_files(d, bucket)) == want_shards for d in dirs):
            return
        time.sleep(0.2)
    pytest.fail("heal did not restore every shard: " +
                str([(d, len(metas(d, bucket)), len(shard_files(d, bucket))) for d in dirs]))


@pytest.mark.parametrize("n", [4, 8, 16])
def test_erasure_degraded_reads_quorum_and_heal(server_factory, n):
    srv, dirs, base = make_server(server_factory, n)
    try:
        c = srv.client()
        bucket = f"ec{n}"
        c.create_bucket(Bucket=bucket)
        objs = put_all(c, bucket, with_multipart=(n != 16))
        check_all(c, bucket, objs)
        assert sorted(o["Key"] for o in c.list_objects_v2(Bucket=bucket)["Contents"]) == \
            sorted(objs)

        p = PARITY[n]
        lost = dirs[:p]
        for d in lost:
            shutil.rmtree(d)
        check_all(c, bucket, objs)  # reconstructed from parity

        data_shards = n - p
        write_quorum = data_shards + (1 if data_shards == p else 0)
        if n - p >= write_quorum:
            c.put_object(Bucket=bucket, Key="while-degraded", Body=b"z" * 200000)
            objs["while-degraded"] = sha(b"z" * 200000)
        else:
            with pytest.raises(ClientError) as e:
                c.put_object(Bucket=bucket, Key="no-quorum", Body=b"z" * 200000)
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
            assert e.value.response["Error"]["Code"] == "SlowDown"
        # One more drive refuses writes (its staging directory replaced by a file: every write
        # there fails, its data stays readable): below write quorum, cleanly refused, and nothing
        # of the refused object is visible or left behind.
        tmp = os.path.join(dirs[p], ".rdmastor.sys", "tmp")
        shutil.rmtree(tmp)
        open(tmp, "w").close()
        with pytest.raises(ClientError) as e:
            c.put_object(Bucket=bucket, Key="refused", Body=seeded_bytes(3 * MiB, 5))
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert e.value.response["Error"]["Code"] == "SlowDown"
        with pytest.raises(ClientError) as e:
            c.head_object(Bucket=bucket, Key="refused")
        check_all(c, bucket, objs)  # reads still work
        os.unlink(tmp)
        os.makedirs(tmp)

        # Replace the drives (empty directories): detected, formatted, healed.
        for d in dirs[:p]:
            os.makedirs(d)
        wait_healed(dirs, bucket, objs, dirs[-1])
        assert not any("refused" in "".join(metas(d, bucket)) for d in dirs)
        check_all(c, bucket, objs)
        # Every drive's copy is now sound: remove a different set of `parity` drives.
        for d in dirs[-p:]:
            shutil.rmtree(d)
        check_all(c, bucket, objs)
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_erasure_bitrot_is_detected_repaired_on_read(server_factory):
    srv, dirs, base = make_server(server_factory, 4)
    try:
        c = srv.client()
        c.create_bucket(Bucket="rot")
        objs = put_all(c, "rot", with_multipart=False)
        before = {f: open(f, "rb").read() for d in dirs[:2] for f in shard_files(d, "rot")}
        assert before
        for f, data in before.items():  # flip bytes in `parity` drives' shard files
            b = bytearray(data)
            for off in (9, len(b) // 2, len(b) - 1):
                b[off] ^= 0xFF
            with open(f, "wb") as fh:
                fh.write(b)
        check_all(c, "rot", objs)  # verified, reconstructed, and queued for healing
        deadline = time.time() + 30
        while time.time() < deadline:
            if all(open(f, "rb").read() == data for f, data in before.items()
                   if os.path.exists(f)) and all(os.path.exists(f) or True for f in before):
                break
            time.sleep(0.2)
        # Healing rewrites the copies (new files with the original bytes).
        for d in dirs[:2]:
            for f in shard_files(d, "rot"):
                rel = os.path.relpath(f, d)
                ref = os.path.join(dirs[2], rel)
                assert os.path.getsize(f) == os.path.getsize(ref)
        assert all(open(f, "rb").read() == data for f, data in before.items()
                   if os.path.exists(f))
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
    import tempfile
    base = tempfile.mkdtemp(prefix="rdmastor-ec-", dir="/tmp")
    try:
        def run(args, env=None):
            p = subprocess.run([RDMASTOR_BIN, "server", "--address", "127.0.0.1:0"] + args,
                               env=_clean_env(env), capture_output=True, timeout=20)
            return p.returncode, p.stderr.decode()
        rc, err = run([f"{base}/x{{1...4}}"], {"MINIO_STORAGE_CLASS_STANDARD": "EC:3"})
        assert rc != 0 and "MINIO_STORAGE_CLASS_STANDARD" in err
        rc, err = run([f"{base}/a{{1...4}}", f"{base}/b{{1...4}}"])
        assert rc != 0 and "pools" in err
        rc, err = run(["http://node{1...4}:9000/mnt/d{1...4}"])
        assert rc != 0 and "not supported yet" in err
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
