"""The rdmastor command line, start-up checks, and HTTP/1.1 details (Expect, chunked, keep-alive)."""

import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import time

import pytest
import requests

from conftest import (CURL_BIN, HOST, RDMASTOR_BIN, REGION, UNSIGNED, _clean_env,
                      assert_server_alive, free_port,
                      make_client, parse_raw_response, rand_str, seeded_bytes, sign_v4,
                      signed_request, unique_bucket)

MiB = 1 << 20


def run_bin(args, env=None, timeout=20):
    """Run the binary to completion (it must exit by itself within timeout)."""
    try:
        cp = subprocess.run([RDMASTOR_BIN] + args, capture_output=True, text=True,
                            timeout=timeout, env=env or _clean_env(creds=("cliuser", "clipassword1")),
                            stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"rdmastor {' '.join(args)} did not exit within {timeout}s "
                    f"(stdout={e.stdout!r} stderr={e.stderr!r})")
    return cp


def must_fail(args, env=None, timeout=20):
    cp = run_bin(args, env=env, timeout=timeout)
    out = cp.stdout + cp.stderr
    assert cp.returncode != 0, f"expected a non-zero exit: {out[-2000:]}"
    assert out.strip(), "a failing start must say why"
    return out


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------

def test_help():
    cp = run_bin(["--help"])
    assert cp.returncode == 0, cp
    out = cp.stdout + cp.stderr
    assert "server" in out
    cp = run_bin(["server", "--help"])
    assert cp.returncode == 0, cp
    out = cp.stdout + cp.stderr
    assert "--address" in out


@pytest.mark.parametrize("args,command,why,usage", [
    (["server", "--bogus", "/tmp/x"], "server", "unknown argument '--bogus'",
     "rdmastor server [--address"),
    (["server", "--address"], "server", "--address needs a value", "rdmastor server [--address"),
    (["server", "-S"], "server", "--certs-dir needs a value", "rdmastor server [--address"),
    (["admin", "info", "--endpoint"], "admin info", "--endpoint needs a value",
     "rdmastor admin info [--json]"),
    (["rdma", "check", "--frobnicate"], "rdma check", "unknown argument '--frobnicate'",
     "rdmastor rdma check [--json]"),
    (["admin", "user", "remove"], "admin user remove", "ACCESS_KEY is required",
     "user remove|info|enable|disable ACCESS_KEY"),
    (["admin", "policy", "set", "readonly"], "admin policy set", "--user is required",
     "policy set POLICY... --user AK"),
    (["admin", "prometheus-token", "--expiry-days", "0"], "admin prometheus-token",
     "--expiry-days", "rdmastor admin prometheus-token [--json]"),
    (["admin"], "admin", "which command?", "rdmastor admin heal [--json]"),
])
def test_usage_error_names_the_argument_and_prints_the_commands_usage(args, command, why, usage):
    """CLI11 (issue 33, item 10): an unknown flag, a flag without its value or a missing argument
    exits 2 naming it, with the usage lines of that command only (not the whole help)."""
    cp = run_bin(args)
    assert cp.returncode == 2 and cp.stdout == "", cp
    assert cp.stderr.startswith(f"rdmastor {command}: {why}"), cp.stderr
    assert usage in cp.stderr and f"(rdmastor {command} --help for more)" in cp.stderr, cp.stderr
    assert "Environment:" not in cp.stderr and len(cp.stderr.splitlines()) <= 8, cp.stderr
    assert "rdmastor rdma devices" not in cp.stderr, cp.stderr  # another command's line


