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
    clients = [n for n in packages if n in ("rdmastor-cli", "rdmastor-cli-rdma")]
    pythons = [n for n in packages if n.startswith("python3-")]
    assert len(servers) == 1 and len(clients) == 1, packages
    assert len(pythons) == (1 if PYTHON_BUILT else 0), packages
    assert len(packages) == len(servers) + len(clients) + len(pythons), packages
    return packages[servers[0]]


@pytest.fixture(scope="module")
def cli_package(packages, package):
    (name,) = [n for n in packages if n in ("rdmastor-cli", "rdmastor-cli-rdma")]
    return packages[name]


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


def unit_settings():
    """{key: [values]} of the unit's [Service] section."""
    out = {}
    section = None
    for line in open(UNIT).read().splitlines():
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def test_unit_does_not_restart_a_bad_configuration_and_notifies():
    u = unit_settings()
    assert u["Type"] == ["notify"] and u["NotifyAccess"] == ["main"], u
    assert u["RestartPreventExitStatus"] == ["2"], u  # exit 2: invalid configuration
    assert u["WatchdogSec"] == ["30s"], u
    assert "ExecStartPre" not in u, u  # the server itself says what is missing (exit 2)


def test_unit_hardening_keeps_rdma_working():
    """Hardened, but not against what RDMA needs: pinned memory, the verbs and rdma_cm devices,
    netlink (rdma-core's device and GID queries) and AF_IB sockets (rdma_cm)."""
    u = unit_settings()
    assert u["LimitMEMLOCK"] == ["infinity"], u
    assert u.get("PrivateDevices", ["no"]) == ["no"], u
    assert u.get("DevicePolicy", ["auto"]) == ["auto"], u
    families = u["RestrictAddressFamilies"][0].split()
    for family in ("AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_IB"):
        assert family in families, families
    assert "~@memlock" not in " ".join(u.get("SystemCallFilter", [])), u
    assert u.get("SystemCallErrorNumber") == ["EPERM"], u  # a filtered call fails, not SIGSYS


