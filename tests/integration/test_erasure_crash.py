"""kill -9 an erasure-coded server (4 drives, EC 2+2) during a large PUT, at points chosen by the
bytes sent: early, in the middle, and with the whole body sent (just before or at the commit).
After a restart the previous version or nothing is visible, never a partial object; after
`rdmastor admin heal` no drive holds stray staging data or data directories no metadata names.
Same approach as test_crash.py (single drive), whose PartialPut this reuses."""

import glob
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import admin_heal, make_client, seeded_bytes, unique_bucket
from test_crash import PartialPut, check_interrupted_puts

MiB = 1 << 20
BIG = 96 * MiB


def _stray(d):
    """Files in the drive's staging area, and data directories no metadata file names."""
    found = []
    for dirpath, _, files in os.walk(os.path.join(d, ".rdmastor.sys", "tmp")):
        found += [os.path.join(dirpath, f) for f in files]
    for data_dir in glob.glob(os.path.join(d, "*", "**", ".rdmastor.data.*"), recursive=True):
        meta = os.path.join(os.path.dirname(data_dir), ".rdmastor.meta")
        try:
            with open(meta) as f:
                named = {v["data_dir"] for v in json.load(f)["versions"]}
        except (OSError, ValueError, KeyError):
            named = set()
        if os.path.basename(data_dir) not in named:
            found.append(data_dir)
    return found


@pytest.mark.parametrize("point", ["early", "middle", "body-complete"])
def test_kill_during_erasure_put(server_factory, point):
    base = tempfile.mkdtemp(prefix="rdmastor-ecc-", dir="/tmp")
    dirs = [os.path.join(base, f"d{i}") for i in range(1, 5)]
    try:
        srv = server_factory(name=f"ec-crash-{point}", data_dirs=dirs,
                             env={"RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
        client = make_client(srv)
        bucket = unique_bucket("eccrash")
        client.create_bucket(Bucket=bucket)
        old = seeded_bytes(3 * MiB + 11, seed=1)
        client.put_object(Bucket=bucket, Key="existing", Body=old)
        client.put_object(Bucket=bucket, Key="small", Body=b"inline object")

        cut = {"early": 2 * MiB, "middle": BIG // 2, "body-complete": BIG}[point]
        overwrite = PartialPut(srv, f"/{bucket}/existing", BIG, seed=10)
        fresh = PartialPut(srv, f"/{bucket}/fresh", BIG, seed=11)
        try:
            overwrite.send_until(cut)
            fresh.send_until(cut)
            if point != "body-complete":
                time.sleep(0.3)  # let the server encode what was sent
            srv.kill()
        finally:
            overwrite.close()
            fresh.close()

        srv.start(port=srv.port)
        client = make_client(srv)
        got_old, got_fresh = check_interrupted_puts(client, bucket, point, old, BIG)
        assert client.get_object(Bucket=bucket, Key="small")["Body"].read() == b"inline object"
        listing = {o["Key"]: o["Size"]
                   for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])}
        expected = {"existing": len(got_old), "small": 13}
        if got_fresh is not None:
            expected["fresh"] = len(got_fresh)
        assert listing == expected

        res = admin_heal(srv)
        assert res.returncode == 0 and res.counts["failed"] == 0, res
        for d in dirs:
            assert _stray(d) == [], d
        # Nothing large is left anywhere: about the live data's shards (x2 for EC 2+2).
        live = sum(len(x) for x in (got_old, got_fresh) if x is not None)
        on_disk = sum(os.path.getsize(f) for d in dirs
                      for f in glob.glob(os.path.join(d, "**", "*"), recursive=True)
                      if os.path.isfile(f))
        assert on_disk < 2 * live + 8 * MiB, f"{on_disk} bytes on disk for {live} live bytes"
        client.put_object(Bucket=bucket, Key="existing", Body=b"after restart")
        assert client.get_object(Bucket=bucket, Key="existing")["Body"].read() == b"after restart"
    finally:
        shutil.rmtree(base, ignore_errors=True)
