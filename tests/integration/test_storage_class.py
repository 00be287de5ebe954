"""Storage classes as parity (issue 14 item 16): x-amz-storage-class STANDARD and
REDUCED_REDUNDANCY are coded with MINIO_STORAGE_CLASS_STANDARD's and MINIO_STORAGE_CLASS_RRS's
parity (defaults: EC:2 and EC:1 on 4 drives, EC:4 and EC:1 on 8), and each object version records
its own data/parity counts, so reads, quorums and heals follow the version, not the settings.

- 4 drives: a REDUCED_REDUNDANCY object (inline, plain, multipart, self-copied into the class)
  survives the loss of one drive, not two, while STANDARD objects survive both; a heal rebuilds
  a lost drive's copies with each version's own geometry (checked on disk, byte for byte, and by
  reading through another lost drive afterwards).
- 8 drives with MINIO_STORAGE_CLASS_RRS=EC:2: RRS objects survive two lost drives, not three; an
  upload begun before a restart with EC:3 completes with the geometry its parts were coded with.
- Bad settings refuse to start, naming the variable; one drive ignores them with a warning.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile


from conftest import (RDMASTOR_BIN, _clean_env, admin_heal, seeded_bytes, signed_request,
                      unique_bucket)
from test_erasure import ENV, make_server, meta_of, remove_drive, sha, snapshot, system_records

MiB = 1 << 20
RRS = "REDUCED_REDUNDANCY"


def geometry(dirs, bucket, key):
    """{(data, parity)} of the latest version of `key` over the drives that hold it."""
    out = set()
    for d in dirs:
        if os.path.exists(os.path.join(d, bucket, key, ".rdmastor.meta")):
            e = meta_of(d, bucket, key)["erasure"]
            out.add((e["data"], e["parity"]))
    return out


def readable(srv, c, bucket, key, want):
    """True when GET returns the object; False when it is refused for lack of read quorum (503
    SlowDown, on HEAD too), never anything else."""
    r = signed_request(srv, "GET", f"/{bucket}/{key}")
    if r.status == 200:
        assert sha(r.body) == want, f"{key}: content differs"
        return True
    assert r.status == 503 and r.error.get("Code") == "SlowDown", r
    assert signed_request(srv, "HEAD", f"/{bucket}/{key}").status == 503
    return False


def put_multipart(c, bucket, key, sizes, seed, **kw):
    up = c.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    parts, h = [], hashlib.sha256()
    for i, size in enumerate(sizes, 1):
        body = seeded_bytes(size, seed=seed + i)
        h.update(body)
        e = c.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i, Body=body)["ETag"]
        parts.append({"ETag": e, "PartNumber": i})
    c.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                MultipartUpload={"Parts": parts})
    return h.hexdigest()


def test_rrs_parity_on_four_drives(server_factory):
    srv, dirs, base = make_server(server_factory, 4)
    try:
        c = srv.client()
        bucket = unique_bucket("sc4")
        c.create_bucket(Bucket=bucket)
        objs, classes = {}, {}

        def put(key, size, sc=None):
            body = seeded_bytes(size, seed=len(objs) + 7)
            c.put_object(Bucket=bucket, Key=key, Body=body, **({"StorageClass": sc} if sc else {}))
            objs[key], classes[key] = sha(body), sc or "STANDARD"

        put("std", 300 << 10)
        put("std-named", 5, "STANDARD")
        put("rrs-inline", 5, RRS)
        put("rrs", 2 * MiB + 1, RRS)
        objs["rrs-mpu"] = put_multipart(c, bucket, "rrs-mpu", [5 * MiB, MiB + 3], 40,
                                        StorageClass=RRS)
        classes["rrs-mpu"] = RRS
        # A copy onto itself into the other class rewrites the data with that class's parity.
        put("to-rrs", 700 << 10)
        c.copy_object(Bucket=bucket, Key="to-rrs", CopySource={"Bucket": bucket, "Key": "to-rrs"},
                      StorageClass=RRS)
        classes["to-rrs"] = RRS
        put("to-std", 700 << 10, RRS)  # REPLACE without a class: STANDARD, as any copy
        c.copy_object(Bucket=bucket, Key="to-std", CopySource={"Bucket": bucket, "Key": "to-std"},
                      MetadataDirective="REPLACE", Metadata={"m": "1"})
        classes["to-std"] = "STANDARD"

        for key, sc in classes.items():
            want = {(3, 1)} if sc == RRS else {(2, 2)}
            assert geometry(dirs, bucket, key) == want, key
            head = c.head_object(Bucket=bucket, Key=key)
            assert head.get("StorageClass") == (RRS if sc == RRS else None), key
        # Shard files of the RRS object: stripes of ceil(1 MiB / 3) bytes, each behind its hash.
        m = meta_of(dirs[0], bucket, "rrs")
        part = os.path.join(dirs[0], bucket, "rrs", m["data_dir"], "part.1")
        assert os.path.getsize(part) == 2 * (8 + -(-MiB // 3)) + (8 + 1)
        listed = {o["Key"]: o["StorageClass"] for o in c.list_objects_v2(Bucket=bucket)["Contents"]}
        assert listed == classes
        assert {o["Key"]: o["StorageClass"] for o in c.list_objects(Bucket=bucket)["Contents"]} \
            == classes
        assert {v["Key"]: v["StorageClass"] for v in
                c.list_object_versions(Bucket=bucket)["Versions"]} == classes
        # Only the two classes are accepted, spelled as AWS spells them.
        for bad in ("reduced_redundancy", "GLACIER", "EC:1", "Standard"):
            r = signed_request(srv, "PUT", f"/{bucket}/bad", body=b"x",
                               headers={"x-amz-storage-class": bad})
            assert r.status == 400 and r.error.get("Code") == "InvalidStorageClass", (bad, r)

        snap = snapshot(dirs, bucket)
        # One drive lost: everything reads (RRS from its one parity shard).
        remove_drive(srv, dirs[0])
        for key, want in objs.items():
            assert readable(srv, c, bucket, key, want), key
        # The drive comes back empty: the heal rebuilds every copy with its version's geometry.
        os.makedirs(dirs[0])
        res = admin_heal(srv)
        assert res.returncode == 0, res
        # Every object lost its one copy there, and so did each record of the system bucket (the
        # bucket's ACL record): the full heal scans and heals those too.
        healed_objs = len(objs) + system_records(dirs[1])
        assert res.counts == {"scanned": healed_objs, "healed": healed_objs,
                              "shards": healed_objs, "failed": 0}, res
        for key, sc in classes.items():
            assert geometry([dirs[0]], bucket, key) == ({(3, 1)} if sc == RRS else {(2, 2)}), key
        assert snapshot(dirs, bucket) == snap  # byte for byte what was there before
        # Another drive is lost: the healed copies carry the RRS reads.
        remove_drive(srv, dirs[1])
        for key, want in objs.items():
            assert readable(srv, c, bucket, key, want), key
        # Two lost: STANDARD (2+2) still reads, REDUCED_REDUNDANCY (3+1) does not.
        remove_drive(srv, dirs[2])
        for key, want in objs.items():
            assert readable(srv, c, bucket, key, want) == (classes[key] == "STANDARD"), key
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_rrs_parity_setting_on_eight_drives(server_factory):
    srv, dirs, base = make_server(server_factory, 8, env=dict(ENV, MINIO_STORAGE_CLASS_RRS="EC:2"))
    try:
        c = srv.client()
        bucket = unique_bucket("sc8")
        c.create_bucket(Bucket=bucket)
        objs = {}
        for key, sc, size in (("std", None, 200 << 10), ("rrs", RRS, 200 << 10),
                              ("rrs-inline", RRS, 10)):
            body = seeded_bytes(size, seed=size)
            c.put_object(Bucket=bucket, Key=key, Body=body,
                         **({"StorageClass": sc} if sc else {}))
            objs[key] = sha(body)
        assert geometry(dirs, bucket, "std") == {(4, 4)}
        assert geometry(dirs, bucket, "rrs") == geometry(dirs, bucket, "rrs-inline") == {(6, 2)}

        # An upload keeps the parity of its start: restarted with EC:3 between its parts, it
        # completes as 6+2 (its parts' geometry), while a new RRS object is 5+3.
        up = c.create_multipart_upload(Bucket=bucket, Key="mpu", StorageClass=RRS)["UploadId"]
        b1, b2 = seeded_bytes(5 * MiB, seed=1), seeded_bytes(1000, seed=2)
        e1 = c.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=1, Body=b1)["ETag"]
        srv.extra_env["MINIO_STORAGE_CLASS_RRS"] = "EC:3"
        srv.restart()
        c = srv.client()
        e2 = c.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=2, Body=b2)["ETag"]
        c.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up, MultipartUpload={
            "Parts": [{"ETag": e1, "PartNumber": 1}, {"ETag": e2, "PartNumber": 2}]})
        objs["mpu"] = sha(b1 + b2)
        body = seeded_bytes(300 << 10, seed=3)
        c.put_object(Bucket=bucket, Key="rrs3", Body=body, StorageClass=RRS)
        objs["rrs3"] = sha(body)
        assert geometry(dirs, bucket, "mpu") == {(6, 2)}
        assert geometry(dirs, bucket, "rrs3") == {(5, 3)}

        survives = {"std": 4, "rrs": 2, "rrs-inline": 2, "mpu": 2, "rrs3": 3}
        for lost in range(1, 5):
            remove_drive(srv, dirs[lost - 1])
            for key, want in objs.items():
                assert readable(srv, c, bucket, key, want) == (lost <= survives[key]), (lost, key)
    finally:
        srv.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_storage_class_settings_validated_at_start(server_factory):
    base = tempfile.mkdtemp(prefix="rdmastor-sc-", dir="/tmp")
    try:
        def run(env, drives=4):
            args = [f"{base}/x{{1...{drives}}}"] if drives > 1 else [f"{base}/one"]
            p = subprocess.run([RDMASTOR_BIN, "server", "--address", "127.0.0.1:0"] + args,
                               env=_clean_env(env), capture_output=True, timeout=20)
            return p.returncode, p.stderr.decode()

        cases = [
            ({"MINIO_STORAGE_CLASS_RRS": "EC:3"}, "MINIO_STORAGE_CLASS_RRS='EC:3' is invalid",
             "0 <= N <= 2"),
            ({"MINIO_STORAGE_CLASS_RRS": "EC:x"}, "MINIO_STORAGE_CLASS_RRS='EC:x' is invalid",
             "EC:N"),
            ({"MINIO_STORAGE_CLASS_RRS": "2"}, "MINIO_STORAGE_CLASS_RRS='2' is invalid", "EC:N"),
            ({"MINIO_STORAGE_CLASS_STANDARD": "EC:1", "MINIO_STORAGE_CLASS_RRS": "EC:2"},
             "MINIO_STORAGE_CLASS_RRS='EC:2' is invalid", "must not exceed the standard parity"),
            ({"MINIO_STORAGE_CLASS_STANDARD": "EC:5"},
             "MINIO_STORAGE_CLASS_STANDARD='EC:5' is invalid", "0 <= N <= 2"),
        ]
        for env, what, why in cases:
            rc, err = run(env)
            assert rc != 0 and what in err and why in err, (env, err)
        # One drive has no parity: the settings are ignored, and the log says so.
        srv = server_factory(env={"MINIO_STORAGE_CLASS_RRS": "EC:2",
                                  "MINIO_STORAGE_CLASS_STANDARD": "EC:2"})
        log = srv.log_text()
        assert "MINIO_STORAGE_CLASS_RRS is ignored: one drive has no parity" in log, log
        assert "MINIO_STORAGE_CLASS_STANDARD is ignored: one drive has no parity" in log, log
        c = srv.client()
        c.create_bucket(Bucket="one")
        c.put_object(Bucket="one", Key="k", Body=b"v", StorageClass=RRS)
        assert c.head_object(Bucket="one", Key="k")["StorageClass"] == RRS
    finally:
        shutil.rmtree(base, ignore_errors=True)
