#!/usr/bin/env python3
"""Unequal path MTUs on the real kernel RDMA stack (ctest rxe.mtu, issue 37 item 7), inside the
guest of scripts/rdma-vm.sh --devices 2: rxe0's netdev at MTU 9000 (rxe active_mtu 4096), rxe1's
at 1500 (active_mtu 1024), the two joined by the veth pair (a frame above the receiving end's MTU
is dropped there, as a switch port would). The server listens on rxe0 (10.77.0.1); a policy rule
makes every local connection to it leave from 10.77.1.1 over the pair, so rdmastor-cli and the
Python package are clients on the small-MTU side. S3 over RDMA on RC from there must be
byte-identical (rdma_cm gives both ends of the connection the smaller path MTU) — the server
writes a GET's payload and reads a PUT's in frames the 1500-byte end accepts.

usage: mtu_rxe.py BUILD_DIR   (an RDMA build). Lean: seconds of payload under TCG."""

import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rxe_util import PASSWORD, USER, RxeServer, data_of  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-rdma")
SIZES = [4096, (1 << 20) + 1, 6 << 20]
SERVER_IP, CLIENT_IP = "10.77.0.1", "10.77.1.1"


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}", flush=True)


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def active_mtu(dev):
    m = re.search(r"active_mtu:\s*(\d+)", sh("ibv_devinfo", "-d", dev).stdout)
    return int(m.group(1)) if m else None


def udp_arrives(size):
    """Whether a datagram of `size` bytes from SERVER_IP reaches CLIENT_IP (don't fragment)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind((CLIENT_IP, 0))
        rx.settimeout(2)
        tx.bind((SERVER_IP, 0))
        tx.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
        try:
            tx.sendto(b"m" * size, rx.getsockname())
            return len(rx.recv(65536)) == size
        except OSError:
            return False


def main():
    check(os.environ.get("RDMASTOR_VM_RXE_IP") == SERVER_IP, "inside the guest with two rxe devices")
    sh("ip", "link", "set", "rxv0", "mtu", "9000")
    sh("ip", "link", "set", "rxv1", "mtu", "1500")
    check(active_mtu("rxe0") == 4096 and active_mtu("rxe1") == 1024,
          f"rxe0 active_mtu {active_mtu('rxe0')} (netdev 9000), "
          f"rxe1 {active_mtu('rxe1')} (netdev 1500)")
    # Locally made connections to the server (HTTP, the client's RC connect, its source address
    # lookup) leave from rxe1's netdev: the client is on the small-MTU end of the wire.
    sh("ip", "rule", "add", "pref", "5", "iif", "lo", "to", SERVER_IP, "lookup", "100")
    route = sh("ip", "route", "get", SERVER_IP).stdout
    check(re.search(rf"dev rxv1 .*src {re.escape(CLIENT_IP)}", route) is not None, f"a client reaches {SERVER_IP} from {CLIENT_IP}: "
          f"{route.strip()}")
    # The wire enforces the small end's MTU: a 4000-byte datagram (DF set) toward rxe1's side is
    # dropped by the pair (so any payload moved below went in frames of at most 1500 bytes), a
    # 1400-byte one arrives.
    check(not udp_arrives(4000) and udp_arrives(1400),
          f"the veth pair drops frames above 1500 bytes toward {CLIENT_IP}, passes 1400")
    srv = RxeServer(BUILD)
    try:
        check(srv.cli("mb", "mtu").returncode == 0, "bucket mtu created")
        before = srv.traffic()
        moved = 0
        for size in SIZES:
            src, dst = os.path.join(srv.work, f"s{size}"), os.path.join(srv.work, f"d{size}")
            with open(src, "wb") as f:
                f.write(data_of(size, size))
            for args in (["put", f"mtu/o{size}", src], ["get", f"mtu/o{size}", dst]):
                p = srv.cli(*args, rdma=True, timeout=120)
                check(p.returncode == 0 and "transport rdma" in p.stderr,
                      f"rdmastor-cli {args[0]} {size} B over RC from the 1024-MTU side: "
                      f"{p.stderr.strip()[-400:]}")
            check(open(dst, "rb").read() == data_of(size, size), f"{size} B byte-identical")
            moved += size
        after = srv.traffic()
        check(after[("received", "rdma")] - before[("received", "rdma")] == moved and
              after[("sent", "rdma")] - before[("sent", "rdma")] == moved,
              f"{moved} B each way counted on the verbs fabric, none over HTTP")

        # The Python package holds its RC connection: the server's end of it names the client
        # on the small-MTU side.
        code = (f"import sys; sys.path.insert(0, {os.path.join(BUILD, 'python')!r})\n"
                "import rdmastor, subprocess\n"
                f"c = rdmastor.Client({srv.endpoint!r}, {USER!r}, {PASSWORD!r}, rdma='verbs', "
                f"transport='rc', rc_port={srv.rc_port})\n"
                "data = bytes(range(256)) * 8192 + b'x'\n"
                "assert c.put_object('mtu', 'py', data).transport == 'rdma'\n"
                "back = bytearray(len(data))\n"
                "assert c.get_into('mtu', 'py', back).transport == 'rdma' and bytes(back) == data\n"
                "print(subprocess.run(['rdma', 'resource', 'show', 'cm_id'], capture_output=True,"
                " text=True).stdout)\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, env=dict(srv.env, AWS_ACCESS_KEY_ID=USER,
                                                 AWS_SECRET_ACCESS_KEY=PASSWORD))
        check(p.returncode == 0, f"python put/get 2 MiB + 1 over RC byte-identical: "
              f"{p.stderr.strip()[-600:]}")
        check(re.search(rf"src-addr {re.escape(SERVER_IP)}:{srv.rc_port} dst-addr "
                        rf"{re.escape(CLIENT_IP)}:", p.stdout) is not None,
              f"the server's RC connection is to {CLIENT_IP} (rdma resource show cm_id):\n"
              f"{p.stdout.strip()[-800:]}")
    except BaseException:
        print("---- server log (tail) ----\n" + srv.log()[-4000:], flush=True)
        raise
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
