"""Shared fixtures for the rdmastor integration tests.

Every test file is run by ctest as its own pytest process:
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration/test_X.py
with RDMASTOR_BIN (the server binary) and RDMASTOR_BUILD_DIR in the environment.

Rules these helpers enforce: loopback only (127.0.0.0/8), every subprocess and socket
has a timeout, every loop is bounded, every server started here is killed at teardown
and its data directory removed.
"""

import base64
import contextlib
import datetime
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import string
import subprocess
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_DIR = os.environ.get("RDMASTOR_BUILD_DIR") or os.path.join(REPO_ROOT, "build")
RDMASTOR_BIN = os.environ.get("RDMASTOR_BIN") or os.path.join(BUILD_DIR, "src", "rdmastor")

REGION = "us-east-1"
AWS_BIN = "/usr/bin/aws"
S3CMD_BIN = "/usr/bin/s3cmd"
CURL_BIN = "/usr/bin/curl"
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
UNSIGNED = "UNSIGNED-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# Servers currently running in this pytest process; their logs are attached to failing tests.
_LIVE_SERVERS = []


# ----------------------------------------------------------------------------------------------
# small utilities
# ----------------------------------------------------------------------------------------------

def rand_str(n=12, alphabet=string.ascii_lowercase + string.digits):
    return "".join(random.SystemRandom().choice(alphabet) for _ in range(n))


def unique_bucket(prefix="it"):
    return f"{prefix}-{rand_str(10)}"


def seeded_bytes(size, seed=1):
    """Deterministic pseudo-random payload (fast: random.randbytes)."""
    return random.Random(seed).randbytes(size)


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def free_port():
    """A free TCP port on the loopback interface (bind port 0, read it back, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def s3_error(body):
    """Parse an S3 error XML body into a dict with Code, Message, ... (empty dict if not XML)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    body = (body or "").strip()
    if not body:
        return {}
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return {}
    out = {"_root": root.tag.split("}")[-1]}
    for child in root:
        out[child.tag.split("}")[-1]] = child.text or ""
    return out


def assert_s3_error(status, headers, body, code, http_status, message_contains=None):
    """Check an S3 error response: status, XML Code, x-amz-request-id header."""
    lower = {k.lower(): v for k, v in dict(headers).items()}
    err = s3_error(body)
    assert status == http_status, f"expected HTTP {http_status}, got {status}; body={body[:600]!r}"
    assert err.get("_root") == "Error", f"expected S3 <Error> XML, got {body[:600]!r}"
    if code is None:
        assert err.get("Code"), f"S3 error without a Code: {body[:600]!r}"
    elif isinstance(code, (tuple, list, set)):
        assert err.get("Code") in code, f"expected Code in {code}, got {err.get('Code')!r}: {body[:600]!r}"
    else:
        assert err.get("Code") == code, f"expected Code {code!r}, got {err.get('Code')!r}: {body[:600]!r}"
    assert lower.get("x-amz-request-id"), f"missing x-amz-request-id header: {lower}"
    if message_contains:
        assert message_contains.lower() in (err.get("Message") or "").lower(), err
    return err


# ----------------------------------------------------------------------------------------------
# the server process
# ----------------------------------------------------------------------------------------------

