"""Bucket lifecycle (issue 38 item 2) against the real server with boto3: the configuration
(Put/Get/DeleteBucketLifecycleConfiguration, AWS's error codes as s3-tests' test_lifecycle_*
expect them)."""
import datetime

import pytest

from conftest import boto3_error_code, make_client, unique_bucket

err = boto3_error_code  # [status, code] of a call that must fail


@pytest.fixture(scope="module")
def s3(server):
    return make_client(server)


def put(s3, bucket, *rules):
    return s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                                 LifecycleConfiguration={"Rules": list(rules)})


def rule(**kw):
    r = {"Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}
    r.update(kw)
    return r


# ---- configuration ---------------------------------------------------------------------------

def test_configuration_round_trip(s3, bucket):
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket) == [
        404, "NoSuchLifecycleConfiguration"]
    assert s3.delete_bucket_lifecycle(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    # The first schema's rule-level Prefix comes back as sent (s3-tests test_lifecycle_get).
    legacy = [{"ID": "test1/", "Expiration": {"Days": 31}, "Prefix": "test1/", "Status": "Enabled"},
              {"ID": "test2/", "Expiration": {"Days": 120}, "Prefix": "test2/",
               "Status": "Disabled"}]
    r = s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                              LifecycleConfiguration={"Rules": legacy})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == legacy

    rules = [
        {"ID": "and", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "logs/", "Tags": [{"Key": "a", "Value": "1"},
                                                        {"Key": "b", "Value": ""}],
                            "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "tag", "Status": "Enabled", "Filter": {"Tag": {"Key": "k", "Value": "v"}},
         "Expiration": {"Days": 3}},
        {"ID": "markers", "Status": "Enabled", "Filter": {"Prefix": "p/"},
         "Expiration": {"ExpiredObjectDeleteMarker": True},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 2, "NewerNoncurrentVersions": 3},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
        {"ID": "size", "Status": "Disabled", "Filter": {"ObjectSizeLessThan": 5},
         "Expiration": {"Days": 1}},
    ]
    put(s3, bucket, *rules)
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == rules

    # A rule without an ID gets one (s3-tests test_lifecycle_get_no_id).
    put(s3, bucket, {"Expiration": {"Days": 31}, "Prefix": "test1/", "Status": "Enabled"})
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert len(got) == 1 and got[0]["ID"] and got[0]["Prefix"] == "test1/"

    assert s3.delete_bucket_lifecycle(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket) == [
        404, "NoSuchLifecycleConfiguration"]
    assert err(s3.get_bucket_lifecycle_configuration, Bucket=unique_bucket("none")) == [
        404, "NoSuchBucket"]


@pytest.mark.parametrize("rules,expected", [
    # s3-tests: test_lifecycle_id_too_long, _same_id, _invalid_status, _expiration_days0,
    # _set_invalid_date.
    ([rule(ID="a" * 256)], [400, "InvalidArgument"]),
    ([rule(ID="a" * 255, Expiration={"Days": 2})], ["ok", None]),
    ([rule(ID="r1"), rule(ID="r1", Filter={"Prefix": "x"})], [400, "InvalidArgument"]),
    ([rule(Status="enabled")], [400, "MalformedXML"]),
    ([rule(Status="invalid")], [400, "MalformedXML"]),
    ([rule(Expiration={"Days": 0})], [400, "InvalidArgument"]),
    ([rule(Expiration={"Days": -1})], [400, "InvalidArgument"]),
    ([rule(Expiration={"Date": "2030-01-01T12:00:00Z"})], [400, "InvalidArgument"]),
    ([rule(Expiration={"Days": 1, "Date": "2030-01-01T00:00:00Z"})], [400, "MalformedXML"]),
    ([rule(Expiration={"Days": 1, "ExpiredObjectDeleteMarker": True})], [400, "MalformedXML"]),
    ([rule(Expiration={})], [400, "MalformedXML"]),
    # Filter and Prefix together, neither, and two predicates without And.
    ([rule(Prefix="a")], [400, "MalformedXML"]),
    ([{"Status": "Enabled", "Expiration": {"Days": 1}}], [400, "MalformedXML"]),
    ([rule(Filter={"Prefix": "a", "Tag": {"Key": "k", "Value": "v"}})], [400, "MalformedXML"]),
    ([rule(Filter={"And": {"Tags": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]}})],
     [400, "InvalidRequest"]),
    ([rule(Filter={"And": {"ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 10}})],
     [400, "InvalidArgument"]),
    ([rule(Filter={"Tag": {"Key": "k", "Value": "v"}}, Expiration={"Days": 1},
           AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})], [400, "InvalidRequest"]),
    ([rule(NoncurrentVersionExpiration={"NoncurrentDays": 0})], [400, "InvalidArgument"]),
    ([rule(AbortIncompleteMultipartUpload={"DaysAfterInitiation": 0})], [400, "InvalidArgument"]),
    # No action at all.
    ([{"ID": "x", "Status": "Enabled", "Filter": {}}], [400, "InvalidRequest"]),
    # Transitions need storage tiers this server does not have: never a 200 for what is not done.
    ([rule(Transitions=[{"Days": 1, "StorageClass": "GLACIER"}])], [501, "NotImplemented"]),
    ([rule(ID=f"r{i}") for i in range(1001)], [400, "MalformedXML"]),
])
def test_configuration_errors(s3, bucket, rules, expected):
    got = err(s3.put_bucket_lifecycle_configuration, Bucket=bucket,
                           LifecycleConfiguration={"Rules": rules})
    assert got == expected
    if expected[0] != "ok":
        assert err(s3.get_bucket_lifecycle_configuration, Bucket=bucket) == [
            404, "NoSuchLifecycleConfiguration"]
    s3.delete_bucket_lifecycle(Bucket=bucket)

