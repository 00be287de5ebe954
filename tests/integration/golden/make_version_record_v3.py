"""Writes version_record_v3.tar.gz: a one-drive server's drive as main 980a7ef (the release
before issue 36 declared the version record as one list) left it; test_version_record_compat.py
starts today's server on a copy and reads everything back (version_record_fixture.py).

Made once with that commit's binary:
    RDMASTOR_BIN=/path/to/old/rdmastor /usr/bin/python3 tests/integration/golden/make_version_record_v3.py
"""
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from version_record_fixture import ENV, check, write  # noqa: E402
from conftest import Server  # noqa: E402


def main():
    srv = Server(name="fixture", env=ENV).start()
    try:
        write(srv.client())
        srv.stop()
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "version_record_v3.tar.gz")
        with tarfile.open(out, "w:gz") as t:
            t.add(srv.datadir, arcname="drive")
    finally:
        srv.stop()
    srv.cleanup()
    print(out)


if __name__ == "__main__":
    main()