def _clean_env(extra=None, creds=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINIO_", "RDMASTOR_", "AWS_")) and k.lower() not in
           ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    if creds is not None:
        env["MINIO_ROOT_USER"], env["MINIO_ROOT_PASSWORD"] = creds
    if extra:
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
    return env


class Server:
    """One rdmastor server process on a loopback port with its own temp directory."""

    def __init__(self, name="server", env=None, data_dirs=None, creds=True, args=None,
                 pass_dirs=True):
        self.name = name
        self.base = tempfile.mkdtemp(prefix="rdmastor-it-", dir="/tmp")
        if data_dirs is None:
            data_dirs = [os.path.join(self.base, "data")]
        self.data_dirs = data_dirs
        for d in data_dirs:
            os.makedirs(d, exist_ok=True)
        self.datadir = data_dirs[0]
        if creds is True:
            self.access_key = "AK" + rand_str(14, string.ascii_uppercase + string.digits)
            self.secret_key = rand_str(32, string.ascii_letters + string.digits)
        elif creds:
            self.access_key, self.secret_key = creds
        else:
            self.access_key, self.secret_key = "minioadmin", "minioadmin"
        self._creds_in_env = bool(creds)
        self.extra_env = dict(env or {})
        self.extra_args = list(args or [])
        self.pass_dirs = pass_dirs
        # requests' / boto3's `verify` for this server: True, or a CA bundle path (HTTPS).
        self.verify = True
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.base, f"{name}.log")
        self._log = None

    # -- lifecycle --
    @property
    def endpoint(self):
        return f"http://{HOST}:{self.port}"

    @property
    def address(self):
        return f"{HOST}:{self.port}"

    def command(self):
        cmd = [RDMASTOR_BIN, "server", "--address", self.address] + self.extra_args
        if self.pass_dirs:
            cmd += self.data_dirs
        return cmd

    def env(self):
        creds = (self.access_key, self.secret_key) if self._creds_in_env else None
        return _clean_env(self.extra_env, creds)

    def start(self, timeout=START_TIMEOUT, port=None):
        if not os.path.exists(RDMASTOR_BIN):
            pytest.fail(f"server binary not found: {RDMASTOR_BIN} (set RDMASTOR_BIN)")
        last_err = None
        for attempt in range(3):  # a freshly chosen port can be taken by someone else: retry
            self.port = port or self.port or free_port()
            self._log = open(self.log_path, "ab")
            self._log.write(f"==== start attempt {attempt}: {' '.join(self.command())}\n".encode())
            self._log.flush()
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=subprocess.STDOUT,
                                         env=self.env(), start_new_session=True)
            if self not in _LIVE_SERVERS:
                _LIVE_SERVERS.append(self)
            try:
                self.wait_ready(timeout)
                return self
            except RuntimeError as e:
                last_err = e
                self.kill()
                if port is not None or "in use" not in self.log_tail(20).lower():
                    break
                self.port = None
        raise RuntimeError(f"{self.name} did not start: {last_err}\n--- log tail ---\n{self.log_tail()}")

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        url = self.endpoint + "/minio/health/live"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early with status {self.proc.returncode}")
            try:
                r = requests.get(url, timeout=1, verify=self.verify)
                if r.status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not healthy after {timeout}s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL, timeout=10):
        """Stop the process (SIGKILL by default) and reap it."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def stop(self):
        return self.kill(signal.SIGTERM, timeout=10)

    def restart(self, timeout=START_TIMEOUT):
        self.kill()
        return self.start(timeout=timeout, port=self.port)

    def cleanup(self):
        self.kill()
        if self in _LIVE_SERVERS:
            _LIVE_SERVERS.remove(self)
        shutil.rmtree(self.base, ignore_errors=True)

    # -- introspection --
    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines=60):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def rss_kib(self):
        """VmRSS of the server process in KiB (None if gone)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    def url(self, path):
        return self.endpoint + path

    def client(self, **kw):
        return make_client(self, **kw)


