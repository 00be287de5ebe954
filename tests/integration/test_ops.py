"""Operations: Prometheus metrics (names, values, auth), health endpoints, the metrics token."""

import os
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import RDMASTOR_BIN, _clean_env, make_client, seeded_bytes, unique_bucket

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


class Metrics(dict):
    """{(name, labels-string): value}; .families: every name with a # TYPE line."""
    families = set()


def parse_metrics(text):
    """Metrics from Prometheus text; also checks every line's syntax."""
    out = Metrics()
    typed = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram"), line
            typed.add(name)
            if kind == "histogram":  # its samples: name_bucket{le}, name_sum, name_count
                typed.update(name + s for s in ("_bucket", "_sum", "_count"))
            continue
        if line.startswith("# HELP ") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        assert m.group(1) in typed, f"sample before its # TYPE: {line!r}"
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    out.families = typed
    return out


def token_for(srv):
    cp = subprocess.run([RDMASTOR_BIN, "admin", "prometheus-token"], capture_output=True,
                        text=True, timeout=20, env=_clean_env(creds=(srv.access_key, srv.secret_key)),
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 0, cp.stderr
    token = cp.stdout.strip()
    assert token.count(".") == 2 and srv.secret_key not in token
    return token


def scrape(srv, which="cluster", token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = requests.get(srv.url(f"/minio/v2/metrics/{which}"), headers=headers, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse_metrics(r.text)


def test_metrics_need_a_valid_token(server):
    for headers in ({}, {"Authorization": "Bearer not.a.jwt"},
                    {"Authorization": f"Basic {server.secret_key}"}):
        r = requests.get(server.url("/minio/v2/metrics/cluster"), headers=headers, timeout=10)
        assert r.status_code == 403, r.text
        assert "<Code>AccessDenied</Code>" in r.text
    # A token signed with another secret is refused.
    cp = subprocess.run([RDMASTOR_BIN, "admin", "prometheus-token"], capture_output=True,
                        text=True, timeout=20,
                        env=_clean_env(creds=(server.access_key, "some-other-secret")),
                        stdin=subprocess.DEVNULL)
    r = requests.get(server.url("/minio/v2/metrics/node"),
                     headers={"Authorization": f"Bearer {cp.stdout.strip()}"}, timeout=10)
    assert r.status_code == 403


def test_metrics_change_as_requests_are_made(server):
    token = token_for(server)
    before = scrape(server, "cluster", token)
    for name in ("minio_s3_requests_total", "minio_s3_requests_errors_total",
                 "minio_s3_requests_4xx_errors_total", "minio_s3_requests_5xx_errors_total",
                 "minio_s3_traffic_received_bytes", "minio_s3_traffic_sent_bytes",
                 "minio_api_rdma_replies_total", "minio_system_network_internode_sent_bytes_total",
                 "minio_system_network_internode_recv_bytes_total",
                 "minio_system_network_internode_rdma_fallbacks_total",
                 "minio_cluster_drive_online_total", "minio_cluster_capacity_raw_total_bytes",
                 "minio_cluster_health_status"):
        assert name in before.families, f"{name} missing"
    for code in ("200", "206", "501"):
        assert before[("minio_api_rdma_replies_total", f'{{code="{code}"}}')] == 0
    assert before[("minio_s3_traffic_received_bytes", '{transport="rdma"}')] == 0
    assert before[("minio_cluster_drive_online_total", "")] == 1
    assert before[("minio_cluster_health_status", "")] == 1

    s3 = make_client(server)
    bucket = unique_bucket("metrics")
    s3.create_bucket(Bucket=bucket)
    body = seeded_bytes(300_000)
    s3.put_object(Bucket=bucket, Key="k", Body=body)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == body
    with pytest.raises(Exception):
        s3.get_object(Bucket=bucket, Key="missing")
    bad = make_client(server, secret_key="wrong-secret-key")
    with pytest.raises(Exception):
        bad.put_object(Bucket=bucket, Key="denied", Body=b"x")

    after = scrape(server, "cluster", token)

    def delta(name, labels=""):
        return after.get((name, labels), 0) - before.get((name, labels), 0)

    assert delta("minio_s3_requests_total", '{api="PutBucket"}') == 1
    assert delta("minio_s3_requests_total", '{api="PutObject"}') == 2  # one denied
    assert delta("minio_s3_requests_total", '{api="GetObject"}') == 2
    assert delta("minio_s3_requests_4xx_errors_total", '{api="GetObject"}') == 1
    assert delta("minio_s3_requests_4xx_errors_total", '{api="PutObject"}') == 1  # the 403
    assert delta("minio_s3_requests_errors_total", '{api="GetObject"}') == 1
    assert delta("minio_s3_requests_5xx_errors_total", '{api="GetObject"}') == 0
    assert delta("minio_s3_traffic_received_bytes", '{transport="tcp"}') >= len(body)
    assert delta("minio_s3_traffic_sent_bytes", '{transport="tcp"}') >= len(body)
    assert delta("minio_s3_traffic_sent_bytes", '{transport="rdma"}') == 0
    # Scrapes and health probes are not S3 requests.
    assert not any(k[0] == "minio_s3_requests_total" and "unknown" in k[1] and
                   delta(*k) for k in after)

    node = scrape(server, "node", token)
    drive = f'{{drive="{server.datadir}"}}'
    assert node[("rdmastor_node_drive_online", drive)] == 1
    assert node[("minio_node_drive_total_bytes", drive)] > 0
    assert 0 < node[("minio_node_drive_free_bytes", drive)] <= node[("minio_node_drive_total_bytes", drive)]
    assert ("minio_heal_objects_total", "") in node
    assert ("minio_heal_objects_total", "") not in after  # node-only family
    assert node[("minio_node_process_uptime_seconds", "")] >= 0


def test_public_metrics_and_cluster_health(server_factory):
    srv = server_factory(env={"MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    m = scrape(srv, "cluster")
    assert m[("minio_cluster_drive_total", "")] == 1
    for path in ("/minio/health/live", "/minio/health/ready", "/minio/health/cluster",
                 "/minio/health/cluster/read"):
        r = requests.get(srv.url(path), timeout=10)
        assert r.status_code == 200, path
    r = requests.get(srv.url("/minio/health/cluster"), timeout=10)
    assert r.headers.get("X-Minio-Write-Quorum") == "1"
    # The drive disappears: no write quorum any more, and the metrics say so.
    shutil.rmtree(srv.datadir)
    assert requests.get(srv.url("/minio/health/cluster"), timeout=10).status_code == 503
    assert requests.get(srv.url("/minio/health/live"), timeout=10).status_code == 200
    m = scrape(srv, "cluster")
    assert m[("minio_cluster_drive_offline_total", "")] == 1
    assert m[("minio_cluster_health_status", "")] == 0


def test_invalid_prometheus_auth_type_refuses_to_start(tmp_path):
    cp = subprocess.run([RDMASTOR_BIN, "server", "--address", "127.0.0.1:0", str(tmp_path)],
                        capture_output=True, text=True, timeout=20,
                        env=_clean_env({"MINIO_PROMETHEUS_AUTH_TYPE": "bogus"}),
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 2
    assert "MINIO_PROMETHEUS_AUTH_TYPE" in cp.stderr


def test_rdma_declines_counted_once_in_the_rdma_family(server_factory):
    """A TCP-only server answers a token GET and PUT with 501 and x-amz-rdma-reply: 501 (the client
    retries over TCP). Each decline is counted once, in minio_api_rdma_replies_total{code="501"}
    (GETs too), and not as a server error: the runbook's 5xx alert must not fire whenever a
    default client meets a TCP-only server (issue 33, item 13)."""
    import hashlib
    from conftest import signed_request
    srv = server_factory(env={"MINIO_RDMA_FABRIC": "off", "MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    bucket = unique_bucket()
    srv.client().create_bucket(Bucket=bucket)
    srv.client().put_object(Bucket=bucket, Key="o", Body=b"x" * 100)
    before = scrape(srv)
    tok = "%016x:%08x:%08x:%04x:%06x:%01x:%016x%016x" % (0x100000, 4096, 7, 1, 0x1234, 1, 0,
                                                         0x0000ffff7f000001)
    empty = hashlib.sha256(b"").hexdigest()
    for method, key, payload in (("GET", "o", empty), ("PUT", "p", "UNSIGNED-PAYLOAD"),
                                 ("GET", "o", empty)):
        r = signed_request(srv, method, f"/{bucket}/{key}", headers={"x-amz-rdma-token": tok},
                           payload_hash=payload)
        assert r.status == 501 and r.header("x-amz-rdma-reply") == "501", (r.status, r.body)
    after = scrape(srv)

    def delta(name, labels):
        return after.get((name, labels), 0) - before.get((name, labels), 0)

    assert delta("minio_api_rdma_replies_total", '{code="501"}') == 3
    for api in ("GetObject", "PutObject"):
        assert delta("minio_s3_requests_5xx_errors_total", f'{{api="{api}"}}') == 0, api
        assert delta("minio_s3_requests_errors_total", f'{{api="{api}"}}') == 0, api
    assert delta("minio_s3_requests_total", '{api="GetObject"}') == 2
    assert delta("minio_s3_requests_total", '{api="PutObject"}') == 1
    # The origin check's own count is a counter (it only grows), named as one; these declines
    # were the fabric's (off), not the origin check's.
    assert "rdmastor_rdma_declined_total" in after.families, sorted(after.families)
    assert "rdmastor_rdma_declined" not in after.families
    assert after[("rdmastor_rdma_declined_total", '{reason="origin"}')] == 0
    text = requests.get(srv.url("/minio/v2/metrics/node"), timeout=10).text
    assert "# TYPE rdmastor_rdma_declined_total counter" in text, text


def test_minio_dashboard_process_families_and_unserved_endpoints(server):
    """A MinIO dashboard's process panels (CPU, memory, descriptors) have their families on the
    node endpoint; MinIO's other metrics endpoints answer a clear 404 (not the S3 layer's 403)
    even with a valid token (issue 33, item 12)."""
    token = token_for(server)
    node = scrape(server, "node", token)
    rss = node[("minio_node_process_resident_memory_bytes", "")]
    assert 1 << 20 < rss <= node[("minio_node_process_virtual_memory_bytes", "")], node
    assert node[("minio_node_process_cpu_total_seconds", "")] > 0
    with open(f"/proc/{server.proc.pid}/status") as f:
        vmrss = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmRSS:"))
    assert abs(rss - vmrss) < 64 << 20, (rss, vmrss)
    fds = node[("minio_node_file_descriptor_open_total", "")]
    assert 3 <= fds <= node[("minio_node_file_descriptor_limit_total", "")], node
    assert abs(fds - len(os.listdir(f"/proc/{server.proc.pid}/fd"))) < 16, fds
    for path in ("/minio/v2/metrics/resource", "/minio/metrics/v3",
                 "/minio/metrics/v3/api/requests"):
        r = requests.get(server.url(path), headers={"Authorization": f"Bearer {token}"},
                         timeout=10)
        assert r.status_code == 404, (path, r.status_code, r.text)
        assert f"{path} is not served by rdmastor" in r.text, r.text
        assert "/minio/v2/metrics/cluster" in r.text and "/minio/v2/metrics/bucket" in r.text


def test_bucket_usage_on_the_bucket_endpoint(server):
    """/minio/v2/metrics/bucket (token required) serves MinIO's bucket usage families: objects and
    bytes of every bucket, a deleted object or bucket gone from the next scrape (issue 33, item
    12). The cluster and node endpoints do not carry them."""
    token = token_for(server)
    r = requests.get(server.url("/minio/v2/metrics/bucket"), timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    s3 = make_client(server)
    full, empty = unique_bucket("usage"), unique_bucket("usage-empty")
    s3.create_bucket(Bucket=full)
    s3.create_bucket(Bucket=empty)
    sizes = [0, 1, 1000, 70000]
    for i, n in enumerate(sizes):
        s3.put_object(Bucket=full, Key=f"dir/k{i}", Body=b"x" * n)
    s3.put_object(Bucket=full, Key="k0", Body=b"y" * 5)
    m = scrape(server, "bucket", token)
    assert m[("minio_bucket_usage_object_total", f'{{bucket="{full}"}}')] == 5, m
    assert m[("minio_bucket_usage_total_bytes", f'{{bucket="{full}"}}')] == sum(sizes) + 5, m
    assert m[("minio_bucket_usage_object_total", f'{{bucket="{empty}"}}')] == 0, m
    assert m[("minio_bucket_usage_total_bytes", f'{{bucket="{empty}"}}')] == 0, m
    assert not any(name.startswith("minio_s3_") for name, _ in m), m.families
    assert "minio_bucket_usage_object_total" not in scrape(server, "cluster", token).families
    s3.delete_object(Bucket=full, Key="dir/k3")
    s3.delete_bucket(Bucket=empty)
    time.sleep(1.1)  # a scrape walks the buckets at most once a second
    m = scrape(server, "bucket", token)
    assert m[("minio_bucket_usage_object_total", f'{{bucket="{full}"}}')] == 4, m
    assert m[("minio_bucket_usage_total_bytes", f'{{bucket="{full}"}}')] == 1006, m
    assert ("minio_bucket_usage_object_total", f'{{bucket="{empty}"}}') not in m, m


def test_request_duration_histogram_and_inflight(server):
    """rdmastor_s3_requests_duration_seconds{api}: a Prometheus histogram of whole request times
    (buckets, _sum, _count); minio_s3_requests_inflight_total counts the requests running on a
    worker, the scrape itself and a PUT whose body has not arrived yet included; the waiting
    gauge is there (issue 33, item 12)."""
    token = token_for(server)
    s3 = make_client(server)
    bucket = unique_bucket("dur")
    s3.create_bucket(Bucket=bucket)
    before = scrape(server, "cluster", token)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x" * 1000)
    for _ in range(3):
        s3.get_object(Bucket=bucket, Key="k")["Body"].read()
    m = scrape(server, "cluster", token)
    name = "rdmastor_s3_requests_duration_seconds"

    def delta(suffix, labels):
        return m.get((name + suffix, labels), 0) - before.get((name + suffix, labels), 0)

    les = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
           "2.5", "5", "10", "+Inf"]
    for api, n in (("GetObject", 3), ("PutObject", 1)):
        got = [delta("_bucket", f'{{api="{api}",le="{le}"}}') for le in les]
        assert got == sorted(got) and got[-1] == n, (api, got)
        assert got[-2] == n, (api, got)  # loopback, 1 KB: well under 10 s
        assert delta("_count", f'{{api="{api}"}}') == n
        assert 0 < delta("_sum", f'{{api="{api}"}}') < n * 10
    assert m[("minio_s3_requests_waiting_total", "")] >= 0, m
    assert m[("minio_s3_requests_inflight_total", "")] == 1, m  # the scrape itself
    # A PUT whose body never comes runs on a worker (reading its body) until it is cut; presigned,
    # so the server accepts its head and starts reading.
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "stalled"},
                                    ExpiresIn=300)
    hostport, target = url.split("/", 3)[2], "/" + url.split("/", 3)[3]
    host, port = hostport.split(":")
    import socket
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall((f"PUT {target} HTTP/1.1\r\nHost: {hostport}\r\n"
                      "Content-Length: 100\r\n\r\nabc").encode())
        for _ in range(50):
            m = scrape(server, "cluster", token)
            if m[("minio_s3_requests_inflight_total", "")] == 2:
                break
            time.sleep(0.1)
        assert m[("minio_s3_requests_inflight_total", "")] == 2, m


def test_ttfb_distribution_per_api(server):
    """minio_s3_requests_ttfb_seconds_distribution{api,le}: MinIO's cumulative time-to-first-byte
    buckets, one count per request in every bucket at or above its time (issue 33, item 12)."""
    token = token_for(server)
    before = scrape(server, "cluster", token)
    s3 = make_client(server)
    bucket = unique_bucket("ttfb")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x" * 1000)
    for _ in range(3):
        s3.get_object(Bucket=bucket, Key="k")["Body"].read()
    after = scrape(server, "cluster", token)
    les = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]

    def counts(m, api):
        return [m.get(("minio_s3_requests_ttfb_seconds_distribution",
                       f'{{api="{api}",le="{le}"}}'), 0) for le in les]

    for api, n in (("GetObject", 3), ("PutObject", 1)):
        got = [a - b for a, b in zip(counts(after, api), counts(before, api))]
        assert got[-1] == n, (api, got)                      # +Inf: every request
        assert got == sorted(got), (api, got)                # cumulative
        assert got[7] == n, (api, got)  # a loopback request of 1 KB: well under 10 s


def test_prometheus_token_json(server):
    """`admin prometheus-token --json`: the token and its expiry in one JSON object; the token
    opens the metrics endpoints (issue 33, item 10: --json on every admin command)."""
    import json
    cp = subprocess.run([RDMASTOR_BIN, "admin", "prometheus-token", "--json", "--expiry-days", "7"],
                        capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
                        env=_clean_env(creds=(server.access_key, server.secret_key)))
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["status"] == "success" and doc["command"] == "prometheus-token", doc
    assert abs(doc["expiresAt"] - (time.time() + 7 * 86400)) < 60, doc
    scrape(server, "cluster", doc["bearerToken"])
