"""GET without user-space copies (one drive, plain HTTP): whole stripes go from the page cache to
the socket through a pipe, checked against their bitrot hash while the pipe holds them
(docs/architecture.md, "what is copied where"). rdmastor_s3_get_spliced_bytes_total counts the
bytes sent that way, so each case below says how many bytes must take the new path, and the
content is compared byte for byte:
- whole objects, Range requests (aligned, starting mid-stripe, suffix, one byte), partNumber of
  a multipart object, HEAD;
- a shard file corrupted on disk: the stripes before the bad one arrive, the bad stripe's bytes
  never do (the response is cut short), and a range starting at the bad stripe sends nothing;
- 4 drives (EC 2+2): whole stripes are spliced from the two data shards' files; a block
  corrupted on a data drive is never sent: that stripe is rebuilt from parity and copied, the
  others spliced, and the client gets every byte right;
- HTTPS cannot splice: the same GET over TLS sends the same bytes and splices none.
"""

import glob
import json
import os

import pytest
import requests

from conftest import Server, erasure4, parse_raw_response, raw_exchange, scrape, seeded_bytes
from test_tls import TlsServer, tls_client
from tls_util import make_ca, make_certs_dir

MiB = 1 << 20
HASH = 8  # the bitrot hash before each stripe's block in a one-drive shard file
ENV = {"MINIO_PROMETHEUS_AUTH_TYPE": "public"}
METRIC = "rdmastor_s3_get_spliced_bytes_total"


@pytest.fixture(scope="module")
def srv():
    s = Server("zerocopy", env=ENV)
    try:
        s.start()
        yield s
    finally:
        s.cleanup()


def spliced(s):
    return scrape(s).get(METRIC, 0)


def get(c, bucket, key, **kw):
    r = c.get_object(Bucket=bucket, Key=key, **kw)
    return r, r["Body"].read()


def test_whole_objects_ranges_and_parts_take_the_zero_copy_path(srv):
    c = srv.client()
    c.create_bucket(Bucket="zc-get")
    objs = {}
    for size in (MiB, 3 * MiB + 17, 10 * MiB):
        objs[size] = seeded_bytes(size, seed=size)
        c.put_object(Bucket="zc-get", Key=f"o{size}", Body=objs[size])

    # Whole objects: every stripe (the last one too, short or not) goes through the pipe.
    for size, body in objs.items():
        before = spliced(srv)
        _, got = get(c, "zc-get", f"o{size}")
        assert got == body
        assert spliced(srv) - before == size

    body = objs[3 * MiB + 17]
    size = len(body)
    # (Range, bytes that must be spliced): the bytes before the first stripe start are copied,
    # and a range ending inside a stripe copies that stripe's part.
    cases = [
        (f"bytes={MiB}-{2 * MiB - 1}", MiB),            # exactly stripe 1
        (f"bytes=100-{3 * MiB}", 2 * MiB),             # mid-stripe start: stripes 1 and 2 whole
        (f"bytes={MiB}-", 2 * MiB + 17),               # stripe 1 to the end (short last stripe)
        ("bytes=-5", 0),                               # suffix inside the last stripe
        ("bytes=0-0", 0),
    ]
    for rng, want_spliced in cases:
        before = spliced(srv)
        r, got = get(c, "zc-get", f"o{size}", Range=rng)
        first, last = (int(x) for x in r["ContentRange"].split()[1].split("/")[0].split("-"))
        assert got == body[first:last + 1], rng
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert spliced(srv) - before == want_spliced, rng

    # HEAD sends no body.
    before = spliced(srv)
    h = c.head_object(Bucket="zc-get", Key=f"o{size}")
    assert h["ContentLength"] == size and spliced(srv) == before

    # partNumber of a multipart object: each part's shard file starts at a stripe.
    parts = [seeded_bytes(5 * MiB + 3, seed=7), seeded_bytes(MiB + 5, seed=8)]
    up = c.create_multipart_upload(Bucket="zc-get", Key="mp")
    etags = [c.upload_part(Bucket="zc-get", Key="mp", UploadId=up["UploadId"], PartNumber=i + 1,
                           Body=p)["ETag"] for i, p in enumerate(parts)]
    c.complete_multipart_upload(
        Bucket="zc-get", Key="mp", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]})
    for n, p in enumerate(parts, 1):
        before = spliced(srv)
        r, got = get(c, "zc-get", "mp", PartNumber=n)
        assert got == p and r["PartsCount"] == 2
        assert spliced(srv) - before == len(p)
    before = spliced(srv)
    _, got = get(c, "zc-get", "mp")
    assert got == parts[0] + parts[1]
    assert spliced(srv) - before == len(parts[0]) + len(parts[1])
    # A range across the part boundary: the first part's short last stripe is copied up to the
    # end of the range, the second part from its start spliced.
    before = spliced(srv)
    r, got = get(c, "zc-get", "mp", Range=f"bytes={5 * MiB - 10}-")
    assert got == (parts[0] + parts[1])[5 * MiB - 10:]
    assert spliced(srv) - before == 3 + len(parts[1])


