"""A MinIO operator's first hour (issue 33): what such an operator does first must work, or be
refused with a message that says what to do. The README's `aws s3 mb` with Debian's awscli and no
region; credentials passed MinIO's ways (*_FILE secrets, the deprecated MINIO_ACCESS_KEY pair);
unknown MINIO_* variables named; certificates in ~/.minio/certs; mistyped, unmounted and MinIO
drives refused; `{1..4}` refused pointing at `{1...4}`; `rdma check --endpoint` decided by the
server."""

import os
import re
import shutil
import subprocess
import uuid

import pytest
import requests

from conftest import (AWS_BIN, HOST, RDMASTOR_BIN, REPO_ROOT, Server, _clean_env, free_port,
                      make_client, unique_bucket)
from tls_util import make_ca, make_certs_dir

README = os.path.join(REPO_ROOT, "README.md")


def run_bin(args, env, timeout=20):
    try:
        return subprocess.run([RDMASTOR_BIN, *args], capture_output=True, text=True,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"rdmastor {' '.join(args)} did not exit within {timeout}s "
                    f"(it started serving?): {e.stderr!r}")


def refused(args, env, code=2):
    cp = run_bin(args, env)
    assert cp.returncode == code, (cp.returncode, cp.stdout[-2000:], cp.stderr[-2000:])
    return cp.stderr


def started(srv):
    srv.start()
    return srv


def warnings_naming(log, name):
    return [ln for ln in log.splitlines() if " warn" in ln.lower() and name in ln]


# ---------------------------------------------------------------------------------------------
# 1. the README's `aws s3 mb` with Debian's awscli and no region configured
# ---------------------------------------------------------------------------------------------

def readme_mb_command():
    """The README's ```sh block that runs `s3 mb`, as written."""
    text = open(README).read()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if " s3 mb " in b]
    assert len(blocks) == 1, blocks
    return blocks[0]


@pytest.mark.parametrize("region", [None, "eu-west-1"], ids=["no-region", "eu-west-1"])
def test_readme_aws_s3_mb_as_written(tmp_path, region):
    cmd = readme_mb_command()
    assert "aws --endpoint-url http://127.0.0.1:9000 s3 mb s3://demo" in cmd, cmd
    srv = Server("readme-mb", creds=False)  # the README's server: default credentials
    try:
        srv.start()
        home = tmp_path / "home"  # a fresh user: no ~/.aws/config, so no region
        home.mkdir()
        env = _clean_env({"HOME": str(home), "AWS_DEFAULT_REGION": region,
                          "AWS_CONFIG_FILE": None, "AWS_SHARED_CREDENTIALS_FILE": None,
                          "PATH": "/usr/bin:/bin"})  # Debian's awscli (v2), not a pyenv one
        cp = subprocess.run(["/bin/sh", "-c", cmd.replace("http://127.0.0.1:9000", srv.endpoint)],
                            capture_output=True, text=True, timeout=120, env=env,
                            stdin=subprocess.DEVNULL)
        assert cp.returncode == 0, (cp.stdout, cp.stderr)
        assert "make_bucket: demo" in cp.stdout, cp.stdout
        names = [b["Name"] for b in srv.client().list_buckets()["Buckets"]]
        assert names == ["demo"], names
    finally:
        srv.cleanup()


def test_debian_awscli_is_v2():
    """The README test above is about Debian 12's awscli 2.x (it sends "aws-global")."""
    cp = subprocess.run([AWS_BIN, "--version"], capture_output=True, text=True, timeout=60,
                        env=_clean_env({"PATH": "/usr/bin:/bin"}), stdin=subprocess.DEVNULL)
    assert cp.stdout.startswith("aws-cli/2."), cp.stdout + cp.stderr


# ---------------------------------------------------------------------------------------------
# 2. credentials MinIO's ways; unknown MINIO_* variables
# ---------------------------------------------------------------------------------------------

