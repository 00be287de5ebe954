"""Bucket lifecycle (issue 38 item 2) against the real server with boto3: the configuration
(Put/Get/DeleteBucketLifecycleConfiguration, AWS's error codes as s3-tests' test_lifecycle_*
expect them) and the scanner applying it, with a short "day" (RDMASTOR_LIFECYCLE_DAY_SECONDS)."""
import datetime
import json
import subprocess
import time

import pytest

from cluster_util import Cluster
from conftest import (RDMASTOR_BIN, _clean_env, boto3_error_code, erasure4, make_client, scrape,
                      unique_bucket)

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


def test_expiration_header_on_put_get_head(s3, bucket):
    """x-amz-expiration names the rule that expires the object first and when (s3-tests
    test_lifecycle_expiration_header_*): the object's day plus the days, rounded up to midnight."""
    put(s3, bucket, rule(ID="two-days", Filter={"Prefix": "h/"}, Expiration={"Days": 2}),
        rule(ID="date", Filter={"And": {"Prefix": "h/", "Tags": [{"Key": "t", "Value": "1"}]}},
             Expiration={"Date": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}),
        rule(ID="off", Filter={"Prefix": ""}, Status="Disabled"))
    # (This server's scanner runs once an hour: nothing expires while the test runs.)
    start = datetime.datetime.now(datetime.timezone.utc)
    r = s3.put_object(Bucket=bucket, Key="h/k", Body=b"x")

    def expiration(resp):
        return resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")
    want_day = (start + datetime.timedelta(days=3)).strftime("%d %b %Y")
    want = f'expiry-date="{(start + datetime.timedelta(days=3)).strftime("%a")}, {want_day} ' \
           f'00:00:00 GMT", rule-id="two-days"'
    assert expiration(r) == want
    assert expiration(s3.head_object(Bucket=bucket, Key="h/k")) == want
    assert expiration(s3.get_object(Bucket=bucket, Key="h/k")) == want
    r = s3.put_object(Bucket=bucket, Key="h/tagged", Body=b"x", Tagging="t=1")
    assert expiration(r) == 'expiry-date="Wed, 01 Jan 2020 00:00:00 GMT", rule-id="date"'
    assert expiration(s3.put_object(Bucket=bucket, Key="other", Body=b"x")) is None
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert expiration(s3.head_object(Bucket=bucket, Key="h/k")) is None


# ---- the scanner ------------------------------------------------------------------------------

# A lifecycle "day" of one second, a cycle every 300 ms, two keys per batch (so a bucket takes
# several batches and saved positions).
SCANNER_ENV = {"RDMASTOR_LIFECYCLE_DAY_SECONDS": "1", "RDMASTOR_LIFECYCLE_INTERVAL": "300ms",
               "RDMASTOR_LIFECYCLE_BATCH": "2", "RDMASTOR_LIFECYCLE_PAUSE": "10ms",
               "MINIO_PROMETHEUS_AUTH_TYPE": "public"}
DEADLINE = 20  # seconds any expected expiry may take (due after 1-2 "days" plus a cycle)


@pytest.fixture(scope="module")
def lc():
    """Four drives (versions and Object Lock need the erasure layout) with the short day."""
    with erasure4(name="lifecycle", env=SCANNER_ENV) as srv:
        yield srv


@pytest.fixture(scope="module")
def lcs3(lc):
    return make_client(lc)


def wait_for(what, check, timeout=DEADLINE):
    """check() until it returns a true value, at most `timeout` s; that value."""
    deadline = time.monotonic() + timeout
    for _ in range(10000):
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.1)
    raise AssertionError("wait_for: loop bound reached")


def keys(s3, bucket):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def versions(s3, bucket, prefix=""):
    """[(key, version id, is a delete marker, is latest)] in listing order."""
    r = s3.list_object_versions(Bucket=bucket, Prefix=prefix)
    out = [(v["Key"], v["VersionId"], False, v["IsLatest"]) for v in r.get("Versions", [])]
    out += [(m["Key"], m["VersionId"], True, m["IsLatest"]) for m in r.get("DeleteMarkers", [])]
    return sorted(out)


