"""rdmastor-cli against the real server: S3 over RDMA on the soft fabric, the HTTP fallback only
when --http-fallback allows it, the summary line, the progress line on a terminal, exit codes, and
no partial file after a failed download."""

import hashlib
import json
import os
import pty
import re
import subprocess

import pytest

from conftest import BUILD_DIR, _clean_env

CLI = os.path.join(BUILD_DIR, "src", "rdmastor-cli")
SUMMARY = re.compile(r"^(put|get): (\d+) bytes in [0-9.]+ s, [0-9.]+ MiB/s, transport (rdma|http)$",
                     re.M)


def cli(srv, *args, tty=False, timeout=120):
    env = _clean_env({"AWS_ACCESS_KEY_ID": srv.access_key,
                      "AWS_SECRET_ACCESS_KEY": srv.secret_key})
    cmd = [CLI, "--endpoint", srv.endpoint, *args]
    if not tty:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    # stderr on a pseudo-terminal: the progress line is drawn there.
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env,
                             stdin=subprocess.DEVNULL)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        out = p.stdout.read()
        p.wait(timeout=timeout)
        return p.returncode, out.decode(), err.decode(errors="replace")
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def write_file(path, size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def md5_file(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture(scope="module")
def soft_server(tmp_path_factory):
    from conftest import Server
    srv = Server("soft", env={"MINIO_RDMA_FABRIC": "soft"})
    srv.start()
    yield srv
    srv.cleanup()


def test_rdma_round_trips_with_summary_and_progress(soft_server, tmp_path):
    if not os.path.exists(CLI):
        pytest.fail(f"{CLI} is not built")
    assert cli(soft_server, "--rdma", "mb", "clib")[0] == 0
    for size in (0, 1, 5 << 20, 80 << 20):  # 80 MiB: two parts / two ranged GETs
        src, dst = tmp_path / f"src-{size}", tmp_path / f"dst-{size}"
        write_file(src, size, size)
        rc, _, err = cli(soft_server, "--rdma", "put", f"clib/o{size}", str(src))
        assert rc == 0, err
        m = SUMMARY.search(err)
        assert m and m.group(1) == "put" and int(m.group(2)) == size and m.group(3) == "rdma", err
        rc, _, err = cli(soft_server, "--rdma", "get", f"clib/o{size}", str(dst))
        assert rc == 0, err
        m = SUMMARY.search(err)
        assert m and int(m.group(2)) == size and m.group(3) == "rdma", err
        assert md5_file(dst) == md5_file(src)
    rc, out, _ = cli(soft_server, "ls", "clib")
    assert rc == 0 and set(out.split()) == {"o0", "o1", f"o{5 << 20}", f"o{80 << 20}"}
    # On a terminal, large transfers draw a progress line that reaches 100%.
    big = tmp_path / f"src-{80 << 20}"
    rc, _, err = cli(soft_server, "--rdma", "put", "clib/tty", str(big), tty=True)
    assert rc == 0, err
    assert "\r" in err and "100.0% 80/80 MiB" in err, err
    rc, _, err = cli(soft_server, "get", "clib/tty", str(tmp_path / "tty-http"), tty=True)
    assert rc == 0 and "100.0% 80/80 MiB" in err and "transport http" in err, err
    assert md5_file(tmp_path / "tty-http") == md5_file(big)
    # Not a terminal: no progress line, only the summary.
    rc, _, err = cli(soft_server, "--rdma", "get", "clib/tty", str(tmp_path / "quiet"))
    assert rc == 0 and "%" not in err and len(err.strip().splitlines()) == 1, err


def test_failures_exit_nonzero_and_leave_no_partial_file(soft_server, tmp_path):
    assert cli(soft_server, "mb", "clif")[0] == 0
    dst = tmp_path / "missing"
    rc, _, err = cli(soft_server, "--rdma", "get", "clif/nope", str(dst))
    assert rc == 1 and "rdmastor-cli:" in err
    assert not dst.exists()
    rc, _, err = cli(soft_server, "--rdma", "put", "clif/k", str(tmp_path / "no-such-file"))
    assert rc == 1 and "cannot open" in err
    # Usage errors exit 2.
    assert cli(soft_server, "--http-fallback", "ls")[0] == 2
    assert cli(soft_server, "put", "clif")[0] == 2
    assert cli(soft_server, "frobnicate", "clif")[0] == 2


def test_http_fallback_only_when_allowed(server_factory, tmp_path):
    srv = server_factory(name="rdma-off", env={"MINIO_RDMA_FABRIC": "off"})
    src = tmp_path / "f"
    write_file(src, 300000, 7)
    assert cli(srv, "mb", "fbk")[0] == 0
    rc, _, err = cli(srv, "--rdma", "put", "fbk/k", str(src))
    assert rc == 1 and "RDMANotSupported" in err, err
    rc, _, err = cli(srv, "--rdma", "--http-fallback", "put", "fbk/k", str(src))
    assert rc == 0 and "transport http" in err, err
    rc, _, err = cli(srv, "--rdma", "get", "fbk/k", str(tmp_path / "strict"))
    assert rc == 1 and "RDMANotSupported" in err, err
    assert not (tmp_path / "strict").exists()
    rc, _, err = cli(srv, "--rdma", "--http-fallback", "get", "fbk/k", str(tmp_path / "back"))
    assert rc == 0 and "transport http" in err, err
    assert md5_file(tmp_path / "back") == md5_file(src)


def _parallel_gets(srv, n, tmp_path, *flags):
    """n rdmastor-cli GETs of one object at once; [(rc, json or None, stderr)]."""
    env = _clean_env({"AWS_ACCESS_KEY_ID": srv.access_key,
                      "AWS_SECRET_ACCESS_KEY": srv.secret_key})
    procs = [subprocess.Popen([CLI, "--endpoint", srv.endpoint, "--rdma", "--json", *flags, "get",
                               "thr/obj", str(tmp_path / f"out{i}")], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(n)]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=120)
        out.append((p.returncode, json.loads(so) if so.strip() else None, se))
    return out


def test_throttled_rdma_gets_are_retried(server_factory, tmp_path):
    """A server running one S3-over-RDMA transfer per client address answers concurrent ones 503
    SlowDown (issue 37 item 13): with --max-attempts 1 parallel GETs fail with it; with more
    tries they back off (the SDKs' standard mode) and all complete, the retries reported in
    --json, the bytes identical."""
    srv = server_factory(name="throttle", env={"MINIO_RDMA_FABRIC": "soft",
                                               "RDMASTOR_RDMA_TRANSFERS_PER_CLIENT": "1"})
    src = tmp_path / "src"
    write_file(src, 8 << 20, 37)
    assert cli(srv, "mb", "thr")[0] == 0
    assert cli(srv, "--rdma", "put", "thr/obj", str(src))[0] == 0
    refused = []
    for _ in range(3):  # bounded: one round nearly always collides
        refused = [r for r in _parallel_gets(srv, 6, tmp_path, "--max-attempts", "1") if r[0]]
        if refused:
            break
    assert refused and all(r[1] and "SlowDown" in r[1]["error"] for r in refused), refused
    results = _parallel_gets(srv, 6, tmp_path, "--max-attempts", "12")
    assert all(rc == 0 for rc, _, _ in results), [r[2][-300:] for r in results if r[0]]
    retries = sum(j["retries"] for _, j, _ in results)
    print(f"6 parallel GETs: {len(refused)} refused without retries; {retries} retries with them")
    assert retries > 0, results
    want = md5_file(src)
    assert all(md5_file(tmp_path / f"out{i}") == want for i in range(6))
    # A wrong value is a usage error.
    assert cli(srv, "--max-attempts", "0", "ls")[0] == 2
