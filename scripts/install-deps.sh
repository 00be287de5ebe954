#!/usr/bin/env bash
# Installs every Debian 12 package rdmastor needs to build, test and benchmark. Idempotent: runs
# apt-get only when something is missing.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # libraries (see README "Dependencies")
  libboost-dev libssl-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libisal-dev libxxhash-dev libpugixml-dev
  libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # sd_notify for the systemd unit (Type=notify, watchdog)
  libsystemd-dev
  # RDMA build: rdma-core (libibverbs, librdmacm, mlx5 provider + mlx5dv headers)
  libibverbs-dev librdmacm-dev
  # the Soft-RoCE guest (scripts/rdma-vm.sh, ctest -L rxe): QEMU, busybox for its initramfs,
  # kmod (depmod/modprobe -d for the unpacked kernel), cpio; rdma-core/ibverbs-utils/perftest are
  # the rdma tools and providers (rxe) used inside it. The kernel itself is fetched by
  # `scripts/rdma-vm.sh --prepare` (apt-get download, unpacked into a cache, never installed).
  qemu-system-x86 busybox-static kmod cpio rdma-core ibverbs-providers ibverbs-utils perftest
  # test clients and tools
  python3 python3-pytest python3-requests python3-boto3 awscli s3cmd curl procps
  # Python client (docs/python.md): pybind11 module for Debian's python3; torch and fsspec
  # integrations and their tests; tqdm draws the progress bars
  pybind11-dev python3-dev python3-numpy python3-torch python3-fsspec python3-tqdm
  # packaging (cpack DEB + dpkg-shlibdeps) and TLS test certificates
  dpkg-dev openssl
  # benchmark reference server
  nginx-light
  # fuzz targets (fuzz/, scripts/fuzz.sh): clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
