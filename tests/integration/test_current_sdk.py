"""The current AWS SDK's defaults: boto3 >= 1.36 computes a CRC32 for every upload by default
(x-amz-sdk-checksum-algorithm + x-amz-checksum-crc32; over HTTPS as an aws-chunked trailer with
STREAMING-UNSIGNED-PAYLOAD-TRAILER, over plain HTTP as a header) and validates checksums on GET.

Debian 12's python3-boto3 (1.26) predates that, so this test runs a script under another
interpreter that has a newer boto3 (the image's pyenv python); without one it skips, saying so.
The trailer framing itself is covered by tests/s3/aws_chunked_test.cc (a body captured from
botocore) and test_negative.py (hand-built aws-chunked bodies).
"""
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import _clean_env

SCRIPT = r'''
import base64, hashlib, json, os, sys, zlib
import boto3
from botocore.config import Config
endpoint, ak, sk, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
out = {"boto3": boto3.__version__}
s3.create_bucket(Bucket=bucket)
data = os.urandom(3 * 1024 * 1024 + 17)
crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
r = s3.put_object(Bucket=bucket, Key="trailer", Body=data)
out["put_crc32"] = r.get("ChecksumCRC32")
out["expected_crc32"] = crc
out["put_etag"] = r["ETag"]
out["md5"] = hashlib.md5(data).hexdigest()
g = s3.get_object(Bucket=bucket, Key="trailer", ChecksumMode="ENABLED")
out["get_crc32"] = g.get("ChecksumCRC32")
out["get_same"] = g["Body"].read() == data
path = sys.argv[5]
with open(path, "wb") as f:
    f.write(os.urandom(12 * 1024 * 1024))
s3.upload_file(path, bucket, "multi",
               Config=boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20,
                                                       multipart_chunksize=5 << 20))
h = s3.head_object(Bucket=bucket, Key="multi")
out["multi_etag"] = h["ETag"]
dl = path + ".dl"
s3.download_file(bucket, "multi", dl)
out["multi_same"] = open(dl, "rb").read() == open(path, "rb").read()
print(json.dumps(out))
'''


def _newer_boto3_python():
    candidates = [shutil.which("python3", path=os.environ.get("PATH", ""))]
    candidates += sorted(glob.glob("/root/.pyenv/versions/*/bin/python3"))
    for py in candidates:
        if not py or os.path.realpath(py) == os.path.realpath("/usr/bin/python3"):
            continue
        try:
            v = subprocess.run([py, "-c", "import boto3; print(boto3.__version__)"],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if v.returncode != 0:
            continue
        major, minor = (int(x) for x in v.stdout.strip().split(".")[:2])
        if (major, minor) >= (1, 36):
            return py
    return None


def test_default_checksums_from_current_boto3(server, tmp_path):
    py = _newer_boto3_python()
    if py is None:
        pytest.skip("no interpreter with boto3 >= 1.36 on this machine; Debian's boto3 1.26 "
                    "does not send STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    script = tmp_path / "sdk.py"
    script.write_text(SCRIPT)
    env = _clean_env()
    r = subprocess.run([py, str(script), server.endpoint, server.access_key, server.secret_key,
                        "current-sdk", str(tmp_path / "multi.bin")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["put_crc32"] == out["expected_crc32"]
    assert out["get_crc32"] == out["expected_crc32"]
    assert out["put_etag"] == '"%s"' % out["md5"]
    assert out["get_same"] is True
    assert out["multi_etag"].endswith('-3"')
    assert out["multi_same"] is True
