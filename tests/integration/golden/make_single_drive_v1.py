"""Writes single_drive_v1.tar.gz: a drive as the retired single-drive object layer (DriveStore,
before issue 13 made one drive a one-drive erasure set) left it. test_single_drive_upgrade.py
starts today's server on a copy and reads everything back.

It was made once with the server binary of commit 339d870 (the last with DriveStore):
    RDMASTOR_BIN=/path/to/old/rdmastor /usr/bin/python3 tests/integration/golden/make_single_drive_v1.py
Today's binary writes the erasure layout, so running it again would not make the same fixture.
The objects and their expected contents are described by FIXTURE (shared with the test).
"""
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from single_drive_fixture import FIXTURE, body_of  # noqa: E402
from conftest import Server  # noqa: E402


def main():
    srv = Server(name="fixture").start()
    try:
        c = srv.client()
        for b in FIXTURE["buckets"]:
            c.create_bucket(Bucket=b)
        c.put_bucket_tagging(Bucket=FIXTURE["tagged_bucket"],
                             Tagging={"TagSet": [{"Key": k, "Value": v}
                                                 for k, v in FIXTURE["bucket_tags"].items()]})
        for o in FIXTURE["objects"]:
            kw = {}
            if o.get("content_type"):
                kw["ContentType"] = o["content_type"]
            if o.get("metadata"):
                kw["Metadata"] = o["metadata"]
            if o.get("tags"):
                kw["Tagging"] = "&".join(f"{k}={v}" for k, v in o["tags"].items())
            if o.get("parts"):
                up = c.create_multipart_upload(Bucket=o["bucket"], Key=o["key"], **kw)
                done = []
                for i, size in enumerate(o["parts"], 1):
                    r = c.upload_part(Bucket=o["bucket"], Key=o["key"], UploadId=up["UploadId"],
                                      PartNumber=i, Body=body_of(o["key"] + str(i), size))
                    done.append({"PartNumber": i, "ETag": r["ETag"]})
                c.complete_multipart_upload(Bucket=o["bucket"], Key=o["key"],
                                            UploadId=up["UploadId"],
                                            MultipartUpload={"Parts": done})
            else:
                c.put_object(Bucket=o["bucket"], Key=o["key"], Body=body_of(o["key"], o["size"]),
                             **kw)
        p = FIXTURE["pending"]
        up = c.create_multipart_upload(Bucket=p["bucket"], Key=p["key"])
        for i, size in enumerate(p["parts"], 1):
            c.upload_part(Bucket=p["bucket"], Key=p["key"], UploadId=up["UploadId"],
                          PartNumber=i, Body=body_of(p["key"] + str(i), size))
    finally:
        srv.stop()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "single_drive_v1.tar.gz")
    with tarfile.open(out, "w:gz") as t:
        t.add(srv.datadir, arcname="drive")
    srv.cleanup()
    print(out)


if __name__ == "__main__":
    main()
