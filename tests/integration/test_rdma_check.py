"""`rdmastor rdma check` on a build machine: no RDMA device (libibverbs cannot list any), so it
must say so cleanly, exit 1, and print every layer with its fix. The expected text lives in
golden/rdma_check_<flavour>.txt (the program does not know about it); values that differ between
machines (why no device is listed, GPU driver state, the locked-memory limit) are normalised before comparing."""

import json
import os
import re
import subprocess

import pytest

from conftest import HERE, RDMASTOR_BIN, _clean_env


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