@pytest.mark.parametrize("args,wanted,unwanted", [
    (["server", "--help"], ["rdmastor server [--address HOST:PORT]", "--console-address ADDR",
                            "-S,--certs-dir DIR", "MINIO_ROOT_USER"], ["rdmastor admin"]),
    (["admin", "heal", "--help"], ["rdmastor admin heal [--json]", "--endpoint URL", "BUCKET",
                                   "heal: asks a running erasure-coded server"],
     ["prometheus-token", "rdmastor server"]),
    (["admin", "user", "add", "--help"], ["user add ACCESS_KEY [SECRET_KEY|-]", "SECRET_KEY",
                                          "--json"], ["policy attach", "user list"]),
    (["admin", "policy", "--help"], ["policy attach POLICY... --user AK", "detach"],
     ["rdmastor admin heal"]),
    (["rdma", "check", "--help"], ["rdmastor rdma check [--json]", "--endpoint URL",
                                   "Walks the layers"], ["rdma devices` prints"]),
])
def test_help_per_command(args, wanted, unwanted):
    """`--help` after any command shows that command: its usage lines, arguments and flags."""
    cp = run_bin(args)
    assert cp.returncode == 0 and cp.stderr == "", cp
    for w in wanted:
        assert w in cp.stdout, (w, cp.stdout)
    for u in unwanted:
        assert u not in cp.stdout, (u, cp.stdout)


def test_command_words_as_arguments_and_repeated_flags():
    """A word that names another command is an argument after the command (a bucket called
    "info" for heal), and a repeated flag counts once, the last (MINIO_OPTS plus a unit's own)."""
    env = _clean_env()
    env.pop("MINIO_ROOT_USER", None)
    env.pop("MINIO_ROOT_PASSWORD", None)
    cp = run_bin(["admin", "heal", "info"], env=env)
    assert cp.returncode == 2 and cp.stderr.startswith("rdmastor admin heal: set MINIO_ROOT_USER"), cp
    out = must_fail(["server", "--address", "127.0.0.1:0", "--address", "nonsense", "/tmp/x"])
    assert "invalid --address 'nonsense'" in out, out


def test_version():
    cp = run_bin(["--version"])
    assert cp.returncode == 0, cp
    out = cp.stdout + cp.stderr
    assert re.search(r"\d+\.\d+\.\d+", out), out
    assert re.search(r"(?m)^\s*Features:", out), out


def test_unknown_command_fails():
    must_fail(["no-such-command"])


def test_bad_address(tmp_path):
    out = must_fail(["server", "--address", "nonsense", str(tmp_path)])
    assert "nonsense" in out or "address" in out.lower(), out
    out = must_fail(["server", "--address", "127.0.0.1:99999", str(tmp_path)])
    assert "99999" in out or "port" in out.lower() or "address" in out.lower(), out