def pytest_configure(config):
    config.addinivalue_line("markers", "large: big-object tests (still part of the default run)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for srv in list(_LIVE_SERVERS):
            rep.sections.append((f"rdmastor log tail: {srv.name} ({srv.log_path})",
                                 srv.log_tail(60)))


@pytest.fixture(scope="session")
def server():
    """The shared server for a test file (each file is its own pytest session under ctest)."""
    srv = Server("shared")
    try:
        srv.start()
    except RuntimeError as e:
        srv.cleanup()
        pytest.fail(str(e))
    yield srv
    srv.cleanup()


@contextlib.contextmanager
def erasure4(name="erasure4", env=None):
    """A started 4-drive erasure-coded server (EC 2+2) with `env`, removed on exit."""
    base = tempfile.mkdtemp(prefix="rdmastor-it-4d-", dir="/tmp")
    srv = Server(name, env=env, data_dirs=[os.path.join(base, f"d{i}") for i in range(4)])
    try:
        srv.start()
    except RuntimeError as e:
        srv.cleanup()
        pytest.fail(str(e))
    try:
        yield srv
    finally:
        srv.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def erasure_server():
    """A 4-drive erasure-coded server (EC 2+2) for the test file that asks for it."""
    with erasure4() as srv:
        yield srv


# The start of every boto3 script sdk_script_runner runs (argv: endpoint, access key, secret key,
# bucket prefix): the imports, client() and `s3` (path style, SigV4, never retried), the results
# `out` (printed as JSON on the last line by the script), err() / err_message() and section().
SDK_SCRIPT_PREAMBLE = r'''
import hashlib, json, sys, threading, traceback
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
endpoint, ak, sk, prefix = sys.argv[1:5]


def client():
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                        aws_secret_access_key=sk, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"total_max_attempts": 1, "mode": "standard"}))


s3 = client()
out = {"boto3": boto3.__version__}


def err_message(fn, **kw):
    """[HTTP status, S3 error code, message] of a call that must fail; ["ok", None, None] if it
    succeeded."""
    try:
        fn(**kw)
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"),
                e.response["Error"].get("Message")]
    return ["ok", None, None]


def err(fn, **kw):
    """[HTTP status, S3 error code] of a call that must fail; ["ok", None] if it succeeded."""
    return err_message(fn, **kw)[:2]


def section(fn):
    """Runs a group of checks at once; a crash (an old server's surprise) is recorded, not fatal,
    so that every other group still reports its own results."""
    try:
        fn()
    except Exception:
        out["crash " + fn.__name__] = traceback.format_exc()[-3000:]
    return fn
'''


def sdk_script_runner(tmp_path_factory, script_text, name, bucket_prefix, timeout=600):
    """Returns run(python, server, section) for an SDK script (SDK_SCRIPT_PREAMBLE is put before
    `script_text`; last stdout line: a JSON object of results). The script runs once per
    (interpreter, server); a failed run is cached too, so every test then reports its stderr. A
    result "crash <section>" (the script's group raised) fails that section's tests."""
    cache = {}
    script = tmp_path_factory.mktemp("sdk") / name
    script.write_text(SDK_SCRIPT_PREAMBLE + script_text)

    def run(py, srv, section):
        k = (py, srv.name)
        if k not in cache:
            cache[k] = subprocess.run([py, str(script), srv.endpoint, srv.access_key,
                                       srv.secret_key, unique_bucket(bucket_prefix)],
                                      capture_output=True, text=True, timeout=timeout,
                                      env=_clean_env())
        r = cache[k]
        assert r.returncode == 0, r.stderr[-4000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert "crash " + section not in out, out["crash " + section]
        return out
    return run


def boto3_error_code(fn, **kw):
    """[HTTP status, S3 error code] of a boto3 call that must fail; ["ok", None] if it
    succeeded (SDK_SCRIPT_PREAMBLE's err(), for tests that call boto3 in-process)."""
    try:
        fn(**kw)
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")]
    return ["ok", None]


@pytest.fixture
def server_factory():
    """Create extra servers inside one test; all are killed and removed at teardown."""
    made = []

    def make(start=True, **kw):
        srv = Server(name=kw.pop("name", f"extra{len(made)}"), **kw)
        made.append(srv)
        if start:
            srv.start()
        return srv

    yield make
    for srv in made:
        srv.cleanup()


# ----------------------------------------------------------------------------------------------
# boto3
# ----------------------------------------------------------------------------------------------

def make_client(srv, access_key=None, secret_key=None, addressing_style="path", endpoint=None,
                max_attempts=1, read_timeout=60, **cfg):
    # total_max_attempts counts the first try: 1 means no retries (botocore's "max_attempts"
    # would add one), so a server problem is never hidden by a silent second attempt.
    config = Config(region_name=REGION, signature_version="s3v4",
                    s3={"addressing_style": addressing_style},
                    retries={"total_max_attempts": max_attempts, "mode": "standard"},
                    connect_timeout=5, read_timeout=read_timeout, **cfg)
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint or srv.endpoint,
        aws_access_key_id=access_key or srv.access_key,
        aws_secret_access_key=secret_key or srv.secret_key,
        region_name=REGION, config=config, verify=getattr(srv, "verify", True))


@pytest.fixture(scope="session")
def s3(server):
    return make_client(server)


@pytest.fixture
def client_factory():
    return make_client


def empty_and_delete_bucket(client, bucket):
    """Best-effort cleanup, bounded: at most 50 pages of 1000 keys / uploads."""
    with contextlib.suppress(Exception):
        for _ in range(50):
            up = client.list_multipart_uploads(Bucket=bucket)
            for u in up.get("Uploads", []):
                with contextlib.suppress(Exception):
                    client.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
            if not up.get("IsTruncated"):
                break
    with contextlib.suppress(Exception):
        for _ in range(50):
            resp = client.list_objects_v2(Bucket=bucket)
            keys = [{"Key": o["Key"]} for o in resp.get("Contents", [])]
            if not keys:
                break
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    with contextlib.suppress(Exception):
        client.delete_bucket(Bucket=bucket)


@pytest.fixture
def bucket(s3):
    """A fresh empty bucket on the shared server, removed (best effort) afterwards."""
    name = unique_bucket()
    s3.create_bucket(Bucket=name)
    yield name
    empty_and_delete_bucket(s3, name)


# ----------------------------------------------------------------------------------------------
# hand-made SigV4 (for requests boto3 will not make: raw paths, skewed dates, bad signatures)
# ----------------------------------------------------------------------------------------------

def _hmac(key, msg):
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret, datestamp, region=REGION, service="s3"):
    k = _hmac(("AWS4" + secret).encode("utf-8"), datestamp)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def uri_encode(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def canonical_uri(raw_path):
    """S3 canonical URI: the decoded path, each segment URI-encoded once, '/' kept."""
    return urllib.parse.quote(urllib.parse.unquote(raw_path), safe="/-_.~")


def canonical_query(query_items):
    pairs = sorted((uri_encode(k), uri_encode(v)) for k, v in query_items)
    return "&".join(f"{k}={v}" for k, v in pairs)


def sign_v4(method, raw_path, query_items, headers, payload_hash, access_key, secret_key,
            when=None, region=REGION):
    """Return a new header dict with x-amz-date, x-amz-content-sha256 and Authorization added.

    raw_path is the path exactly as it will be sent on the wire (already percent-encoded).
    Every header given is signed. Also returns the seed signature and scope for aws-chunked.
    """
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    datestamp = when.strftime("%Y%m%d")
    hdrs = dict(headers)
    hdrs["x-amz-date"] = amz_date
    hdrs["x-amz-content-sha256"] = payload_hash
    lower = {}
    for k, v in hdrs.items():
        lower[k.lower().strip()] = " ".join(str(v).strip().split())
    signed_names = sorted(lower)
    canon_headers = "".join(f"{k}:{lower[k]}\n" for k in signed_names)
    signed_headers = ";".join(signed_names)
    creq = "\n".join([method, canonical_uri(raw_path), canonical_query(query_items),
                      canon_headers, signed_headers, payload_hash])
    scope = f"{datestamp}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode("utf-8")).hexdigest()])
    key = signing_key(secret_key, datestamp, region)
    sig = hmac.new(key, sts.encode("utf-8"), hashlib.sha256).hexdigest()
    hdrs["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                             f"SignedHeaders={signed_headers}, Signature={sig}")
    return hdrs, {"signature": sig, "scope": scope, "amz_date": amz_date, "key": key}


def aws_chunked_body(data, chunk_size, sig_ctx, corrupt_chunk=None):
    """Encode data as STREAMING-AWS4-HMAC-SHA256-PAYLOAD, chained from the seed signature.

    corrupt_chunk: index of a chunk whose signature is replaced by a wrong (well-formed) one.
    """
    chunks = [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)] + [b""]
    prev = sig_ctx["signature"]
    out = []
    for idx, chunk in enumerate(chunks):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", sig_ctx["amz_date"], sig_ctx["scope"], prev,
                         EMPTY_SHA256, hashlib.sha256(chunk).hexdigest()])
        sig = hmac.new(sig_ctx["key"], sts.encode(), hashlib.sha256).hexdigest()
        prev = sig
        if idx == corrupt_chunk:
            sig = flip_hex_digit(sig)
        out.append(f"{len(chunk):x};chunk-signature={sig}\r\n".encode() + chunk + b"\r\n")
    return b"".join(out)


