#!/usr/bin/env bash
# README command 1: install what is missing, build, and start rdmastor on ./data, port 9000
# (RDMASTOR_ADDRESS and RDMASTOR_DATA_DIR change the address and the data directory).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh standard rdmastor rdmastor-cli rdmastor_python
data="${RDMASTOR_DATA_DIR:-$(pwd)/data}"
mkdir -p "$data"
address="${RDMASTOR_ADDRESS:-:9000}"
# The URL a local client uses for --address: an empty or wildcard host is reached on loopback.
host="${address%:*}"
port="${address##*:}"
case "$host" in "" | 0.0.0.0 | "[::]") host=127.0.0.1 ;; esac
endpoint="http://${host}:${port}"
echo "Starting rdmastor on ${endpoint} with data in $data"
if [ -z "${MINIO_ROOT_USER:-}" ]; then
  echo "Credentials: minioadmin / minioadmin (defaults - set MINIO_ROOT_USER and MINIO_ROOT_PASSWORD to change them)"
fi
# S3 over RDMA on the soft fabric (TCP emulation) for local clients unless set otherwise: the
# Python client (PYTHONPATH=build/python) and `rdmastor-cli --rdma` move payloads over it.
export MINIO_RDMA_FABRIC="${MINIO_RDMA_FABRIC:-soft}"
echo "S3 over RDMA: fabric ${MINIO_RDMA_FABRIC} (MINIO_RDMA_FABRIC)"
echo "Check it: build/src/rdmastor rdma check --endpoint ${endpoint} (layer \"server\")"
exec build/src/rdmastor server --address "$address" "$data"
