#!/usr/bin/python3
"""Python data-loading benchmark: N objects read into torch tensors by a DataLoader (4 workers).

Side by side on one server (soft fabric) started here: rdmastor Python over RDMA, the same over
HTTP (rdma="off"), boto3 get_object().read() + torch.frombuffer, and local files read with
readinto() as the ceiling, rdmastor from 4 threads of one process (no DataLoader), and the C++
client library reading the same objects from 4 threads (bench/client_read, over RDMA and HTTP).
Reports samples/s, MiB/s and client CPU s/GiB (this process, its DataLoader workers and the C++
reader), the load average, and the ratios the issue sets goals for. Every sample is checked (its
first and last bytes name the object), so a fast wrong answer cannot pass. Each DataLoader item
is --batch objects (default 32; the worker yields their byte count), as a training loader batches:
one item per object costs the DataLoader's inter-process hand-off per object, about as much CPU
as reading a 128 KiB object (--batch 1 shows it). rdmastor reads into a registered_tensor (an
rdmastor.Buffer, registered once), as bench/client_read keeps its buffer registered. See
bench/README.md.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_loader.py --build-dir build \
        --sets 20000x128KiB,200x16MiB
"""

import argparse
import concurrent.futures
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import torch
import torch.utils.data

KiB, MiB, GiB = 1024, 1024 * 1024, 1024 ** 3


def parse_size(s):
    for suffix, mul in (("KiB", KiB), ("MiB", MiB), ("GiB", GiB)):
        if s.endswith(suffix):
            return int(s[:-len(suffix)]) * mul
    return int(s)


def payload(i, size):
    tag = i.to_bytes(4, "little")
    body = bytes([i % 251]) * max(size - 8, 0)
    return (tag + body + tag)[:size]