def aws_chunked_length(data_len, chunk_size):
    n_full, rem = divmod(data_len, chunk_size)
    sizes = [chunk_size] * n_full + ([rem] if rem else []) + [0]
    return sum(len(f"{s:x};chunk-signature=") + 64 + 2 + s + 2 for s in sizes)


def flip_hex_digit(hexstr, pos=None):
    pos = len(hexstr) // 2 if pos is None else pos
    c = hexstr[pos]
    repl = "0" if c != "0" else "1"
    return hexstr[:pos] + repl + hexstr[pos + 1:]


class Response:
    def __init__(self, status, headers, body, reason=""):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.body = body
        self.reason = reason

    def header(self, name, default=None):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return default

    @property
    def hdict(self):
        return {k.lower(): v for k, v in self.headers}

    @property
    def error(self):
        return s3_error(self.body)

    def __repr__(self):
        return f"<Response {self.status} {self.hdict} {self.body[:400]!r}>"


def http_send(srv, method, raw_path, headers=None, body=b"", timeout=30, host_header=None,
              source=None):
    """Send one request with http.client exactly as given (path not normalised). source: the
    local address to send from (another 127.0.0.0/8 address: another client host)."""
    conn = http.client.HTTPConnection(HOST, srv.port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.putrequest(method, raw_path, skip_host=True, skip_accept_encoding=True)
        hdrs = dict(headers or {})
        names = {k.lower() for k in hdrs}
        if "host" not in names:
            conn.putheader("Host", host_header or srv.address)
        if "content-length" not in names and "transfer-encoding" not in names and \
                (body or method in ("PUT", "POST")):
            conn.putheader("Content-Length", str(len(body) if isinstance(body, (bytes, bytearray)) else 0))
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        if isinstance(body, (bytes, bytearray)):
            if body:
                conn.send(body)
        else:
            for piece in body:
                conn.send(piece)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, resp.getheaders(), data, resp.reason)
    finally:
        conn.close()


