"""Checksums as current SDKs use them (issue 14 item 12), on a 4-drive erasure server: CRC64NVME
beside CRC32/CRC32C/SHA1/SHA256, multipart COMPOSITE ("-N") and FULL_OBJECT (CRC combined from the
parts' CRCs) uploads, per-part checksums in ListParts / GetObjectAttributes / GET ?partNumber= and
checked at CompleteMultipartUpload, x-amz-checksum-mode, aws-chunked trailers, and AWS's errors.

Expected values come from independent implementations in this process (zlib, hashlib, Debian's
crcmod for CRC-32C and CRC-64/NVME, itself checked against the published check values). The SDK
checks are one script run under Debian's boto3 and a current boto3 (which computes CRC32 on its
own, and validates the GET body against the returned checksum); raw signed requests cover what an
old SDK cannot send (CRC64NVME, FULL_OBJECT, trailers).
"""
import base64
import hashlib
import json
import xml.etree.ElementTree as ET
import zlib

import crcmod
import pytest

from conftest import assert_s3_error, sdk_script_runner, seeded_bytes, signed_request
from test_conformance import _interpreters

S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

_crc32c = crcmod.mkCrcFun(0x11EDC6F41, initCrc=0, rev=True, xorOut=0xFFFFFFFF)
_crc64nvme = crcmod.mkCrcFun(0x1AD93D23594C93659, initCrc=0, rev=True, xorOut=0xFFFFFFFFFFFFFFFF)


