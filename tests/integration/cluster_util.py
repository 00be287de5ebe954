"""Multi-node rdmastor clusters of real processes, shared by the cluster tests and bench/.

    from cluster_util import Cluster, get_bytes, list_keys, meta_files, sha

    c = Cluster()                                   # 4 nodes x 4 drives on 127.0.0.1, own ports
    c = Cluster(hosts=["127.0.0.%d" % (i + 1) for i in range(4)])   # one loopback address each
    c = Cluster(node_env={2: {"MINIO_RDMA_INTERNODE": "on"}})       # per-node extra environment
    c = Cluster(hosts=[...], netns=["ns1", ...], port=9000)         # node i inside namespace i
    try:
        c.start()                                   # launches all, waits (bounded) for health
        s3 = c.client(1)                            # boto3 against node 2 (no retries)
        c.metrics(0)                                # {"name{labels}": value} of node 1
        c.pause(3); c.resume(3); c.kill(3); c.start([3])
        c.heal(1)                                   # `rdmastor admin heal` through node 2
    finally:
        c.cleanup()                                 # kills every node (by PID), removes dirs

Network namespaces are created by the caller (see test_cluster_netns.py); a node with `netns`
runs as `ip netns exec NS rdmastor ...` (ip execs in place: the PID is the server's). A process
that must talk to nodes inside namespaces enters one with `in_netns(NS)` (setns on the calling
thread; threads started inside inherit it).

Every node runs with MINIO_PROMETHEUS_AUTH_TYPE=public (metrics without a token) and
RDMASTOR_DRIVE_CHECK_INTERVAL=off unless the caller's env says otherwise.
"""

import contextlib
import ctypes
import glob
import hashlib
import hmac
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest
import requests

import conftest
from conftest import RDMASTOR_BIN, HealRun, Server, _clean_env, make_client

MiB = 1 << 20
NODES = 4
DRIVES = 4


def sha(b):
    return hashlib.sha256(b).hexdigest()