def test_expiration_of_current_objects(lcs3):
    b = unique_bucket("lc-exp")
    lcs3.create_bucket(Bucket=b)
    for k in ["exp/a", "exp/b", "exp/c", "keep/c", "off/x", "past/x", "later/x"]:
        lcs3.put_object(Bucket=b, Key=k, Body=b"x")
    lcs3.put_object(Bucket=b, Key="tag/yes", Body=b"x", Tagging="k=v&other=1")
    lcs3.put_object(Bucket=b, Key="tag/no", Body=b"x", Tagging="k=w")
    lcs3.put_object(Bucket=b, Key="size/big", Body=b"x" * 200)
    lcs3.put_object(Bucket=b, Key="size/small", Body=b"x" * 10)
    put(lcs3, b,
        rule(ID="prefix", Filter={"Prefix": "exp/"}),
        rule(ID="tag", Filter={"Tag": {"Key": "k", "Value": "v"}}),
        rule(ID="size", Filter={"And": {"Prefix": "size/", "ObjectSizeGreaterThan": 100}}),
        rule(ID="date", Filter={"Prefix": "past/"},
             Expiration={"Date": datetime.datetime(2015, 1, 1, tzinfo=datetime.timezone.utc)}),
        rule(ID="disabled", Filter={"Prefix": "off/"}, Status="Disabled"),
        rule(ID="later", Filter={"Prefix": "later/"}, Expiration={"Days": 1000}))
    left = ["keep/c", "later/x", "off/x", "size/small", "tag/no"]
    wait_for("expiry of exp/, past/, tag/yes and size/big", lambda: keys(lcs3, b) == left)
    time.sleep(1.5)  # several more cycles: what no enabled rule takes stays
    assert keys(lcs3, b) == left


def test_versioned_bucket_markers_and_noncurrent_versions(lcs3):
    b = unique_bucket("lc-ver")
    lcs3.create_bucket(Bucket=b)
    lcs3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    cur = lcs3.put_object(Bucket=b, Key="cur/k", Body=b"current")["VersionId"]
    nc = [lcs3.put_object(Bucket=b, Key="nc/k", Body=b"v%d" % i)["VersionId"] for i in range(4)]
    lcs3.put_object(Bucket=b, Key="dm/k", Body=b"gone")
    lcs3.delete_object(Bucket=b, Key="dm/k")  # a delete marker over one version
    put(lcs3, b,
        # Expiration in a versioned bucket: a delete marker; the version stays (noncurrent).
        rule(ID="cur", Filter={"Prefix": "cur/"}),
        # Noncurrent versions go a "day" after they were replaced, but the newest one.
        {"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "nc/"},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        # The version behind the marker goes, then the marker left alone.
        {"ID": "dm", "Status": "Enabled", "Filter": {"Prefix": "dm/"},
         "Expiration": {"ExpiredObjectDeleteMarker": True},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1}})

    def marker_over_current():
        v = versions(lcs3, b, "cur/")
        return len(v) == 2 and v if any(m and latest for _, _, m, latest in v) else None
    v = wait_for("a delete marker over cur/k", marker_over_current)
    assert ("cur/k", cur, False, False) in v  # the version is kept, noncurrent
    wait_for("nc/k down to the current and one noncurrent version",
             lambda: versions(lcs3, b, "nc/") == sorted([("nc/k", nc[3], False, True),
                                                         ("nc/k", nc[2], False, False)]))
    wait_for("dm/k's version, then its marker, removed", lambda: versions(lcs3, b, "dm/") == [])
    time.sleep(1.5)
    assert len(versions(lcs3, b, "cur/")) == 2  # no second marker: the key's latest is one
    assert len(versions(lcs3, b, "nc/")) == 2


