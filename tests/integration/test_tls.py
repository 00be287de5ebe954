"""TLS: --certs-dir with public.crt/private.key serves HTTPS only. A throw-away CA and a server
certificate (SAN 127.0.0.1 and localhost) are made with the openssl CLI; awscli (--ca-bundle),
boto3 (verify=ca.pem) and, when present, a current boto3 (which sends
STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer over HTTPS) do round trips."""

import hashlib
import json
import os
import socket
import subprocess

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import (HOST, REGION, RDMASTOR_BIN, AwsCli, Server, _clean_env, seeded_bytes,
                      unique_bucket)
from test_current_sdk import SCRIPT, _newer_boto3_python
from tls_util import make_ca, make_certs_dir


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    certs = make_certs_dir(d, ca)
    return {"ca": ca["pem"], "certs": certs, "dir": d}


class TlsServer(Server):
    def __init__(self, ca, **kw):
        super().__init__(**kw)
        self.ca = ca
        self.verify = ca  # the health wait and clients trust the test CA

    @property
    def endpoint(self):
        return f"https://{HOST}:{self.port}"


@pytest.fixture(scope="module")
def tls_server(pki):
    srv = TlsServer(pki["ca"], name="tls", args=["--certs-dir", pki["certs"]])
    try:
        srv.start()
        yield srv
    finally:
        srv.cleanup()


def tls_client(srv, ca):
    return boto3.session.Session().client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=srv.access_key,
        aws_secret_access_key=srv.secret_key, region_name=REGION, verify=ca,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"total_max_attempts": 1, "mode": "standard"}))


def test_boto3_round_trip_over_https(tls_server, pki):
    s3 = tls_client(tls_server, pki["ca"])
    bucket = unique_bucket("tls")
    s3.create_bucket(Bucket=bucket)
    body = seeded_bytes(2 * 1024 * 1024 + 5)
    s3.put_object(Bucket=bucket, Key="a/b", Body=body)
    got = s3.get_object(Bucket=bucket, Key="a/b")["Body"].read()
    assert hashlib.md5(got).hexdigest() == hashlib.md5(body).hexdigest()
    r = s3.get_object(Bucket=bucket, Key="a/b", Range="bytes=10-19")
    assert r["Body"].read() == body[10:20]
    # Presigned URL over HTTPS.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "a/b"})
    assert url.startswith("https://")
    assert requests.get(url, verify=pki["ca"], timeout=10).content == body
    # A client that does not trust the CA refuses the connection.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(tls_server.endpoint + "/minio/health/live", timeout=10)


def test_awscli_round_trip_over_https(tls_server, pki, tmp_path):
    aws = AwsCli(tls_server, str(tmp_path))
    src = tmp_path / "up.bin"
    src.write_bytes(seeded_bytes(9 * 1024 * 1024, seed=3))  # multipart with awscli's 8 MiB parts
    bucket = unique_bucket("tlscli")
    aws("--ca-bundle", pki["ca"], "s3", "mb", f"s3://{bucket}")
    aws("--ca-bundle", pki["ca"], "s3", "cp", str(src), f"s3://{bucket}/up.bin")
    aws("--ca-bundle", pki["ca"], "s3", "cp", f"s3://{bucket}/up.bin", str(tmp_path / "down.bin"))
    assert (tmp_path / "down.bin").read_bytes() == src.read_bytes()
    ls = aws("--ca-bundle", pki["ca"], "s3", "ls", f"s3://{bucket}/")
    assert "up.bin" in ls.stdout


def test_plain_http_is_not_served(tls_server):
    # HTTPS only, like MinIO: a plain request gets no HTTP response.
    with socket.create_connection((HOST, tls_server.port), timeout=5) as s:
        s.sendall(b"GET /minio/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
    assert not data.startswith(b"HTTP/1.1 200")
    assert tls_server.alive()


def test_current_boto3_trailer_checksums_over_https(tls_server, pki, tmp_path):
    py = _newer_boto3_python()
    if py is None:
        pytest.skip("no interpreter with boto3 >= 1.36 on this machine; Debian's boto3 1.26 "
                    "does not send STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    script = tmp_path / "sdk.py"
    script.write_text(SCRIPT)
    env = _clean_env({"AWS_CA_BUNDLE": pki["ca"]})
    r = subprocess.run([py, str(script), tls_server.endpoint, tls_server.access_key,
                        tls_server.secret_key, unique_bucket("tlssdk"), str(tmp_path / "m.bin")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["put_crc32"] == out["expected_crc32"]
    assert out["get_crc32"] == out["expected_crc32"]
    assert out["put_etag"] == '"%s"' % out["md5"]
    assert out["get_same"] is True and out["multi_same"] is True


def test_incomplete_certs_dir_refuses_to_start(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "public.crt").write_text("x")
    cp = subprocess.run([RDMASTOR_BIN, "server", "--address", f"{HOST}:0", "--certs-dir",
                         str(certs), str(tmp_path / "d")], capture_output=True, text=True,
                        timeout=20, env=_clean_env(), stdin=subprocess.DEVNULL)
    assert cp.returncode == 2 and "private.key" in cp.stderr
    (certs / "private.key").write_text("not a key")
    os.makedirs(tmp_path / "d", exist_ok=True)
    cp = subprocess.run([RDMASTOR_BIN, "server", "--address", f"{HOST}:0", "--certs-dir",
                         str(certs), str(tmp_path / "d")], capture_output=True, text=True,
                        timeout=20, env=_clean_env(), stdin=subprocess.DEVNULL)
    assert cp.returncode == 1 and "TLS" in cp.stderr


@pytest.mark.parametrize("ca_dir", [".rdmastor/certs/CAs", ".minio/certs/CAs", ".mc/certs/CAs"])
def test_client_tools_trust_the_ca_dirs_of_rdmastor_minio_and_mc(tls_server, pki, tmp_path, ca_dir):
    """rdmastor-cli and `rdmastor admin` verify an https:// endpoint against the CAs a MinIO host
    (~/.minio/certs/CAs) or an mc user (~/.mc/certs/CAs) already has, as well as their own."""
    cli = os.path.join(os.path.dirname(RDMASTOR_BIN), "rdmastor-cli")
    env = _clean_env({"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": tls_server.access_key,
                      "AWS_SECRET_ACCESS_KEY": tls_server.secret_key})

    def run(*cmd):
        return subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    ls = [cli, "--endpoint", tls_server.endpoint, "ls"]
    users = [RDMASTOR_BIN, "admin", "user", "list", "--endpoint", tls_server.endpoint]
    for cmd in (ls, users):  # the CA is in none of them yet
        cp = run(*cmd)
        assert cp.returncode == 1 and "certificate verification failed" in cp.stderr, cp.stderr
    (tmp_path / ca_dir).mkdir(parents=True)
    with open(pki["ca"], "rb") as src:
        (tmp_path / ca_dir / "test-ca.crt").write_bytes(src.read())
    for cmd in (ls, users):
        cp = run(*cmd)
        assert cp.returncode == 0, cp.stderr