def _port_free(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def consecutive_free_ports(n, host="127.0.0.1"):
    """n consecutive free ports on host (bounded search)."""
    rnd = random.SystemRandom()
    for _ in range(200):
        base = rnd.randrange(20000, 60000 - n)
        if all(_port_free(host, p) for p in range(base, base + n)):
            return list(range(base, base + n))
    pytest.fail(f"no {n} consecutive free ports on {host}")


def port_free_on_all(hosts):
    """One port free on every host of `hosts` (bounded search)."""
    rnd = random.SystemRandom()
    for _ in range(200):
        p = rnd.randrange(20000, 60000)
        if all(_port_free(h, p) for h in set(hosts)):
            return p
    pytest.fail(f"no port free on all of {hosts}")


def get_bytes(client, bucket, key):
    return client.get_object(Bucket=bucket, Key=key)["Body"].read()


def list_keys(client, bucket, page=1000, prefix=""):
    keys, token = [], None
    for _ in range(1000):
        kw = {"Bucket": bucket, "MaxKeys": page, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        r = client.list_objects_v2(**kw)
        keys += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return keys
        token = r["NextContinuationToken"]
    pytest.fail("listing did not end")


def meta_files(c, bucket, key, nodes):
    """The per-drive metadata files of bucket/key on the drives of the given node indexes."""
    out = []
    for i in nodes:
        for d in c.dirs[i]:
            out += glob.glob(os.path.join(d, bucket, key, ".rdmastor.meta"))
    return out


def retry(fn, timeout=15.0, interval=0.5, exceptions=(Exception,)):
    """fn() until it returns without raising one of `exceptions`, for at most `timeout` s; the
    last exception propagates."""
    deadline = time.monotonic() + timeout
    for _ in range(100000):
        try:
            return fn()
        except exceptions:
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)
    raise AssertionError("retry: loop bound reached")


# ----------------------------------------------------------------------------------------------
# Peer RPC as another node (or an attacker holding the root credentials) sends it
# ----------------------------------------------------------------------------------------------

# The request headers a peer signature covers, present or absent (kPeerSignedHeaders).
PEER_SIGNED_HEADERS = ("x-rdmastor-rdma-token", "x-rdmastor-rdma-length", "x-rdmastor-node")


def peer_auth_header(creds, method, destination, target, body=b"", headers=None, ts_ms=None,
                     nonce=None):
    """The x-rdmastor-peer-auth value a node computes for a request to the node at `destination`
    ("host:port" as in the endpoints) with `method`, `target` (path and query, as sent), `body` and
    `headers`, from the deployment's root credentials (PeerAuthMessage in
    src/cluster/peer_auth.cc): v2 <ms> <nonce> <sha256(body)> <mac>."""
    key = hmac.new(b"rdmastor-peer-v1", f"{creds[0]}\n{creds[1]}".encode(), "sha256").digest()
    ts = str(int(time.time() * 1000) if ts_ms is None else ts_ms)
    nonce = nonce or secrets.token_hex(16)
    body_sha256 = hashlib.sha256(body).hexdigest()
    msg = "rdmastor-peer-v2\n" + "".join(
        f + "\n" for f in (method, destination, target, ts, nonce, body_sha256))
    lower = {k.lower(): v for k, v in (headers or {}).items()}
    for name in PEER_SIGNED_HEADERS:
        msg += name + ("=" + lower[name] if name in lower else "-") + "\n"
    mac = hmac.new(key, msg.encode(), "sha256").hexdigest()
    return f"v2 {ts} {nonce} {body_sha256} {mac}"


def peer_call(node, creds, target, body=b"", method="POST", timeout=10, headers=None, auth=None):
    """Sends one peer RPC (`target` = path + query) to `node`, correctly signed for it, or with
    `auth` as the signature header instead (a captured one, replayed)."""
    headers = dict(headers or {})
    headers["x-rdmastor-peer-auth"] = auth or peer_auth_header(creds, method, node.address, target,
                                                               body, headers)
    return requests.request(method, node.url(target), data=body, timeout=timeout, headers=headers,
                            proxies={"http": None, "https": None}, verify=node.verify)


def storage_call_target(call, disk):
    """The target of storage call `call` (the table in src/cluster/wire.h) on drive `disk`."""
    return "/minio/storage/v1/%s?disk=%s" % (call, urllib.parse.quote(disk, safe=""))


def storage_call_body(args, payload=b""):
    """A storage call's request body: its JSON head, a newline, its payload (src/cluster/wire.h)."""
    return json.dumps(args).encode() + b"\n" + payload


def storage_call(node, creds, call, disk, args, payload=b"", **kw):
    """One signed storage call of the table, as a peer sends it."""
    return peer_call(node, creds, storage_call_target(call, disk), storage_call_body(args, payload),
                     **kw)


# ----------------------------------------------------------------------------------------------
# Prometheus metrics
# ----------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def settle_peers():
    """A node skips a peer whose call failed within the last second (PeerClient's fail-fast
    window): its drives count as offline meanwhile, and a heal run then leaves them out. After a
    restarted node is up, this long suffices for every peer to call it again."""
    time.sleep(1.2)


def parse_metrics(text):
    """Prometheus text format -> {"name" or "name{labels as sent}": float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        key = m.group(1) + (m.group(2) or "")
        try:
            out[key] = float(m.group(4))
        except ValueError:
            continue
    return out


def metric_samples(metrics, name):
    """[(labels dict, value)] of every sample of `name` in a parse_metrics() dict."""
    out = []
    for key, value in metrics.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        out.append((dict(_LABEL.findall(rest)), value))
    return out


PEER_LOCK_CALLS = frozenset({"lock", "rlock", "unlock", "runlock", "refresh", "forceunlock"})
# Peer calls a node makes on its own schedule (drive checks, start-up), not for a request.
PEER_BACKGROUND_CALLS = frozenset({"online", "diskinfo", "config", "readformat", "isempty",
                                   "ensureroot"})


def peer_calls_sent(c, idx):
    """{call: count} of rdmastor_peer_calls_total on node `idx` (the calls it sent)."""
    return {lab["call"]: v
            for lab, v in metric_samples(c.metrics(idx), "rdmastor_peer_calls_total")}


def peer_calls_during(c, idx, action):
    """(storage calls by name, lock calls by name) that node `idx` sent while `action()` ran,
    without the background calls."""
    before = peer_calls_sent(c, idx)
    action()
    after = peer_calls_sent(c, idx)
    d = {k: int(v - before.get(k, 0)) for k, v in after.items() if v - before.get(k, 0) > 0}
    storage = {k: v for k, v in d.items()
               if k not in PEER_LOCK_CALLS and k not in PEER_BACKGROUND_CALLS}
    return storage, {k: v for k, v in d.items() if k in PEER_LOCK_CALLS}


def metric_sum(metrics, name, **labels):
    """Sum of the samples of `name` whose labels include all of `labels` (0.0 if none)."""
    return sum(v for lab, v in metric_samples(metrics, name)
               if all(lab.get(k) == str(want) for k, want in labels.items()))


# ----------------------------------------------------------------------------------------------
# network namespaces
# ----------------------------------------------------------------------------------------------

_CLONE_NEWNET = 0x40000000
_libc = None


def _setns(fd):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def in_netns(name):
    """Runs the block with the calling thread in network namespace `name` (/run/netns/NAME);
    sockets opened inside stay in it. Restores the thread's namespace afterwards."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def _ip(*args, check=True):
    cp = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=20,
                        stdin=subprocess.DEVNULL)
    if check and cp.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: rc {cp.returncode}: {cp.stderr.strip()}")
    return cp