def signed_request(srv, method, raw_path, query=None, headers=None, body=b"", payload_hash=None,
                   access_key=None, secret_key=None, when=None, timeout=30, host_header=None,
                   source=None):
    """SigV4-sign (by hand) and send. query: list of (k, v) already decoded."""
    query = list(query or [])
    headers = dict(headers or {})
    host = host_header or srv.address
    headers.setdefault("host", host)
    if payload_hash is None:
        payload_hash = hashlib.sha256(body).hexdigest() if isinstance(body, (bytes, bytearray)) else UNSIGNED
    hdrs, _ = sign_v4(method, raw_path, query, headers, payload_hash,
                      access_key or srv.access_key, secret_key or srv.secret_key, when=when)
    path = raw_path + ("?" + canonical_query(query) if query else "")
    return http_send(srv, method, path, hdrs, body, timeout=timeout, source=source)


def raw_exchange(srv, data, timeout=10, read_limit=1 << 20):
    """Write raw bytes to the server; return what comes back until close/timeout (bounded)."""
    out = b""
    with socket.create_connection((HOST, srv.port), timeout=timeout) as s:
        with contextlib.suppress(OSError):
            s.sendall(data)
        deadline = time.monotonic() + timeout
        while len(out) < read_limit and time.monotonic() < deadline:
            try:
                piece = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                break
            if not piece:
                break
            out += piece
            if _complete_http_response(out):
                break
    return out


