#!/usr/bin/env bash
# Configures and builds one flavour: `scripts/build.sh standard` (build/) or
# `scripts/build.sh rdma` (build-rdma/). Extra arguments go to ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-standard}"
shift || true
case "$flavour" in
  standard) dir=build; rdma=OFF ;;
  rdma) dir=build-rdma; rdma=ON ;;
  *) echo "usage: $0 standard|rdma" >&2; exit 2 ;;
esac
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMASTOR_RDMA="$rdma"
fi
ninja -C "$dir" "$@"