def default_creds_refused(srv):
    c = make_client(srv, access_key="minioadmin", secret_key="minioadmin")
    with pytest.raises(Exception) as e:
        c.list_buckets()
    assert "InvalidAccessKeyId" in str(e.value), e.value


def test_root_credentials_from_files(tmp_path):
    (tmp_path / "user").write_text("fileuser\n")
    (tmp_path / "password").write_text("  file-password-1\n")
    srv = Server("creds-file", creds=False,
                 env={"MINIO_ROOT_USER_FILE": str(tmp_path / "user"),
                      "MINIO_ROOT_PASSWORD_FILE": str(tmp_path / "password")})
    srv.access_key, srv.secret_key = "fileuser", "file-password-1"
    try:
        started(srv)
        b = unique_bucket()
        srv.client().create_bucket(Bucket=b)
        default_creds_refused(srv)
        assert "minioadmin" not in srv.log_text(), srv.log_tail()
    finally:
        srv.cleanup()


@pytest.mark.skipif(os.geteuid() != 0, reason="writes /run/secrets (root only)")
def test_root_credentials_from_docker_secrets():
    """A bare name is looked up in /run/secrets, as MinIO's Docker image does."""
    os.makedirs("/run/secrets", exist_ok=True)
    stem = "rdmastor-it-" + uuid.uuid4().hex[:8]
    paths = [f"/run/secrets/{stem}-user", f"/run/secrets/{stem}-password"]
    open(paths[0], "w").write("secretuser")
    open(paths[1], "w").write("secret-password-2")
    srv = Server("creds-secrets", creds=False,
                 env={"MINIO_ROOT_USER_FILE": f"{stem}-user",
                      "MINIO_ROOT_PASSWORD_FILE": f"{stem}-password"})
    srv.access_key, srv.secret_key = "secretuser", "secret-password-2"
    try:
        started(srv)
        srv.client().list_buckets()
        default_creds_refused(srv)
    finally:
        srv.cleanup()
        for p in paths:
            os.unlink(p)


def test_legacy_access_key_pair_with_deprecation_warning():
    srv = Server("creds-legacy", creds=False,
                 env={"MINIO_ACCESS_KEY": "legacyuser", "MINIO_SECRET_KEY": "legacy-secret-3"})
    srv.access_key, srv.secret_key = "legacyuser", "legacy-secret-3"
    try:
        started(srv)
        srv.client().list_buckets()
        default_creds_refused(srv)
        log = srv.log_text()
        for name in ("MINIO_ACCESS_KEY", "MINIO_SECRET_KEY"):
            lines = warnings_naming(log, name)
            assert len(lines) == 1 and "deprecated" in lines[0], (name, log[-3000:])
            assert "MINIO_ROOT_USER" in lines[0], lines
    finally:
        srv.cleanup()


def test_any_credential_variable_set_never_means_default_credentials(tmp_path):
    data = str(tmp_path / "data")
    for env, says in [({"MINIO_ACCESS_KEY": "legacyuser"}, "together"),
                      ({"MINIO_ROOT_PASSWORD_FILE": str(tmp_path / "pw")}, "MINIO_ROOT_USER_FILE is missing"),
                      ({"MINIO_ROOT_USER_FILE": str(tmp_path / "missing"),
                        "MINIO_ROOT_PASSWORD": "password-4"}, "cannot read"),
                      ({"MINIO_ROOT_USER": "", "MINIO_ROOT_PASSWORD": ""}, "empty")]:
        if "MINIO_ROOT_PASSWORD_FILE" in env:
            (tmp_path / "pw").write_text("only-a-password")
        err = refused(["server", "--address", f"{HOST}:{free_port()}", data], _clean_env(env))
        assert says in err, (env, err)
        assert "minioadmin" not in err, err


