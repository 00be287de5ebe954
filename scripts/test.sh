#!/usr/bin/env bash
# README command 2 (and CI): install what is missing, build both flavours, run the whole suite.
# The standard build runs every test (unit + integration against the real binary); the RDMA build
# runs its unit tests, the server CLI tests (feature line, no-device start-up), `rdma check` and the
# rdmastor-rdma package.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs="$(nproc)"
scripts/build.sh standard -j"$jobs"
scripts/build.sh rdma -j"$jobs"

echo "=== RDMA build: unit tests and server CLI tests ==="
(cd build-rdma && ctest --output-on-failure -j1 --timeout 900 -L unit)
(cd build-rdma && ctest --output-on-failure -j1 --timeout 900 -R 'integration.test_(server_cli|rdma_check|packaging)')
echo "=== standard build: all tests but the soak ==="
# Everything but the soak (label soak, 30 min: `ctest -L soak`); the fuzz smoke (label fuzz-smoke)
# builds the libFuzzer targets with clang and runs each for 10 s.
(cd build && ctest --output-on-failure -j1 --timeout 900 -LE soak)
