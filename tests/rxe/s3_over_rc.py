#!/usr/bin/env python3
"""S3 over RDMA on RC queue pairs against the real kernel RDMA stack (Soft-RoCE), run inside the
guest of scripts/rdma-vm.sh (ctest label rxe): the RDMA build's server on the verbs fabric (rxe has
no DC, so it serves RC only), rdmastor-cli and the Python package with RC connections opened with
rdma_cm. PUT, GET, UploadPart and ranged GET byte-identical for 0 B, 1 B, 4 KiB, 1 MiB + 1 and
64 MiB; the server's traffic metrics count the payload on the RDMA side and none over HTTP.

usage: s3_over_rc.py BUILD_DIR   (an RDMA build: BUILD_DIR/src/rdmastor, rdmastor-cli, python/)
Lean on purpose: TCG moves ~10 MB/s, and the whole rxe label has 8 minutes."""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-rdma")
IP = os.environ.get("RDMASTOR_VM_RXE_IP", "10.77.0.1")
USER, PASSWORD = "rxeadmin", "rxeadmin-secret"
SIZES = [0, 1, 4096, (1 << 20) + 1, 64 << 20]


def free_port():
    with socket.socket() as s:
        s.bind((IP, 0))
        return s.getsockname()[1]


def data_of(size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


def metrics(port):
    body = urllib.request.urlopen(f"http://{IP}:{port}/minio/v2/metrics/node", timeout=30).read()
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def traffic(port):
    m = metrics(port)
    return {(d, t): m.get(f'minio_s3_traffic_{d}_bytes{{transport="{t}"}}', 0.0)
            for d in ("received", "sent") for t in ("rdma", "tcp")}


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}", flush=True)


def main():
    work = tempfile.mkdtemp(prefix="rxe-rc-")
    port, rc_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MINIO_"))}
    env.update({"MINIO_ROOT_USER": USER, "MINIO_ROOT_PASSWORD": PASSWORD,
                "MINIO_RDMA_FABRIC": "verbs", "MINIO_RDMA_RC_PORT": str(rc_port),
                "MINIO_PROMETHEUS_AUTH_TYPE": "public"})
    log = open(os.path.join(work, "server.log"), "w")
    srv = subprocess.Popen([os.path.join(BUILD, "src", "rdmastor"), "server",
                            os.path.join(work, "drive"), "--address", f"{IP}:{port}"],
                           env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://{IP}:{port}/minio/health/live", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        server_log = open(log.name).read()
        check("RC only" in server_log and f"RC connections accepted on {IP}:{rc_port}" in server_log,
              "the server serves S3 over RDMA on RC (rxe has no DC)\n" + server_log[-2000:])
        cenv = dict(env, AWS_ACCESS_KEY_ID=USER, AWS_SECRET_ACCESS_KEY=PASSWORD)
        cli = [os.path.join(BUILD, "src", "rdmastor-cli"), "--endpoint", f"http://{IP}:{port}"]
        rdma = ["--rdma", "--fabric", "verbs", "--transport", "rc", "--rc-port", str(rc_port)]
        subprocess.run(cli + ["mb", "rc"], env=cenv, check=True)
        before = traffic(port)
        moved = 0
        for size in SIZES:
            src, dst = os.path.join(work, f"s{size}"), os.path.join(work, f"d{size}")
            with open(src, "wb") as f:
                f.write(data_of(size, size))
            for args in (["put", f"rc/o{size}", src], ["get", f"rc/o{size}", dst]):
                p = subprocess.run(cli + rdma + args, env=cenv, capture_output=True, text=True,
                                   timeout=240)
                check(p.returncode == 0 and "transport rdma" in p.stderr,
                      f"rdmastor-cli {args[0]} {size} B over RC: {p.stderr.strip()[-300:]}")
            check(open(dst, "rb").read() == data_of(size, size), f"cli {size} B byte-identical")
            moved += size
        after = traffic(port)
        check(after[("received", "rdma")] - before[("received", "rdma")] == moved and
              after[("sent", "rdma")] - before[("sent", "rdma")] == moved,
              f"cli: {moved} B each way counted on the verbs fabric")
        check(after[("received", "tcp")] == before[("received", "tcp")] and
              after[("sent", "tcp")] == before[("sent", "tcp")], "cli: no payload over HTTP")

        sys.path.insert(0, os.path.join(BUILD, "python"))
        import rdmastor
        c = rdmastor.Client(f"http://{IP}:{port}", USER, PASSWORD, rdma="verbs", transport="rc",
                            rc_port=rc_port, multipart_threshold=5 << 20, part_size=5 << 20,
                            max_concurrency=1)
        before = traffic(port)
        moved_in = moved_out = 0
        for size in SIZES:
            data = data_of(size, size + 7)
            t = c.put_object("rc", f"p{size}", data)  # 64 MiB: UploadPart x13 over RC
            check(t.transport == "rdma", f"python put {size} B over RDMA")
            back = bytearray(size)
            g = c.get_into("rc", f"p{size}", back)
            check(g.transport == "rdma" and bytes(back) == data, f"python get {size} B identical")
            moved_in += size
            moved_out += size
            if size > 2:
                part = bytearray(size - 2)
                r = c.get_into("rc", f"p{size}", part, offset=1, length=size - 2)
                check(r.transport == "rdma" and bytes(part) == data[1:-1],
                      f"python ranged get {size - 2} B identical")
                moved_out += size - 2
        after = traffic(port)
        check(after[("received", "rdma")] - before[("received", "rdma")] == moved_in and
              after[("sent", "rdma")] - before[("sent", "rdma")] == moved_out,
              "python: the payload counted on the verbs fabric")
        # Over HTTP only the multipart upload's XML (create / complete), never payload.
        check(after[("received", "tcp")] - before[("received", "tcp")] < 1024 and
              after[("sent", "tcp")] - before[("sent", "tcp")] < 1024,
              "python: no payload over HTTP")
        m = metrics(port)
        check(m.get('rdmastor_rdma_rc_connection_events{event="admitted"}', 0) <= 2 * len(SIZES) + 2,
              "one RC connection per client process (or thread), never one per request")
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
        log.close()
        if os.environ.get("RDMASTOR_KEEP"):
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
