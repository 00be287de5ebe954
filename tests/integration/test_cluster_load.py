"""Load on a 4-node loopback cluster (4 drives each: one erasure set of 16, EC 12+4).

32 concurrent clients (threads, each with its own boto3 clients), spread over the 4 nodes
(client t writes through node t mod 4 and reads through another node), run a mix for a bounded
time (LOAD_S, and at most MAX_OPS operations each):
  - PUTs of mixed sizes: 1 B .. 64 KiB (inline-sized), 64 KiB .. 1.5 MiB, 2 .. 8 MiB;
  - a few multipart uploads (5 MiB + up to 1 MiB), at most one per client;
  - GETs of the client's own earlier objects through its other node, checked (SHA-256);
  - DELETEs of its own objects through the other node (then a GET must say 404);
  - PUTs to 4 hot keys shared by all clients (concurrent writers to one key).
Zero errors are allowed. Afterwards every live object is read back through a node other than
the one that wrote it and compared (SHA-256); every deleted key is gone; each hot key holds one
complete version some client wrote to it; the listing (paginated, through another node) is
exactly the live keys.
"""

import random
import threading
import time

import pytest
from botocore.exceptions import ClientError

from cluster_util import NODES, Cluster, list_keys, meta_files, sha

CLIENTS = 32
LOAD_S = 20.0          # no op starts later
MAX_OPS = 300          # per client
KiB, MiB = 1 << 10, 1 << 20
HOT_KEYS = [f"hot/{i}" for i in range(4)]
BUCKET = "load"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(name="load-node")
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def payload(rnd, size):
    return rnd.randbytes(size)


class Client:
    def __init__(self, c, t):
        self.t = t
        self.w = t % NODES
        self.r = (self.w + 1 + (t // NODES) % (NODES - 1)) % NODES  # != w
        self.put_cl = c.client(self.w, read_timeout=120)
        self.get_cl = c.client(self.r, read_timeout=120)
        self.rnd = random.Random(1000 + t)
        self.live = {}       # key -> sha
        self.deleted = set()
        self.hot = []        # (key, sha) acknowledged
        self.errors = []
        self.ops = {"put": 0, "mpu": 0, "get": 0, "delete": 0, "hot": 0}
        self.bytes = 0
        self.mpu_done = False
        self.n = 0

    def size(self):
        x = self.rnd.random()
        if x < 0.55:
            return self.rnd.randint(1, 64 * KiB)
        if x < 0.9:
            return self.rnd.randint(64 * KiB, 3 * MiB // 2)
        return self.rnd.randint(2 * MiB, 8 * MiB)

    def one(self):
        x = self.rnd.random()
        self.n += 1
        if x < 0.03 and not self.mpu_done:
            self.mpu_done = True
            key = f"c{self.t}/mpu-{self.n}"
            parts = [payload(self.rnd, 5 * MiB), payload(self.rnd, self.rnd.randint(1, MiB))]
            up = self.put_cl.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            etags = [self.put_cl.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=i + 1,
                                             Body=p)["ETag"] for i, p in enumerate(parts)]
            self.put_cl.complete_multipart_upload(
                Bucket=BUCKET, Key=key, UploadId=up,
                MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                           for i, e in enumerate(etags)]})
            self.live[key] = sha(b"".join(parts))
            self.ops["mpu"] += 1
            self.bytes += sum(len(p) for p in parts)
        elif x < 0.20 and self.live:
            key = self.rnd.choice(sorted(self.live))
            body = self.get_cl.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            if sha(body) != self.live[key]:
                self.errors.append(("get mismatch", key, len(body)))
            self.ops["get"] += 1
            self.bytes += len(body)
        elif x < 0.25 and self.live:
            key = self.rnd.choice(sorted(self.live))
            self.get_cl.delete_object(Bucket=BUCKET, Key=key)
            del self.live[key]
            self.deleted.add(key)
            self.ops["delete"] += 1
        elif x < 0.30:
            key = self.rnd.choice(HOT_KEYS)
            data = payload(self.rnd, self.rnd.choice([100, 300 * KiB, MiB + 11]))
            self.put_cl.put_object(Bucket=BUCKET, Key=key, Body=data)
            self.hot.append((key, sha(data)))
            self.ops["hot"] += 1
            self.bytes += len(data)
        else:
            key = f"c{self.t}/{self.n}"
            data = payload(self.rnd, self.size())
            self.put_cl.put_object(Bucket=BUCKET, Key=key, Body=data)
            self.live[key] = sha(data)
            self.deleted.discard(key)
            self.ops["put"] += 1
            self.bytes += len(data)

    def run(self, start, deadline):
        start.wait(30)
        for _ in range(MAX_OPS):
            if time.monotonic() >= deadline:
                return
            try:
                self.one()
            except Exception as e:  # any error fails the test (recorded with the client)
                self.errors.append(("op", self.n, repr(e)[:300]))

    def verify(self):
        for key, digest in self.live.items():
            try:
                body = self.get_cl.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                if sha(body) != digest:
                    self.errors.append(("verify mismatch", key, len(body)))
            except Exception as e:
                self.errors.append(("verify", key, repr(e)[:300]))
        for key in self.deleted:
            try:
                self.get_cl.head_object(Bucket=BUCKET, Key=key)
                self.errors.append(("deleted key still there", key))
            except ClientError as e:
                if e.response["ResponseMetadata"]["HTTPStatusCode"] != 404:
                    self.errors.append(("deleted key", key, repr(e)[:300]))