def _complete_http_response(buf):
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    if m:
        return len(rest) >= int(m.group(1))
    return b"transfer-encoding" not in head.lower() and head.startswith(b"HTTP/")


def parse_raw_response(buf):
    """(status, headers list, body) from a raw HTTP response (status None if unparseable)."""
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0]) if lines else None
    if not m:
        return None, [], body
    headers = []
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.append((k.strip(), v.strip()))
    return int(m.group(1)), headers, body


def assert_server_alive(srv):
    assert srv.alive(), "server process died"
    r = requests.get(srv.url("/minio/health/live"), timeout=5)
    assert r.status_code == 200, r.status_code


# ----------------------------------------------------------------------------------------------
# aws CLI and s3cmd
# ----------------------------------------------------------------------------------------------

class CliResult:
    def __init__(self, cp):
        self.returncode = cp.returncode
        self.stdout = cp.stdout
        self.stderr = cp.stderr

    def json(self):
        return json.loads(self.stdout) if self.stdout.strip() else {}

    def __repr__(self):
        return f"<rc={self.returncode} stdout={self.stdout[-2000:]!r} stderr={self.stderr[-2000:]!r}>"


class AwsCli:
    def __init__(self, srv, workdir):
        self.srv = srv
        self.config = os.path.join(workdir, "aws-config")
        with open(self.config, "w") as f:
            f.write(f"[default]\nregion = {REGION}\n"
                    "s3 =\n    addressing_style = path\n")
        self.creds = os.path.join(workdir, "aws-credentials")
        with open(self.creds, "w") as f:
            f.write("")
        self.home = workdir

    def env(self):
        env = _clean_env()
        env.update({
            "AWS_ACCESS_KEY_ID": self.srv.access_key,
            "AWS_SECRET_ACCESS_KEY": self.srv.secret_key,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": self.config,
            "AWS_SHARED_CREDENTIALS_FILE": self.creds,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_PAGER": "",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_RETRY_MODE": "standard",
            "HOME": self.home,
        })
        return env

    def __call__(self, *args, check=True, timeout=180, input=None):
        cmd = [AWS_BIN, "--endpoint-url", self.srv.endpoint, "--no-cli-pager",
               "--cli-read-timeout", "120", "--cli-connect-timeout", "10"] + list(args)
        cp = subprocess.run(cmd, env=self.env(), capture_output=True, text=True,
                            timeout=timeout, input=input, stdin=None if input else subprocess.DEVNULL)
        res = CliResult(cp)
        if check:
            assert cp.returncode == 0, f"{' '.join(args)} failed: {res!r}"
        return res

    def api(self, *args, **kw):
        """aws s3api ... --output json, parsed."""
        res = self("s3api", *args, "--output", "json", **kw)
        return res.json() if res.returncode == 0 else res


@pytest.fixture
def aws(server, tmp_path):
    return AwsCli(server, str(tmp_path))


