#!/usr/bin/env python3
"""S3 over RDMA on RC queue pairs against the real kernel RDMA stack (Soft-RoCE), run inside the
guest of scripts/rdma-vm.sh (ctest label rxe): the RDMA build's server on the verbs fabric (rxe has
no DC, so it serves RC only), rdmastor-cli and the Python package with RC connections opened with
rdma_cm. PUT, GET, UploadPart and ranged GET byte-identical for 0 B, 1 B, 4 KiB, 1 MiB + 1 and
64 MiB; the server's traffic metrics count the payload on the RDMA side and none over HTTP.

usage: s3_over_rc.py BUILD_DIR   (an RDMA build: BUILD_DIR/src/rdmastor, rdmastor-cli, python/)
Lean on purpose: TCG moves ~10 MB/s, and the whole rxe label has 8 minutes."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rxe_util import IP, PASSWORD, USER, RxeServer, data_of  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-rdma")
SIZES = [0, 1, 4096, (1 << 20) + 1, 64 << 20]


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}", flush=True)


def main():
    srv = RxeServer(BUILD)
    work, rc_port = srv.work, srv.rc_port
    try:
        server_log = srv.log()
        if not ("RC only" in server_log and f"RC connections accepted on {IP}:{rc_port}" in
                server_log):
            print(server_log[-3000:])
        check("RC only" in server_log and f"RC connections accepted on {IP}:{rc_port}" in server_log,
              "the server serves S3 over RDMA on RC (rxe has no DC)")
        check(srv.cli("mb", "rxerc").returncode == 0, "bucket rxerc created")
        before = srv.traffic()
        moved = 0
        for size in SIZES:
            src, dst = os.path.join(work, f"s{size}"), os.path.join(work, f"d{size}")
            with open(src, "wb") as f:
                f.write(data_of(size, size))
            for args in (["put", f"rxerc/o{size}", src], ["get", f"rxerc/o{size}", dst]):
                p = srv.cli(*args, rdma=True)
                check(p.returncode == 0 and "transport rdma" in p.stderr,
                      f"rdmastor-cli {args[0]} {size} B over RC: {p.stderr.strip()[-300:]}")
            check(open(dst, "rb").read() == data_of(size, size), f"cli {size} B byte-identical")
            moved += size
        after = srv.traffic()
        check(after[("received", "rdma")] - before[("received", "rdma")] == moved and
              after[("sent", "rdma")] - before[("sent", "rdma")] == moved,
              f"cli: {moved} B each way counted on the verbs fabric")
        check(after[("received", "tcp")] == before[("received", "tcp")] and
              after[("sent", "tcp")] == before[("sent", "tcp")],
              f"cli: no payload over HTTP (before {before}, after {after})")

        sys.path.insert(0, os.path.join(BUILD, "python"))
        import rdmastor
        c = rdmastor.Client(srv.endpoint, USER, PASSWORD, rdma="verbs", transport="rc",
                            rc_port=rc_port, multipart_threshold=5 << 20, part_size=5 << 20,
                            max_concurrency=1)
        before = srv.traffic()
        moved_in = moved_out = 0
        for size in SIZES:
            data = data_of(size, size + 7)
            t = c.put_object("rxerc", f"p{size}", data)  # 64 MiB: UploadPart x13 over RC
            check(t.transport == "rdma", f"python put {size} B over RDMA")
            back = bytearray(size)
            g = c.get_into("rxerc", f"p{size}", back)
            check(g.transport == "rdma" and bytes(back) == data, f"python get {size} B identical")
            moved_in += size
            moved_out += size
            # A 64 MiB get_into is already ranged GETs of part_size; explicit ranges below that.
            if 2 < size < (64 << 20):
                part = bytearray(size - 2)
                r = c.get_into("rxerc", f"p{size}", part, offset=1, length=size - 2)
                check(r.transport == "rdma" and bytes(part) == data[1:-1],
                      f"python ranged get {size - 2} B identical")
                moved_out += size - 2
        after = srv.traffic()
        check(after[("received", "rdma")] - before[("received", "rdma")] == moved_in and
              after[("sent", "rdma")] - before[("sent", "rdma")] == moved_out,
              "python: the payload counted on the verbs fabric")
        # Over HTTP only the multipart upload's XML (create / complete), never payload.
        check(after[("received", "tcp")] - before[("received", "tcp")] < 16384 and
              after[("sent", "tcp")] - before[("sent", "tcp")] < 16384,
              "python: no payload over HTTP (only the multipart XML)")
        m = srv.metrics()
        check(m.get('rdmastor_rdma_rc_connection_events{event="admitted"}', 0) <= 2 * len(SIZES) + 2,
              "one RC connection per client process (or thread), never one per request")
    except BaseException:
        print("---- server log (tail) ----\n" + srv.log()[-4000:], flush=True)
        raise
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