def test_unknown_minio_variables_named_once():
    srv = Server("unknown-vars", env={"MINIO_BROWSER": "off", "MINIO_VOLUMS": "/typo",
                                      "MINIO_REGION": "us-east-1"})
    try:
        started(srv)
        log = srv.log_text()
        for name in ("MINIO_BROWSER", "MINIO_VOLUMS"):
            lines = warnings_naming(log, name)
            assert len(lines) == 1 and "does not use it" in lines[0], (name, log[-3000:])
        # Known ones (the credentials the suite sets, the region) are not named.
        assert not [ln for ln in log.splitlines() if "does not use it" in ln and
                    ("MINIO_ROOT" in ln or "MINIO_REGION" in ln)], log[-3000:]
    finally:
        srv.cleanup()


def test_every_documented_minio_variable_is_known():
    """The MINIO_* settings docs/settings.md documents (first column of its tables) start
    without the unknown-variable warning: all of them set at once, empty (every setting at its
    default). Names it mentions in passing (MinIO's MINIO_CI_CD, ...) are not settings."""
    names = set()
    for line in open(os.path.join(REPO_ROOT, "docs", "settings.md")).read().splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`(MINIO_[A-Z0-9_]+)`", line.split("|")[1]))
    names = sorted(names)
    assert "MINIO_ROOT_USER_FILE" in names and "MINIO_SITE_REGION" in names, names
    srv = Server("documented-vars", env={n: "" for n in names if n not in
                                         ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD")})
    try:
        started(srv)
        lines = [ln for ln in srv.log_text().splitlines() if "does not use it" in ln]
        assert lines == [], lines
    finally:
        srv.cleanup()


# ---------------------------------------------------------------------------------------------
# 3. certificates in MinIO's default place
# ---------------------------------------------------------------------------------------------

class HttpsServer(Server):
    @property
    def endpoint(self):
        return f"https://{HOST}:{self.port}"


def test_certs_in_minio_default_directory(tmp_path):
    home = tmp_path / "home"
    ca = make_ca(tmp_path / "pki")
    certs = make_certs_dir(tmp_path / "pki", ca)
    shutil.copytree(certs, home / ".minio" / "certs")
    srv = HttpsServer("minio-certs", env={"HOME": str(home)})
    srv.verify = ca["pem"]
    try:
        started(srv)
        r = requests.get(srv.url("/minio/health/live"), verify=ca["pem"], timeout=10)
        assert r.status_code == 200
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://{HOST}:{srv.port}/minio/health/live", timeout=5)
        log = srv.log_text()
        assert f"certs directory {home}/.minio/certs" in log, log[-3000:]
    finally:
        srv.cleanup()
    # No certificate anywhere: plain HTTP, and the log says where it looked.
    srv = Server("no-certs", env={"HOME": str(tmp_path / "empty-home")})
    try:
        started(srv)
        assert (f"TLS: off, plain HTTP (no public.crt and private.key in the certs directory "
                f"{tmp_path}/empty-home/.rdmastor/certs)") in srv.log_text(), srv.log_tail()
    finally:
        srv.cleanup()


# ---------------------------------------------------------------------------------------------
# 4. mistyped, unmounted and MinIO drives; 5. `{1..4}`
# ---------------------------------------------------------------------------------------------

def test_drive_whose_parent_is_missing_is_refused(tmp_path):
    env = _clean_env(creds=("dropin", "dropin-password"))
    missing = tmp_path / "nonexistent" / "drive1"
    err = refused(["server", "--address", f"{HOST}:{free_port()}", str(missing)], env)
    assert f"parent directory {tmp_path}/nonexistent does not exist" in err, err
    assert not (tmp_path / "nonexistent").exists()
    err = refused(["server", "--address", f"{HOST}:{free_port()}",
                   str(tmp_path / "nope{1...4}" / "d")], env)
    assert "does not exist" in err and not list(tmp_path.iterdir()), err


def test_one_disk_trial_still_creates_its_drive(tmp_path):
    drive = tmp_path / "data"  # missing, in an existing directory: created as before
    srv = Server("trial", data_dirs=[str(drive)])
    shutil.rmtree(drive)
    try:
        started(srv)
        srv.client().create_bucket(Bucket=unique_bucket())
        assert drive.is_dir()
    finally:
        srv.cleanup()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="mounts tmpfs drives in a mount namespace of its own (root)")
def test_unmounted_drive_is_refused(tmp_path):
    """Three drives are file systems of their own (tmpfs), the fourth's is not mounted: its
    empty mount point is on the root file system. Run in a private mount namespace."""
    drives = [tmp_path / f"disk{i}" for i in range(1, 5)]
    for d in drives:
        d.mkdir()
    script = " && ".join(f"mount -t tmpfs -o size=64m tmpfs {d}" for d in drives[:3])
    env = _clean_env(creds=("dropin", "dropin-password"))
    port = free_port()
    cp = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                         f"{script} && exec {RDMASTOR_BIN} server --address {HOST}:{port} "
                         f"{tmp_path}/disk{{1...4}}"],
                        capture_output=True, text=True, timeout=30, env=env,
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 1, (cp.returncode, cp.stderr[-2000:])
    assert (f"drive {drives[3]} is an empty directory on the root file system while other "
            "drives are file systems of their own") in cp.stderr, cp.stderr
    assert "mounted" in cp.stderr
    # All four on one file system (the suite's usual layout): served.
    srv = Server("four-on-root", data_dirs=[str(d) for d in drives])
    try:
        started(srv)
    finally:
        srv.cleanup()


