"""Logging: JSON format, the per-request log line, and no secrets in the log."""

import json
import time

import requests

from conftest import make_client, seeded_bytes, unique_bucket


def exercise(srv):
    """Signed and presigned traffic; returns (request id of the presigned GET, its signature)."""
    s3 = make_client(srv)
    bucket = unique_bucket("log")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="obj", Body=seeded_bytes(4096))
    s3.get_object(Bucket=bucket, Key="obj")["Body"].read()
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "obj"},
                                    ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and len(r.content) == 4096
    signature = url.split("X-Amz-Signature=")[1].split("&")[0]
    bad = requests.get(url.replace(signature, "0" * len(signature)), timeout=10)
    assert bad.status_code == 403
    return r.headers["x-amz-request-id"], signature


def wait_for(srv, needle, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in srv.log_text():
            return srv.log_text()
        time.sleep(0.05)
    return srv.log_text()


def test_json_request_log_without_secrets(server_factory):
    srv = server_factory(env={"RDMASTOR_LOG_FORMAT": "json", "RDMASTOR_LOG_REQUESTS": "on"})
    request_id, signature = exercise(srv)
    log = wait_for(srv, request_id)
    lines = [l for l in log.splitlines() if l.startswith("{")]
    records = [json.loads(l) for l in lines]  # every line is one JSON object
    assert all({"time", "level", "msg"} <= set(r) for r in records), records[:3]
    reqs = [r for r in records if r["msg"] == "request"]
    by_id = {r["request_id"]: r for r in reqs}
    get = by_id[request_id]
    assert get["method"] == "GET" and get["status"] == 200 and get["api"] == "GetObject"
    assert get["bytes_out"] == 4096 and get["duration_us"] >= 0 and get["level"] == "info"
    assert "X-Amz-Signature=REDACTED" in get["path"] and "X-Amz-Credential=REDACTED" in get["path"]
    puts = [r for r in reqs if r["api"] == "PutObject"]
    assert puts and puts[0]["status"] == 200 and puts[0]["bytes_in"] >= 4096
    assert any(r["status"] == 403 for r in reqs)
    assert srv.secret_key not in log
    assert signature not in log
    assert srv.access_key + "/" not in log  # the credential scope of a presigned URL


def test_text_request_log_without_secrets(server_factory):
    srv = server_factory(env={"RDMASTOR_LOG_REQUESTS": "on"})
    request_id, signature = exercise(srv)
    log = wait_for(srv, request_id)
    line = next(l for l in log.splitlines() if f"request {request_id} " in l)
    assert " info " in line and " GET " in line and "status=200" in line and "out=4096" in line
    assert srv.secret_key not in log and signature not in log


def test_requests_not_logged_by_default(server_factory):
    srv = server_factory()
    request_id, _ = exercise(srv)
    time.sleep(0.2)
    log = srv.log_text()
    assert request_id not in log
    assert srv.secret_key not in log
