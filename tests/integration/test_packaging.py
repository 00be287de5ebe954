"""Packaging: the systemd unit passes `systemd-analyze verify`; `cpack -G DEB` builds this
flavour's packages (rdmastor or rdmastor-rdma, and python3-rdmastor or python3-rdmastor-rdma when
the Python module is built) with the right metadata; they install with dpkg into a scratch root; the
installed binary serves an S3 round trip; swapping to the other package keeps the operator's
/etc/default/rdmastor; and Debian's /usr/bin/python3 imports the installed Python package from
outside the build tree and moves an object over RDMA with it against the installed server."""

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
def packages(tmp_path_factory):
    """{package name: .deb path} of everything cpack builds in this build directory."""
    for tool in ("cpack", "dpkg", "dpkg-deb", "dpkg-shlibdeps"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed")
    out = tmp_path_factory.mktemp("pkg")
    run(["cpack", "-G", "DEB", "-B", str(out), "--config",
         os.path.join(BUILD_DIR, "CPackConfig.cmake")], timeout=300)
    debs = {}
    for p in os.listdir(out):
        if p.endswith(".deb"):
            debs[control(out / p)["Package"]] = out / p
    return debs


# The Python module is built when pybind11-dev is present (python/CMakeLists.txt).
PYTHON_BUILT = os.path.isdir(os.path.join(BUILD_DIR, "python", "rdmastor"))


@pytest.fixture(scope="module")
def package(packages):
    servers = [n for n in packages if n in ("rdmastor", "rdmastor-rdma")]
    pythons = [n for n in packages if n.startswith("python3-")]
    assert len(servers) == 1 and len(pythons) == (1 if PYTHON_BUILT else 0), packages
    assert len(packages) == len(servers) + len(pythons), packages
    return packages[servers[0]]


@pytest.fixture(scope="module")
def python_package(packages):
    if not PYTHON_BUILT:
        pytest.skip("the Python module is not built (pybind11-dev missing)")
    (name,) = [n for n in packages if n.startswith("python3-")]
    return packages[name]


def control(deb):
    fields = {}
    for line in run(["dpkg-deb", "-f", str(deb)]).stdout.splitlines():
        if ":" in line and not line.startswith(" "):
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    return fields


def new_root(tmp_path_factory, name="root"):
    root = tmp_path_factory.mktemp(name)
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"):
        os.makedirs(root / d)
    for f in ("var/lib/dpkg/status", "var/lib/dpkg/available"):
        (root / f).touch()
    return root


@pytest.fixture(scope="module")
def scratch_root(package, tmp_path_factory):
    root = new_root(tmp_path_factory)
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


def test_python_package_metadata(python_package):
    f = control(python_package)
    rdma = f["Package"] == "python3-rdmastor-rdma"
    assert f["Package"] in ("python3-rdmastor", "python3-rdmastor-rdma"), f
    assert f["Section"] == "python", f
    if rdma:
        for field in ("Conflicts", "Replaces", "Provides"):
            assert f[field] == "python3-rdmastor", (field, f)
    else:
        assert f["Conflicts"] == f["Replaces"] == "python3-rdmastor-rdma", f
        assert "Provides" not in f, f
    deps = [d.strip() for d in f["Depends"].split(",")]
    # The extension is built for this interpreter's ABI only: python3 pinned to its minor version.
    major, minor = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(*sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=30).stdout.split()
    assert f"python3 (>= {major}.{minor}~)" in deps, deps
    assert f"python3 (<< {major}.{int(minor) + 1})" in deps, deps
    assert "python3-numpy" in deps, deps
    for lib in ("libc6", "libssl3", "libstdc++6"):  # dpkg-shlibdeps on the extension
        assert any(d.startswith(lib + " ") or d == lib for d in deps), deps
    assert any(d.startswith("libibverbs1") for d in deps) == rdma, deps
    assert "python3-torch" in f["Suggests"] and "python3-fsspec" in f["Suggests"], f
    listing = run(["dpkg-deb", "-c", str(python_package)]).stdout
    ext = subprocess.run(["/usr/bin/python3", "-c",
                          "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    for name in ("__init__.py", "_errors.py", "torch.py", "fsspec.py", "_native" + ext):
        assert f"./usr/lib/python3/dist-packages/rdmastor/{name}" in listing, (name, listing)
    # Nothing else: no build-tree paths, no byte code (postinst compiles it on a real system).
    for line in listing.splitlines():
        path = line.split()[-1]
        assert path.startswith("./usr/lib/python3/dist-packages/rdmastor/") or path in (
            "./usr/", "./usr/lib/", "./usr/lib/python3/", "./usr/lib/python3/dist-packages/"), line


def test_python_package_installs_and_imports_outside_the_build_tree(
        package, python_package, tmp_path_factory, tmp_path):
    # A fresh root holding only the two packages: the server and the Python client.
    root = new_root(tmp_path_factory, "pyroot")
    dpkg(root, "-i", str(package), str(python_package))
    status = (root / "var/lib/dpkg/status").read_text()
    name = control(python_package)["Package"]
    assert re.search(rf"Package: {name}\nStatus: install ok installed", status), status
    site = root / "usr/lib/python3/dist-packages"

    installed = root / "usr/bin/rdmastor"

    class Installed(Server):
        def command(self):
            return [str(installed)] + super().command()[1:]

    srv = Installed(name="pyinstalled", env={"MINIO_RDMA_FABRIC": "soft"})
    script = """
import os, sys, numpy as np, rdmastor
assert rdmastor.__file__.startswith(os.environ["SITE"] + "/"), rdmastor.__file__
assert rdmastor._native.__file__.startswith(os.environ["SITE"] + "/"), rdmastor._native.__file__
c = rdmastor.Client(os.environ["ENDPOINT"], rdma="soft")
c.create_bucket("pkg-py")
data = np.arange(1 << 18, dtype=np.uint32)
t = c.put_object("pkg-py", "x", data)
out = np.empty_like(data)
n = c.get_into("pkg-py", "x", out)
assert int(n) == data.nbytes and (out == data).all()
print(t.transport, n.transport, c.fabric)
"""
    try:
        srv.start()
        # Only this root's package on the path: no build tree, no source tree, no user site;
        # run from an empty directory so the current directory adds nothing either.
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "SITE": str(site), "ENDPOINT": srv.endpoint,
               "AWS_ACCESS_KEY_ID": srv.access_key, "AWS_SECRET_ACCESS_KEY": srv.secret_key,
               "NO_PROXY": "127.0.0.1"}
        cp = subprocess.run(["/usr/bin/python3", "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert cp.returncode == 0, cp.stderr[-3000:]
        assert cp.stdout.split() == ["rdma", "rdma", "soft"], cp.stdout
    finally:
        srv.cleanup()
