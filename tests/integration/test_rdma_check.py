"""`rdmastor rdma check` on a build machine: no RDMA device (libibverbs cannot list any), so it
must say so cleanly, exit 1, and print every layer with its fix. The expected text lives in
golden/rdma_check_<flavour>.txt (the program does not know about it); values that differ between
machines (why no device is listed, GPU driver state, the locked-memory limit) are normalised before comparing."""

import json
import os
import re
import subprocess

import pytest
import requests

from conftest import HERE, RDMASTOR_BIN, Server, _clean_env, free_port, signed_request


def flavour():
    out = subprocess.run([RDMASTOR_BIN, "--version"], capture_output=True, text=True,
                         timeout=20).stdout
    return "rdma" if "Features: RDMA" in out else "standard"


def run_check(*args, env=None):
    return subprocess.run([RDMASTOR_BIN, "rdma", "check", *args], capture_output=True, text=True,
                          timeout=30, env=_clean_env(env), stdin=subprocess.DEVNULL)


def normalise(text):
    out = []
    skip_fix = False
    for line in text.splitlines():
        if skip_fix and line.startswith(" " * 24 + "fix:"):
            continue
        skip_fix = False
        line = re.sub(r"(no RDMA device: ).*", r"\1<why>", line)
        line = re.sub(r"^(NOT READY|READY): .*", r"\1: <counts>", line)
        # The locked-memory limit depends on the user and the machine's limits.conf.
        for layer in ("gpu-memory", "memlock"):
            if re.match(rf"\[....\] {layer} ", line):
                line, skip_fix = f"[....] {layer:<16} <machine-specific>", True
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def no_devices():
    cp = run_check("--json")
    report = json.loads(cp.stdout)
    devices = next(c for c in report["checks"] if c["layer"] == "devices")
    if devices["status"] == "ok":
        pytest.skip("this machine has RDMA devices; the golden output is for machines without")
    return report


def test_golden_text_output(no_devices):
    cp = run_check()
    assert cp.returncode == 1, cp.stderr
    golden_path = os.path.join(HERE, "golden", f"rdma_check_{flavour()}.txt")
    if os.environ.get("RDMASTOR_UPDATE_GOLDEN"):
        with open(golden_path, "w") as f:
            f.write(normalise(cp.stdout))
    with open(golden_path) as f:
        assert normalise(cp.stdout) == f.read()
    assert "no RDMA device" in cp.stdout


def test_json_output(no_devices):
    cp = run_check("--json")
    assert cp.returncode == 1
    report = json.loads(cp.stdout)
    assert report["build"] == flavour() and report["ready"] is False
    layers = [c["layer"] for c in report["checks"]]
    for layer in ("build", "devices", "memlock", "configured", "gpu-memory", "inter-node",
                  "fabric"):
        assert layer in layers
    for c in report["checks"]:
        assert c["status"] in ("ok", "warning", "failed", "skipped")
        if c["status"] in ("warning", "failed"):
            assert c["fix"], c
    devices = next(c for c in report["checks"] if c["layer"] == "devices")
    assert devices["status"] == "failed" and "no RDMA device" in devices["detail"]


def test_settings_shape_the_report(no_devices):
    cp = run_check("--json", env={"MINIO_RDMA_FABRIC": "soft", "MINIO_RDMA_INTERNODE": "on"})
    report = {c["layer"]: c for c in json.loads(cp.stdout)["checks"]}
    assert report["fabric"]["status"] == "warning" and "soft" in report["fabric"]["detail"]
    # Inter-node RDMA over the soft fabric needs no device in either build.
    assert report["inter-node"]["status"] == "warning"
    assert "soft" in report["inter-node"]["detail"]
    cp = run_check("--json", env={"MINIO_RDMA_FABRIC": "off", "MINIO_RDMA_INTERNODE": "on"})
    report = {c["layer"]: c for c in json.loads(cp.stdout)["checks"]}
    assert report["inter-node"]["status"] == "warning" and "TCP" in report["inter-node"]["detail"]
    # The soft fabric needs no device: without inter-node RDMA the host is ready for it.
    cp = run_check("--json", env={"MINIO_RDMA_FABRIC": "soft"})
    report = json.loads(cp.stdout)
    devices = next(c for c in report["checks"] if c["layer"] == "devices")
    assert devices["status"] == "warning" and "no RDMA device" in devices["detail"]
    failed = [c for c in report["checks"] if c["status"] == "failed"]
    assert (cp.returncode == 0) == (not failed), report


