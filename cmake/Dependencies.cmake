# Every dependency comes from a Debian package (see scripts/install-deps.sh); nothing is vendored.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# Command lines (rdmastor, rdmastor-cli, bench tools): header-only CLI11 from libcli11-dev. Only the
# few files that parse argv include it (src/common/cli11_support.h): it is slow to compile.
find_package(CLI11 2.1 CONFIG REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(PUGIXML REQUIRED IMPORTED_TARGET pugixml)
# sd_notify for the Type=notify unit (READY=1, watchdog): libsystemd-dev.
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)

if(RDMASTOR_RDMA)
  pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
  pkg_check_modules(RDMACM REQUIRED IMPORTED_TARGET librdmacm)
  find_library(MLX5_LIBRARY NAMES mlx5 REQUIRED)
  find_path(MLX5DV_INCLUDE_DIR infiniband/mlx5dv.h REQUIRED)
endif()

if(RDMASTOR_TESTS)
  find_package(GTest REQUIRED)
endif()
if(RDMASTOR_BENCH)
  find_package(benchmark QUIET)
endif()