def test_unit_security_exposure_at_most_4(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    unit = tmp_path / "rdmastor.service"
    unit.write_text(open(UNIT).read())
    cp = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
                        capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for rdmastor\.service: (\d+\.\d+)", cp.stdout)
    assert m, cp.stdout[-2000:] + cp.stderr[-2000:]
    assert float(m.group(1)) <= 4.0, cp.stdout


def test_sd_notify_ready_watchdog_and_stopping(tmp_path):
    """The server speaks systemd's notify protocol (through libsystemd): READY=1 only once the
    S3 port accepts connections, WATCHDOG=1 at a third of WATCHDOG_USEC while its own health
    endpoint answers (the probes show in the request log), STOPPING=1 on SIGTERM."""
    import socket
    import signal
    import time
    sock_path = str(tmp_path / "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(sock_path)
    ns.settimeout(0.2)
    srv = Server("notify", env={"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "900000",
                                "RDMASTOR_LOG_REQUESTS": "on"})
    msgs = []

    def receive(until, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msgs.append(ns.recv(4096).decode())
            except socket.timeout:
                pass
            if until():
                return True
        return False

    try:
        srv.start()
        assert receive(lambda: any("READY=1" in m for m in msgs), 10), msgs
        ready = next(m for m in msgs if "READY=1" in m)
        assert f"STATUS=serving S3 on port {srv.port}" in ready, ready
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        def probes():
            return sum("/minio/health/live" in ln and "GET" in ln
                       for ln in srv.log_text().splitlines())

        n0, p0 = sum("WATCHDOG=1" in m for m in msgs), probes()
        assert receive(lambda: sum("WATCHDOG=1" in m for m in msgs) >= n0 + 3, 5), msgs
        assert probes() >= p0 + 2, srv.log_tail()  # each ping follows a probe
        srv.proc.send_signal(signal.SIGTERM)
        assert receive(lambda: any("STOPPING=1" in m for m in msgs), 10), msgs
        assert srv.proc.wait(timeout=20) == 0
    finally:
        srv.cleanup()
        ns.close()


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
    assert "rdmastor-cli" not in listing, listing  # the client package's
    assert f["Recommends"] == ("rdmastor-cli-rdma" if rdma else "rdmastor-cli"), f


def listing_paths(deb):
    return [line.split()[5].lstrip(".") for line in
            run(["dpkg-deb", "-c", str(deb)]).stdout.splitlines()]


def test_every_package_has_copyright_and_changelog(packages, package, tmp_path):
    """Debian policy 12.5 / 12.7: /usr/share/doc/<package>/copyright and changelog.gz (native), the
    changelog's latest entry being this version."""
    for name, deb in packages.items():
        paths = listing_paths(deb)
        for doc in ("copyright", "changelog.gz"):
            assert f"/usr/share/doc/{name}/{doc}" in paths, (name, doc, paths)
        tree = tmp_path / name
        run(["dpkg-deb", "-x", str(deb), str(tree)])
        copyright = (tree / f"usr/share/doc/{name}/copyright").read_text()
        assert copyright.startswith("Format: https://www.debian.org/doc/packaging-manuals/"
                                    "copyright-format/1.0/"), copyright
        assert "License: Apache-2.0" in copyright
        first = subprocess.run(["zcat", str(tree / f"usr/share/doc/{name}/changelog.gz")],
                               capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
        version = control(deb)["Version"]
        assert first.startswith(f"rdmastor ({version}) "), (first, version)


def test_shipped_docs_ship_what_they_link_to(package, tmp_path):
    """Every relative link in a shipped document resolves inside the package (the README's links
    to docs/ and bench/, and the docs' links to each other)."""
    name = control(package)["Package"]
    tree = tmp_path / "tree"
    run(["dpkg-deb", "-x", str(package), str(tree)])
    doc = tree / "usr/share/doc" / name
    shipped = sorted(p for p in doc.rglob("*.md"))
    assert doc / "README.md" in shipped and doc / "docs" / "runbook.md" in shipped, shipped
    assert doc / "docs" / "migrating-from-minio.md" in shipped, shipped
    broken = []
    for md in shipped:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", md.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("../shared/"):
                continue  # URLs; the design brief lives outside the repository
            if not os.path.exists(os.path.normpath(md.parent / target)):
                broken.append((str(md.relative_to(doc)), target))
    assert broken == [], broken
    # The unit's Documentation= and the environment file's pointer name shipped files.
    unit = open(UNIT).read()
    (url,) = re.findall(r"(?m)^Documentation=file://(\S+)$", unit)
    assert url.startswith("/usr/share/doc/rdmastor/"), url
    assert (doc / url[len("/usr/share/doc/rdmastor/"):]).exists(), url


def test_cli_package_stands_alone(cli_package, tmp_path_factory):
    """A training node installs the client alone: /usr/bin/rdmastor-cli and its docs, no server
    binary, no unit, no environment file, no maintainer scripts (no system user)."""
    f = control(cli_package)
    rdma = f["Package"] == "rdmastor-cli-rdma"
    assert f["Conflicts"] == ("rdmastor-cli" if rdma else "rdmastor-cli-rdma"), f
    assert ("libibverbs1" in f["Depends"]) == rdma, f
    assert "adduser" not in f["Depends"], f
    paths = [p for p in listing_paths(cli_package) if not p.endswith("/")]
    assert sorted(paths) == sorted(["/usr/bin/rdmastor-cli",
                                    f"/usr/share/doc/{f['Package']}/copyright",
                                    f"/usr/share/doc/{f['Package']}/changelog.gz"]), paths
    scripts = run(["dpkg-deb", "-I", str(cli_package)]).stdout
    for script in ("postinst", "prerm", "postrm", "conffiles"):
        assert script not in scripts, scripts
    root = new_root(tmp_path_factory, "cliroot")
    dpkg(root, "-i", str(cli_package))
    cp = subprocess.run([str(root / "usr/bin/rdmastor-cli"), "--help"], capture_output=True,
                        text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert cp.returncode == 0 and "--endpoint" in cp.stdout + cp.stderr, cp


def test_purge_removes_what_the_package_created(package, tmp_path_factory):
    """dpkg --purge removes the environment file, the unit and the docs; the service user's home
    goes when it holds no data, and a drive with data in it is kept, saying so."""
    name = control(package)["Package"]
    for with_data in (False, True):
        root = new_root(tmp_path_factory, f"purge{int(with_data)}")
        dpkg(root, "-i", str(package))
        # What postinst makes on a real system (DPKG_ROOT skips the user): the home and a drive.
        os.makedirs(root / "var/lib/rdmastor/data")
        os.makedirs(root / "var/lib/rdmastor/.rdmastor/certs")
        if with_data:
            (root / "var/lib/rdmastor/data/.rdmastor.sys").mkdir()
            (root / "var/lib/rdmastor/data/.rdmastor.sys/format.json").write_text("{}")
        cp = dpkg(root, "--purge", name)
        for gone in ("etc/default/rdmastor", "usr/lib/systemd/system/rdmastor.service",
                     f"usr/share/doc/{name}", "usr/bin/rdmastor"):
            assert not (root / gone).exists(), gone
        if with_data:
            assert (root / "var/lib/rdmastor/data/.rdmastor.sys/format.json").exists()
            assert "purge kept" in cp.stderr and "/var/lib/rdmastor" in cp.stderr, cp.stderr
        else:
            assert not (root / "var/lib/rdmastor").exists(), os.listdir(root / "var/lib/rdmastor")
        status = (root / "var/lib/dpkg/status").read_text()
        assert not re.search(rf"Package: {name}\n", status), status


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
    # Nothing else: no build-tree paths, no byte code (postinst compiles it on a real system);
    # the copyright and changelog every package has (test_every_package_has_copyright_...).
    doc = f"./usr/share/doc/{f['Package']}/"
    for line in listing.splitlines():
        path = line.split()[-1]
        assert path.startswith("./usr/lib/python3/dist-packages/rdmastor/") or path in (
            "./usr/", "./usr/lib/", "./usr/lib/python3/", "./usr/lib/python3/dist-packages/",
            "./usr/share/", "./usr/share/doc/", doc, doc + "copyright", doc + "changelog.gz"), line


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
