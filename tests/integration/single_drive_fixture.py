"""What golden/single_drive_v1.tar.gz holds (a drive of the retired single-drive layout): shared
by its generator (golden/make_single_drive_v1.py) and test_single_drive_upgrade.py."""

MIB = 1 << 20


def body_of(name, size):
    """A deterministic body: a 251-byte pattern (prime, so no stripe or block boundary lines up
    with it) shifted by the name, so misplaced bytes change the MD5; compresses well."""
    shift = sum(name.encode()) % 251
    pattern = bytes((i * 7 + shift) % 251 for i in range(251))
    return (pattern * (size // 251 + 1))[:size]


FIXTURE = {
    "buckets": ["legacy", "legacy-empty"],
    "tagged_bucket": "legacy",
    "bucket_tags": {"team": "storage"},
    "objects": [
        {"bucket": "legacy", "key": "small.txt", "size": 13, "content_type": "text/plain",
         "metadata": {"color": "blue"}, "tags": {"kind": "small"}},
        {"bucket": "legacy", "key": "empty", "size": 0},
        {"bucket": "legacy", "key": "dir/", "size": 5},
        {"bucket": "legacy", "key": "dir/nested/stripes.bin", "size": 2 * MIB + MIB // 2 + 7},
        {"bucket": "legacy", "key": "exactly-one-stripe", "size": MIB},
        {"bucket": "legacy", "key": "mp.bin", "parts": [5 * MIB, MIB + 3],
         "content_type": "application/x-test"},
    ],
    # An upload still in progress at the upgrade: completed after it.
    "pending": {"bucket": "legacy", "key": "pending.bin", "parts": [5 * MIB, 100]},
}
