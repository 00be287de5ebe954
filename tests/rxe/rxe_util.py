"""What the guest-side tests of label rxe share (tests/rxe/*, run inside scripts/rdma-vm.sh): the
RDMA build's server on rxe0's address, its metrics, and the RDMA resources a process holds as
the kernel counts them (`rdma resource show`)."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

IP = os.environ.get("RDMASTOR_VM_RXE_IP", "10.77.0.1")
USER, PASSWORD = "rxeadmin", "rxeadmin-secret"
# A process without CAP_IPC_LOCK (root in the guest has it, and it lifts RLIMIT_MEMLOCK for
# registrations) and a 64 KiB memlock limit: what an unprivileged service meets by default.
LOW_MEMLOCK = ["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "--",
               "prlimit", "--memlock=65536:65536", "--"]


def free_port():
    with socket.socket() as s:
        s.bind((IP, 0))
        return s.getsockname()[1]


def data_of(size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MINIO_"))}
    env.update(extra)
    return env


class RxeServer:
    """The RDMA build's server on the verbs fabric, one drive, on rxe0's address; its RC listener
    on its own port. prefix: a command the server runs under (LOW_MEMLOCK). A cluster node: its
    host and port, the cluster's MINIO_VOLUMES in env (no drive argument) and wait=False (the
    nodes wait for each other: wait_live() once all are launched)."""

    def __init__(self, build, prefix=(), env=None, host=IP, port=None, wait=True):
        self.build = build
        self.work = tempfile.mkdtemp(prefix="rxe-srv-")
        self.port, self.rc_port = port or free_port(), free_port()
        self.endpoint = f"http://{host}:{self.port}"
        self.env = clean_env(MINIO_ROOT_USER=USER, MINIO_ROOT_PASSWORD=PASSWORD,
                             MINIO_RDMA_FABRIC="verbs", MINIO_RDMA_RC_PORT=str(self.rc_port),
                             MINIO_PROMETHEUS_AUTH_TYPE="public")
        self.env.update(env or {})
        self.log_path = os.path.join(self.work, "server.log")
        self._log = open(self.log_path, "w")
        drives = [] if "MINIO_VOLUMES" in self.env else [os.path.join(self.work, "drive")]
        self.proc = subprocess.Popen(
            list(prefix) + [os.path.join(build, "src", "rdmastor"), "server", *drives,
                            "--address", f"{host}:{self.port}"],
            env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        if wait:
            self.wait_live()

    def wait_live(self, timeout=60, path="/minio/health/live"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                urllib.request.urlopen(self.endpoint + path, timeout=2)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not start:\n{self.log()[-3000:]}")

    def log(self):
        self._log.flush()
        return open(self.log_path).read()

    def metrics(self):
        body = urllib.request.urlopen(self.endpoint + "/minio/v2/metrics/node", timeout=30).read()
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def traffic(self):
        m = self.metrics()
        return {(d, t): m.get(f'minio_s3_traffic_{d}_bytes{{transport="{t}"}}', 0.0)
                for d in ("received", "sent") for t in ("rdma", "tcp")}

    def cli(self, *args, rdma=False, prefix=(), timeout=240):
        """rdmastor-cli against this server (over RC with rdma=True); the CompletedProcess."""
        cmd = list(prefix) + [os.path.join(self.build, "src", "rdmastor-cli"),
                              "--endpoint", self.endpoint]
        if rdma:
            cmd += ["--rdma", "--fabric", "verbs", "--transport", "rc",
                    "--rc-port", str(self.rc_port)]
        return subprocess.run(cmd + list(args), env=self.cli_env(), capture_output=True,
                              text=True, timeout=timeout)

    def cli_env(self):
        """The server's environment with its credentials, for rdmastor-cli (which reads
        MINIO_RDMA_RC_PORT too: a server's `off` is none of its business)."""
        env = dict(self.env, AWS_ACCESS_KEY_ID=USER, AWS_SECRET_ACCESS_KEY=PASSWORD)
        if env.get("MINIO_RDMA_RC_PORT") == "off":
            del env["MINIO_RDMA_RC_PORT"]
        return env

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self._log.close()
        if os.environ.get("RDMASTOR_KEEP"):
            print("kept", self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def rdma_resources(comm="rdmastor"):
    """{kind: count} of the RDMA objects (qp, cq, mr, pd, cm_id) that processes named comm hold,
    as the kernel counts them (`rdma resource show KIND`). By name, not by pid: the kernel tags
    an object with the thread that created it (an rdma_cm accept thread), not the process."""
    out = {}
    for kind in ("qp", "cq", "mr", "pd", "cm_id"):
        p = subprocess.run(["rdma", "-j", "resource", "show", kind], capture_output=True,
                           text=True, timeout=30)
        rows = json.loads(p.stdout or "[]")
        out[kind] = sum(1 for r in rows if r.get("comm") == comm)
    return out