def test_invalid_settings_exit_2():
    cp = run_check(env={"MINIO_RDMA_FABRIC": "carrier-pigeon"})
    assert cp.returncode == 2 and "MINIO_RDMA_FABRIC" in cp.stderr
    cp = run_check(env={"MINIO_RDMA_INTERNODE": "maybe"})
    assert cp.returncode == 2 and "MINIO_RDMA_INTERNODE" in cp.stderr
    cp = subprocess.run([RDMASTOR_BIN, "rdma", "bogus"], capture_output=True, text=True, timeout=20)
    assert cp.returncode == 2


# --endpoint: the live server's S3-over-RDMA state (GET /minio/admin/v3/rdma, root-signed).

def server_layer(cp):
    report = json.loads(cp.stdout)
    (item,) = [c for c in report["checks"] if c["layer"] == "server"]
    return item


def test_endpoint_reports_the_live_fabric():
    soft = Server("check-soft", env={"MINIO_RDMA_FABRIC": "soft"})
    off = Server("check-off", env={"MINIO_RDMA_FABRIC": "off"})
    try:
        soft.start()
        off.start()
        creds = {"MINIO_ROOT_USER": soft.access_key, "MINIO_ROOT_PASSWORD": soft.secret_key}
        # This host's settings say off; the server says soft: the server layer reports the server.
        item = server_layer(run_check("--json", "--endpoint", soft.endpoint,
                                      env={**creds, "MINIO_RDMA_FABRIC": "off"}))
        assert item["status"] == "ok" and "on the soft fabric" in item["detail"], item
        assert item["detail"].startswith(soft.endpoint), item
        creds = {"MINIO_ROOT_USER": off.access_key, "MINIO_ROOT_PASSWORD": off.secret_key}
        cp = run_check("--json", "--endpoint", off.endpoint, env={**creds, "MINIO_RDMA_FABRIC": "soft"})
        item = server_layer(cp)
        assert item["status"] == "warning" and "does not serve S3 over RDMA" in item["detail"], item
        assert "MINIO_RDMA_FABRIC" in item["detail"] and "MINIO_RDMA_FABRIC=soft" in item["fix"]
        # Wrong credentials: the server refuses (the answer is for the root user only); failed.
        cp = run_check("--json", "--endpoint", soft.endpoint,
                       env={"MINIO_ROOT_USER": soft.access_key, "MINIO_ROOT_PASSWORD": "wrong-secret"})
        item = server_layer(cp)
        assert cp.returncode == 1 and item["status"] == "failed", item
        assert "SignatureDoesNotMatch" in item["detail"], item
        # Nothing listening: failed, naming the endpoint.
        cp = run_check("--json", "--endpoint", f"http://127.0.0.1:{free_port()}")
        item = server_layer(cp)
        assert cp.returncode == 1 and item["status"] == "failed" and "refused" in item["detail"]
    finally:
        soft.cleanup()
        off.cleanup()


def test_admin_rdma_endpoint_is_for_root_only():
    srv = Server("check-auth", env={"MINIO_RDMA_FABRIC": "soft"})
    try:
        srv.start()
        # Anonymous: the fabric is not told to strangers.
        r = requests.get(srv.url("/minio/admin/v3/rdma"), timeout=10)
        assert r.status_code == 403 and "fabric" not in r.text, r.text
        r = signed_request(srv, "GET", "/minio/admin/v3/rdma")
        assert r.status == 200 and json.loads(r.body) == {"fabric": "soft", "ready": True,
                                                          "reason": ""}, r.body
        r = signed_request(srv, "POST", "/minio/admin/v3/rdma")
        assert r.status == 405, r.body
    finally:
        srv.cleanup()


def test_rdma_devices_without_a_device(no_devices):
    """`rdma devices` where libibverbs lists nothing: the RDMA build says why (exit 1) or prints
    an empty list; the standard build says it has no verbs. Real devices' output is checked in
    tests/rdma/verbs_fixture_test.cc and inside the rxe guest."""
    cp = subprocess.run([RDMASTOR_BIN, "rdma", "devices"], capture_output=True, text=True,
                        timeout=30, env=_clean_env(), stdin=subprocess.DEVNULL)
    if flavour() == "standard":
        assert cp.returncode == 1 and cp.stdout == "", cp
        assert "standard build: no verbs support" in cp.stderr, cp.stderr
    elif cp.returncode == 0:
        assert json.loads(cp.stdout) == {"devices": []}, cp.stdout
    else:
        assert cp.returncode == 1 and cp.stderr.startswith("rdmastor: ibv_get_device_list: "), cp
    bad = subprocess.run([RDMASTOR_BIN, "rdma", "devices", "--json"], capture_output=True,
                         text=True, timeout=30, env=_clean_env(), stdin=subprocess.DEVNULL)
    assert bad.returncode == 2 and "unknown argument '--json'" in bad.stderr, bad
