#!/usr/bin/python3
"""Cluster throughput: PUT/GET MiB/s of a 4-node loopback cluster (4 drives each: one erasure
set of 16, EC 12+4) with inter-node RDMA off and on (soft fabric), beside one node with 4 drives
(EC 2+2), and the server CPU seconds per GiB moved on each node. Prints a markdown table.

    bench/cluster_bench.py                                  # BUILD_DIR or build/
    BENCH_TMP=/mnt/scratch bench/cluster_bench.py           # drives below another directory
    bench/cluster_bench.py --sizes 1MiB,64MiB --concurrency 8 --duration-s 3
    bench/cluster_bench.py --modes single,off,on --markdown out.md --json-dir /tmp/cb

Load comes from bench/s3bench (the project's C++ S3 client; every op verified: ETag = MD5,
content sampled), with --endpoint listing every node (thread t talks to node t mod 4) and
--server-pids (CPU time of each node over each PUT and GET phase). Nodes are started with
tests/integration/cluster_util.py (the test suite's Cluster). The drives live below BENCH_TMP
(default /tmp). See bench/README.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_TMP = os.environ.get("BENCH_TMP") or "/tmp"
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

MODES = {
    "single": "1 node x 4 drives (EC 2+2)",
    "off": "4 nodes x 4 drives, MINIO_RDMA_INTERNODE=off",
    "on": "4 nodes x 4 drives, MINIO_RDMA_INTERNODE=on, MINIO_RDMA_FABRIC=soft",
}
SENT = "minio_system_network_internode_sent_bytes_total"
RECV = "minio_system_network_internode_recv_bytes_total"
FALLBACKS = "minio_system_network_internode_rdma_fallbacks_total"
OPENED = "rdmastor_rdma_internode_connections_opened_total"


def log(msg):
    print(f"cluster_bench: {msg}", file=sys.stderr, flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--sizes", default="1MiB,64MiB")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--duration-s", type=float, default=3.0, help="per PUT / GET phase")
    ap.add_argument("--modes", default="single,off,on")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--json-dir", help="keep s3bench's JSON per mode here")
    a = ap.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    a.modes = [m for m in a.modes.split(",") if m]
    for m in a.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (single, off, on)")
    return a


def internode_traffic(cluster):
    """{"rdma": bytes, "tcp": bytes, "fallbacks": n, "connections": n} sent+received over all
    nodes; connections: inter-node RDMA channels opened (persistent: at most peers x
    MINIO_RDMA_CHANNELS per node unless channels fail or idle out)."""
    from cluster_util import metric_sum
    out = {"rdma": 0.0, "tcp": 0.0, "fallbacks": 0.0, "connections": 0.0}
    for i in range(cluster.n):
        m = cluster.metrics(i)
        for t in ("rdma", "tcp"):
            out[t] += metric_sum(m, SENT, transport=t)
        out["fallbacks"] += metric_sum(m, FALLBACKS)
        out["connections"] += metric_sum(m, OPENED)
    return out


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[:-len(u)]) * m)
    return int(text)


def calls_per_op(cluster, size_text, reps=3):
    """Peer calls node 1 sends per PUT and per GET of `size_text` (rdmastor_peer_calls_total:
    storage calls + lock calls, without the background ones), the mean of `reps` of each."""
    from cluster_util import get_bytes, peer_calls_during
    s3 = cluster.client(0)
    bucket = "bench-peer-calls"
    try:
        s3.create_bucket(Bucket=bucket)
    except Exception:  # exists from an earlier size
        pass
    body = os.urandom(parse_size(size_text))
    s3.put_object(Bucket=bucket, Key="warm", Body=b"x")
    out = {}
    for op in ("put", "get"):
        total = 0
        for i in range(reps):
            key = f"k{i}"
            fn = (lambda: s3.put_object(Bucket=bucket, Key=key, Body=body)) if op == "put" else \
                (lambda: get_bytes(s3, bucket, key))
            storage, locks = peer_calls_during(cluster, 0, fn)
            total += sum(storage.values()) + sum(locks.values())
        out[op] = total / reps
    for i in range(reps):
        s3.delete_object(Bucket=bucket, Key=f"k{i}")
    return out


def run_s3bench(args, endpoints, pids, creds, json_path, size):
    cmd = [os.path.join(args.build_dir, "bench", "s3bench"),
           "--endpoint", ",".join(endpoints),
           "--access-key", creds[0], "--secret-key", creds[1],
           "--sizes", size, "--concurrency", str(args.concurrency),
           "--duration-s", str(args.duration_s), "--max-phase-s", str(max(60, 4 * args.duration_s)),
           "--server-pids", ",".join(str(p) for p in pids),
           "--no-file-ref", "--json", json_path]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MINIO_"))}
    cp = subprocess.run(cmd, env=env, capture_output=True, text=True,
                        timeout=120 + 20 * args.duration_s)
    sys.stderr.write(cp.stderr)
    if cp.returncode != 0:
        raise RuntimeError(f"s3bench failed (rc {cp.returncode}):\n{cp.stdout[-3000:]}")
    with open(json_path) as f:
        return json.load(f)


def run_mode(args, mode, workdir):
    import conftest  # after main() set RDMASTOR_BIN
    from cluster_util import Cluster
    sizes = [x for x in args.sizes.split(",") if x]
    if mode == "single":
        dirs_base = tempfile.mkdtemp(prefix="rdmastor-bench-single-", dir=BENCH_TMP)
        node = conftest.Server(name="single", data_dirs=[os.path.join(dirs_base, f"d{j + 1}")
                                                         for j in range(4)],
                               env={"MINIO_PROMETHEUS_AUTH_TYPE": "public",
                                    "RDMASTOR_DRIVE_CHECK_INTERVAL": "off"})
        try:
            node.start()
            cells = []
            for size in sizes:
                res = run_s3bench(args, [node.endpoint], [node.proc.pid],
                                  (node.access_key, node.secret_key),
                                  os.path.join(workdir, f"{mode}-{size}.json"), size)
                cells += [dict(cell, traffic=None) for cell in res["results"]]
            return {"mode": mode, "nodes": 1, "cells": cells, "notes": []}
        finally:
            node.cleanup()
            subprocess.run(["rm", "-rf", dirs_base], timeout=300)
    env = {"MINIO_RDMA_INTERNODE": "off"}
    if mode == "on":
        env = {"MINIO_RDMA_INTERNODE": "on", "MINIO_RDMA_FABRIC": "soft"}
    c = Cluster(env_extra=env, name=f"bench-{mode}-node", base_parent=BENCH_TMP)
    notes = []
    try:
        c.launch(0)
        time.sleep(0.5)
        if not c.nodes[0].alive():
            raise RuntimeError(f"node 1 refused {env}:\n{c.nodes[0].log_tail(20)}")
        for i in range(1, c.n):
            c.launch(i)
        for n in c.nodes:
            n.wait_ready(60)
        if mode == "on":
            for n in c.nodes:
                lines = [ln for ln in n.log_text().splitlines() if "inter-node RDMA" in ln]
                if not any("inter-node RDMA: on" in ln for ln in lines):
                    notes.append(f"{n.name}: " + (lines[-1] if lines else "no inter-node RDMA line"))
        cells = []
        for size in sizes:
            before = internode_traffic(c)
            res = run_s3bench(args, [n.endpoint for n in c.nodes], [n.proc.pid for n in c.nodes],
                              c.creds, os.path.join(workdir, f"{mode}-{size}.json"), size)
            after = internode_traffic(c)
            traffic = {k: after[k] - before[k] for k in after}
            calls = calls_per_op(c, size)
            cells += [dict(cell, traffic=traffic, calls=calls) for cell in res["results"]]
        return {"mode": mode, "nodes": c.n, "cells": cells, "notes": notes}
    finally:
        c.cleanup()


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def table(runs, args):
    lines = ["| setup | size | PUT MiB/s | GET MiB/s | PUT CPU s/GiB per node | "
             "GET CPU s/GiB per node | inter-node bytes over RDMA | peer calls per PUT / GET | "
             "RDMA connections opened |",
             "|---|---|---:|---:|---|---|---:|---:|---:|"]
    for run in runs:
        for cell in run["cells"]:
            put, get = cell["put"], cell["get"]

            def per_node(ph):
                if not ph or "server_cpu_s" not in ph or not ph["bytes"]:
                    return "-"
                gib = ph["bytes"] / (1 << 30)
                vals = [c / gib for c in ph["server_cpu_s"]]
                s = " / ".join(f"{v:.2f}" for v in vals)
                return s + (f" (mean {sum(vals) / len(vals):.2f})" if len(vals) > 1 else "")

            tr = cell["traffic"]
            share = "-"
            if tr is not None and (tr["rdma"] + tr["tcp"]) > 0:
                share = "%.0f %% of %.0f MiB" % (100 * tr["rdma"] / (tr["rdma"] + tr["tcp"]),
                                                 (tr["rdma"] + tr["tcp"]) / (1 << 20))
                if tr["fallbacks"]:
                    share += f", {tr['fallbacks']:.0f} fallback(s)"
            calls = cell.get("calls")
            calls_text = "%.0f / %.0f" % (calls["put"], calls["get"]) if calls else "-"
            conns = "%.0f" % tr["connections"] if tr is not None else "-"
            lines.append("| %s | %s | %s%s | %s%s | %s | %s | %s | %s | %s |" % (
                MODES[run["mode"]], cell["size_text"],
                fmt(put["mib_per_s"] if put else None), "*" if put and put["time_limited"] else "",
                fmt(get["mib_per_s"] if get else None), "*" if get and get["time_limited"] else "",
                per_node(put), per_node(get), share, calls_text, conns))
    lines.append("")
    lines.append(f"s3bench, {args.concurrency} threads spread over the nodes, each phase "
                 f"{args.duration_s:g} s (* = stopped by the time limit, the usual case); "
                 f"CPU = utime+stime of each server process over the phase / GiB moved by "
                 f"the phase. Machine: {os.cpu_count()} CPUs, load average at start "
                 f"{args.load_at_start}.")
    lines.append("Inter-node bytes: minio_system_network_internode_sent_bytes_total summed over "
                 "the nodes, over the cell (PUT, GET and the cleanup's deletes).")
    lines.append("RDMA connections opened: rdmastor_rdma_internode_connections_opened_total "
                 "summed over the nodes, over the cell (4 nodes: at most 4 x 3 peers x "
                 "MINIO_RDMA_CHANNELS with persistent channels).")
    lines.append("Peer calls: rdmastor_peer_calls_total sent by node 1 for one PUT / one GET of the "
                 "cell's size through node 1 (storage and lock calls, mean of 3 each, after the "
                 "s3bench run; 12 of the set's 16 drives are remote).")
    lines.extend(cpu_ratio_lines(runs))
    for run in runs:
        for note in run["notes"]:
            lines.append(f"note ({run['mode']}): {note}")
    return "\n".join(lines)


def cpu_ratio_lines(runs):
    """PUT CPU per GiB of the 4 nodes together against one node with 4 drives, per size (issue 35:
    the cluster should spend at most 2x what the single node spends per byte)."""
    def total(cell):
        ph = cell["put"]
        if not ph or "server_cpu_s" not in ph or not ph["bytes"]:
            return None
        return sum(ph["server_cpu_s"]) / (ph["bytes"] / (1 << 30))

    single = {c["size_text"]: total(c) for r in runs if r["mode"] == "single" for c in r["cells"]}
    out = []
    for run in runs:
        if run["mode"] == "single":
            continue
        for cell in run["cells"]:
            mine, base = total(cell), single.get(cell["size_text"])
            if mine is None or not base:
                continue
            out.append(f"PUT {cell['size_text']} CPU s/GiB, all nodes together: "
                       f"{MODES[run['mode']]} {mine:.2f}, one node {base:.2f}: "
                       f"{mine / base:.2f}x (target <= 2x)")
    return out


def main():
    args = parse_args()
    for b in ("src/rdmastor", "bench/s3bench"):
        if not os.access(os.path.join(args.build_dir, b), os.X_OK):
            sys.exit(f"cluster_bench: {args.build_dir}/{b} not built "
                     f"(ninja -C {args.build_dir} rdmastor s3bench)")
    os.environ["RDMASTOR_BIN"] = os.path.join(args.build_dir, "src", "rdmastor")
    args.load_at_start = open("/proc/loadavg").read().split()[0]
    if float(args.load_at_start) > os.cpu_count():
        log(f"warning: load average {args.load_at_start} on {os.cpu_count()} CPUs: "
            "the figures will be low and noisy")
    workdir = args.json_dir or tempfile.mkdtemp(prefix="cluster-bench-")
    os.makedirs(workdir, exist_ok=True)
    runs = []
    t0 = time.monotonic()
    for mode in args.modes:
        log(f"--- {MODES[mode]}")
        try:
            runs.append(run_mode(args, mode, workdir))
        except Exception as e:  # report the mode and go on with the others
            log(f"{mode}: FAILED: {e}")
            runs.append({"mode": mode, "nodes": 0, "cells": [],
                         "notes": [f"FAILED: {str(e).splitlines()[0] if str(e) else repr(e)}"]})
    out = table(runs, args)
    print(out)
    log(f"total {time.monotonic() - t0:.0f} s")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(out + "\n")
    if not args.json_dir:
        subprocess.run(["rm", "-rf", workdir], timeout=60)
    failed = any(not r["cells"] for r in runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