def raw_get(s, url, extra=""):
    """GET `url` (presigned; `extra` header lines) on a fresh connection; (status, headers, body
    bytes received). The server cuts the connection short when a stripe fails its check."""
    path = url.split(s.address, 1)[1]
    req = (f"GET {path} HTTP/1.1\r\nHost: {s.address}\r\n{extra}"
           "Connection: close\r\n\r\n").encode()
    return parse_raw_response(raw_exchange(s, req, timeout=10, read_limit=16 * MiB))


def test_corrupted_stripe_is_never_sent(srv):
    c = srv.client()
    c.create_bucket(Bucket="zcrot")
    body = seeded_bytes(4 * MiB, seed=99)
    c.put_object(Bucket="zcrot", Key="x", Body=body)
    _, got = get(c, "zcrot", "x")  # in the page cache, checked, sent
    assert got == body
    files = glob.glob(os.path.join(srv.datadir, "zcrot", "x", ".rdmastor.data.*", "part.1"))
    assert len(files) == 1, files
    with open(files[0], "r+b") as f:  # one byte of stripe 2's block (the page cache's copy too)
        at = 2 * (HASH + MiB) + HASH + 1000
        f.seek(at)
        old = f.read(1)
        f.seek(at)
        f.write(bytes([old[0] ^ 0xFF]))

    url = c.generate_presigned_url("get_object", Params={"Bucket": "zcrot", "Key": "x"})
    before = spliced(srv)
    status, headers, got = raw_get(srv, url)
    assert status == 200 and dict(headers)["Content-Length"] == str(4 * MiB)
    # Stripes 0 and 1 arrive whole; not one byte of stripe 2 does.
    assert len(got) == 2 * MiB and got == body[:2 * MiB]
    assert spliced(srv) - before == 2 * MiB

    # A range starting at the bad stripe: the head goes out, then nothing.
    status, headers, got = raw_get(srv, url, extra=f"Range: bytes={2 * MiB}-\r\n")
    assert status == 206 and got == b""
    # The stripe after the bad one is still good, and still spliced.
    before = spliced(srv)
    r, got = get(c, "zcrot", "x", Range=f"bytes={3 * MiB}-")
    assert got == body[3 * MiB:] and spliced(srv) - before == MiB
    assert srv.alive()


def test_https_gets_copy_and_send_the_same_bytes(tmp_path):
    ca = make_ca(tmp_path)
    certs = make_certs_dir(tmp_path, ca)
    s = TlsServer(ca["pem"], name="zctls", env=ENV, args=["--certs-dir", certs])
    try:
        s.start()
        c = tls_client(s, ca["pem"])
        c.create_bucket(Bucket="zctls")
        body = seeded_bytes(3 * MiB + 1, seed=5)
        c.put_object(Bucket="zctls", Key="x", Body=body)
        _, got = get(c, "zctls", "x")
        assert got == body
        _, got = get(c, "zctls", "x", Range=f"bytes={MiB}-")
        assert got == body[MiB:]
        m = requests.get(s.url("/minio/v2/metrics/node"), timeout=10, verify=ca["pem"]).text
        assert f"\n{METRIC} 0" in m or METRIC not in m
    finally:
        s.cleanup()


def test_erasure_coded_gets_splice_and_a_corrupted_block_is_rebuilt():
    with erasure4("zc4", env=ENV) as s:
        c = s.client()
        c.create_bucket(Bucket="zc4")
        body = seeded_bytes(3 * MiB + 5, seed=31)
        c.put_object(Bucket="zc4", Key="x", Body=body)
        before = spliced(s)
        _, got = get(c, "zc4", "x")
        assert got == body and spliced(s) - before == len(body)
        before = spliced(s)
        r, got = get(c, "zc4", "x", Range=f"bytes=7-{2 * MiB + 2}")
        assert got == body[7:2 * MiB + 3] and spliced(s) - before == MiB  # stripe 1 only

        # One byte of stripe 1's block on the drive holding data shard 0 (EC 2+2: a stripe's
        # block is 512 KiB; a shard file is [hash][block] per stripe).
        for d in s.data_dirs:
            with open(os.path.join(d, "zc4", "x", ".rdmastor.meta")) as f:
                if json.load(f)["versions"][0]["erasure"]["index"] == 0:
                    break
        else:
            pytest.fail("no drive holds data shard 0")
        part = glob.glob(os.path.join(d, "zc4", "x", ".rdmastor.data.*", "part.1"))
        assert len(part) == 1, part
        with open(part[0], "r+b") as f:
            at = (HASH + MiB // 2) + HASH + 77
            f.seek(at)
            old = f.read(1)
            f.seek(at)
            f.write(bytes([old[0] ^ 0x55]))
        before = spliced(s)
        _, got = get(c, "zc4", "x")
        assert got == body  # stripe 1 rebuilt from parity, copied; stripes 0, 2, 3 spliced
        assert spliced(s) - before == len(body) - MiB