def drive_metadata(c, key):
    """{sha256 of a drive's metadata file (12 hex): number of drives holding it} for key."""
    out = {}
    for path in meta_files(c, BUCKET, key, range(NODES)):
        with open(path, "rb") as f:
            d = sha(f.read())[:12]
        out[d] = out.get(d, 0) + 1
    return out


def run_threads(fn_per_client, clients, timeout):
    threads = [threading.Thread(target=fn_per_client, args=(cl,)) for cl in clients]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    assert not any(th.is_alive() for th in threads), "a client thread did not end in time"


def test_32_clients_mixed_load(cluster):
    c = cluster
    c.client(0).create_bucket(Bucket=BUCKET)
    clients = [Client(c, t) for t in range(CLIENTS)]
    start = threading.Event()
    t0 = time.monotonic()
    deadline = t0 + LOAD_S
    threads = [threading.Thread(target=cl.run, args=(start, deadline)) for cl in clients]
    for th in threads:
        th.start()
    start.set()
    for th in threads:
        th.join(LOAD_S + 150)
    assert not any(th.is_alive() for th in threads), "a client did not stop"
    load_s = time.monotonic() - t0
    errors = [(cl.t, e) for cl in clients for e in cl.errors]
    assert not errors, errors[:20]
    totals = {k: sum(cl.ops[k] for cl in clients) for k in clients[0].ops}
    moved = sum(cl.bytes for cl in clients)
    assert totals["put"] >= CLIENTS and totals["get"] > 0, totals

    t1 = time.monotonic()
    run_threads(lambda cl: cl.verify(), clients, timeout=300)
    errors = [(cl.t, e) for cl in clients for e in cl.errors]
    assert not errors, errors[:20]
    # Hot keys: one complete version some client wrote.
    written = {}
    for cl in clients:
        for key, digest in cl.hot:
            written.setdefault(key, set()).add(digest)
    reader = c.client(3)
    for key, digests in written.items():
        try:
            body = reader.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except ClientError as e:  # say how the drives disagree
            pytest.fail(f"GET {key}: {e}; per-drive metadata: {drive_metadata(c, key)}")
        assert sha(body) in digests, (key, drive_metadata(c, key))
    live = sorted([k for cl in clients for k in cl.live] + list(written))
    assert list_keys(c.client(2), BUCKET, page=500) == live
    print("load: %.1f s, ops %s, %.0f MiB moved (%.1f MiB/s); verified %d objects in %.1f s"
          % (load_s, totals, moved / MiB, moved / MiB / load_s, len(live),
             time.monotonic() - t1))
