"""Throw-away PKI for the TLS tests, made with the openssl CLI (/usr/bin/openssl).

    ca = make_ca(tmp_dir, "rdmastor test CA")          # {"pem": path, "key": path, "name": ...}
    certs = make_certs_dir(tmp_dir / "n1", ca)         # <dir>/certs/public.crt + private.key
    certs = make_certs_dir(d, ca, trust=[ca])          # ... + certs/CAs/<ca name>.crt

Server certificates name 127.0.0.1 (IP SAN) and localhost (DNS SAN) unless `sans` says otherwise,
and carry extendedKeyUsage serverAuth (what verifying clients check).
"""

import os
import re
import subprocess


def openssl(*args, cwd):
    cp = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                        stdin=subprocess.DEVNULL)
    assert cp.returncode == 0, cp.stderr
    return cp


def make_ca(directory, name="rdmastor test CA"):
    """A self-signed CA in `directory` (files named after `name`)."""
    os.makedirs(directory, exist_ok=True)
    stem = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{stem}.key", "-out",
            f"{stem}.pem", "-days", "2", "-subj", f"/CN={name}", cwd=directory)
    return {"pem": os.path.join(str(directory), f"{stem}.pem"),
            "key": os.path.join(str(directory), f"{stem}.key"), "name": name, "stem": stem}


def make_certs_dir(directory, ca, cn="localhost", sans="IP:127.0.0.1,DNS:localhost", trust=()):
    """<directory>/certs with public.crt / private.key issued by `ca`, and each CA of `trust` in
    certs/CAs/ (MinIO's layout). Returns the certs directory."""
    d = str(directory)
    os.makedirs(d, exist_ok=True)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", f"/CN={cn}", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", ca["pem"], "-CAkey", ca["key"],
            "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext", cwd=d)
    certs = os.path.join(d, "certs")
    os.makedirs(certs, exist_ok=True)
    with open(os.path.join(d, "server.crt"), "rb") as src, \
            open(os.path.join(certs, "public.crt"), "wb") as dst:
        dst.write(src.read())
    with open(os.path.join(d, "server.key"), "rb") as src, \
            open(os.path.join(certs, "private.key"), "wb") as dst:
        dst.write(src.read())
    if trust:
        os.makedirs(os.path.join(certs, "CAs"), exist_ok=True)
        for t in trust:
            with open(t["pem"], "rb") as src, \
                    open(os.path.join(certs, "CAs", t["stem"] + ".crt"), "wb") as dst:
                dst.write(src.read())
    return certs