def test_abort_incomplete_multipart_upload(lcs3):
    b = unique_bucket("lc-mpu")
    lcs3.create_bucket(Bucket=b)
    ids = {}
    for k in ["mp/a", "other/b"]:
        ids[k] = lcs3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
        lcs3.upload_part(Bucket=b, Key=k, UploadId=ids[k], PartNumber=1, Body=b"part")
    put(lcs3, b, {"ID": "abort", "Status": "Enabled", "Filter": {"Prefix": "mp/"},
                  "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}})

    def uploads():
        return sorted(u["Key"] for u in lcs3.list_multipart_uploads(Bucket=b).get("Uploads", []))
    assert uploads() == ["mp/a", "other/b"]
    wait_for("the upload under mp/ aborted", lambda: uploads() == ["other/b"])
    assert err(lcs3.list_parts, Bucket=b, Key="mp/a", UploadId=ids["mp/a"]) == [404, "NoSuchUpload"]
    lcs3.list_parts(Bucket=b, Key="other/b", UploadId=ids["other/b"])


def test_locked_version_is_never_expired(lc, lcs3):
    b = unique_bucket("lc-lock")
    lcs3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    held = lcs3.put_object(Bucket=b, Key="l/held", Body=b"held", ObjectLockLegalHoldStatus="ON",
                           ChecksumAlgorithm="CRC32")["VersionId"]
    free = lcs3.put_object(Bucket=b, Key="l/free", Body=b"free")["VersionId"]
    before = scrape(lc).get("rdmastor_lifecycle_locked_kept_total", 0)
    put(lcs3, b, rule(ID="all", Filter={"Prefix": "l/"},
                      NoncurrentVersionExpiration={"NoncurrentDays": 1}))
    # The free version: a marker, then removed a "day" later. The held one: a marker too (a plain
    # delete is allowed under a lock), but the version stays, however often the scanner comes.
    wait_for("l/free's version removed", lambda: [v for v in versions(lcs3, b, "l/free")
                                                  if not v[2]] == [])
    wait_for("the held version counted as kept",
             lambda: scrape(lc).get("rdmastor_lifecycle_locked_kept_total", 0) > before)
    v = versions(lcs3, b, "l/held")
    assert ("l/held", held, False, False) in v, v
    assert lcs3.get_object(Bucket=b, Key="l/held", VersionId=held)["Body"].read() == b"held"
    assert free not in [x[1] for x in versions(lcs3, b)]


def test_progress_in_metrics_and_admin_info(lc, lcs3):
    b = unique_bucket("lc-info")
    lcs3.create_bucket(Bucket=b)
    lcs3.put_object(Bucket=b, Key="k", Body=b"x")
    put(lcs3, b, rule(ID="past", Expiration={"Date": "2015-01-01T00:00:00Z"}))
    wait_for("k expired", lambda: keys(lcs3, b) == [])
    m = scrape(lc)
    assert m["rdmastor_lifecycle_cycles_total"] >= 1
    assert m["rdmastor_lifecycle_objects_scanned_total"] >= 1
    assert m["rdmastor_lifecycle_objects_expired_total"] >= 1
    assert m["rdmastor_lifecycle_last_cycle_end_seconds"] > time.time() - 60
    env = _clean_env({"MINIO_ROOT_USER": lc.access_key, "MINIO_ROOT_PASSWORD": lc.secret_key})
    cmd = [RDMASTOR_BIN, "admin", "info", "--endpoint", lc.endpoint]
    out = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)["info"]["lifecycle"]
    assert info["cycles"] >= 1 and info["expired"] >= 1 and info["daySeconds"] == 1
    assert info["lastCycle"]["ended_ns"] > 0 and info["lastCycle"]["bucket"] == ""
    text = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert text.returncode == 0, text.stderr
    assert "lifecycle: " in text.stdout and "last cycle (" in text.stdout, text.stdout


def test_a_cycle_resumes_after_a_restart(server_factory):
    """A cycle that stopped midway (killed during the pause after its first batch) goes on from
    the saved key after a restart instead of starting over."""
    env = dict(SCANNER_ENV, RDMASTOR_LIFECYCLE_PAUSE="1h", RDMASTOR_LIFECYCLE_INTERVAL="200ms")
    srv = server_factory(name="lc-resume", env=env)
    s3 = make_client(srv)
    b = unique_bucket("lc-resume")
    s3.create_bucket(Bucket=b)
    names = [f"k{i}" for i in range(6)]
    for k in names:
        s3.put_object(Bucket=b, Key=k, Body=b"x")
    time.sleep(2.1)  # every object is a "day" old: the first batch expires at once
    put(s3, b, rule(ID="all"))
    # The first batch (k0, k1) goes, then the cycle pauses (an hour) with its position saved.
    wait_for("the first batch expired", lambda: keys(s3, b) == names[2:])
    time.sleep(1)
    assert keys(s3, b) == names[2:]  # the pause holds the rest
    srv.kill()
    srv.extra_env["RDMASTOR_LIFECYCLE_PAUSE"] = "10ms"
    srv.start()
    wait_for("the rest expired after the restart", lambda: keys(s3, b) == [])
    assert "resuming the cycle started by" in srv.log_text()
    assert f"at bucket '{b}' after key 'k1'" in srv.log_text()


def test_cluster_runs_one_cycle_at_a_time():
    """Two nodes: each cycle runs on one node only (a dsync lock and the last cycle's end in the
    system bucket), so the cycles of both nodes together follow the interval, each object is
    expired once, and both nodes' metrics show their share."""
    interval = 1.0
    env = dict(SCANNER_ENV, RDMASTOR_LIFECYCLE_INTERVAL="1s")
    c = Cluster(nodes=2, drives=2, env_extra=env, name="lc-node")
    try:
        c.start()
        started = time.monotonic()
        s3 = c.client(0)
        b = "lc-cluster"
        s3.create_bucket(Bucket=b)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        for i in range(4):
            s3.put_object(Bucket=b, Key=f"e/{i}", Body=b"x")
        put(s3, b, rule(ID="e", Filter={"Prefix": "e/"}))
        wait_for("four delete markers",
                 lambda: sum(1 for v in versions(s3, b) if v[2]) == 4)
        time.sleep(2.5)  # more cycles: still one marker per key
        elapsed = time.monotonic() - started
        assert sum(1 for v in versions(c.client(1), b) if v[2]) == 4
        m = [c.metrics(i) for i in range(2)]
        cycles = [x.get("rdmastor_lifecycle_cycles_total", 0) for x in m]
        expired = [x.get("rdmastor_lifecycle_objects_expired_total", 0) for x in m]
        assert sum(expired) == 4, expired
        # One cycle per interval for the whole cluster (each node on its own would make it about
        # twice that; one more for a cycle that ran while the start-up ended).
        assert 2 <= sum(cycles) <= elapsed / interval + 2, (cycles, elapsed)
    finally:
        c.cleanup()


@pytest.mark.parametrize("name,value", [
    ("RDMASTOR_LIFECYCLE_INTERVAL", "5x"), ("RDMASTOR_LIFECYCLE_INTERVAL", "1ms"),
    ("RDMASTOR_LIFECYCLE_DAY_SECONDS", "0"), ("RDMASTOR_LIFECYCLE_DAY_SECONDS", "86401"),
    ("RDMASTOR_LIFECYCLE_BATCH", "1"), ("RDMASTOR_LIFECYCLE_PAUSE", "soon"),
])
def test_invalid_settings_refuse_to_start(tmp_path, name, value):
    env = _clean_env({name: value})
    cp = subprocess.run([RDMASTOR_BIN, "server", "--address", "127.0.0.1:0", str(tmp_path)],
                        env=env, capture_output=True, text=True, timeout=30,
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 2, cp
    assert f"{name}='{value}' is invalid" in cp.stderr, cp.stderr