class S3cmd:
    def __init__(self, srv, workdir):
        self.srv = srv
        self.config = os.path.join(workdir, "s3cfg")
        with open(self.config, "w") as f:
            f.write("\n".join([
                "[default]",
                f"access_key = {srv.access_key}",
                f"secret_key = {srv.secret_key}",
                f"host_base = {srv.address}",
                f"host_bucket = {srv.address}",
                "use_https = False",
                "signature_v2 = False",
                f"bucket_location = {REGION}",
                "check_ssl_certificate = False",
                "multipart_chunk_size_mb = 15",
                "socket_timeout = 60",
                "max_retries = 1",
                "proxy_host = ",
                "proxy_port = 0",
                "progress_meter = False",
                "",
            ]))
        self.home = workdir

    def __call__(self, *args, check=True, timeout=180):
        cmd = [S3CMD_BIN, "-c", self.config, "--no-progress"] + list(args)
        env = _clean_env({"HOME": self.home})
        cp = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
        res = CliResult(cp)
        if check:
            assert cp.returncode == 0, f"s3cmd {' '.join(args)} failed: {res!r}"
        return res


@pytest.fixture
def s3cmd(server, tmp_path):
    return S3cmd(server, str(tmp_path))


def write_file(path, size, seed=7):
    """Write size bytes of seeded random data to path in 1 MiB pieces; return md5 hex."""
    rnd = random.Random(seed)
    h = hashlib.md5()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            piece = rnd.randbytes(n)
            h.update(piece)
            f.write(piece)
            left -= n
    return h.hexdigest()


def file_md5(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(1 << 20), b""):
            h.update(piece)
    return h.hexdigest()


def b64(data):
    return base64.b64encode(data).decode()


# ----------------------------------------------------------------------------------------------
# erasure-coded deployments: `rdmastor admin heal`, metrics
# ----------------------------------------------------------------------------------------------

class HealRun:
    """Result of `rdmastor admin heal`: exit code, output, and the final counts parsed."""

    def __init__(self, cp):
        self.returncode = cp.returncode
        self.stdout = cp.stdout
        self.stderr = cp.stderr
        self.counts = None
        m = re.search(r"heal (?:done|failed): (\d+) object\(s\) scanned, (\d+) healed, "
                      r"(\d+) shard\(s\) written, (\d+) failed", cp.stdout)
        if m:
            self.counts = dict(zip(("scanned", "healed", "shards", "failed"),
                                   (int(x) for x in m.groups())))
        m = re.search(r"heal (?:done|failed): .*, (\d+) incomplete", cp.stdout)
        self.incomplete = int(m.group(1)) if m else None
        m = re.search(r"^copies not rebuilt \(.*\): (.*)$", cp.stdout, re.M)
        self.missed_drives = m.group(1).split(", ") if m else []

    def __repr__(self):
        return f"<heal rc={self.returncode} stdout={self.stdout[-3000:]!r} stderr={self.stderr[-2000:]!r}>"


def admin_heal(srv, bucket=None, cred_vars=("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"),
               secret=None, timeout=300):
    """Run `rdmastor admin heal --endpoint <srv> [bucket]` with the server's root credentials in
    the given environment variables (MINIO_ROOT_* or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)."""
    env = _clean_env({cred_vars[0]: srv.access_key, cred_vars[1]: secret or srv.secret_key})
    cmd = [RDMASTOR_BIN, "admin", "heal", "--endpoint", srv.endpoint] + ([bucket] if bucket else [])
    cp = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                        stdin=subprocess.DEVNULL)
    return HealRun(cp)


def scrape(srv, scope="node"):
    """Prometheus samples {name or name{labels}: value}; the server must run with
    MINIO_PROMETHEUS_AUTH_TYPE=public."""
    r = requests.get(srv.url(f"/minio/v2/metrics/{scope}"), timeout=10)
    assert r.status_code == 200, r.text[:500]
    out = {}
    for line in r.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def wait_heal_idle(srv, timeout=60):
    """Waits until the server heals nothing: no walk running and the heal-on-read queue empty
    (so a test may remove a drive directory without racing the healer writing into it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = scrape(srv)
        if m.get("rdmastor_heal_running") == 0 and m.get("rdmastor_heal_queue_size") == 0:
            return m
        time.sleep(0.1)
    pytest.fail(f"server still healing after {timeout}s")
