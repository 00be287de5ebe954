"""Issue 13: the storage layer's syncs are counted (rdmastor_storage_syncs_total{kind}) and a PUT
costs at most two per drive (the commit's two group-commit barriers), on one drive and on four
(EC 2+2), for an inline and a large object; concurrent PUTs share their syncs."""

import concurrent.futures
import os
import shutil
import tempfile
import threading

import pytest

from conftest import make_client, scrape, seeded_bytes, unique_bucket

MiB = 1 << 20


def syncs(srv):
    m = scrape(srv)
    kinds = {k: v for k, v in m.items() if k.startswith("rdmastor_storage_syncs_total{")}
    assert set(kinds) == {f'rdmastor_storage_syncs_total{{kind="{k}"}}' for k in ("file", "dir", "fs")}, kinds
    return sum(kinds.values())


@pytest.mark.parametrize("drives", [1, 4])
def test_syncs_per_put(server_factory, drives):
    base = tempfile.mkdtemp(prefix="rdmastor-syncs-", dir="/tmp")
    try:
        _check_syncs(server_factory, base, drives)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _check_syncs(server_factory, base, drives):
    dirs = [os.path.join(base, f"d{i}") for i in range(drives)]
    srv = server_factory(name=f"syncs{drives}", data_dirs=dirs,
                         env={"MINIO_PROMETHEUS_AUTH_TYPE": "public",
                              "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
    client = make_client(srv)
    bucket = unique_bucket("syncs")
    client.create_bucket(Bucket=bucket)
    for size in (3000, MiB + 5):
        body = seeded_bytes(size, seed=size)
        for round_ in range(3):  # fresh, then overwrites
            before = syncs(srv)
            client.put_object(Bucket=bucket, Key=f"k{size}", Body=body)
            used = syncs(srv) - before
            assert 1 <= used <= 2 * drives, (size, round_, used)
        assert client.get_object(Bucket=bucket, Key=f"k{size}")["Body"].read() == body

    # 16 PUTs started together share barriers: fewer syncs than 2 per drive each.
    body = seeded_bytes(64 * 1024, seed=7)
    clients = [make_client(srv) for _ in range(16)]
    start = threading.Barrier(16, timeout=30)

    def put(i):
        start.wait()
        clients[i].put_object(Bucket=bucket, Key=f"c{i}", Body=body)

    before = syncs(srv)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(16)))
    used = syncs(srv) - before
    assert 1 <= used < 16 * 2 * drives, used