def raw_digest(algo, data):
    algo = algo.upper()
    if algo == "CRC32":
        return (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    if algo == "CRC32C":
        return _crc32c(data).to_bytes(4, "big")
    if algo == "CRC64NVME":
        return _crc64nvme(data).to_bytes(8, "big")
    return hashlib.new(algo.lower(), data).digest()


def b64(algo, data):
    return base64.b64encode(raw_digest(algo, data)).decode()


def composite(algo, parts):
    return base64.b64encode(raw_digest(algo, b"".join(raw_digest(algo, p) for p in parts))).decode() \
        + f"-{len(parts)}"


def test_reference_implementations_match_published_vectors():
    # The catalogue check values and the values AWS's SDKs test with.
    assert _crc64nvme(b"123456789") == 0xAE8B14860A799888
    assert b64("CRC64NVME", b"Hello world") == "OOJZ0D8xKts="
    assert b64("CRC64NVME", b"abc") == "BeXKuz/B+us="
    assert _crc32c(b"123456789") == 0xE3069283
    assert b64("CRC32", b"123456789") == "y/Q5Jg=="


SMALL = b"123456789"
P1 = seeded_bytes(5 << 20, seed=12)
P2 = seeded_bytes((1 << 20) + 3, seed=13)
VALUES = {
    "small": {a: b64(a, SMALL) for a in ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256")},
    "p1": {a: b64(a, P1) for a in ("CRC32", "CRC32C", "CRC64NVME")},
    "p2": {a: b64(a, P2) for a in ("CRC32", "CRC32C", "CRC64NVME")},
    "whole": {a: b64(a, P1 + P2) for a in ("CRC32", "CRC32C", "CRC64NVME")},
}

SDK_SCRIPT = r'''
import random
import botocore
V = json.loads(@VALUES@)
model = s3.meta.service_model
CRC64 = "ChecksumCRC64NVME" in model.operation_model("PutObject").input_shape.members
TYPES = "ChecksumType" in model.operation_model("CreateMultipartUpload").input_shape.members
out["has crc64"] = CRC64
out["has types"] = TYPES

def seeded(size, seed):
    return random.Random(seed).randbytes(size)
SMALL = b"123456789"
P1, P2 = seeded(5 << 20, 12), seeded((1 << 20) + 3, 13)

err = err_message  # these checks compare AWS's messages too

def sums(r):
    return {k: v for k, v in r.items() if k.startswith("Checksum")}

bucket = prefix
s3.create_bucket(Bucket=bucket)

@section
def single_put():
    from botocore import httpchecksum
    computes = set(httpchecksum._CHECKSUM_CLS)  # CRC32C needs the CRT, which pip boto3 lacks
    for a in ["CRC32", "CRC32C", "SHA1", "SHA256"]:
        if a.lower() in computes:  # the SDK computes it
            put = s3.put_object(Bucket=bucket, Key="s-" + a, Body=SMALL, ChecksumAlgorithm=a)
        else:
            put = s3.put_object(Bucket=bucket, Key="s-" + a, Body=SMALL,
                                **{"Checksum" + a: V["small"][a]})
        out["put " + a] = put.get("Checksum" + a)
        out["put type " + a] = put.get("ChecksumType")
        h = s3.head_object(Bucket=bucket, Key="s-" + a, ChecksumMode="ENABLED")
        hh = h["ResponseMetadata"]["HTTPHeaders"]
        out["head " + a] = [hh.get("x-amz-checksum-" + a.lower()), hh.get("x-amz-checksum-type")]
    h = s3.head_object(Bucket=bucket, Key="s-CRC32")["ResponseMetadata"]["HTTPHeaders"]
    out["head without mode"] = sorted(k for k in h if k.startswith("x-amz-checksum"))
    if CRC64:
        put = s3.put_object(Bucket=bucket, Key="s-CRC64NVME", Body=SMALL,
                            ChecksumCRC64NVME=V["small"]["CRC64NVME"])
        out["put CRC64NVME"] = put.get("ChecksumCRC64NVME")
        g = s3.get_object(Bucket=bucket, Key="s-CRC64NVME", ChecksumMode="ENABLED")
        out["get single CRC64NVME"] = [g.get("ChecksumCRC64NVME"), g.get("ChecksumType"),
                                g["Body"].read() == SMALL]
        out["bad CRC64NVME"] = err(s3.put_object, Bucket=bucket, Key="bad64", Body=SMALL,
                                   ChecksumCRC64NVME="sosUhgp5mIg=")
        out["listed"] = [(o.get("ChecksumAlgorithm"), o.get("ChecksumType")) for o in
                         s3.list_objects_v2(Bucket=bucket, Prefix="s-CRC64")["Contents"]]
    out["bad CRC32"] = err(s3.put_object, Bucket=bucket, Key="bad32", Body=SMALL,
                           ChecksumCRC32="z/Q5Jg==")
    out["invalid CRC32"] = err(s3.put_object, Bucket=bucket, Key="bad32", Body=SMALL,
                               ChecksumCRC32="y/Q5Jh==")
    out["bad key absent"] = err(s3.head_object, Bucket=bucket, Key="bad32")[0]
    # Ranges: the whole object still carries the checksum, a part of it does not.
    r = s3.get_object(Bucket=bucket, Key="s-SHA256", Range="bytes=0-8", ChecksumMode="ENABLED")
    out["full range"] = r.get("ChecksumSHA256")
    r = s3.get_object(Bucket=bucket, Key="s-SHA256", Range="bytes=1-8", ChecksumMode="ENABLED")
    out["partial range"] = r.get("ChecksumSHA256")
    c = s3.copy_object(Bucket=bucket, Key="copy-sha256", ChecksumAlgorithm="SHA256",
                       CopySource={"Bucket": bucket, "Key": "s-CRC32"})
    out["copy with algorithm"] = c["CopyObjectResult"].get("ChecksumSHA256")
    h = s3.head_object(Bucket=bucket, Key="copy-sha256", ChecksumMode="ENABLED")
    out["copy head"] = h.get("ChecksumSHA256")

@section
def composite_mpu():
    key = "mpu-crc32c"
    cr = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32C")
    out["create"] = [cr.get("ChecksumAlgorithm"), cr.get("ChecksumType")]
    up = cr["UploadId"]
    parts = []
    for n, body in ((1, P1), (2, P2)):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=body,
                           ChecksumCRC32C=V["p%d" % n]["CRC32C"])
        parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]})
    out["part sums"] = [p["ChecksumCRC32C"] for p in parts]
    out["wrong algo part"] = err(s3.upload_part, Bucket=bucket, Key=key, UploadId=up,
                                 PartNumber=3, Body=b"x", ChecksumCRC32=V["small"]["CRC32"])
    lp = s3.list_parts(Bucket=bucket, Key=key, UploadId=up)
    out["list parts"] = [lp.get("ChecksumAlgorithm"), lp.get("ChecksumType"),
                         [p.get("ChecksumCRC32C") for p in lp["Parts"]]]
    lu = s3.list_multipart_uploads(Bucket=bucket, Prefix=key)["Uploads"]
    out["list uploads"] = [(u.get("ChecksumAlgorithm"), u.get("ChecksumType")) for u in lu]
    no_sums = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in parts]
    out["complete without part sums"] = err(
        s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
        MultipartUpload={"Parts": no_sums})
    wrong = [dict(parts[0]), dict(parts[1])]
    wrong[1]["ChecksumCRC32C"] = parts[0]["ChecksumCRC32C"]
    out["complete wrong part sum"] = err(
        s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
        MultipartUpload={"Parts": wrong})
    done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                        MultipartUpload={"Parts": parts})
    out["complete"] = [done.get("ChecksumCRC32C"), done.get("ChecksumType")]
    h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    out["head"] = [h.get("ChecksumCRC32C"), h["ResponseMetadata"]["HTTPHeaders"].get(
        "x-amz-checksum-type")]
    g = s3.get_object(Bucket=bucket, Key=key, PartNumber=2, ChecksumMode="ENABLED")
    out["get part 2"] = [g.get("ChecksumCRC32C"), g["Body"].read() == P2]
    a = s3.get_object_attributes(Bucket=bucket, Key=key,
                                 ObjectAttributes=["Checksum", "ObjectParts"])
    out["attributes"] = [a["Checksum"].get("ChecksumCRC32C"), a["Checksum"].get("ChecksumType"),
                         [p.get("ChecksumCRC32C") for p in a["ObjectParts"]["Parts"]]]

@section
def full_object_mpu():
    if not TYPES:
        return
    for algo in ("CRC32", "CRC64NVME"):
        key = "mpu-full-" + algo
        kw = {"ChecksumType": "FULL_OBJECT"} if algo == "CRC32" else {}
        cr = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algo, **kw)
        out["create " + algo] = [cr.get("ChecksumAlgorithm"), cr.get("ChecksumType")]
        up = cr["UploadId"]
        parts = []
        for n, (name, body) in enumerate((("p1", P1), ("p2", P2)), 1):
            if algo == "CRC32":  # the SDK computes it
                r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=body,
                                   ChecksumAlgorithm=algo)
            else:
                r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=body,
                                   ChecksumCRC64NVME=V[name][algo])
            parts.append({"PartNumber": n, "ETag": r["ETag"],
                          "Checksum" + algo: r["Checksum" + algo]})
        out["bad full " + algo] = err(
            s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
            MultipartUpload={"Parts": parts}, ChecksumType="FULL_OBJECT",
            **{"Checksum" + algo: V["p1"][algo]})
        done = s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts},
            ChecksumType="FULL_OBJECT", **{"Checksum" + algo: V["whole"][algo]})
        out["complete " + algo] = [done.get("Checksum" + algo), done.get("ChecksumType")]
        # botocore checks the whole body against a CRC32 it gets back (not CRC64NVME: no CRT).
        g = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        out["get " + algo] = [g.get("Checksum" + algo), g.get("ChecksumType"),
                              g["Body"].read() == P1 + P2]
    out["sha full"] = err(s3.create_multipart_upload, Bucket=bucket, Key="x",
                          ChecksumAlgorithm="SHA256", ChecksumType="FULL_OBJECT")
    out["crc64 composite"] = err(s3.create_multipart_upload, Bucket=bucket, Key="x",
                                 ChecksumAlgorithm="CRC64NVME", ChecksumType="COMPOSITE")

@section
def echo_part_checksums():
    # An upload created without an algorithm, completed by a client that lists back each part's
    # checksum as UploadPart answered it (the Go and Java transfer managers do). Current botocore
    # is told to send none (so each part gets S3's default CRC64NVME); Debian's sends none anyway
    # and does not know the CRC64NVME field (it lists ETags only).
    quiet = s3
    if CRC64:
        quiet = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                             aws_secret_access_key=sk, region_name="us-east-1",
                             config=Config(s3={"addressing_style": "path"},
                                           signature_version="s3v4",
                                           request_checksum_calculation="when_required",
                                           retries={"total_max_attempts": 1, "mode": "standard"}))
    key = "mpu-echo"
    up = quiet.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = []
    for n, body in enumerate((P1, P2), 1):
        r = quiet.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=body)
        parts.append(dict(sums(r), PartNumber=n, ETag=r["ETag"]))
    out["echo parts"] = [sorted(sums(p)) for p in parts]
    if CRC64:
        wrong = [dict(parts[0], ChecksumCRC64NVME=V["p2"]["CRC64NVME"]), parts[1]]
        out["echo wrong"] = err(quiet.complete_multipart_upload, Bucket=bucket, Key=key,
                                UploadId=up, MultipartUpload={"Parts": wrong})[:2]
    done = quiet.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                           MultipartUpload={"Parts": parts})
    out["echo complete"] = [done.get("ChecksumCRC64NVME"), done.get("ChecksumType")]
    out["echo body"] = s3.get_object(Bucket=bucket, Key=key)["Body"].read() == P1 + P2
    if CRC64:
        # Current botocore's own default on UploadPart is a CRC32; listing that back for an
        # upload created without an algorithm is InvalidPart on AWS (reported against S3 by the
        # Go and Java SDKs' users) and here; the ETags alone complete it.
        up = s3.create_multipart_upload(Bucket=bucket, Key=key + "-32")["UploadId"]
        r = s3.upload_part(Bucket=bucket, Key=key + "-32", UploadId=up, PartNumber=1, Body=SMALL)
        out["crc32 part"] = sorted(sums(r))
        part = dict(sums(r), PartNumber=1, ETag=r["ETag"])
        out["crc32 echo"] = err(s3.complete_multipart_upload, Bucket=bucket, Key=key + "-32",
                                UploadId=up, MultipartUpload={"Parts": [part]})[:2]
        s3.complete_multipart_upload(Bucket=bucket, Key=key + "-32", UploadId=up,
                                     MultipartUpload={"Parts": [{"PartNumber": 1,
                                                                 "ETag": r["ETag"]}]})
        out["crc32 etag only"] = s3.get_object(Bucket=bucket,
                                               Key=key + "-32")["Body"].read().decode()

@section
def transfer_manager():
    # upload_file: current s3transfer asks for CRC32 (composite) and lists each part's CRC32.
    import io
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
    s3.upload_fileobj(io.BytesIO(P1 + P2), bucket, "tm", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="tm", ChecksumMode="ENABLED")
    out["tm head"] = [h.get("ChecksumCRC32"), h.get("ChecksumType"), h["ETag"].endswith('-2"')]
    buf = io.BytesIO()
    s3.download_fileobj(bucket, "tm", buf)
    out["tm body"] = buf.getvalue() == P1 + P2

print(json.dumps(out))
'''.replace("@VALUES@", repr(json.dumps(VALUES)))


@pytest.fixture(scope="module")
def sdk_results(tmp_path_factory):
    return sdk_script_runner(tmp_path_factory, SDK_SCRIPT, "checksums_sdk.py", "ck", timeout=300)


BAD_CRC32 = [400, "BadDigest", "The CRC32 you specified did not match the calculated checksum."]


@pytest.mark.parametrize("py", _interpreters())
def test_single_put_checksums(sdk_results, erasure_server, py):
    out = sdk_results(py, erasure_server, "single_put")
    for a in ("CRC32", "CRC32C", "SHA1", "SHA256"):
        assert out["put " + a] == VALUES["small"][a], a
        assert out["head " + a] == [VALUES["small"][a], "FULL_OBJECT"], a
    assert out["head without mode"] == []
    assert out["bad CRC32"] == BAD_CRC32
    assert out["invalid CRC32"] == [400, "InvalidRequest",
                                    "Value for x-amz-checksum-crc32 header is invalid."]
    assert out["bad key absent"] == 404
    assert out["full range"] == VALUES["small"]["SHA256"]
    assert out["partial range"] is None
    assert out["copy with algorithm"] == b64("SHA256", SMALL)
    assert out["copy head"] == b64("SHA256", SMALL)
    if out["has crc64"]:
        assert out["put CRC64NVME"] == "rosUhgp5mIg="
        assert out["get single CRC64NVME"] == ["rosUhgp5mIg=", "FULL_OBJECT", True]
        assert out["bad CRC64NVME"] == [
            400, "BadDigest", "The CRC64NVME you specified did not match the calculated checksum."]
        assert out["listed"] == [[["CRC64NVME"], "FULL_OBJECT"]]


@pytest.mark.parametrize("py", _interpreters())
def test_composite_multipart(sdk_results, erasure_server, py):
    out = sdk_results(py, erasure_server, "composite_mpu")
    new = out["has types"]
    assert out["create"] == ["CRC32C", "COMPOSITE" if new else None]
    assert out["part sums"] == [b64("CRC32C", P1), b64("CRC32C", P2)]
    assert out["wrong algo part"] == [400, "InvalidRequest",
                                      "Checksum Type mismatch occurred, expected checksum Type: "
                                      "crc32c, actual checksum Type: crc32"]
    assert out["list parts"] == ["CRC32C", "COMPOSITE" if new else None,
                                 [b64("CRC32C", P1), b64("CRC32C", P2)]]
    assert out["list uploads"] == [["CRC32C", "COMPOSITE" if new else None]]
    assert out["complete without part sums"] == [
        400, "InvalidRequest", "The upload was created using a crc32c checksum. The complete "
        "request must include the checksum for each part. It was missing for part 1 in the "
        "request."]
    assert out["complete wrong part sum"][:2] == [400, "InvalidPart"]
    want = composite("CRC32C", [P1, P2])
    assert out["complete"] == [want, "COMPOSITE" if new else None]
    assert out["head"] == [want, "COMPOSITE"]
    assert out["get part 2"] == [b64("CRC32C", P2), True]
    assert out["attributes"] == [want, "COMPOSITE" if new else None,
                                 [b64("CRC32C", P1), b64("CRC32C", P2)]]


@pytest.mark.parametrize("py", _interpreters())
def test_full_object_multipart(sdk_results, erasure_server, py):
    out = sdk_results(py, erasure_server, "full_object_mpu")
    if not out["has types"]:
        pytest.skip("this boto3 has no ChecksumType (raw requests cover it)")
    for algo in ("CRC32", "CRC64NVME"):
        assert out["create " + algo] == [algo, "FULL_OBJECT"]
        assert out["bad full " + algo] == [
            400, "BadDigest", f"The {algo.lower()} you specified did not match the calculated "
            "checksum."]
        assert out["complete " + algo] == [VALUES["whole"][algo], "FULL_OBJECT"]
        assert out["get " + algo] == [VALUES["whole"][algo], "FULL_OBJECT", True]
    assert out["sha full"] == [400, "InvalidRequest", "The FULL_OBJECT checksum type cannot be "
                               "used with the sha256 checksum algorithm."]
    assert out["crc64 composite"] == [400, "InvalidRequest", "The COMPOSITE checksum type cannot "
                                      "be used with the crc64nvme checksum algorithm."]


@pytest.mark.parametrize("py", _interpreters())
def test_echoed_default_part_checksums(sdk_results, erasure_server, py):
    """CompleteMultipartUpload of an upload created without an algorithm, listing each part's
    checksum as UploadPart answered it: the default CRC64NVME each part got matches and the object
    gets the full-object CRC64NVME; a wrong one is InvalidPart, as is the CRC32 current botocore
    adds on its own (AWS's answer too)."""
    out = sdk_results(py, erasure_server, "echo_part_checksums")
    assert out["echo body"] is True
    if not out["has crc64"]:  # Debian's boto3 lists ETags only
        assert out["echo parts"] == [[], []]
        return
    assert out["echo parts"] == [["ChecksumCRC64NVME"], ["ChecksumCRC64NVME"]]
    assert out["echo wrong"] == [400, "InvalidPart"]
    assert out["echo complete"] == [VALUES["whole"]["CRC64NVME"], "FULL_OBJECT"]
    assert out["crc32 part"] == ["ChecksumCRC32"]
    assert out["crc32 echo"] == [400, "InvalidPart"]
    assert out["crc32 etag only"] == "123456789"


@pytest.mark.parametrize("py", _interpreters())
def test_transfer_manager_multipart(sdk_results, erasure_server, py):
    out = sdk_results(py, erasure_server, "transfer_manager")
    assert out["tm body"] is True
    if out["has types"]:  # current s3transfer asks for CRC32 on every upload
        assert out["tm head"] == [composite("CRC32", [P1[:5 << 20], P1[5 << 20:] + P2]),
                                  "COMPOSITE", True]


# ---------------------------------------------------------------------------------------------
# Raw signed requests: what Debian's SDK cannot send.

def _bucket(srv, name):
    r = signed_request(srv, "PUT", "/" + name)
    assert r.status in (200, 409), r
    return name


def _xml(r):
    return ET.fromstring(r.body)


def test_crc64nvme_raw_put_and_trailer(erasure_server):
    srv = erasure_server
    b = _bucket(srv, "ck-raw-trailer")
    r = signed_request(srv, "PUT", f"/{b}/h", headers={"x-amz-checksum-crc64nvme": "rosUhgp5mIg="},
                       body=SMALL)
    assert r.status == 200, r
    assert r.header("x-amz-checksum-crc64nvme") == "rosUhgp5mIg="
    assert r.header("x-amz-checksum-type") == "FULL_OBJECT"
    # aws-chunked, unsigned, the CRC64NVME in the trailer (as SDKs stream over HTTPS).
    data = P2
    for value, want in ((b64("CRC64NVME", data), 200), (b64("CRC64NVME", data[:-1]), 400)):
        body = (f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n" +
                f"x-amz-checksum-crc64nvme:{value}\r\n\r\n".encode())
        r = signed_request(srv, "PUT", f"/{b}/t", body=body,
                           payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                           headers={"content-encoding": "aws-chunked",
                                    "x-amz-decoded-content-length": str(len(data)),
                                    "x-amz-trailer": "x-amz-checksum-crc64nvme",
                                    "x-amz-sdk-checksum-algorithm": "CRC64NVME"})
        assert r.status == want, r
        if want == 400:
            assert_s3_error(r.status, r.hdict, r.body, "BadDigest", 400,
                            "The CRC64NVME you specified did not match the calculated checksum.")
    r = signed_request(srv, "HEAD", f"/{b}/t", headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.header("x-amz-checksum-crc64nvme") == b64("CRC64NVME", data)
    r = signed_request(srv, "HEAD", f"/{b}/t")
    assert r.header("x-amz-checksum-crc64nvme") is None
    # An algorithm this server does not have is refused, not stored unverified.
    r = signed_request(srv, "PUT", f"/{b}/x", headers={"x-amz-checksum-sha512": "AAAA"}, body=SMALL)
    assert r.status == 501, r


def _mpu(srv, b, key, headers):
    r = signed_request(srv, "POST", f"/{b}/{key}", query=[("uploads", "")], headers=headers)
    assert r.status == 200, r
    return r, _xml(r).find(S3_NS + "UploadId").text


def _complete_body(parts):
    xml = "<CompleteMultipartUpload>"
    for n, etag, sums in parts:
        xml += f"<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag>"
        xml += "".join(f"<Checksum{a}>{v}</Checksum{a}>" for a, v in sums)
        xml += "</Part>"
    return (xml + "</CompleteMultipartUpload>").encode()


def test_full_object_crc64nvme_multipart_raw(erasure_server):
    srv = erasure_server
    b = _bucket(srv, "ck-raw-full")
    r, up = _mpu(srv, b, "o", {"x-amz-checksum-algorithm": "crc64nvme"})
    assert r.header("x-amz-checksum-algorithm") == "CRC64NVME"
    assert r.header("x-amz-checksum-type") == "FULL_OBJECT"
    etags = []
    for n, body in ((1, P1), (2, P2)):
        # The second part comes without a checksum: a FULL_OBJECT upload's part CRC is computed.
        hdrs = {"x-amz-checksum-crc64nvme": b64("CRC64NVME", body)} if n == 1 else {}
        r = signed_request(srv, "PUT", f"/{b}/o", query=[("partNumber", str(n)), ("uploadId", up)],
                           headers=hdrs, body=body)
        assert r.status == 200, r
        assert r.header("x-amz-checksum-crc64nvme") == b64("CRC64NVME", body)
        etags.append(r.header("etag"))
    r = signed_request(srv, "GET", f"/{b}/o", query=[("uploadId", up)])
    parts = _xml(r).findall(S3_NS + "Part")
    assert [p.find(S3_NS + "ChecksumCRC64NVME").text for p in parts] == \
        [b64("CRC64NVME", P1), b64("CRC64NVME", P2)]
    assert _xml(r).find(S3_NS + "ChecksumType").text == "FULL_OBJECT"
    whole = b64("CRC64NVME", P1 + P2)
    body = _complete_body([(1, etags[0], []), (2, etags[1], [("CRC64NVME", b64("CRC64NVME", P2))])])
    r = signed_request(srv, "POST", f"/{b}/o", query=[("uploadId", up)], body=body,
                       headers={"x-amz-checksum-crc64nvme": whole,
                                "x-amz-checksum-type": "FULL_OBJECT"})
    assert r.status == 200, r
    assert _xml(r).find(S3_NS + "ChecksumCRC64NVME").text == whole
    assert _xml(r).find(S3_NS + "ChecksumType").text == "FULL_OBJECT"
    r = signed_request(srv, "GET", f"/{b}/o", headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.status == 200 and r.body == P1 + P2
    assert r.header("x-amz-checksum-crc64nvme") == whole
    assert r.header("x-amz-checksum-type") == "FULL_OBJECT"
    r = signed_request(srv, "GET", f"/{b}/o", query=[("attributes", "")],
                       headers={"x-amz-object-attributes": "Checksum,ObjectParts"})
    assert _xml(r).find(f"{S3_NS}Checksum/{S3_NS}ChecksumCRC64NVME").text == whole


def test_multipart_checksum_errors_raw(erasure_server):
    srv = erasure_server
    b = _bucket(srv, "ck-raw-errors")
    r = signed_request(srv, "POST", f"/{b}/e", query=[("uploads", "")],
                       headers={"x-amz-checksum-algorithm": "nope"})
    assert_s3_error(r.status, r.hdict, r.body, "InvalidRequest", 400,
                    "Checksum algorithm provided is unsupported.")
    r = signed_request(srv, "POST", f"/{b}/e", query=[("uploads", "")],
                       headers={"x-amz-checksum-algorithm": "CRC32",
                                "x-amz-checksum-type": "TEST"})
    assert_s3_error(r.status, r.hdict, r.body, "InvalidRequest", 400,
                    "Value for x-amz-checksum-type header is invalid.")
    r = signed_request(srv, "POST", f"/{b}/e", query=[("uploads", "")],
                       headers={"x-amz-checksum-type": "COMPOSITE"})
    assert_s3_error(r.status, r.hdict, r.body, "InvalidRequest", 400,
                    "The x-amz-checksum-type header can only be used with the "
                    "x-amz-checksum-algorithm header.")
    # A COMPOSITE upload: a part without its checksum, then Complete's checks.
    _, up = _mpu(srv, b, "c", {"x-amz-checksum-algorithm": "CRC32"})
    r = signed_request(srv, "PUT", f"/{b}/c", query=[("partNumber", "1"), ("uploadId", up)],
                       body=SMALL)
    assert_s3_error(r.status, r.hdict, r.body, "InvalidRequest", 400,
                    "Checksum Type mismatch occurred, expected checksum Type: crc32, actual "
                    "checksum Type: null")
    r = signed_request(srv, "PUT", f"/{b}/c", query=[("partNumber", "1"), ("uploadId", up)],
                       headers={"x-amz-checksum-crc32": "y/Q5Jg=="}, body=SMALL)
    assert r.status == 200, r
    etag = r.header("etag")
    cases = [
        ([("CRC32", "y/Q5Jh==")], {}, "InvalidArgument",
         "Invalid Base64 or multiple checksums present in request"),
        ([("CRC32", "y/Q5Jg=="), ("SHA1", VALUES["small"]["SHA1"])], {}, "InvalidArgument",
         "Invalid Base64 or multiple checksums present in request"),
        ([("CRC32C", "4waSgw==")], {}, "BadDigest",
         "The crc32c you specified for part 1 did not match what we received."),
        ([("CRC32", "z/Q5Jg==")], {}, "InvalidPart", "One or more of the specified parts"),
        ([("CRC32", "y/Q5Jg==")], {"x-amz-checksum-crc32": "7kxlUA==-2"}, "BadDigest",
         "The crc32 you specified did not match the calculated checksum."),
        ([("CRC32", "y/Q5Jg==")], {"x-amz-checksum-crc32": "7kxlUA==-a"}, "InvalidRequest",
         "Value for x-amz-checksum-crc32 header is invalid."),
        ([("CRC32", "y/Q5Jg==")], {"x-amz-checksum-type": "FULL_OBJECT"}, "InvalidRequest",
         "The upload was created using the COMPOSITE checksum mode."),
    ]
    for sums, hdrs, code, msg in cases:
        r = signed_request(srv, "POST", f"/{b}/c", query=[("uploadId", up)], headers=hdrs,
                           body=_complete_body([(1, etag, sums)]))
        assert_s3_error(r.status, r.hdict, r.body, code, 400, msg)
    # The composite value AWS answers for this one part ("7kxlUA==-1"), declared without "-1".
    r = signed_request(srv, "POST", f"/{b}/c", query=[("uploadId", up)],
                       headers={"x-amz-checksum-crc32": "7kxlUA=="},
                       body=_complete_body([(1, etag, [("CRC32", "y/Q5Jg==")])]))
    assert r.status == 200, r
    assert _xml(r).find(S3_NS + "ChecksumCRC32").text == "7kxlUA==-1"
    assert _xml(r).find(S3_NS + "ChecksumType").text == "COMPOSITE"


def test_copy_object_destination_conditions(erasure_server):
    # Issue 14 item 16 left-over: If-Match / If-None-Match on CopyObject name the destination.
    srv = erasure_server
    b = _bucket(srv, "ck-copy-cond")
    assert signed_request(srv, "PUT", f"/{b}/src", body=b"source").status == 200
    r = signed_request(srv, "PUT", f"/{b}/dst", body=b"old")
    old_etag = r.header("etag")
    copy = {"x-amz-copy-source": f"/{b}/src"}
    r = signed_request(srv, "PUT", f"/{b}/dst", headers={**copy, "if-none-match": "*"})
    assert_s3_error(r.status, r.hdict, r.body, "PreconditionFailed", 412)
    r = signed_request(srv, "PUT", f"/{b}/dst", headers={**copy, "if-match": '"0123"'})
    assert_s3_error(r.status, r.hdict, r.body, "PreconditionFailed", 412)
    assert signed_request(srv, "GET", f"/{b}/dst").body == b"old"
    r = signed_request(srv, "PUT", f"/{b}/new", headers={**copy, "if-match": old_etag})
    assert_s3_error(r.status, r.hdict, r.body, "NoSuchKey", 404)
    r = signed_request(srv, "PUT", f"/{b}/dst", headers={**copy, "if-match": old_etag})
    assert r.status == 200, r
    r = signed_request(srv, "PUT", f"/{b}/new", headers={**copy, "if-none-match": "*"})
    assert r.status == 200, r
    assert signed_request(srv, "GET", f"/{b}/dst").body == b"source"
    assert signed_request(srv, "GET", f"/{b}/new").body == b"source"


# ---------------------------------------------------------------------------------------------
# S3's default checksum: since AWS's 2025 data-integrity change, an object uploaded without any
# checksum gets a full-object CRC64NVME computed by S3, stored, and returned like a declared one
# (x-amz-checksum-mode: ENABLED). Raw requests send none (current boto3 would send a CRC32).

def _head_sums(srv, path):
    r = signed_request(srv, "HEAD", path, headers={"x-amz-checksum-mode": "ENABLED"})
    assert r.status == 200, r
    return {k: v for k, v in r.hdict.items() if k.lower().startswith("x-amz-checksum")}


def test_default_crc64nvme_for_uploads_without_checksum(erasure_server, server):
    for srv in (erasure_server, server):  # both layouts: 4-drive erasure, one drive
        b = _bucket(srv, "ck-default")
        # PutObject: the response names the checksum S3 computed.
        r = signed_request(srv, "PUT", f"/{b}/plain", body=P2)
        assert r.status == 200, r
        assert r.header("x-amz-checksum-crc64nvme") == b64("CRC64NVME", P2)
        assert r.header("x-amz-checksum-type") == "FULL_OBJECT"
        want = {"x-amz-checksum-crc64nvme": b64("CRC64NVME", P2),
                "x-amz-checksum-type": "FULL_OBJECT"}
        assert {k.lower(): v for k, v in _head_sums(srv, f"/{b}/plain").items()} == want
        r = signed_request(srv, "GET", f"/{b}/plain", headers={"x-amz-checksum-mode": "ENABLED"})
        assert r.body == P2 and r.header("x-amz-checksum-crc64nvme") == want[
            "x-amz-checksum-crc64nvme"]
        r = signed_request(srv, "GET", f"/{b}/plain")  # only when asked for
        assert r.header("x-amz-checksum-crc64nvme") is None
        # A declared checksum is the object's, not the default.
        r = signed_request(srv, "PUT", f"/{b}/declared", body=SMALL,
                           headers={"x-amz-checksum-sha1": VALUES["small"]["SHA1"]})
        assert r.status == 200 and r.header("x-amz-checksum-crc64nvme") is None, r
        assert {k.lower() for k in _head_sums(srv, f"/{b}/declared")} == {
            "x-amz-checksum-sha1", "x-amz-checksum-type"}

        # Multipart without an algorithm: each part gets a CRC64NVME, the object the full-object
        # CRC64NVME combined from them.
        r, up = _mpu(srv, b, "mpu", {})
        assert r.header("x-amz-checksum-algorithm") is None
        etags = []
        for n, body in ((1, P1), (2, P2)):
            r = signed_request(srv, "PUT", f"/{b}/mpu",
                               query=[("partNumber", str(n)), ("uploadId", up)], body=body)
            assert r.status == 200, r
            assert r.header("x-amz-checksum-crc64nvme") == b64("CRC64NVME", body)
            etags.append(r.header("etag"))
        r = signed_request(srv, "POST", f"/{b}/mpu", query=[("uploadId", up)],
                           body=_complete_body([(1, etags[0], []), (2, etags[1], [])]))
        assert r.status == 200, r
        whole = b64("CRC64NVME", P1 + P2)
        assert _xml(r).find(S3_NS + "ChecksumCRC64NVME").text == whole
        assert {k.lower(): v for k, v in _head_sums(srv, f"/{b}/mpu").items()} == {
            "x-amz-checksum-crc64nvme": whole, "x-amz-checksum-type": "FULL_OBJECT"}

        # CopyObject keeps a full-object checksum; a composite one is computed again over the
        # whole object (it described parts); with none, the copy gets the default.
        r, up = _mpu(srv, b, "comp", {"x-amz-checksum-algorithm": "CRC32"})
        r = signed_request(srv, "PUT", f"/{b}/comp", query=[("partNumber", "1"), ("uploadId", up)],
                           headers={"x-amz-checksum-crc32": VALUES["small"]["CRC32"]}, body=SMALL)
        etag = r.header("etag")
        r = signed_request(srv, "POST", f"/{b}/comp", query=[("uploadId", up)],
                           body=_complete_body([(1, etag, [("CRC32", VALUES["small"]["CRC32"])])]))
        assert r.status == 200, r
        for src, header, value in (("plain", "x-amz-checksum-crc64nvme", b64("CRC64NVME", P2)),
                                   ("declared", "x-amz-checksum-sha1", VALUES["small"]["SHA1"]),
                                   ("comp", "x-amz-checksum-crc32", VALUES["small"]["CRC32"])):
            r = signed_request(srv, "PUT", f"/{b}/copy-{src}",
                               headers={"x-amz-copy-source": f"/{b}/{src}"})
            assert r.status == 200, r
            sums = {k.lower(): v for k, v in _head_sums(srv, f"/{b}/copy-{src}").items()}
            assert sums == {header: value, "x-amz-checksum-type": "FULL_OBJECT"}, (src, sums)


def test_default_part_checksums_listed_at_complete_raw(erasure_server, server):
    """An upload created without an algorithm: Complete may list the CRC64NVME each part got
    (S3's default, as UploadPart answered it); it must match (else InvalidPart with AWS's
    elements), parts listed without one are fine beside it, and the object gets the full-object
    CRC64NVME. A part that declared CRC32 listed with it: InvalidPart, as AWS answers."""
    for srv in (erasure_server, server):
        b = _bucket(srv, "ck-echo")
        _, up = _mpu(srv, b, "k", {})
        etags = []
        for n, body in ((1, P1), (2, P2)):
            r = signed_request(srv, "PUT", f"/{b}/k",
                               query=[("partNumber", str(n)), ("uploadId", up)], body=body)
            assert r.header("x-amz-checksum-crc64nvme") == b64("CRC64NVME", body), r
            etags.append(r.header("etag"))
        p1 = ("CRC64NVME", b64("CRC64NVME", P1))
        for sums in ([("CRC64NVME", b64("CRC64NVME", P2))], [("CRC32", b64("CRC32", P1))]):
            r = signed_request(srv, "POST", f"/{b}/k", query=[("uploadId", up)],
                               body=_complete_body([(1, etags[0], sums), (2, etags[1], [])]))
            err = assert_s3_error(r.status, r.hdict, r.body, "InvalidPart", 400)
            assert [err.get("UploadId"), err.get("PartNumber")] == [up, "1"], err
        r = signed_request(srv, "POST", f"/{b}/k", query=[("uploadId", up)],
                           body=_complete_body([(1, etags[0], [p1]), (2, etags[1], [])]))
        assert r.status == 200, r
        whole = b64("CRC64NVME", P1 + P2)
        assert _xml(r).find(S3_NS + "ChecksumCRC64NVME").text == whole
        assert _xml(r).find(S3_NS + "ChecksumType").text == "FULL_OBJECT"
        assert {k.lower(): v for k, v in _head_sums(srv, f"/{b}/k").items()} == {
            "x-amz-checksum-crc64nvme": whole, "x-amz-checksum-type": "FULL_OBJECT"}
        # A part that declared a CRC32, listed with it.
        _, up = _mpu(srv, b, "c", {})
        r = signed_request(srv, "PUT", f"/{b}/c", query=[("partNumber", "1"), ("uploadId", up)],
                           headers={"x-amz-checksum-crc32": VALUES["small"]["CRC32"]}, body=SMALL)
        assert r.status == 200, r
        r = signed_request(srv, "POST", f"/{b}/c", query=[("uploadId", up)],
                           body=_complete_body([(1, r.header("etag"),
                                                 [("CRC32", VALUES["small"]["CRC32"])])]))
        assert_s3_error(r.status, r.hdict, r.body, "InvalidPart", 400)


def test_invalid_part_message_as_aws(erasure_server, server):
    """InvalidPart: AWS's exact message (two spaces after "found.") and its UploadId, PartNumber
    and ETag elements, for a part never uploaded and for a wrong ETag."""
    message = ("One or more of the specified parts could not be found.  The part may not have "
               "been uploaded, or the specified entity tag may not match the part's entity tag.")
    for srv in (erasure_server, server):
        b = _bucket(srv, "ck-invalid-part")
        _, up = _mpu(srv, b, "k", {})
        r = signed_request(srv, "PUT", f"/{b}/k", query=[("partNumber", "1"), ("uploadId", up)],
                           body=SMALL)
        etag = r.header("etag")
        wrong = '"0123456789abcdef0123456789abcdef"'
        for part, tag in ((2, etag), (1, wrong)):
            r = signed_request(srv, "POST", f"/{b}/k", query=[("uploadId", up)],
                               body=_complete_body([(part, tag, [])]))
            err = assert_s3_error(r.status, r.hdict, r.body, "InvalidPart", 400)
            assert err["Message"] == message, err
            assert [err.get("UploadId"), err.get("PartNumber"), err.get("ETag")] == \
                [up, str(part), tag.strip('"')], err