def test_minio_drive_refused_saying_so(tmp_path):
    drive = tmp_path / "minio-drive"
    (drive / ".minio.sys").mkdir(parents=True)
    (drive / ".minio.sys" / "format.json").write_text('{"version":"1","format":"xl"}')
    err = refused(["server", "--address", f"{HOST}:{free_port()}", str(drive)],
                  _clean_env(creds=("dropin", "dropin-password")))
    assert f"drive {drive} holds MinIO's data (.minio.sys)" in err, err
    assert "docs/migrating-from-minio.md" in err, err
    assert sorted(os.listdir(drive)) == [".minio.sys"]  # nothing written next to it


@pytest.mark.parametrize("how", ["argument", "MINIO_VOLUMES"])
def test_two_dot_range_refused_pointing_at_ellipsis(tmp_path, how):
    arg = f"{tmp_path}/data{{1..4}}"
    env = _clean_env(creds=("dropin", "dropin-password"))
    args = ["server", "--address", f"{HOST}:{free_port()}"]
    if how == "argument":
        args.append(arg)
    else:
        env["MINIO_VOLUMES"] = arg
    err = refused(args, env)
    assert f"{tmp_path}/data{{1...4}}" in err and "two dots" in err, err
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


# ---------------------------------------------------------------------------------------------
# 6. `rdma check --endpoint`: the server's answer decides
# ---------------------------------------------------------------------------------------------

def test_rdma_check_endpoint_decided_by_the_server():
    srv = Server("check-trial", creds=False, env={"MINIO_RDMA_FABRIC": "soft"})  # the README's
    try:
        started(srv)
        # This shell has no RDMA settings (the local fabric layer disagrees with the server).
        cp = subprocess.run([RDMASTOR_BIN, "rdma", "check", "--endpoint", srv.endpoint],
                            capture_output=True, text=True, timeout=60, env=_clean_env(),
                            stdin=subprocess.DEVNULL)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert re.search(r"(?m)^\[ ok \] server +" + re.escape(srv.endpoint) + " serves S3 over "
                         "RDMA on the soft fabric", cp.stdout), cp.stdout
        assert re.search(r"(?m)^READY", cp.stdout), cp.stdout
        assert not re.search(r"(?m)^\[FAIL\]", cp.stdout), cp.stdout
    finally:
        srv.cleanup()
    # Nothing listening there: the server layer fails, and so does the check.
    cp = subprocess.run([RDMASTOR_BIN, "rdma", "check", "--endpoint",
                         f"http://{HOST}:{free_port()}"], capture_output=True, text=True,
                        timeout=60, env=_clean_env(), stdin=subprocess.DEVNULL)
    assert cp.returncode == 1, cp.stdout