def test_port_in_use(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        s.listen(1)
        port = s.getsockname()[1]
        out = must_fail(["server", "--address", f"{HOST}:{port}", str(tmp_path)])
        assert f"{HOST}:{port}" in out or f":{port}" in out, out


def test_unwritable_directory_regular_file(tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("I am a file")
    out = must_fail(["server", "--address", f"{HOST}:{free_port()}", str(f)])
    assert str(f) in out or "director" in out.lower() or "writ" in out.lower(), out
    assert f.read_text() == "I am a file"


def test_unwritable_directory_proc():
    must_fail(["server", "--address", f"{HOST}:{free_port()}", "/proc/self/rdmastor-data"])


def test_short_password_refused(tmp_path):
    env = _clean_env(creds=("rootuser", "short"))
    out = must_fail(["server", "--address", f"{HOST}:{free_port()}", str(tmp_path)], env=env)
    assert "MINIO_ROOT_PASSWORD" in out or "password" in out.lower(), out


def test_invalid_setting_refused(tmp_path):
    env = _clean_env({"RDMASTOR_LOG_LEVEL": "banana"}, creds=("rootuser", "rootpassword"))
    out = must_fail(["server", "--address", f"{HOST}:{free_port()}", str(tmp_path)], env=env)
    assert "RDMASTOR_LOG_LEVEL" in out, out


def test_invalid_rdma_setting_refused(tmp_path):
    # Inter-node settings are live in both builds (the standard one has the soft fabric).
    env = _clean_env({"MINIO_RDMA_MIN_SIZE": "banana"}, creds=("rootuser", "rootpassword"))
    out = must_fail(["server", "--address", f"{HOST}:{free_port()}", str(tmp_path)], env=env)
    assert "MINIO_RDMA_MIN_SIZE" in out, out


# ---------------------------------------------------------------------------------------------
# start-up variants
# ---------------------------------------------------------------------------------------------

def test_minio_volumes_used_without_dir(server_factory):
    srv = server_factory(start=False, name="volumes", pass_dirs=False)
    srv.extra_env["MINIO_VOLUMES"] = srv.datadir
    srv.start()
    client = make_client(srv)
    name = unique_bucket("vol")
    client.create_bucket(Bucket=name)
    client.put_object(Bucket=name, Key="k", Body=b"stored via MINIO_VOLUMES")
    found = False
    for dirpath, dirnames, _ in os.walk(srv.datadir):
        if name in dirnames:
            found = True
            break
    assert found or os.listdir(srv.datadir), "nothing written into the MINIO_VOLUMES directory"
    # data survives a restart with the same MINIO_VOLUMES
    srv.restart()
    assert make_client(srv).get_object(Bucket=name, Key="k")["Body"].read() == b"stored via MINIO_VOLUMES"


def test_default_credentials_warning(server_factory):
    srv = server_factory(name="defaultcreds", creds=False)
    client = make_client(srv, access_key="minioadmin", secret_key="minioadmin")
    client.list_buckets()
    log = srv.log_text().lower()
    assert "minioadmin" in log or "default" in log, srv.log_tail()
    assert "warn" in log, srv.log_tail()


def test_rdma_settings_on_standard_build_warn_once(server_factory):
    cp = run_bin(["--version"])
    if "no RDMA" not in cp.stdout + cp.stderr:
        pytest.skip("RDMA build: the warning applies to the standard build only")
    # The verbs knobs are compiled out of the standard build: one warning names them.
    srv = server_factory(name="rdmawarn", env={"MINIO_RDMA_DEVICE": "mlx5_0"})
    time.sleep(0.3)
    log = srv.log_text()
    hits = [l for l in log.splitlines() if "MINIO_RDMA" in l or "RDMA" in l]
    assert hits, srv.log_tail()
    warn_lines = [l for l in hits if "warn" in l.lower()]
    assert len(warn_lines) == 1, hits


# ---------------------------------------------------------------------------------------------
# HTTP/1.1 details
# ---------------------------------------------------------------------------------------------

def _signed_head(srv, method, path, extra, payload_hash=UNSIGNED):
    headers = {"host": srv.address, **extra}
    hdrs, _ = sign_v4(method, path, [], headers, payload_hash, srv.access_key, srv.secret_key)
    return (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
            + "\r\n").encode()


class RespReader:
    """Reads successive HTTP/1.1 responses (Content-Length framed) from one socket."""

    def __init__(self, sock, timeout=15):
        self.sock = sock
        self.buf = b""
        self.timeout = timeout

    def _fill(self, deadline):
        self.sock.settimeout(max(0.1, deadline - time.monotonic()))
        piece = self.sock.recv(65536)
        if not piece:
            raise ConnectionError("connection closed by server")
        self.buf += piece

    def next(self, skip_interim=True):
        deadline = time.monotonic() + self.timeout
        for _ in range(100000):
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                status, headers, _ = parse_raw_response(head + b"\r\n\r\n")
                assert status is not None, self.buf[:300]
                if 100 <= status < 200:
                    self.buf = rest
                    if skip_interim:
                        continue
                    return status, headers, b""
                lower = {k.lower(): v for k, v in headers}
                need = int(lower.get("content-length", "0"))
                while len(rest) < need:
                    self._fill(deadline)
                    head, sep, rest = self.buf.partition(b"\r\n\r\n")
                self.buf = rest[need:]
                return status, headers, rest[:need]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no complete response within {self.timeout}s: {self.buf[:300]!r}")
            self._fill(deadline)
        raise AssertionError("unreachable")


def test_expect_100_continue_raw(server, s3, bucket):
    data = seeded_bytes(256 * 1024, seed=100)
    head = _signed_head(server, "PUT", f"/{bucket}/expect", {
        "content-length": str(len(data)), "expect": "100-continue"})
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        s.sendall(head)
        rd = RespReader(s, timeout=5)
        status, _, _ = rd.next(skip_interim=False)  # must arrive without any body sent
        assert status == 100, status
        s.sendall(data)
        rd.timeout = 30
        status, headers, body = rd.next()
        assert status == 200, body[:500]
        etag = dict((k.lower(), v) for k, v in headers)["etag"]
        assert etag == '"%s"' % hashlib.md5(data).hexdigest()
    assert s3.get_object(Bucket=bucket, Key="expect")["Body"].read() == data


def test_expect_100_continue_rejected_without_body(server, bucket):
    """A request that fails auth gets its final answer without the client sending the body."""
    head = _signed_head(server, "PUT", f"/{bucket}/expect-denied", {
        "content-length": str(10 * MiB), "expect": "100-continue"})
    head = head.replace(server.access_key.encode(), b"AKUNKNOWNUSER000", 1)
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        s.sendall(head)
        status, headers, body = RespReader(s, timeout=10).next()
    assert status == 403, body[:500]
    assert b"InvalidAccessKeyId" in body


def _curl(args, timeout=60):
    return subprocess.run([CURL_BIN, "-sS", "--max-time", str(timeout - 5), "--noproxy", "*"] + args,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=_clean_env())


def _curl_sigv4(srv):
    return ["--aws-sigv4", f"aws:amz:{REGION}:s3", "--user", f"{srv.access_key}:{srv.secret_key}",
            "-H", f"x-amz-content-sha256: {UNSIGNED}"]


def test_expect_100_continue_curl(server, s3, bucket, tmp_path):
    src = tmp_path / "curl.bin"
    data = seeded_bytes(3 * MiB, seed=101)
    src.write_bytes(data)
    cp = _curl(["-v", "-T", str(src), "-H", "Expect: 100-continue", "--expect100-timeout", "10",
                "-o", "/dev/null", "-w", "%{http_code}"] + _curl_sigv4(server)
               + [server.url(f"/{bucket}/curl-expect")])
    err = cp.stderr.decode("utf-8", "replace")
    assert cp.returncode == 0, err
    assert cp.stdout.decode().strip() == "200", err
    assert "HTTP/1.1 100" in err, err
    assert s3.get_object(Bucket=bucket, Key="curl-expect")["Body"].read() == data
    # curl GET with sigv4
    cp = _curl(["-o", str(tmp_path / "back"), "-w", "%{http_code}"] + _curl_sigv4(server)
               + [server.url(f"/{bucket}/curl-expect")])
    assert cp.stdout.decode().strip() == "200", cp
    assert (tmp_path / "back").read_bytes() == data


def test_chunked_transfer_encoding_curl(server, s3, bucket, tmp_path):
    src = tmp_path / "chunked.bin"
    data = seeded_bytes(300 * 1024 + 7, seed=102)
    src.write_bytes(data)
    cp = _curl(["-v", "-T", str(src), "-H", "Transfer-Encoding: chunked", "-o", str(tmp_path / "resp"),
                "-w", "%{http_code}"] + _curl_sigv4(server) + [server.url(f"/{bucket}/curl-chunked")])
    err = cp.stderr.decode("utf-8", "replace")
    assert cp.returncode == 0, err
    code = cp.stdout.decode().strip()
    body = (tmp_path / "resp").read_bytes() if (tmp_path / "resp").exists() else b""
    if code == "200":
        assert s3.get_object(Bucket=bucket, Key="curl-chunked")["Body"].read() == data
    else:
        # S3 semantics: a PUT needs a length
        assert code == "411" and b"MissingContentLength" in body, (code, body, err)
        with pytest.raises(Exception):
            s3.head_object(Bucket=bucket, Key="curl-chunked")


def test_chunked_transfer_encoding_raw(server, s3, bucket):
    data = seeded_bytes(100 * 1024 + 13, seed=103)
    head = _signed_head(server, "PUT", f"/{bucket}/raw-chunked", {"transfer-encoding": "chunked"})
    body = b""
    for i in range(0, len(data), 30000):
        piece = data[i:i + 30000]
        body += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    body += b"0\r\n\r\n"
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        s.sendall(head + body)
        status, headers, rbody = RespReader(s).next()
    if status == 200:
        assert s3.get_object(Bucket=bucket, Key="raw-chunked")["Body"].read() == data
    else:
        assert status == 411 and b"MissingContentLength" in rbody, (status, rbody[:600])


def test_keep_alive_http_client(server, s3, bucket):
    """Several requests, including an error, on one TCP connection."""
    s3.put_object(Bucket=bucket, Key="ka", Body=b"keep alive body")
    conn = http.client.HTTPConnection(HOST, server.port, timeout=15)
    try:
        first_sock = None
        for i in range(6):
            path = f"/{bucket}/ka" if i != 3 else f"/{bucket}/missing"
            hdrs, _ = sign_v4("GET", path, [], {"host": server.address}, UNSIGNED,
                              server.access_key, server.secret_key)
            conn.request("GET", path, headers=hdrs)
            r = conn.getresponse()
            body = r.read()
            if i == 3:
                assert r.status == 404
            else:
                assert r.status == 200 and body == b"keep alive body"
            assert (r.getheader("Connection") or "").lower() != "close"
            if first_sock is None:
                first_sock = conn.sock
            assert conn.sock is first_sock, "server closed the keep-alive connection"
        # a PUT on the same connection
        body = b"put on kept-alive conn"
        hdrs, _ = sign_v4("PUT", f"/{bucket}/ka2", [], {"host": server.address,
                                                        "content-length": str(len(body))},
                          hashlib.sha256(body).hexdigest(), server.access_key, server.secret_key)
        conn.request("PUT", f"/{bucket}/ka2", body=body, headers=hdrs)
        r = conn.getresponse()
        r.read()
        assert r.status == 200
        assert conn.sock is first_sock
    finally:
        conn.close()


def test_keep_alive_requests_session(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="sess", Body=b"x" * 1000)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "sess"},
                                    ExpiresIn=300)
    with requests.Session() as sess:
        ports = set()
        for _ in range(5):
            r = sess.get(url, timeout=15, stream=True)
            assert r.status_code == 200
            assert r.headers.get("Connection", "").lower() != "close", r.headers
            conn = r.raw._connection
            assert conn is not None and conn.sock is not None
            ports.add(conn.sock.getsockname()[1])
            assert r.content == b"x" * 1000
        assert len(ports) == 1, ports


