"""A large GET survives an overwrite of its key (issue 10 item 5).

A GET reads a remote drive's shard in pieces, one peer call each. The serving node used to open
the shard file by path for every piece, so an overwrite that committed meanwhile (retiring the old
version's data directory) made the next piece fail and the client got a truncated body
(IncompleteRead). Now the first piece asks the serving node to keep the file open and later
pieces name its handle, so the GET streams the version it started with to the end.

2 nodes x 4 drives, EC:2 (every object has shards on the other node), inter-node RDMA off and
on (soft fabric): a 64 MiB GET is read slowly while the key is overwritten, and must return the
old bytes whole; a GET after it returns the new bytes.
"""

import threading
import time

import pytest

from cluster_util import Cluster, get_bytes, sha
from conftest import seeded_bytes

MiB = 1 << 20
SIZE = 64 * MiB


@pytest.mark.parametrize("internode", ["off", "on"])
def test_large_get_survives_overwrite(internode):
    env = {"MINIO_STORAGE_CLASS_STANDARD": "EC:2", "MINIO_RDMA_INTERNODE": internode,
           "MINIO_RDMA_FABRIC": "soft"}
    c = Cluster(nodes=2, drives=4, env_extra=env)
    try:
        c.start()
        s3 = c.client(0, connect_timeout=30, read_timeout=60)
        s3.create_bucket(Bucket="over")
        old = seeded_bytes(SIZE, seed=41)
        new = seeded_bytes(SIZE, seed=42)
        s3.put_object(Bucket="over", Key="big", Body=old)

        r = s3.get_object(Bucket="over", Key="big")
        body = r["Body"]
        got = [body.read(MiB)]  # the GET has started streaming the old version
        # The overwrite commits through the other node while the GET is still going.
        done = {}

        def overwrite():
            try:
                c.client(1, connect_timeout=30, read_timeout=60).put_object(
                    Bucket="over", Key="big", Body=new)
                done["ok"] = True
            except Exception as e:  # reported below
                done["error"] = e

        t = threading.Thread(target=overwrite)
        t.start()
        t.join(timeout=50)
        assert not t.is_alive(), "the overwrite did not finish"
        assert done.get("ok"), done
        # The rest of the old version: slowly enough that most pieces are read after the commit.
        deadline = time.monotonic() + 50
        for _ in range(SIZE // MiB + 2):
            chunk = body.read(MiB)
            if not chunk:
                break
            got.append(chunk)
            assert time.monotonic() < deadline, "GET too slow"
        data = b"".join(got)
        assert len(data) == SIZE, f"GET truncated at {len(data)} of {SIZE} bytes"
        assert sha(data) == sha(old)
        # The key now holds the new version, through either node.
        assert sha(get_bytes(c.client(1, connect_timeout=30, read_timeout=60), "over", "big")) \
            == sha(new)
    finally:
        c.cleanup()
