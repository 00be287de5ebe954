#!/usr/bin/env bash
# README command 2 (and CI): install what is missing, build both flavours, run the whole suite.
# The standard build runs every test (unit + integration against the real binary); the RDMA build
# runs its unit tests, the server CLI tests (feature line, no-device start-up), `rdma check`, the
# rdmastor-rdma package, and the rxe label (a real RDMA stack in a QEMU guest, scripts/rdma-vm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs="$(nproc)"
scripts/build.sh standard -j"$jobs"
scripts/build.sh rdma -j"$jobs"

echo "=== RDMA build: unit tests and server CLI tests ==="
(cd build-rdma && ctest --output-on-failure -j1 --timeout 900 -L unit)
(cd build-rdma && ctest --output-on-failure -j1 --timeout 900 -R 'integration.test_(server_cli|rdma_check|packaging)')
echo "=== RDMA build: the real kernel RDMA stack (Soft-RoCE in a QEMU guest, label rxe) ==="
# Each entry boots scripts/rdma-vm.sh's guest (Debian's kernel, rdma_rxe) and runs there; the
# kernel is downloaded once into ~/.cache/rdmastor-vm. A missing QEMU or kernel fails, not skips.
scripts/rdma-vm.sh --prepare
(cd build-rdma && ctest --output-on-failure -j1 -L rxe)
echo "=== standard build: all tests but the soak ==="
# Everything but the soak (label soak, 30 min: `ctest -L soak`); the fuzz smoke (label fuzz-smoke)
# builds the libFuzzer targets with clang and runs each for 10 s.
(cd build && ctest --output-on-failure -j1 --timeout 900 -LE soak)