class NetLab:
    """Network namespaces of our own: one per node ("<prefix>-nI", address 10.A.B.I/24 on its
    eth0) and one hub ("<prefix>-hub") holding a bridge (10.A.B.254/24) with the other end of
    every node's veth pair ("vI"). Nothing is created in the host's namespace (each veth pair is
    created inside the hub and its peer moved straight into the node's namespace), and deleting
    the namespaces removes everything. The test client runs in the hub (`with lab.hub():`).

        lab = NetLab(4)          # names with a random suffix, a random 10.x.y.0/24
        lab.create()             # raises NetLabUnavailable when namespaces cannot be made
        ...
        lab.cut(2); lab.restore(2)   # node 3's link down / up (the hub's end of its veth)
        lab.cleanup()            # always (finally): deletes the namespaces it made
    """

    class Unavailable(Exception):
        pass

    def __init__(self, nodes=NODES):
        rnd = random.SystemRandom()
        self.n = nodes
        self.prefix = "rs" + "".join(rnd.choice("0123456789abcdef") for _ in range(6))
        self.net = f"10.{rnd.randrange(100, 250)}.{rnd.randrange(1, 250)}"
        self.node_ns = [f"{self.prefix}-n{i + 1}" for i in range(nodes)]
        self.hub_ns = f"{self.prefix}-hub"
        self.hosts = [f"{self.net}.{i + 1}" for i in range(nodes)]
        self.hub_ip = f"{self.net}.254"
        self.made = []

    def create(self):
        if os.geteuid() != 0:
            raise NetLab.Unavailable("network namespaces need root (running as uid %d)"
                                     % os.geteuid())
        try:
            for ns in [self.hub_ns] + self.node_ns:
                _ip("netns", "add", ns)
                self.made.append(ns)
                _ip("-n", ns, "link", "set", "lo", "up")
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            raise NetLab.Unavailable(f"`ip netns` does not work here: {e}")
        hub = self.hub_ns
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "addr", "add", f"{self.hub_ip}/24", "dev", "br0")
        _ip("-n", hub, "link", "set", "br0", "up")
        for i, ns in enumerate(self.node_ns):
            _ip("-n", hub, "link", "add", f"v{i + 1}", "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("-n", hub, "link", "set", f"v{i + 1}", "master", "br0")
            _ip("-n", hub, "link", "set", f"v{i + 1}", "up")
            _ip("-n", ns, "addr", "add", f"{self.hosts[i]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
        self.wait_reachable()

    def wait_reachable(self, timeout=10):
        """Bounded wait until every node address answers TCP from the hub (a refused connection
        to a closed port counts: the address is up)."""
        deadline = time.monotonic() + timeout
        with self.hub():
            for h in self.hosts:
                for _ in range(1000):
                    try:
                        socket.create_connection((h, 9), timeout=0.5).close()
                        break
                    except ConnectionRefusedError:
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"{h} does not answer from the hub")
                        time.sleep(0.1)

    def cut(self, idx):
        _ip("-n", self.hub_ns, "link", "set", f"v{idx + 1}", "down")

    def restore(self, idx):
        _ip("-n", self.hub_ns, "link", "set", f"v{idx + 1}", "up")

    def hub(self):
        return in_netns(self.hub_ns)

    def cleanup(self):
        for ns in reversed(self.made):
            _ip("netns", "del", ns, check=False)
        self.made = []


# ----------------------------------------------------------------------------------------------
# nodes and clusters
# ----------------------------------------------------------------------------------------------

class Node(Server):
    """A Server on any host address, optionally inside a network namespace, optionally with
    bind mounts of its own (a private mount namespace: `mounts` {path seen by the node: real
    directory}, so that every node can use the same drive paths, as real nodes do)."""

    def __init__(self, host="127.0.0.1", netns=None, mounts=None, scheme="http", **kw):
        super().__init__(**kw)
        self.host = host
        self.netns = netns
        self.mounts = dict(mounts or {})
        self.scheme = scheme

    @property
    def endpoint(self):
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def address(self):
        return f"{self.host}:{self.port}"

    def command(self):
        cmd = super().command()
        if self.mounts:
            script = " && ".join(f"mount --bind {real} {seen}"
                                 for seen, real in self.mounts.items())
            cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   script + ' && exec "$0" "$@"'] + cmd
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        return cmd

    def launch(self):
        """Starts the process without waiting for it to become healthy."""
        if not os.path.exists(RDMASTOR_BIN):
            pytest.fail(f"server binary not found: {RDMASTOR_BIN} (set RDMASTOR_BIN)")
        self._log = open(self.log_path, "ab")
        self._log.write(f"==== launch: {' '.join(self.command())}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=self.env(),
                                     start_new_session=True)
        if self not in conftest._LIVE_SERVERS:
            conftest._LIVE_SERVERS.append(self)

    def metrics(self, scope="node", timeout=10):
        r = requests.get(self.url(f"/minio/v2/metrics/{scope}"), timeout=timeout,
                         proxies={"http": None, "https": None}, verify=self.verify)
        assert r.status_code == 200, (self.name, r.status_code, r.text[:500])
        return parse_metrics(r.text)

    def cpu_seconds(self):
        """utime + stime of the server process (None when it is gone)."""
        return proc_cpu_seconds(self.proc.pid) if self.proc else None


