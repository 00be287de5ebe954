"""kill -9 the server in the middle of writes; after a restart on the same data directory no
half object is visible, the previous version is intact, and the temp area is clean."""

import hashlib
import os
import random
import socket
import time

import pytest
from botocore.exceptions import ClientError

from conftest import HOST, UNSIGNED, make_client, seeded_bytes, sign_v4, unique_bucket

MiB = 1 << 20
BIG = 200 * MiB


def _payload_pieces(size, seed, piece=MiB):
    rnd = random.Random(seed)
    left = size
    while left > 0:
        n = min(piece, left)
        yield rnd.randbytes(n)
        left -= n


def _payload_md5(size, seed):
    h = hashlib.md5()
    for p in _payload_pieces(size, seed):
        h.update(p)
    return h.hexdigest()


class PartialPut:
    """A signed PUT (UNSIGNED-PAYLOAD) whose body is written only up to a chosen point."""

    def __init__(self, srv, path, size, seed, query=None):
        self.srv, self.path, self.size, self.seed = srv, path, size, seed
        q = list(query or [])
        hdrs, _ = sign_v4("PUT", path, q, {"host": srv.address, "content-length": str(size)},
                          UNSIGNED, srv.access_key, srv.secret_key)
        target = path + ("?" + "&".join(f"{k}={v}" for k, v in q) if q else "")
        self.head = (f"PUT {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
                     + "\r\n").encode()
        self.sock = socket.create_connection((HOST, srv.port), timeout=30)
        self.sock.sendall(self.head)
        self.pieces = _payload_pieces(size, seed)
        self.sent = 0

    def send_until(self, nbytes):
        for piece in self.pieces:
            self.sock.sendall(piece)
            self.sent += len(piece)
            if self.sent >= nbytes:
                break

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def _get_or_none(client, bucket, key):
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        return None


def check_interrupted_puts(client, bucket, point, old, size, seeds=(10, 11)):
    """After a restart that cut off an overwrite of "existing" (was `old`; new payload seeds[0])
    and a PUT of "fresh" (seeds[1]), both of `size` bytes, at `point`: a body that arrived whole
    may have committed (old or new, never a mix); an earlier cut leaves the old version intact
    and nothing half-written visible. Returns the bodies read back (None: absent)."""
    got_old = _get_or_none(client, bucket, "existing")
    got_fresh = _get_or_none(client, bucket, "fresh")
    if point == "body-complete":
        assert got_old is not None
        assert got_old == old or hashlib.md5(got_old).hexdigest() == _payload_md5(size, seeds[0]), \
            len(got_old)
        if got_fresh is not None:
            assert hashlib.md5(got_fresh).hexdigest() == _payload_md5(size, seeds[1]), \
                len(got_fresh)
    else:
        assert got_old == old, "the previous version was damaged by an interrupted overwrite"
        assert got_fresh is None, "a half-written object became visible"
    return got_old, got_fresh


def _stray_tmp_files(datadir):
    tmp = os.path.join(datadir, ".rdmastor.sys", "tmp")
    found = []
    for dirpath, _, filenames in os.walk(tmp):
        found.extend(os.path.join(dirpath, f) for f in filenames)
        if len(found) > 1000:
            break
    return found


def _bytes_on_disk(datadir):
    total = 0
    for dirpath, _, filenames in os.walk(datadir):
        for f in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