def test_connection_close_honoured(server, bucket):
    head = _signed_head(server, "GET", f"/{bucket}", {"connection": "close"})
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        s.sendall(head)
        s.settimeout(10)
        buf = b""
        for _ in range(1000):
            piece = s.recv(65536)
            if not piece:
                break
            buf += piece
        else:
            pytest.fail("server kept the connection open after Connection: close")
    assert buf.startswith(b"HTTP/1.1 200"), buf[:300]


def test_pipelined_requests(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p1", Body=b"one")
    s3.put_object(Bucket=bucket, Key="p2", Body=b"two")
    reqs = (_signed_head(server, "GET", f"/{bucket}/p1", {})
            + _signed_head(server, "GET", f"/{bucket}/missing", {})
            + _signed_head(server, "GET", f"/{bucket}/p2", {}))
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        s.sendall(reqs)
        rd = RespReader(s)
        assert rd.next()[::2] == (200, b"one")
        status, _, body = rd.next()
        assert status == 404 and b"NoSuchKey" in body
        assert rd.next()[::2] == (200, b"two")


def _next_head_only(rd):
    """The next response's status and headers, for a reply without a body (HEAD)."""
    deadline = time.monotonic() + rd.timeout
    while b"\r\n\r\n" not in rd.buf:
        rd._fill(deadline)
    head, _, rd.buf = rd.buf.partition(b"\r\n\r\n")
    status, headers, _ = parse_raw_response(head + b"\r\n\r\n")
    return status, headers


def test_keep_alive_and_pipelining_stay_in_order(server, s3, bucket):
    """Small responses are sent by the worker that ran the request, which then starts reading
    the connection's next request itself: many round trips and pipelined bursts (GET, HEAD,
    errors) on one connection must each get their own complete reply, in order."""
    bodies = {f"ka{i}": (f"body {i} " * (i + 1)).encode() for i in range(8)}
    for key, body in bodies.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body)
    with socket.create_connection((HOST, server.port), timeout=15) as s:
        rd = RespReader(s)
        for i in range(40):  # one request per round trip
            key = f"ka{i % 8}"
            s.sendall(_signed_head(server, "GET", f"/{bucket}/{key}", {}))
            assert rd.next()[::2] == (200, bodies[key])
        for _ in range(5):  # bursts: every request of a burst is sent before any reply is read
            burst = b""
            want = []
            for i, (key, body) in enumerate(bodies.items()):
                if i % 3 == 1:
                    burst += _signed_head(server, "HEAD", f"/{bucket}/{key}", {})
                    want.append(("HEAD", body))
                elif i % 3 == 2:
                    burst += _signed_head(server, "GET", f"/{bucket}/{key}-missing", {})
                    want.append(("404", None))
                else:
                    burst += _signed_head(server, "GET", f"/{bucket}/{key}", {})
                    want.append(("GET", body))
            s.sendall(burst)
            for kind, body in want:
                if kind == "HEAD":  # a HEAD reply carries the length but no body
                    status, headers = _next_head_only(rd)
                    lower = {k.lower(): v for k, v in headers}
                    assert status == 200, status
                    assert int(lower["content-length"]) == len(body)
                elif kind == "404":
                    status, _, got = rd.next()
                    assert status == 404 and b"NoSuchKey" in got, (status, got[:200])
                else:
                    assert rd.next()[::2] == (200, body)
        s.settimeout(0.3)  # nothing extra came: every reply was framed exactly
        with pytest.raises(socket.timeout):
            extra = s.recv(1)
            assert not extra, extra