class Reader(torch.utils.data.IterableDataset):
    """Reads its shard of keys, `batch` objects per DataLoader item, and yields their byte count,
    so that the DataLoader passes one item per batch between processes, as training loaders do.
    rdmastor-rdma / rdmastor-http: one Client.get_batch_into call per batch (at most 16 MiB of
    objects per call) into a reused registered_tensor of rows (registered once per worker); rdmastor-rdma-each: one
    get_into per object into a reused registered_tensor (the binding's per-call cost shows);
    boto3 and local files: one read per object into a reused uint8 buffer. The worker's client
    is made once per worker process and kept across epochs (persistent workers)."""

    def __init__(self, mode, keys, size, opts, batch):
        self.mode, self.keys, self.size, self.opts, self.batch = mode, keys, size, opts, batch
        self._state = None

    def _setup(self):
        """(read_batch(indices) -> bytes read, checking every object) for this worker process."""
        if self._state is not None and self._state[0] == os.getpid():
            return self._state[1]
        o, size, keys = self.opts, self.size, self.keys
        if self.mode in ("rdmastor-rdma", "rdmastor-http"):
            import numpy as np
            import rdmastor
            from rdmastor.torch import registered_tensor
            c = rdmastor.Client(o["endpoint"], o["ak"], o["sk"],
                                rdma="soft" if self.mode == "rdmastor-rdma" else "off")
            # At most 16 MiB of rows per call (one 16 MiB object, 128 x 128 KiB): large
            # objects gain nothing from batching, and the buffer stays as small as before.
            per_call = max(1, min(self.batch, 16 * MiB // size))
            rows = registered_tensor(per_call * size).view(per_call, size)
            ends = rows.numpy()

            def read_batch(idx):
                for at in range(0, len(idx), per_call):
                    part = idx[at:at + per_call]
                    n = len(part)
                    got = c.get_batch_into("bench", [keys[i] for i in part], rows, size)
                    tags = np.asarray(part, dtype="<u4")
                    if (got != [size] * n
                            or (ends[:n, :4].copy().view("<u4")[:, 0] != tags).any()
                            or (ends[:n, size - 4:].copy().view("<u4")[:, 0] != tags).any()):
                        raise RuntimeError(f"{self.mode}: wrong bytes in the batch at "
                                           f"{keys[part[0]]}")
                return len(idx) * size
        else:
            if self.mode == "rdmastor-rdma-each":
                from rdmastor.torch import registered_tensor
                buf = registered_tensor(size)
            else:
                buf = torch.empty(size, dtype=torch.uint8)
            mv = memoryview(buf.numpy())
            if self.mode == "rdmastor-rdma-each":
                import rdmastor
                c = rdmastor.Client(o["endpoint"], o["ak"], o["sk"], rdma="soft")
                read = lambda k: c.get_into("bench", k, buf)  # noqa: E731
            elif self.mode == "boto3":
                import boto3
                from botocore.config import Config
                s3 = boto3.client("s3", endpoint_url=o["endpoint"], aws_access_key_id=o["ak"],
                                  aws_secret_access_key=o["sk"], region_name="us-east-1",
                                  config=Config(signature_version="s3v4"))

                def read(k):
                    data = s3.get_object(Bucket="bench", Key=k)["Body"].read()
                    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
                    buf[:len(data)] = t
                    return len(data)
            else:
                def read(k):
                    with open(os.path.join(o["dir"], k.replace("/", "_")), "rb",
                              buffering=0) as f:
                        return f.readinto(mv)

            def read_batch(idx):
                done = 0
                for i in idx:
                    n = int(read(keys[i]))
                    tag = i.to_bytes(4, "little")
                    if n != size or bytes(mv[:4]) != tag or bytes(mv[n - 4:n]) != tag:
                        raise RuntimeError(f"{self.mode}: wrong bytes for {keys[i]}")
                    done += n
                return done
        self._state = (os.getpid(), read_batch)
        return read_batch

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        read_batch = self._setup()
        mine = range(wid, len(self.keys), nw)
        for at in range(0, len(mine), self.batch):
            yield read_batch(mine[at:at + self.batch])


def cpu_seconds():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_threads(keys, size, opts, workers):
    """rdmastor over RDMA from threads of this process sharing one Client (no DataLoader): what
    the binding costs without the worker processes."""
    import rdmastor
    from rdmastor.torch import registered_tensor
    c = rdmastor.Client(opts["endpoint"], opts["ak"], opts["sk"], rdma="soft")

    def work(w):
        buf = registered_tensor(size)
        return sum(int(c.get_into("bench", keys[i], buf)) for i in range(w, len(keys), workers))

    cpu0, t0 = cpu_seconds(), time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        total = sum(ex.map(work, range(workers)))
    dt, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    assert total == len(keys) * size
    return {"samples_s": len(keys) / dt, "mib_s": total / MiB / dt,
            "cpu_s_per_gib": cpu / (total / GiB), "seconds": dt}


def run_cpp(mode, keys, size, opts, workers):
    """bench/client_read (the C++ client library), 4 threads, over RDMA (soft) or HTTP."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=opts["ak"], AWS_SECRET_ACCESS_KEY=opts["sk"])
    cpu0, t0 = cpu_seconds(), time.monotonic()
    cp = subprocess.run([opts["client_read"], "--endpoint", opts["endpoint"], "--bucket", "bench",
                         "--size", str(size), "--threads", str(workers),
                         "--via", mode.split("-", 1)[1]],
                        input="\n".join(keys) + "\n", capture_output=True, text=True, env=env,
                        timeout=3600)
    dt, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    if cp.returncode != 0:
        raise RuntimeError(f"{mode}: client_read failed: {cp.stderr[-2000:]}")
    r = json.loads(cp.stdout)
    assert r["bytes"] == len(keys) * size
    # The reader's own clock (no process start); CPU: the whole child process, as the loader's.
    return {"samples_s": len(keys) / r["seconds"], "mib_s": r["bytes"] / MiB / r["seconds"],
            "cpu_s_per_gib": cpu / (r["bytes"] / GiB), "seconds": r["seconds"], "wall": dt}


def live_cpu_seconds(pids):
    """user + system CPU of the live processes pids (DataLoader workers not yet reaped)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass  # gone: reaped, so RUSAGE_CHILDREN has it
    return total


def run(mode, keys, size, opts, workers, batch, epochs=1):
    """One row per epoch: the first (cold: the DataLoader starts its workers and they make their
    clients) and, with epochs > 1, the next ones on the same persistent workers (warm)."""
    if mode == "rdmastor-threads":
        return [run_threads(keys, size, opts, workers)]
    if mode.startswith("c++-"):
        return [run_cpp(mode, keys, size, opts, workers)]
    ds = Reader(mode, keys, size, opts, batch)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         multiprocessing_context="fork",
                                         persistent_workers=epochs > 1)

    def cpu_now():  # this process, reaped children, and the live workers
        it = loader._iterator
        pids = [w.pid for w in it._workers] if it is not None and hasattr(it, "_workers") else []
        return cpu_seconds() + live_cpu_seconds(pids)

    rows = []
    for epoch in range(epochs):
        cpu0, t0 = cpu_now(), time.monotonic()
        total, first = 0, None
        for n in loader:
            total += n
            if first is None:
                first = time.monotonic() - t0  # the workers' start-up, on a cold epoch
        if epoch == epochs - 1 and epochs > 1:
            loader._iterator._shutdown_workers()  # the last epoch stops (and reaps) them
        dt, cpu = time.monotonic() - t0, cpu_now() - cpu0
        assert total == len(keys) * size
        rows.append({"samples_s": len(keys) / dt, "mib_s": total / MiB / dt,
                     "cpu_s_per_gib": cpu / (total / GiB), "seconds": dt, "first_item_s": first})
    return rows


def _status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def _peak(fn):
    """(fn's result, seconds, peak RSS growth in bytes while it ran): VmHWM reset first."""
    import gc
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = _status_bytes("VmRSS")
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0, _status_bytes("VmHWM") - base


def checkpoint_rows(c, size, filedir):
    """rdmastor.torch.save / load of a state dict of `size` bytes (8 float32 tensors): seconds,
    MiB/s and peak RSS growth, beside torch.save / torch.load of a local file."""
    from rdmastor.torch import load, save
    per = size // 8 // 4
    state = {f"layer{i}": torch.empty(per, dtype=torch.float32).uniform_() for i in range(8)}
    nbytes = per * 4 * 8
    path = os.path.join(filedir, "ckpt.pt")
    rows = []
    for name, fn in (("rdmastor save", lambda: save(state, "s3://bench/ckpt.pt", client=c)),
                     ("rdmastor load", lambda: load("s3://bench/ckpt.pt", client=c)),
                     ("local file save", lambda: torch.save(state, path)),
                     ("local file load", lambda: torch.load(path))):
        out, dt, grew = _peak(fn)
        if name.endswith("load"):
            assert torch.equal(out["layer7"], state["layer7"])
        del out
        rows.append({"mode": name, "seconds": dt, "mib_s": nbytes / MiB / dt,
                     "peak_rss_mib": grew / MiB, "of_size": grew / nbytes})
    os.unlink(path)
    return nbytes, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--sets", default="20000x128KiB,200x16MiB")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--modes", default="rdmastor-rdma,rdmastor-rdma-each,rdmastor-http,"
                                       "rdmastor-threads,boto3,local,c++-rdma,c++-http")
    ap.add_argument("--batch", type=int, default=32,
                    help="objects per DataLoader item (1: one item per object)")
    ap.add_argument("--warm-modes", default="rdmastor-rdma",
                    help="DataLoader modes that also run a second epoch on the same (persistent) "
                         "workers, reported as MODE-warm; the first epoch (cold) is the main row")
    ap.add_argument("--json-out", help="also write every row (and the load averages) here")
    ap.add_argument("--checkpoint", default="",
                    help="also save and load a state dict of this size (e.g. 1GiB) with "
                         "rdmastor.torch, reporting MiB/s and peak RSS growth")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build_dir, "python"))
    import rdmastor

    base = tempfile.mkdtemp(prefix="rdmastor-pybench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ak, sk = "benchadmin", "benchsecret123"
    env = dict(os.environ, MINIO_ROOT_USER=ak, MINIO_ROOT_PASSWORD=sk, MINIO_RDMA_FABRIC="soft")
    os.makedirs(os.path.join(base, "data"))
    log = open(os.path.join(base, "server.log"), "wb")
    srv = subprocess.Popen([os.path.join(args.build_dir, "src", "rdmastor"), "server", "--address",
                            f"127.0.0.1:{port}", os.path.join(base, "data")], env=env,
                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(endpoint + "/minio/health/live", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        c = rdmastor.Client(endpoint, ak, sk, rdma="soft")
        c.create_bucket("bench")
        filedir = os.path.join(base, "files")
        os.makedirs(filedir)
        opts = {"endpoint": endpoint, "ak": ak, "sk": sk, "dir": filedir,
                "client_read": os.path.join(args.build_dir, "bench", "client_read")}
        rows = []
        print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}; {os.cpu_count()} CPUs", flush=True)
        print(f"{'set':>14} {'mode':>19} {'samples/s':>10} {'MiB/s':>9} {'CPU s/GiB':>10} "
              f"{'seconds':>8} {'load1':>6} {'1st item':>9}")
        for spec in [s for s in args.sets.split(",") if s]:
            count, size = spec.split("x")
            count, size = int(count), parse_size(size)
            keys = [f"s{size}/{i:06d}" for i in range(count)]

            def put(i):
                data = payload(i, size)
                c.put_object("bench", keys[i], data)
                with open(os.path.join(filedir, keys[i].replace("/", "_")), "wb") as f:
                    f.write(data)

            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(4) as ex:
                list(ex.map(put, range(count)))
            dt = time.monotonic() - t0
            print(f"{spec:>14} {'(write)':>19} {count / dt:10.0f} {count * size / MiB / dt:9.1f} "
                  f"{'':>10} {dt:8.1f} {os.getloadavg()[0]:6.2f}", flush=True)
            by_mode = {}
            for mode in args.modes.split(","):
                epochs = 2 if mode in args.warm_modes.split(",") else 1
                for epoch, r in enumerate(run(mode, keys, size, opts, args.workers, args.batch,
                                              epochs)):
                    r["load1"] = os.getloadavg()[0]
                    name = mode if epoch == 0 else mode + "-warm"
                    by_mode[name] = r
                    rows.append({"set": spec, "mode": name, **r})
                    first = r.get("first_item_s")
                    print(f"{spec:>14} {name:>19} {r['samples_s']:10.0f} {r['mib_s']:9.1f} "
                          f"{r['cpu_s_per_gib']:10.2f} {r['seconds']:8.1f} {r['load1']:6.2f} "
                          f"{'' if first is None else format(first, '.2f'):>9}", flush=True)
            for mine in ("rdmastor-rdma", "rdmastor-rdma-warm"):
                rd = by_mode.get(mine)
                for other in ("boto3", "rdmastor-http", "c++-rdma", "local"):
                    if rd and other in by_mode:
                        print(f"{spec:>14}   {mine} / {other}: "
                              f"{rd['mib_s'] / by_mode[other]['mib_s']:.2f}x", flush=True)
            for k in keys:
                os.unlink(os.path.join(filedir, k.replace("/", "_")))
        if args.checkpoint:
            nbytes, ck = checkpoint_rows(c, parse_size(args.checkpoint), filedir)
            print(f"checkpoint of {nbytes / MiB:.0f} MiB (8 float32 tensors): seconds, MiB/s, "
                  "peak RSS growth (and its ratio to the checkpoint's size)")
            for r in ck:
                print(f"{r['mode']:>19} {r['seconds']:8.1f} s {r['mib_s']:9.1f} MiB/s "
                      f"+{r['peak_rss_mib']:8.1f} MiB ({r['of_size']:.2f}x)", flush=True)
                rows.append({"set": f"checkpoint {args.checkpoint}", **r})
        print(f"load average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}", flush=True)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump({"rows": rows, "cpus": os.cpu_count()}, f, indent=1)
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