@pytest.mark.parametrize("point", ["early", "middle", "body-complete"])
def test_kill_during_put(server_factory, point):
    srv = server_factory(name=f"crash-{point}")
    client = make_client(srv)
    bucket = unique_bucket("crash")
    client.create_bucket(Bucket=bucket)
    old = seeded_bytes(3 * MiB + 11, seed=1)
    client.put_object(Bucket=bucket, Key="existing", Body=old)
    client.put_object(Bucket=bucket, Key="bystander", Body=b"unrelated object")

    # an in-progress multipart upload: part 1 complete, part 2 cut off
    uid = client.create_multipart_upload(Bucket=bucket, Key="multi")["UploadId"]
    part1 = seeded_bytes(5 * MiB, seed=2)
    etag1 = client.upload_part(Bucket=bucket, Key="multi", UploadId=uid, PartNumber=1,
                               Body=part1)["ETag"]

    cut = {"early": 1 * MiB, "middle": BIG // 2, "body-complete": BIG}[point]
    overwrite = PartialPut(srv, f"/{bucket}/existing", BIG, seed=10)
    fresh = PartialPut(srv, f"/{bucket}/fresh", BIG, seed=11)
    part2 = PartialPut(srv, f"/{bucket}/multi", 8 * MiB, seed=12,
                       query=[("partNumber", "2"), ("uploadId", uid)])
    try:
        overwrite.send_until(cut)
        fresh.send_until(cut)
        part2.send_until(min(cut, 4 * MiB))
        if point != "body-complete":
            time.sleep(0.3)  # let the server consume what was sent
        srv.kill()
    finally:
        overwrite.close()
        fresh.close()
        part2.close()

    srv.start(port=srv.port)
    client = make_client(srv)

    # the server may or may not have committed before it died: old or new, never a mix
    got_old, got_fresh = check_interrupted_puts(client, bucket, point, old, BIG)
    assert client.get_object(Bucket=bucket, Key="bystander")["Body"].read() == b"unrelated object"

    # listing shows only whole objects, with the sizes they really have
    listing = {o["Key"]: o["Size"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])}
    expected = {"existing": len(got_old), "bystander": 16}
    if got_fresh is not None:
        expected["fresh"] = len(got_fresh)
    assert listing == expected

    # the multipart upload either survived with exactly part 1, or is gone; never a partial part 2
    upload_alive = True
    try:
        parts = client.list_parts(Bucket=bucket, Key="multi", UploadId=uid).get("Parts", [])
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
        upload_alive = False
    if upload_alive:
        assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts] == [(1, 5 * MiB, etag1)], parts
        client.complete_multipart_upload(Bucket=bucket, Key="multi", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": etag1}]})
        assert client.get_object(Bucket=bucket, Key="multi")["Body"].read() == part1
    assert _get_or_none(client, bucket, "multi") in (None, part1)

    # the server cleaned its temp area at start, and no large partial data was left anywhere
    assert _stray_tmp_files(srv.datadir) == []
    live = sum(len(x) for x in (got_old, got_fresh, b"unrelated object") if x is not None)
    live += 5 * MiB if upload_alive else 0  # the part, still held by the upload or the object
    on_disk = _bytes_on_disk(srv.datadir)
    assert on_disk < live + 16 * MiB, f"{on_disk} bytes on disk for {live} bytes of live data"

    # and it works normally afterwards
    client.put_object(Bucket=bucket, Key="existing", Body=b"after restart")
    assert client.get_object(Bucket=bucket, Key="existing")["Body"].read() == b"after restart"


def test_kill_during_boto3_put_thread(server_factory):
    """The same with a real client in a thread, killed at a time rather than a byte count."""
    import threading

    srv = server_factory(name="crash-thread")
    client = make_client(srv)
    bucket = unique_bucket("crash")
    client.create_bucket(Bucket=bucket)
    old = seeded_bytes(MiB, seed=3)
    client.put_object(Bucket=bucket, Key="obj", Body=old)
    big = seeded_bytes(64 * MiB, seed=4)
    errors = []

    def writer():
        try:
            make_client(srv, read_timeout=30).put_object(Bucket=bucket, Key="obj", Body=big)
        except Exception as e:  # expected: the server dies
            errors.append(e)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    time.sleep(0.4)
    srv.kill()
    t.join(timeout=60)
    assert not t.is_alive()
    srv.start(port=srv.port)
    got = make_client(srv).get_object(Bucket=bucket, Key="obj")["Body"].read()
    assert got == old or got == big
    assert _stray_tmp_files(srv.datadir) == []


def test_restart_keeps_everything(server_factory):
    srv = server_factory(name="restart")
    client = make_client(srv)
    bucket = unique_bucket("keep")
    client.create_bucket(Bucket=bucket)
    objs = {f"k/{i}": seeded_bytes(1000 * i + 1, seed=i) for i in range(10)}
    for k, v in objs.items():
        client.put_object(Bucket=bucket, Key=k, Body=v, Metadata={"i": k})
    srv.stop()  # graceful this time
    srv.start(port=srv.port)
    client = make_client(srv)
    for k, v in objs.items():
        got = client.get_object(Bucket=bucket, Key=k)
        assert got["Body"].read() == v
        assert got["Metadata"] == {"i": k}
    assert bucket in [b["Name"] for b in client.list_buckets()["Buckets"]]
