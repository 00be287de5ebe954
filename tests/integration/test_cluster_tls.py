"""TLS between the nodes: a 4-node cluster with https:// endpoints in MINIO_VOLUMES, each node
with its own certificate (IP SAN 127.0.0.1) issued by one test CA and trusting it through
<certs-dir>/CAs (MinIO's layout). Objects written through one node are read and listed through
another with boto3 over HTTPS (every shard and lock RPC between the nodes went over TLS). A node
whose certificate comes from another CA is refused by its peers, with the verification failure
in their logs; https endpoints without a certificate, a certificate with http endpoints and mixed
schemes are start-up errors. `rdmastor admin heal` and rdmastor-cli reach the nodes over https
with the same trust (system store + <certs-dir>/CAs)."""

import os
import shutil
import subprocess
import time

import pytest

from cluster_util import MiB, Cluster, consecutive_free_ports, get_bytes
from conftest import BUILD_DIR, RDMASTOR_BIN, HealRun, _clean_env, seeded_bytes, unique_bucket
from tls_util import make_ca, make_certs_dir


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    return {"dir": d, "ca": make_ca(d / "ca", "rdmastor cluster CA"),
            "rogue": make_ca(d / "rogue", "rogue CA")}


def node_certs(pki, tag, issuers):
    """One certs dir per node: its own key and certificate from issuers[i], trusting the CA."""
    return [make_certs_dir(pki["dir"] / f"{tag}{i + 1}", issuer, cn=f"node{i + 1}",
                           trust=[pki["ca"]])
            for i, issuer in enumerate(issuers)]


def tls_cluster_of(pki, tag, issuers, **kw):
    certs = node_certs(pki, tag, issuers)
    return Cluster(scheme="https", node_args={i: ["--certs-dir", c] for i, c in enumerate(certs)},
                   ca=pki["ca"]["pem"], name=tag, **kw)


@pytest.fixture(scope="module")
def tls_cluster(pki):
    c = tls_cluster_of(pki, "tls", [pki["ca"]] * 4)
    try:
        c.start()
        yield c
    finally:
        c.cleanup()


def test_put_get_list_through_two_nodes(tls_cluster):
    c = tls_cluster
    assert c.nodes[0].endpoint.startswith("https://")
    first, third = c.client(0), c.client(2)
    bucket = unique_bucket("ctls")
    first.create_bucket(Bucket=bucket)
    objects = {"small.txt": seeded_bytes(1000, seed=1),
               "dir/big.bin": seeded_bytes(5 * MiB + 123, seed=2),
               "empty": b""}
    for key, body in objects.items():
        first.put_object(Bucket=bucket, Key=key, Body=body)
    for key, body in objects.items():
        assert get_bytes(third, bucket, key) == body, key
    # The other way round: written through node 3, read through node 1.
    back = seeded_bytes(2 * MiB + 7, seed=3)
    third.put_object(Bucket=bucket, Key="from-node3", Body=back)
    assert get_bytes(first, bucket, "from-node3") == back
    r = first.get_object(Bucket=bucket, Key="dir/big.bin", Range="bytes=1048570-1048589")
    assert r["Body"].read() == objects["dir/big.bin"][1048570:1048590]
    expected = sorted(list(objects) + ["from-node3"])
    assert sorted(c.wait_listing([0, 2], bucket)) == expected
    for i in range(4):
        log = c.nodes[i].log_text()
        assert "cluster: peer RPC over TLS" in log, c.nodes[i].log_tail(30)
        assert "certificate verification failed" not in log


CLI = os.path.join(BUILD_DIR, "src", "rdmastor-cli")


