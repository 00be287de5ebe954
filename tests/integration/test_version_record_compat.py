"""A drive written before the version record was declared as one list (issue 36) reads unchanged:
golden/version_record_v3.tar.gz, made by main 980a7ef's server (golden/make_version_record_v3.py),
holds every per-version field of that release; each reads back through S3, and the upload in
progress completes with its tags, ACL and encryption (version_record_fixture.py)."""
import os
import tarfile

from version_record_fixture import ENV, check

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                      "version_record_v3.tar.gz")


def test_drive_of_the_previous_release_reads_unchanged(server_factory, tmp_path):
    with tarfile.open(GOLDEN) as t:
        t.extractall(tmp_path)
    srv = server_factory(data_dirs=[str(tmp_path / "drive")], env=ENV)
    check(srv.client())
