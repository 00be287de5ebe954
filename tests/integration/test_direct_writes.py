"""Issue 39 item 1: shard files are written with direct I/O (MINIO_API_ODIRECT, on by default), so
a PUT leaves them out of the page cache, and every body shape the erasure writer reads in place
(declared, of unknown length, multipart, sizes around stripe and 4 KiB boundaries) reads back
whole; with MINIO_API_ODIRECT=off the same PUTs land in the page cache (the check discriminates).

Residency is read with util-linux's fincore. The drives live on a disk-backed file system (/var/tmp
or /tmp, whichever is not tmpfs): tmpfs keeps every file in memory, so there is nothing to see."""

import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import (UNSIGNED, free_port, http_send, make_client, md5_hex, seeded_bytes, sign_v4,
                      unique_bucket)

MiB = 1 << 20
# 2+2 shards of these bodies are part files (above the 128 KiB inline limit): one stripe, one
# stripe and a few bytes, several stripes ending mid-block, exactly two stripes.
SIZES = [MiB, MiB + 5, 3 * MiB + 12345, 2 * MiB]


def _disk_dir():
    for base in ("/var/tmp", "/tmp"):
        st = os.statvfs(base)
        cp = subprocess.run(["stat", "-f", "-c", "%T", base], capture_output=True, text=True)
        if cp.returncode == 0 and cp.stdout.strip() not in ("tmpfs", "ramfs") and st.f_bavail:
            return base
    pytest.skip("no disk-backed directory (/var/tmp and /tmp are tmpfs): page-cache residency "
                "cannot tell direct from buffered writes there")


def _shard_files(dirs, bucket):
    out = []
    for d in dirs:
        for root, _, files in os.walk(os.path.join(d, bucket)):
            out += [os.path.join(root, f) for f in files if f.startswith("part.")]
    return out


def _resident(path):
    cp = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                        capture_output=True, text=True, check=True)
    return int(cp.stdout.strip())


def _chunked_put(srv, bucket, key, body, piece=100_000):
    """PUT with Transfer-Encoding: chunked and no length: the writer learns the size at the end."""
    path = f"/{bucket}/{key}"
    headers = {"host": srv.address, "transfer-encoding": "chunked"}
    hdrs, _ = sign_v4("PUT", path, [], headers, UNSIGNED, srv.access_key, srv.secret_key)

    def chunks():
        for i in range(0, len(body), piece):
            part = body[i:i + piece]
            yield b"%x\r\n" % len(part) + part + b"\r\n"
        yield b"0\r\n\r\n"

    r = http_send(srv, "PUT", path, hdrs, chunks())
    assert r.status == 200, (r.status, r.body)


def _put_all(srv, bucket):
    client = make_client(srv)
    client.create_bucket(Bucket=bucket)
    bodies = {}
    for size in SIZES:
        bodies[f"k{size}"] = seeded_bytes(size, seed=size)
        client.put_object(Bucket=bucket, Key=f"k{size}", Body=bodies[f"k{size}"])
    bodies["chunked"] = seeded_bytes(2 * MiB + 777, seed=3)
    _chunked_put(srv, bucket, "chunked", bodies["chunked"])
    # Multipart: each part's shard carries its own fsync after the direct write.
    mp = client.create_multipart_upload(Bucket=bucket, Key="mp")
    parts, whole = [], b""
    for n, size in ((1, 5 * MiB), (2, MiB + 3)):
        data = seeded_bytes(size, seed=100 + n)
        whole += data
        etag = client.upload_part(Bucket=bucket, Key="mp", UploadId=mp["UploadId"], PartNumber=n,
                                  Body=data)["ETag"]
        parts.append({"PartNumber": n, "ETag": etag})
    client.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=mp["UploadId"],
                                     MultipartUpload={"Parts": parts})
    bodies["mp"] = whole
    return client, bodies


def _check_reads(client, bucket, bodies):
    for key, body in bodies.items():
        got = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert len(got) == len(body) and md5_hex(got) == md5_hex(body), key


@pytest.mark.parametrize("odirect", ["on", "off"])
def test_shards_skip_the_page_cache(server_factory, odirect):
    base = tempfile.mkdtemp(prefix="rdmastor-odirect-", dir=_disk_dir())
    try:
        dirs = [os.path.join(base, f"d{i}") for i in range(4)]
        srv = server_factory(name=f"odirect-{odirect}", data_dirs=dirs,
                             env={"MINIO_API_ODIRECT": odirect,
                                  "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
        bucket = unique_bucket("odirect")
        client, bodies = _put_all(srv, bucket)
        files = _shard_files(dirs, bucket)
        # 4 per single-part object, 4 per part of the multipart one.
        assert len(files) == 4 * (len(SIZES) + 1 + 2), files
        sizes = {f: os.path.getsize(f) for f in files}
        resident = {f: _resident(f) for f in files}
        if odirect == "on":
            # Only a file's last partial 4 KiB block goes through the page cache.
            assert all(resident[f] <= 4096 for f in files), resident
            assert "refuses direct I/O" not in open(srv.log_path, errors="replace").read()
        else:
            # Just written through the page cache: still there (23 of 24 files at least, in case
            # memory pressure took a page back meanwhile).
            held = [f for f in files if resident[f] >= sizes[f] - 4096]
            assert len(held) >= len(files) - 1, resident
        _check_reads(client, bucket, bodies)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_odirect_setting_is_checked(server_factory):
    srv = server_factory(start=False, env={"MINIO_API_ODIRECT": "maybe"})
    srv.port = free_port()
    cp = subprocess.run(srv.command(), env=srv.env(), capture_output=True, text=True, timeout=30)
    assert cp.returncode == 2, cp
    assert "MINIO_API_ODIRECT='maybe' is invalid: use on or off" in cp.stderr


@pytest.mark.parametrize("drives", [6, 16])
def test_odd_geometries_read_back(server_factory, drives):
    """EC 3+3 and 12+4: blocks of ceil(1 MiB / 3) and ceil(1 MiB / 12) bytes, so the frames never
    line up with 4 KiB and the writer carries a partial block from piece to piece."""
    base = tempfile.mkdtemp(prefix="rdmastor-odirect-geo-", dir="/tmp")
    try:
        srv = server_factory(name=f"geo{drives}",
                             data_dirs=[os.path.join(base, f"d{i}") for i in range(drives)],
                             env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
        client = make_client(srv)
        bucket = unique_bucket("geo")
        client.create_bucket(Bucket=bucket)
        for size in (4097, MiB - 1, MiB + 1, 3 * MiB + 7, 9 * MiB + 4096):
            body = seeded_bytes(size, seed=size)
            client.put_object(Bucket=bucket, Key=f"k{size}", Body=body)
            got = client.get_object(Bucket=bucket, Key=f"k{size}")["Body"].read()
            assert got == body, (drives, size)
    finally:
        shutil.rmtree(base, ignore_errors=True)
