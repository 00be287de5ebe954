"""What golden/version_record_v3.tar.gz holds: a one-drive server's drive written by main 980a7ef,
the release before the version record was declared as one list (issue 36). Every per-version
field the record had then is set somewhere: versions and a delete marker, content type, user
metadata, tags, canned ACL, storage class, SSE-S3 (format 3), a multipart object with part
checksums, and an upload in progress carrying tags, ACL and encryption. Shared by the generator
(golden/make_version_record_v3.py) and test_version_record_compat.py."""
import base64

MIB = 1 << 20
# The master key the drive's SSE-S3 object was sealed with.
MASTER = "rdmastor-key:" + base64.b64encode(bytes(range(32))).decode()
ENV = {"MINIO_KMS_SECRET_KEY": MASTER}


def body_of(name, size):
    shift = sum(name.encode()) % 251
    pattern = bytes((i * 7 + shift) % 251 for i in range(251))
    return (pattern * (size // 251 + 1))[:size]


def write(c):
    """Fills the drive through S3 (client `c` of a server started with ENV)."""
    c.create_bucket(Bucket="vrec")
    c.put_bucket_versioning(Bucket="vrec", VersioningConfiguration={"Status": "Enabled"})
    c.put_object(Bucket="vrec", Key="doc", Body=body_of("doc1", 1000), ContentType="text/plain",
                 Metadata={"color": "blue"}, Tagging="a=1&b=two%20words", ACL="public-read",
                 StorageClass="REDUCED_REDUNDANCY")
    c.put_object(Bucket="vrec", Key="doc", Body=body_of("doc2", 40000),
                 ServerSideEncryption="AES256", ContentType="application/x-two")
    c.delete_object(Bucket="vrec", Key="doc")
    c.create_bucket(Bucket="plain")
    up = c.create_multipart_upload(Bucket="plain", Key="mp.bin", ContentType="application/x-mp",
                                   Metadata={"m": "1"}, Tagging="mp=yes",
                                   ACL="authenticated-read", ChecksumAlgorithm="CRC32C")
    done = []
    for i, size in enumerate([5 * MIB, 77], 1):
        r = c.upload_part(Bucket="plain", Key="mp.bin", UploadId=up["UploadId"], PartNumber=i,
                          Body=body_of("mp" + str(i), size), ChecksumAlgorithm="CRC32C")
        done.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]})
    c.complete_multipart_upload(Bucket="plain", Key="mp.bin", UploadId=up["UploadId"],
                                MultipartUpload={"Parts": done})
    up = c.create_multipart_upload(Bucket="plain", Key="pending", Tagging="p=1",
                                   ACL="public-read", ServerSideEncryption="AES256")
    c.upload_part(Bucket="plain", Key="pending", UploadId=up["UploadId"], PartNumber=1,
                  Body=body_of("pending", 1234))


def _tags(c, key, **kw):
    return {t["Key"]: t["Value"] for t in c.get_object_tagging(Bucket=kw.pop("Bucket"), Key=key,
                                                               **kw)["TagSet"]}


def _public(c, key, **kw):
    grants = c.get_object_acl(Key=key, **kw)["Grants"]
    return sorted((g["Grantee"].get("URI", "owner").rsplit("/", 1)[-1], g["Permission"])
                  for g in grants)


def check(c):
    """Everything write() stored reads back, by version, with its metadata."""
    vs = c.list_object_versions(Bucket="vrec")
    markers, versions = vs.get("DeleteMarkers", []), vs.get("Versions", [])
    assert [m["IsLatest"] for m in markers] == [True], markers
    assert len(versions) == 2, versions
    v2, v1 = versions  # newest first
    r = c.get_object(Bucket="vrec", Key="doc", VersionId=v1["VersionId"])
    assert r["Body"].read() == body_of("doc1", 1000)
    assert r["ContentType"] == "text/plain" and r["Metadata"] == {"color": "blue"}
    assert r["StorageClass"] == "REDUCED_REDUNDANCY" and r["TagCount"] == 2
    assert "ServerSideEncryption" not in r
    assert _tags(c, "doc", Bucket="vrec", VersionId=v1["VersionId"]) == {"a": "1",
                                                                     "b": "two words"}
    assert _public(c, "doc", Bucket="vrec", VersionId=v1["VersionId"]) == [
        ("AllUsers", "READ"), ("owner", "FULL_CONTROL")]
    r = c.get_object(Bucket="vrec", Key="doc", VersionId=v2["VersionId"])
    assert r["Body"].read() == body_of("doc2", 40000)
    assert r["ServerSideEncryption"] == "AES256" and r["ContentType"] == "application/x-two"
    assert r["ContentLength"] == 40000 and "TagCount" not in r
    assert _public(c, "doc", Bucket="vrec", VersionId=v2["VersionId"]) == [
        ("owner", "FULL_CONTROL")]

    r = c.get_object(Bucket="plain", Key="mp.bin", ChecksumMode="ENABLED")
    assert r["Body"].read() == body_of("mp1", 5 * MIB) + body_of("mp2", 77)
    assert r["ContentType"] == "application/x-mp" and r["Metadata"] == {"m": "1"}
    assert r["ChecksumCRC32C"].endswith("-2"), r
    assert _tags(c, "mp.bin", Bucket="plain") == {"mp": "yes"}
    assert _public(c, "mp.bin", Bucket="plain") == [("AuthenticatedUsers", "READ"),
                                                    ("owner", "FULL_CONTROL")]
    a = c.get_object_attributes(Bucket="plain", Key="mp.bin",
                                ObjectAttributes=["ObjectParts"], MaxParts=5)
    assert [p.get("ChecksumCRC32C") is not None for p in a["ObjectParts"]["Parts"]] == [True, True]

    ups = c.list_multipart_uploads(Bucket="plain").get("Uploads", [])
    assert [u["Key"] for u in ups] == ["pending"], ups
    uid = ups[0]["UploadId"]
    parts = c.list_parts(Bucket="plain", Key="pending", UploadId=uid)["Parts"]
    c.complete_multipart_upload(Bucket="plain", Key="pending", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in parts]})
    r = c.get_object(Bucket="plain", Key="pending")
    assert r["Body"].read() == body_of("pending", 1234) and r["ServerSideEncryption"] == "AES256"
    assert _tags(c, "pending", Bucket="plain") == {"p": "1"}
    assert _public(c, "pending", Bucket="plain") == [("AllUsers", "READ"),
                                                     ("owner", "FULL_CONTROL")]
