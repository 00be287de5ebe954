"""Packaging: the systemd unit passes `systemd-analyze verify`; `cpack -G DEB` builds this
flavour's package (rdmastor or rdmastor-rdma) with the right metadata; it installs with dpkg into a
scratch root; the installed binary serves an S3 round trip; and swapping to the other package keeps
the operator's /etc/default/rdmastor."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILD_DIR, REPO_ROOT, Server, make_client, seeded_bytes, unique_bucket

UNIT = os.path.join(REPO_ROOT, "systemd", "rdmastor.service")


def run(cmd, **kw):
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 120),
                        stdin=subprocess.DEVNULL, **kw)
    assert cp.returncode == 0, f"{cmd}: {cp.stdout[-2000:]} {cp.stderr[-2000:]}"
    return cp


def dpkg(root, *args):
    # A scratch root: maintainer scripts run outside a chroot (DPKG_ROOT set: postinst does not
    # touch this machine's users), the root has none of the library packages (--force-depends).
    return run(["dpkg", f"--root={root}", "--force-script-chrootless", "--force-depends",
                "--force-not-root", *args])


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    for tool in ("cpack", "dpkg", "dpkg-deb", "dpkg-shlibdeps"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed")
    out = tmp_path_factory.mktemp("pkg")
    run(["cpack", "-G", "DEB", "-B", str(out), "--config",
         os.path.join(BUILD_DIR, "CPackConfig.cmake")], timeout=300)
    debs = [p for p in os.listdir(out) if p.endswith(".deb")]
    assert len(debs) == 1, debs
    return out / debs[0]


def control(deb):
    fields = {}
    for line in run(["dpkg-deb", "-f", str(deb)]).stdout.splitlines():
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    return fields


@pytest.fixture(scope="module")
def scratch_root(package, tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"):
        os.makedirs(root / d)
    for f in ("var/lib/dpkg/status", "var/lib/dpkg/available"):
        (root / f).touch()
    dpkg(root, "-i", str(package))
    return root


def test_unit_verifies():
    # The unit as packaged, pointing at this build's binary (verify checks the path exists).
    text = open(UNIT).read()
    for line in ("User=rdmastor", "EnvironmentFile=/etc/default/rdmastor",
                 "ExecStart=/usr/bin/rdmastor server $MINIO_OPTS $MINIO_VOLUMES",
                 "Restart=always", "LimitNOFILE=1048576", "LimitMEMLOCK=infinity"):
        assert line in text.splitlines(), line


def test_unit_passes_systemd_analyze(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    rdmastor = os.path.join(BUILD_DIR, "src", "rdmastor")
    unit = tmp_path / "rdmastor.service"
    unit.write_text(open(UNIT).read().replace("/usr/bin/rdmastor", rdmastor))
    cp = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr.strip() == "", cp.stderr


def test_package_metadata(package):
    f = control(package)
    rdma = f["Package"] == "rdmastor-rdma"
    other = "rdmastor" if rdma else "rdmastor-rdma"
    assert f["Package"] in ("rdmastor", "rdmastor-rdma")
    for field in ("Conflicts", "Replaces", "Provides"):
        assert f[field] == other, (field, f)
    deps = f["Depends"]
    # dpkg-shlibdeps: the Debian library packages the binary links.
    for lib in ("libc6", "libssl3", "libisal2", "libpugixml1v5", "libstdc++6"):
        assert re.search(rf"\b{re.escape(lib)}\b", deps), deps
    assert ("libibverbs1" in deps) == rdma, deps
    conffiles = run(["dpkg-deb", "-I", str(package), "conffiles"]).stdout.split()
    assert conffiles == ["/etc/default/rdmastor"], conffiles
    listing = run(["dpkg-deb", "-c", str(package)]).stdout
    for path in ("./usr/bin/rdmastor", "./usr/lib/systemd/system/rdmastor.service",
                 "./etc/default/rdmastor"):
        assert path in listing, path


def test_installed_binary_serves_s3(scratch_root):
    installed = scratch_root / "usr/bin/rdmastor"
    assert os.access(installed, os.X_OK)
    conffiles = list((scratch_root / "var/lib/dpkg/info").glob("*.conffiles"))
    assert conffiles and "/etc/default/rdmastor" in conffiles[0].read_text()

    class Installed(Server):
        def command(self):
            return [str(installed)] + super().command()[1:]

    srv = Installed(name="installed")
    try:
        srv.start()
        s3 = make_client(srv)
        bucket = unique_bucket("pkg")
        s3.create_bucket(Bucket=bucket)
        body = seeded_bytes(100_000)
        s3.put_object(Bucket=bucket, Key="k", Body=body)
        assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == body
    finally:
        srv.cleanup()


def test_swap_keeps_environment_file(package, scratch_root, tmp_path):
    # The other flavour's package: the same files with mirrored metadata (what cpack in the other
    # build directory produces), rebuilt from this one so the test needs one build only.
    f = control(package)
    other = "rdmastor" if f["Package"] == "rdmastor-rdma" else "rdmastor-rdma"
    tree = tmp_path / "tree"
    run(["dpkg-deb", "-R", str(package), str(tree)])
    ctl = (tree / "DEBIAN/control").read_text()
    ctl = re.sub(r"(?m)^Package: .*$", f"Package: {other}", ctl)
    ctl = re.sub(r"(?m)^(Conflicts|Replaces|Provides): .*$", rf"\1: {f['Package']}", ctl)
    (tree / "DEBIAN/control").write_text(ctl)
    swapped = tmp_path / f"{other}.deb"
    run(["dpkg-deb", "-b", str(tree), str(swapped)])

    env_file = scratch_root / "etc/default/rdmastor"
    with open(env_file, "a") as fh:
        fh.write("MINIO_ROOT_USER=operator-edit\n")
    dpkg(scratch_root, "-i", str(swapped))
    assert "MINIO_ROOT_USER=operator-edit" in env_file.read_text()
    status = (scratch_root / "var/lib/dpkg/status").read_text()
    assert re.search(rf"Package: {other}\nStatus: install ok installed", status), status
    assert os.access(scratch_root / "usr/bin/rdmastor", os.X_OK)