def test_stalled_drive_does_not_stall_other_connections(server_factory, tmp_path):
    """A drive that never answers (here: an object's metadata file replaced by a FIFO, whose
    open blocks until a writer comes) holds the worker serving that request, and nothing else:
    other connections, and their keep-alive follow-up requests, are served meanwhile."""
    srv = server_factory(env={"MINIO_API_REQUESTS_MAX": "4"},
                         data_dirs=[str(tmp_path / f"d{i}") for i in range(4)])
    c = srv.client(read_timeout=10)
    c.create_bucket(Bucket="stall")
    c.put_object(Bucket="stall", Key="stuck", Body=b"s" * 100)
    c.put_object(Bucket="stall", Key="fine", Body=b"f" * 4096)
    # The drive holding data shard 0: a GET reads the metadata of a read quorum first (the data
    # shards' drives), so a drive it may skip would not stall it.
    metas = [os.path.join(d, "stall", "stuck", ".rdmastor.meta") for d in srv.data_dirs]
    meta = next(m for m in metas
                if json.load(open(m))["versions"][0]["erasure"]["index"] == 0)
    os.unlink(meta)
    os.mkfifo(meta)
    stuck = socket.create_connection((HOST, srv.port), timeout=30)
    try:
        stuck.sendall(_signed_head(srv, "GET", "/stall/stuck", {}))
        time.sleep(0.5)  # the request is now blocked on the drive
        t0 = time.monotonic()
        with socket.create_connection((HOST, srv.port), timeout=10) as s:
            rd = RespReader(s, timeout=5)
            for _ in range(20):
                s.sendall(_signed_head(srv, "GET", "/stall/fine", {}))
                assert rd.next()[::2] == (200, b"f" * 4096)
        assert time.monotonic() - t0 < 5
        stuck.settimeout(0.2)
        with pytest.raises(socket.timeout):  # still waiting on its drive
            stuck.recv(1)
    finally:
        # Release the blocked open (a writer appears and goes: the reader sees an empty file).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                fd = os.open(meta, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
                break
            except OSError:
                time.sleep(0.05)
        stuck.close()
    assert_server_alive(srv)


def test_health_endpoints(server):
    for path in ("/minio/health/live", "/minio/health/ready"):
        r = requests.get(server.url(path), timeout=5)
        assert r.status_code == 200, (path, r.status_code)
        r = requests.head(server.url(path), timeout=5)
        assert r.status_code == 200, (path, r.status_code)
