#!/usr/bin/env bash
# One run, side by side: the disk's own fdatasync ceiling (dd), then rdmastor on 1 drive and on
# 4 drives (EC 2+2) with the same s3bench cells, each table with server CPU s/GiB and storage
# syncs per PUT. Extra arguments go to s3bench (default: 4KiB,1MiB,64MiB at c=1,8,32, 3 s cells).
#
#   bench/put_compare.sh
#   bench/put_compare.sh --sizes 1MiB --concurrency 8 --duration-s 2
#
# Environment as bench/run.sh (BUILD_DIR, SKIP_BUILD, NGINX, BENCH_TMP).
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--sizes 4KiB,1MiB,64MiB --concurrency 1,8,32 --duration-s 3)

dir="$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/rdmastor-ceiling.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
echo "== disk ceiling (dd on $(df --output=source "$dir" | tail -1), the file system the drives use)"
# 256 MiB written, one fdatasync at the end: sequential write bandwidth to stable storage.
dd if=/dev/zero of="$dir/seq" bs=1M count=256 conv=fdatasync 2>&1 | tail -1 | sed 's/^/seq 1 MiB writes + fdatasync: /'
# Every 1 MiB write synced (O_DSYNC): what a one-at-a-time synced 1 MiB PUT could reach.
dd if=/dev/zero of="$dir/dsync" bs=1M count=64 oflag=dsync 2>&1 | tail -1 | sed 's/^/1 MiB writes, each O_DSYNC: /'
# Every 4 KiB write synced: the ceiling of one-at-a-time synced small writes.
dd if=/dev/zero of="$dir/dsync4k" bs=4k count=500 oflag=dsync 2>&1 | tail -1 | sed 's/^/4 KiB writes, each O_DSYNC: /'
rm -rf "$dir"/*

for drives in 1 4; do
  echo
  echo "== rdmastor, $drives drive(s)"
  DRIVES=$drives bench/run.sh "${args[@]}"
  export SKIP_BUILD=1
done
