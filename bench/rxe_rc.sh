#!/usr/bin/env bash
# rdma_bench in the Soft-RoCE guest: S3 over RDMA on RC (verbs fabric, rdma_cm, the real kernel
# stack) against HTTP, same server, same run. On an emulated CPU the RDMA/HTTP ratio is the
# figure, not the MiB/s. Run from the repository root:
#
#   scripts/rdma-vm.sh --timeout 600 -- bench/rxe_rc.sh [BUILD_DIR] [rdma_bench args...]
#
# BUILD_DIR: an RDMA build (default build-rdma) with rdmastor and bench/rdma_bench built.
set -euo pipefail
build="${1:-build-rdma}"
shift || true
ip="${RDMASTOR_VM_RXE_IP:-10.77.0.1}"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
rc_port=$((port + 1))
export MINIO_ROOT_USER=rxebench MINIO_ROOT_PASSWORD=rxebench-secret
MINIO_RDMA_FABRIC=verbs MINIO_RDMA_RC_PORT="$rc_port" MINIO_PROMETHEUS_AUTH_TYPE=public \
  "$build/src/rdmastor" server "$work/drive" --address "$ip:$port" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -sf "http://$ip:$port/minio/health/live" >/dev/null && break
  sleep 0.2
done
grep -E "S3 over RDMA" "$work/server.log" || true
"$build/bench/rdma_bench" --endpoint "http://$ip:$port" --server-pid "$pid" --fabric verbs \
  --transport rc --rc-port "$rc_port" --sizes-mib 1,8 --concurrency 1 --cell-s 3 "$@"