def test_help_shows_rdma_check_endpoint():
    for args in (["--help"], ["rdma", "--help"]):
        cp = run_bin(args, _clean_env())
        assert cp.returncode == 0 and "rdma check [--json] [--endpoint URL" in cp.stdout, cp.stdout


# ---------------------------------------------------------------------------------------------
# 7. docs/migrating-from-minio.md: MinIO's /etc/default/minio starts rdmastor as the doc says
# ---------------------------------------------------------------------------------------------

def test_minio_default_file_from_the_migration_doc_starts(tmp_path):
    text = open(os.path.join(REPO_ROOT, "docs", "migrating-from-minio.md")).read()
    block = re.search(r"```sh\n# /etc/default/minio[^\n]*\n(.*?)```", text, re.S)
    assert block, "docs/migrating-from-minio.md: no /etc/default/minio block"
    env = dict(re.findall(r'(?m)^(MINIO_[A-Z_]+)="?([^"\n]*)"?$', block.group(1)))
    assert set(env) == {"MINIO_VOLUMES", "MINIO_OPTS", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"}
    drive = tmp_path / "mnt-data"
    env["MINIO_VOLUMES"] = str(drive)  # /mnt/data here
    # As the unit runs it: rdmastor server $MINIO_OPTS $MINIO_VOLUMES (the address: a free port)
    srv = Server("minio-default", creds=False, pass_dirs=False,
                 args=env["MINIO_OPTS"].split() + [env["MINIO_VOLUMES"]], env=env)
    srv.access_key, srv.secret_key = env["MINIO_ROOT_USER"], env["MINIO_ROOT_PASSWORD"]
    try:
        started(srv)
        srv.client().create_bucket(Bucket=unique_bucket())
        default_creds_refused(srv)
        log = srv.log_text()
        assert len(warnings_naming(log, "--console-address is ignored")) == 1, log[-3000:]
        assert not [ln for ln in log.splitlines() if "does not use it" in ln], log[-3000:]
    finally:
        srv.cleanup()


# ---------------------------------------------------------------------------------------------
# 11. `mc admin user add`: madmin's encrypted body is refused, pointing at `rdmastor admin`
# ---------------------------------------------------------------------------------------------

def test_mc_admin_encrypted_body_refused_with_the_way_out(tmp_path):
    """docs/migrating-from-minio.md says: mc admin user/policy commands send bodies encrypted
    with the root secret (madmin: 32-byte salt, algorithm id, 8-byte nonce, then sealed
    packages), which rdmastor does not read; it answers 400 naming `rdmastor admin user add`, and
    the plain JSON body (what `rdmastor admin user add` sends) works."""
    from conftest import signed_request
    srv = Server("madmin")
    try:
        started(srv)
        sealed = os.urandom(32) + b"\x00" + os.urandom(8) + os.urandom(64)
        r = signed_request(srv, "PUT", "/minio/admin/v3/add-user", query=[("accessKey", "mcuser")],
                           body=sealed)
        assert r.status == 400, (r.status, r.body)
        assert b"rdmastor admin user add" in r.body and b"madmin" in r.body, r.body
        r = signed_request(srv, "PUT", "/minio/admin/v3/add-user", query=[("accessKey", "mcuser")],
                           body=b'{"secretKey":"mcuser-secret-1"}')
        assert r.status == 200, (r.status, r.body)
        text = open(os.path.join(REPO_ROOT, "docs", "migrating-from-minio.md")).read()
        assert "`mc admin user add`" in text and "rdmastor admin user add" in text
    finally:
        srv.cleanup()