def test_admin_heal_and_cli_over_https(tls_cluster, tmp_path):
    c = tls_cluster
    n = c.nodes[1]
    certs = n.extra_args[n.extra_args.index("--certs-dir") + 1]
    bucket = unique_bucket("ctlscli")
    c.client(0).create_bucket(Bucket=bucket)
    body = seeded_bytes(300 * 1024 + 5, seed=9)
    c.client(0).put_object(Bucket=bucket, Key="k", Body=body)
    home = {"HOME": str(tmp_path)}  # nothing trusted by default but the system store

    heal_env = _clean_env({**home, "MINIO_ROOT_USER": n.access_key,
                           "MINIO_ROOT_PASSWORD": n.secret_key})
    heal = [RDMASTOR_BIN, "admin", "heal", "--endpoint", n.endpoint]
    run = lambda cmd, env: subprocess.run(cmd, env=env, capture_output=True, text=True,
                                          timeout=120, stdin=subprocess.DEVNULL)
    h = HealRun(run(heal + ["--certs-dir", certs, bucket], heal_env))
    assert h.returncode == 0, h
    assert h.counts and h.counts["scanned"] == 1 and h.counts["failed"] == 0, h
    refused = run(heal + [bucket], heal_env)
    assert refused.returncode == 1, refused.stderr
    assert "certificate verification failed" in refused.stderr, refused.stderr
    # The default certs dir is ~/.rdmastor/certs, as for the server.
    os.makedirs(tmp_path / ".rdmastor" / "certs")
    shutil.copytree(os.path.join(certs, "CAs"), tmp_path / ".rdmastor" / "certs" / "CAs")
    assert HealRun(run(heal + [bucket], heal_env)).returncode == 0

    cli_env = _clean_env({"HOME": str(tmp_path / "nowhere"), "AWS_ACCESS_KEY_ID": n.access_key,
                          "AWS_SECRET_ACCESS_KEY": n.secret_key})
    out = tmp_path / "got.bin"
    cp = run([CLI, "--endpoint", n.endpoint, "--certs-dir", certs, "get", f"{bucket}/k",
              str(out)], cli_env)
    assert cp.returncode == 0, cp.stderr
    assert out.read_bytes() == body
    cp = run([CLI, "--endpoint", n.endpoint, "--certs-dir", certs, "ls", bucket], cli_env)
    assert cp.returncode == 0 and "k" in cp.stdout, (cp.stdout, cp.stderr)
    cp = run([CLI, "--endpoint", n.endpoint, "ls", bucket], cli_env)
    assert cp.returncode != 0 and "certificate verification failed" in cp.stderr, cp.stderr


def wait_for_log(node, needle, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in node.log_text():
            return True
        time.sleep(0.2)
    return needle in node.log_text()


def test_node_with_a_certificate_from_another_ca_is_refused(pki):
    # Node 4's certificate is issued by a CA nobody trusts; it trusts the cluster CA itself.
    c = tls_cluster_of(pki, "rogue", [pki["ca"]] * 3 + [pki["rogue"]],
                       env_extra={"MINIO_PEER_WAIT": "5s"})
    try:
        for i in range(4):
            c.launch(i)
        rogue = f"https://127.0.0.1:{c.ports[3]}"
        for i in range(3):
            assert wait_for_log(c.nodes[i], "certificate verification failed", 40), \
                c.nodes[i].log_tail(30) + "\n--- node 4 ---\n" + c.nodes[3].log_tail(30)
            lines = [line for line in c.nodes[i].log_text().splitlines()
                     if "certificate verification failed" in line]
            # Which peer, why, whose certificate and what this node trusts.
            assert any(rogue in line and "unable to get local issuer certificate" in line
                       and "rogue CA" in line and "CAs" in line for line in lines), lines[-3:]
        # The peers never treat it as up.
        for i in range(3):
            assert f"peer 127.0.0.1:{c.ports[3]} is up" not in c.nodes[i].log_text()
    finally:
        c.cleanup()


def run_server(args, env, timeout=20):
    return subprocess.run([RDMASTOR_BIN, "server"] + args, capture_output=True, text=True,
                          timeout=timeout, env=_clean_env(env), stdin=subprocess.DEVNULL)


def test_scheme_and_certificate_mismatches_refuse_to_start(pki, tmp_path):
    ports = consecutive_free_ports(2)
    drives = lambda scheme: " ".join(f"{scheme}://127.0.0.1:{p}{tmp_path}/n{p}/d{j}"
                                     for p in ports for j in (1, 2))
    address = ["--address", f"127.0.0.1:{ports[0]}"]
    home = {"HOME": str(tmp_path)}  # no ~/.rdmastor/certs of the machine's user
    certs = node_certs(pki, "mismatch", [pki["ca"]])[0]

    cp = run_server(address, {**home, "MINIO_VOLUMES": drives("https")})
    assert cp.returncode == 1, cp.stderr
    assert "https://" in cp.stderr and "no TLS certificate" in cp.stderr, cp.stderr

    cp = run_server(address + ["--certs-dir", certs], {**home, "MINIO_VOLUMES": drives("http")})
    assert cp.returncode == 1, cp.stderr
    assert "serves HTTPS" in cp.stderr and "use https:// endpoints" in cp.stderr, cp.stderr

    mixed = drives("http").split()[:2] + drives("https").split()[2:]
    cp = run_server(address + ["--certs-dir", certs], {**home, "MINIO_VOLUMES": " ".join(mixed)})
    assert cp.returncode == 1, cp.stderr
    assert "same scheme" in cp.stderr, cp.stderr