def proc_cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # from field 3 (state) on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cluster:
    """`nodes` rdmastor processes x `drives` drives forming one deployment.

    hosts:    per-node host address (default all 127.0.0.1); distinct hosts share one port.
    port:     the port of every node (distinct hosts only; default a free one).
    env_extra: environment for every node; node_env: {index: env} on top of it for one node.
    netns:    per-node network namespace name (or None) to run the node in.
    same_paths: every node sees its drives at the same paths (<base>/mnt/disk{1..drives}),
              bind-mounted in a private mount namespace from its own real directories, and
              MINIO_VOLUMES is the single ellipsis argument real deployments use, e.g.
              http://10.1.2.{1...4}:9000/tmp/x/mnt/disk{1...4} (needs root, consecutive
              IPv4 hosts differing in the last octet).
    scheme:   "https" for TLS between the nodes (give each node its --certs-dir in node_args).
    node_args: {index: [extra server arguments]}, e.g. {0: ["--certs-dir", dir]}.
    ca:       the CA bundle the test's clients trust (https).
    base_parent: where the cluster's directory (drives, logs) is made (the bench's BENCH_TMP).
    self.dirs[i] are node i's real drive directories (as this process sees them).
    """

    def __init__(self, env_extra=None, nodes=NODES, drives=DRIVES, hosts=None, port=None,
                 node_env=None, netns=None, same_paths=False, creds=None, name="node",
                 scheme="http", node_args=None, ca=None, base_parent="/tmp"):
        self.n = nodes
        self.scheme = scheme
        self.drives = drives
        self.base = tempfile.mkdtemp(prefix="rdmastor-cluster-", dir=base_parent)
        os.chmod(self.base, 0o755)
        self.hosts = list(hosts or ["127.0.0.1"] * nodes)
        assert len(self.hosts) == nodes
        if len(set(self.hosts)) == 1:
            self.ports = consecutive_free_ports(nodes, self.hosts[0])
        else:
            p = port or (9000 if netns else port_free_on_all(self.hosts))
            self.ports = [p] * nodes
        self.netns = list(netns or [None] * nodes)
        drive = "disk" if same_paths else "d"
        self.dirs = [[os.path.join(self.base, f"n{i + 1}", f"{drive}{j + 1}")
                      for j in range(drives)] for i in range(nodes)]
        mounts = [None] * nodes
        if same_paths:
            seen = os.path.join(self.base, "mnt")
            os.makedirs(seen)
            for i in range(nodes):
                mounts[i] = {seen: os.path.join(self.base, f"n{i + 1}")}
            self.volumes = self._ellipsis_volumes(seen)
        else:
            urls = [f"{scheme}://{self.hosts[i]}:{self.ports[i]}{d}"
                    for i in range(nodes) for d in self.dirs[i]]
            self.volumes = " ".join(urls)
        self.creds = creds or ("AKCLUSTER" + str(self.ports[0]) + str(random.randrange(1000)),
                               "secret-" + str(self.ports[-1]) + "-" + conftest.rand_str(12))
        env = {"MINIO_VOLUMES": self.volumes, "MINIO_PEER_WAIT": "30s",
               "RDMASTOR_DRIVE_CHECK_INTERVAL": "off", "MINIO_PROMETHEUS_AUTH_TYPE": "public"}
        env.update(env_extra or {})
        self.env = env
        self.nodes = []
        for i in range(nodes):
            e = dict(env)
            e.update((node_env or {}).get(i, {}))
            node = Node(host=self.hosts[i], netns=self.netns[i], mounts=mounts[i],
                        name=f"{name}{i + 1}", env=e, data_dirs=self.dirs[i], creds=self.creds,
                        pass_dirs=False, scheme=scheme, args=(node_args or {}).get(i))
            node.port = self.ports[i]
            if ca:
                node.verify = ca
            self.nodes.append(node)

    def _ellipsis_volumes(self, seen):
        octets = [h.rsplit(".", 1) for h in self.hosts]
        prefix = {o[0] for o in octets}
        last = [int(o[1]) for o in octets]
        assert len(prefix) == 1 and last == list(range(last[0], last[0] + self.n)), self.hosts
        assert len(set(self.ports)) == 1
        return (f"{self.scheme}://{octets[0][0]}.{{{last[0]}...{last[-1]}}}:{self.ports[0]}"
                f"{seen}/disk{{1...{self.drives}}}")

    # -- lifecycle --
    def launch(self, idx):
        """Starts node idx without waiting (the nodes wait for each other)."""
        self.nodes[idx].launch()

    def start(self, idxs=None, timeout=40):
        idxs = list(range(self.n)) if idxs is None else list(idxs)
        for i in idxs:
            self.launch(i)
        for i in idxs:
            try:
                self.nodes[i].wait_ready(timeout)
            except RuntimeError as e:
                pytest.fail(f"node{i + 1}: {e}\n{self.nodes[i].log_tail(40)}")
        self.wait_peers_see_online(idxs)

    _PEER_STATE = re.compile(r"peer (\S+) is (offline|online again)")

    def wait_peers_see_online(self, idxs, timeout=15):
        """Bounded wait until no other running node's peer health check still counts a node of
        `idxs` offline (it did while the node was down; a ping every second brings it back). Until
        then that node skips the started ones' drives: a bucket created meanwhile would miss them."""
        targets = {self.nodes[i].address for i in idxs}
        deadline = time.monotonic() + timeout
        for _ in range(100000):
            pending = []
            for j, node in enumerate(self.nodes):
                if j in idxs or node.proc is None or node.proc.poll() is not None:
                    continue
                text = node.log_text()
                text = text[max(text.rfind("==== launch:"), 0):]  # this process's lines only
                state = {}
                for m in self._PEER_STATE.finditer(text):
                    state[m.group(1)] = m.group(2)
                pending += [(node.name, a) for a in targets if state.get(a) == "offline"]
            if not pending:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"peers still count these offline after {timeout} s: {pending}")
            time.sleep(0.1)

    def kill(self, idx, sig=signal.SIGKILL):
        return self.nodes[idx].kill(sig)

    def pause(self, idx):
        """SIGSTOP node idx: its sockets stay open, it answers nothing (a hung peer)."""
        os.kill(self.nodes[idx].proc.pid, signal.SIGSTOP)

    def resume(self, idx):
        os.kill(self.nodes[idx].proc.pid, signal.SIGCONT)

    def cleanup(self):
        for n in self.nodes:
            if n.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(n.proc.pid, signal.SIGCONT)
            n.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- access --
    def client(self, idx, connect_timeout=None, **kw):
        """boto3 for node idx (conftest.make_client: no retries). connect_timeout (default 5 s)
        also bounds how long sending a request body may stall: raise it where a node may
        legitimately take a while before it reads a body (a peer cut off)."""
        if connect_timeout is None:
            return make_client(self.nodes[idx], **kw)
        import boto3
        from botocore.config import Config
        n = self.nodes[idx]
        config = Config(region_name=conftest.REGION, signature_version="s3v4",
                        s3={"addressing_style": "path"},
                        retries={"total_max_attempts": kw.pop("max_attempts", 1),
                                 "mode": "standard"},
                        connect_timeout=connect_timeout,
                        read_timeout=kw.pop("read_timeout", 60), **kw)
        return boto3.session.Session().client(
            "s3", endpoint_url=n.endpoint, aws_access_key_id=n.access_key,
            aws_secret_access_key=n.secret_key, region_name=conftest.REGION, config=config,
            verify=n.verify)

    def metrics(self, idx, scope="node"):
        return self.nodes[idx].metrics(scope)

    def pids(self):
        return [n.proc.pid if n.alive() else None for n in self.nodes]

    def heal(self, idx, bucket=None, timeout=300):
        """`rdmastor admin heal --endpoint <node idx> [bucket]` with the root credentials (run in
        the calling thread's network namespace). Waits out the peers' fail-fast window first."""
        settle_peers()
        n = self.nodes[idx]
        env = _clean_env({"MINIO_ROOT_USER": n.access_key, "MINIO_ROOT_PASSWORD": n.secret_key})
        cmd = [RDMASTOR_BIN, "admin", "heal", "--endpoint", n.endpoint] + ([bucket] if bucket else [])
        cp = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
        return HealRun(cp)

    def wait_listing(self, idxs, bucket, timeout=15):
        """Lists bucket through each node in idxs, retrying (bounded) while a node still answers
        errors (peers skip a node that failed for a short fail-fast window); returns the keys of
        the last listing."""
        from botocore.exceptions import ClientError
        keys = None
        for i in idxs:
            cl = self.client(i)
            keys = retry(lambda: list_keys(cl, bucket), timeout=timeout,
                         exceptions=(ClientError,))
        return keys
