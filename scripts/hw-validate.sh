#!/usr/bin/env bash
# First contact with a real fabric (issue 12, "a hardware kit"): the ordered go / no-go check a
# person runs on the first two hosts with RDMA NICs. Every step prints GO, NO-GO or SKIP with a
# reason, and everything it saw goes into one report file. Run it from the repository root of an
# RDMA build (scripts/build.sh rdma), as a user allowed to lock memory (ulimit -l unlimited).
#
#   scripts/hw-validate.sh [--peer HOST] [--report FILE] [--build DIR] [--device DEV]
#                          [--rxe] [--mtu-test] [--no-device-ok]
#
#   --peer HOST   the second host (ssh without a password; same build path there): perftest DC
#                 write/read and rdma_cm RC between the hosts, and the peer's facts
#   --report FILE where the report goes (default hw-report-<host>-<time>.txt)
#   --build DIR   the RDMA build directory (default build-rdma)
#   --device DEV  the device to use (MINIO_RDMA_DEVICE; default: what `rdma check` picks)
#   --rxe         no NIC: create a Soft-RoCE (rdma_rxe) device over a veth pair (root) and run the
#                 RC path there; DC needs mlx5 and is skipped
#   --mtu-test    RoCE: also run the S3 round trips with the netdev MTU at 1500 (root; restored)
#   --no-device-ok  this host is not meant to have an RDMA device: none is "nothing to validate"
#                 (exit 0) instead of NO-GO (a node meant to serve RDMA whose driver did not load)
#
# Exit status: 0 when every step that ran is GO (or there is no device and --no-device-ok says
# none is expected), 1 when a step is NO-GO (no RDMA device is one), 2 on usage errors.
set -uo pipefail

peer=""
report=""
build="build-rdma"
device=""
use_rxe=0
mtu_test=0
no_device_ok=0
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) peer="${2:?--peer needs a host}"; shift 2 ;;
    --report) report="${2:?--report needs a file}"; shift 2 ;;
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    --device) device="${2:?--device needs a name}"; shift 2 ;;
    --rxe) use_rxe=1; shift ;;
    --mtu-test) mtu_test=1; shift ;;
    --no-device-ok) no_device_ok=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "hw-validate: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.." || exit 2
host="$(hostname -s 2>/dev/null || echo host)"
[ -n "$report" ] || report="hw-report-${host}-$(date -u +%Y%m%dT%H%M%SZ).txt"
: >"$report" || { echo "hw-validate: cannot write $report" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/hw-validate.XXXXXX")"
server_pid=""
rxe_made=0
mtu_restore=""

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  if [ -n "$mtu_restore" ]; then ip link set dev "${mtu_restore%% *}" mtu "${mtu_restore##* }"; fi
  if [ "$rxe_made" = 1 ]; then
    rdma link delete rxe_hw0 2>/dev/null
    ip link delete hwv0 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

nogo=0
log() { printf '%s\n' "$*" | tee -a "$report"; }
section() { printf '\n===== %s =====\n' "$*" >>"$report"; }
verdict() {  # verdict STEP GO|NO-GO|SKIP REASON
  log "$(printf '%-28s %-6s %s' "$1" "$2" "$3")"
  [ "$2" = "NO-GO" ] && nogo=1
  return 0
}
# Runs a command, its output into the report; returns its status.
record() {
  section "$*"
  "$@" >>"$report" 2>&1
}
have() { command -v "$1" >/dev/null 2>&1; }

log "rdmastor hardware validation on ${host}, $(date -u +%FT%TZ); report: ${report}"

# ---- 0. a device at all ----------------------------------------------------------------------
devices() { ls /sys/class/infiniband 2>/dev/null; }
if [ -z "$(devices)" ] && [ "$use_rxe" = 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    verdict "soft-roce" "SKIP" "creating an rxe device over a veth pair needs root"
  else
    # No modinfo/modprobe gate: a kernel whose modules live elsewhere (no /lib/modules, as in
    # scripts/rdma-vm.sh's guest) or have rdma_rxe built in or loaded still creates the device;
    # `rdma link add` loads the module itself. Its own error is what the report needs.
    [ -d /sys/module/rdma_rxe ] || modprobe rdma_rxe >>"$report" 2>&1 || true
    rxe_err="$(
      { ip link add hwv0 type veth peer name hwv1 &&
        ip addr add 10.250.0.1/30 dev hwv0 && ip addr add 10.250.0.2/30 dev hwv1 &&
        ip link set hwv0 up && ip link set hwv1 up &&
        rdma link add rxe_hw0 type rxe netdev hwv0; } 2>&1
    )"
    if rdma link show rxe_hw0/1 >/dev/null 2>&1; then
      rxe_made=1
      verdict "soft-roce" "GO" "rxe_hw0 over veth hwv0 (10.250.0.1) <-> hwv1 (10.250.0.2)"
      device="rxe_hw0"
      export RDMASTOR_HW_RC_IP="${RDMASTOR_HW_RC_IP:-10.250.0.1}"
    else
      ip link delete hwv0 2>/dev/null
      hint=""
      [ -d /sys/module/rdma_rxe ] || modinfo rdma_rxe >/dev/null 2>&1 ||
        hint=" (rdma_rxe is neither loaded nor found by modinfo: a kernel without Soft-RoCE?)"
      verdict "soft-roce" "NO-GO" "could not create rxe_hw0 over a veth pair: ${rxe_err:-no error text}${hint}"
    fi
  fi
fi
if [ -z "$(devices)" ]; then
  # A node meant to serve RDMA whose driver did not load looks exactly like this: NO-GO unless
  # the caller says no device is expected here.
  if [ "$no_device_ok" = 1 ] && [ "$nogo" = 0 ]; then
    log "no RDMA device on this host (/sys/class/infiniband is empty) and none expected" \
      "(--no-device-ok): nothing to validate."
    exit 0
  fi
  verdict "rdma-device" "NO-GO" "no RDMA device on this host (/sys/class/infiniband is empty): \
the driver did not load, or the NIC is missing (lsmod, dmesg; --rxe for Soft-RoCE; \
--no-device-ok where none is expected)"
  log "verdict: NO-GO (report: $report)"
  exit 1
fi
[ -n "$device" ] && export MINIO_RDMA_DEVICE="$device"
is_mlx5=0
for d in $(devices); do
  if [ -z "$device" ] || [ "$d" = "$device" ]; then
    case "$d" in mlx5*) is_mlx5=1 ;; esac
  fi
done

# ---- 1. facts ----------------------------------------------------------------------------------
record uname -a
if have dpkg-query; then
  record dpkg-query -W rdma-core libibverbs1 ibverbs-providers perftest
elif have rpm; then
  record rpm -q rdma-core libibverbs perftest
fi
have ibv_devinfo && record ibv_devinfo -v
section "GIDs (index type address netdev)"
# `read`, not `cat`: a GID table has up to 1024 entries (rxe), and a process per entry takes
# minutes on a slow or emulated CPU.
for g in /sys/class/infiniband/*/ports/*/gids/*; do
  read -r addr <"$g" 2>/dev/null || continue
  [ "$addr" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && continue
  idx="${g##*/}"
  port_dir="${g%/gids/*}"
  type="" ndev=""
  read -r type <"$port_dir/gid_attrs/types/$idx" 2>/dev/null
  read -r ndev <"$port_dir/gid_attrs/ndevs/$idx" 2>/dev/null
  echo "$g $type $addr $ndev" >>"$report"
  # The first RoCE v2 IPv4-mapped GID of the device under test: the address the hw tests' RC
  # loopback (VerbsRc) listens on, unless RDMASTOR_HW_RC_IP is set.
  dev_of_gid="${g#/sys/class/infiniband/}"
  dev_of_gid="${dev_of_gid%%/*}"
  if [ -z "${RDMASTOR_HW_RC_IP:-}" ] && [ "$type" = "RoCE v2" ] &&
     { [ -z "$device" ] || [ "$dev_of_gid" = "$device" ]; } &&
     [ "${addr:0:30}" = "0000:0000:0000:0000:0000:ffff:" ]; then
    hex="${addr:30:4}${addr:35:4}"
    export RDMASTOR_HW_RC_IP="$((16#${hex:0:2})).$((16#${hex:2:2})).$((16#${hex:4:2})).$((16#${hex:6:2}))"
  fi
done
record ip -br link
section "ulimit -l"
ulimit -l >>"$report"
memlock="$(ulimit -l)"
counters() {
  for f in /sys/class/infiniband/*/ports/*/hw_counters/* /sys/class/infiniband/*/ports/*/counters/*; do
    [ -f "$f" ] && read -r v <"$f" 2>/dev/null && printf '%s %s\n' "$f" "$v"
  done
}
counters >"$work/counters.before"
have rdma && rdma resource show >"$work/resource.before" 2>&1
if [ "$memlock" = "unlimited" ] || [ "$memlock" -ge 1048576 ] 2>/dev/null; then
  verdict "facts" "GO" "kernel $(uname -r), memlock ${memlock}"
else
  verdict "facts" "NO-GO" "ulimit -l is ${memlock} KiB: raise it (LimitMEMLOCK=infinity)"
fi

# GPU memory (issue 12/17): can the GPU export device memory as a dma-buf, the half of
# ibv_reg_dmabuf_mr that does not need the NIC? Run where nvcc exists; measured on an H200
# (driver 580, CUDA 13): exported, CPU mmap refused (so only the verbs target can reach it).
if have nvcc && [ ! -d /sys/module/nvidia ]; then
  # A CUDA toolkit without the driver (a build machine, a guest): nothing to probe.
  verdict "gpu-dmabuf" "SKIP" "nvcc present but no NVIDIA driver loaded (/sys/module/nvidia)"
elif have nvcc; then
  if nvcc -o "$work/cuda_dmabuf_probe" scripts/hw/cuda_dmabuf_probe.cc -lcuda >>"$report" 2>&1 &&
      "$work/cuda_dmabuf_probe" >"$work/cuda_dmabuf.txt" 2>&1 &&
      grep -q '^exported' "$work/cuda_dmabuf.txt"; then
    verdict "gpu-dmabuf" "GO" "$(head -1 "$work/cuda_dmabuf.txt")"
  else
    verdict "gpu-dmabuf" "NO-GO" "$(tail -1 "$work/cuda_dmabuf.txt" 2>/dev/null) (GPU memory cannot be registered)"
  fi
  cat "$work/cuda_dmabuf.txt" >>"$report" 2>/dev/null
else
  verdict "gpu-dmabuf" "SKIP" "no nvcc: GPU memory registration not checked"
fi

# ---- 2. the fabric's own proof: perftest DC, rdma_cm RC -----------------------------------------
if [ -z "$peer" ]; then
  verdict "perftest-dc" "SKIP" "no --peer given"
  verdict "perftest-rc-rdma-cm" "SKIP" "no --peer given"
elif ! have ib_write_bw; then
  verdict "perftest-dc" "NO-GO" "perftest is not installed (apt-get install perftest)"
else
  peer_ip="$(getent ahostsv4 "$peer" | awk 'NR==1 {print $1}')"
  dev_args=()
  [ -n "$device" ] && dev_args=(-d "$device")
  perf() {  # perf NAME TOOL ARGS...: server on the peer, client here
    local name="$1" tool="$2"
    shift 2
    section "$name: ssh $peer $tool $* / $tool $* $peer_ip"
    local remote
    remote="timeout 60 $(printf '%q ' "$tool" "$@")"  # quoted here, run there
    # shellcheck disable=SC2029
    ssh "$peer" "$remote" >>"$report" 2>&1 &
    local srv=$!
    sleep 2
    timeout 60 "$tool" "$@" "$peer_ip" >>"$report" 2>&1
    local rc=$?
    wait "$srv"
    return "$rc"
  }
  if [ "$is_mlx5" = 1 ]; then
    if perf perftest-dc-write ib_write_bw -c DC "${dev_args[@]}" -s 1048576 -n 2000 &&
      perf perftest-dc-read ib_read_bw -c DC "${dev_args[@]}" -s 1048576 -n 2000; then
      verdict "perftest-dc" "GO" "DC write and read between $host and $peer"
    else
      verdict "perftest-dc" "NO-GO" "perftest DC failed: the fabric itself (see the report)"
    fi
  else
    verdict "perftest-dc" "SKIP" "DC needs an mlx5 device"
  fi
  if perf perftest-rc-rdma-cm ib_write_bw -R "${dev_args[@]}" -s 1048576 -n 2000; then
    verdict "perftest-rc-rdma-cm" "GO" "RC through rdma_cm between $host and $peer"
  else
    verdict "perftest-rc-rdma-cm" "NO-GO" "rdma_cm RC failed (routing, GID, firewall on 4791)"
  fi
fi

# ---- 3. the build ------------------------------------------------------------------------------
bin="$build/src/rdmastor"
cli="$build/src/rdmastor-cli"
if [ ! -x "$bin" ] || [ ! -x "$cli" ]; then
  verdict "build" "NO-GO" "$bin or $cli missing: scripts/build.sh rdma"
  log "verdict: NO-GO (report: $report)"
  exit 1
fi
record "$bin" --version
# Without mlx5 there is no DC, so S3 over RDMA (DC) cannot be ready; what such a device offers,
# inter-node RC, is checked instead (MINIO_RDMA_INTERNODE=on), and failures that only say "not an
# mlx5 device" are expected there.
check_env=()
[ "$is_mlx5" = 1 ] || check_env=(MINIO_RDMA_INTERNODE=on)
section "rdmastor rdma check ${check_env[*]}"
env "${check_env[@]}" "$bin" rdma check >"$work/check.txt" 2>&1
check_rc=$?
cat "$work/check.txt" >>"$report"
check_fails="$(grep -a '^\[FAIL\]' "$work/check.txt")"
if [ "$check_rc" = 0 ]; then
  verdict "rdma-check" "GO" "$(grep -a 'READY' "$work/check.txt" | tail -1)"
elif [ "$is_mlx5" != 1 ] && [ -n "$check_fails" ] &&
    ! grep -v 'not an mlx5 device' <<<"$check_fails" | grep -q .; then
  verdict "rdma-check" "GO" "inter-node RC ready; S3 over RDMA needs DC (an mlx5 device)"
else
  verdict "rdma-check" "NO-GO" "rdmastor rdma check failed a layer (see the report)"
fi

# ---- 4. device tests ---------------------------------------------------------------------------
# VerbsRc (inter-node RC over rdma_cm, loopback) runs only with an address to listen on.
section "RDMASTOR_HW_RC_IP=${RDMASTOR_HW_RC_IP:-} (empty: the RC loopback test skips)"
if record ctest --test-dir "$build" -L hw --verbose --timeout 600; then
  verdict "ctest-hw" "GO" "$(grep -a 'tests passed' "$report" | tail -1)"
else
  verdict "ctest-hw" "NO-GO" "ctest -L hw failed (see the report)"
fi

# ---- 5. S3 round trips over verbs --------------------------------------------------------------
port=$((20000 + RANDOM % 20000))
export AWS_ACCESS_KEY_ID=hwvalidate AWS_SECRET_ACCESS_KEY=hwvalidate-secret
# The CLI's HTTP requests arrive over loopback while its tokens name the RoCE address, so the
# origin check (MINIO_RDMA_ALLOW) is off for these local round trips.
start_server() {
  mkdir -p "$work/drive"
  MINIO_ROOT_USER="$AWS_ACCESS_KEY_ID" MINIO_ROOT_PASSWORD="$AWS_SECRET_ACCESS_KEY" \
    MINIO_RDMA_FABRIC=verbs MINIO_RDMA_ALLOW=any "$bin" server --address "127.0.0.1:$port" "$work/drive" \
    >>"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/minio/health/live" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}
s3() { "$cli" --endpoint "http://127.0.0.1:$port" --rdma --fabric verbs "$@"; }
if [ "$is_mlx5" != 1 ]; then
  verdict "s3-round-trips" "SKIP" "S3 over RDMA uses DC: needs an mlx5 device"
elif ! start_server; then
  verdict "s3-round-trips" "NO-GO" "the server did not start (see $work/server.log in the report)"
  record cat "$work/server.log"
else
  s3 mb hw >>"$report" 2>&1
  shm="/dev/shm/hw-validate.$$"
  mkdir -p "$shm"
  ok=1
  round_trips() {
    local size
    for size in 0 1 4096 1048577 67108864 1073741824; do
      head -c "$size" /dev/urandom >"$shm/src"
      if s3 put "hw/o$size" "$shm/src" >>"$report" 2>&1 &&
        s3 get "hw/o$size" "$shm/dst" >>"$report" 2>&1 &&
        cmp -s "$shm/src" "$shm/dst"; then
        echo "round trip $size bytes: ok" >>"$report"
      else
        echo "round trip $size bytes: FAILED" >>"$report"
        ok=0
      fi
    done
  }
  section "S3 round trips 0 B .. 1 GiB into /dev/shm"
  round_trips
  if [ "$ok" = 1 ]; then
    verdict "s3-round-trips" "GO" "0 B .. 1 GiB PUT/GET over verbs, bytes identical"
  else
    verdict "s3-round-trips" "NO-GO" "a round trip failed (see the report)"
  fi

  # ---- 6. failure paths ------------------------------------------------------------------------
  section "wrong DC key"
  if MINIO_RDMA_DC_KEY=0x1234 s3 get hw/o4096 "$shm/wrong" >>"$report" 2>&1; then
    verdict "wrong-dc-key" "NO-GO" "a GET with a different DC key succeeded"
  elif s3 get hw/o4096 "$shm/dst" >>"$report" 2>&1; then
    verdict "wrong-dc-key" "GO" "refused, and the server carries on"
  else
    verdict "wrong-dc-key" "NO-GO" "the server stopped serving after a wrong DC key"
  fi
  section "client killed mid-GET"
  s3 get hw/o1073741824 "$shm/killed" >>"$report" 2>&1 &
  victim=$!
  sleep 0.3
  kill -9 "$victim" 2>/dev/null
  wait "$victim" 2>/dev/null
  sleep 3
  if s3 get hw/o1048577 "$shm/dst" >>"$report" 2>&1; then
    verdict "client-killed-mid-get" "GO" "the server carries on"
  else
    verdict "client-killed-mid-get" "NO-GO" "GET failed after a client died mid-transfer"
  fi
  section "64 parallel GETs"
  # The server caps concurrent transfers and answers the excess 503 SlowDown by design: each GET
  # retries that itself (rdmastor-cli --max-attempts 8, backing off as the SDKs do) and the step
  # judges completions, bytes compared. Any other failure, or SlowDown to the last try, is NO-GO.
  head -c 67108864 /dev/urandom >"$shm/src" && s3 put hw/par "$shm/src" >>"$report" 2>&1
  parallel_get() {  # parallel_get I: one GET; its retries in $shm/p$I.retries
    local i="$1" out="$work/parallel.$1.log"
    s3 --max-attempts 8 --json get hw/par "$shm/p$i" >"$work/parallel.$1.json" 2>"$out" || return 1
    grep -o '"retries":[0-9]*' "$work/parallel.$1.json" | cut -d: -f2 >"$shm/p$i.retries"
    cmp -s "$shm/src" "$shm/p$i"
  }
  pids=()
  for i in $(seq 1 64); do
    parallel_get "$i" &
    pids+=($!)
  done
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  retried="$(cat "$shm"/p*.retries 2>/dev/null | awk '$1 > 0 {n++} END {print n + 0}')"
  cat "$work"/parallel.*.log >>"$report" 2>/dev/null
  echo "64 parallel GETs: $failed failed, $retried retried after 503 SlowDown" >>"$report"
  rm -f "$shm"/p* "$work"/parallel.*.log "$work"/parallel.*.json
  if [ "$failed" = 0 ]; then
    verdict "64-parallel-gets" "GO" "64 x 64 MiB GETs at once, bytes identical ($retried retried SlowDown)"
  else
    verdict "64-parallel-gets" "NO-GO" "$failed of 64 parallel GETs failed (other than SlowDown, or SlowDown 8 times)"
  fi

  # ---- 7. MTU 1500 (RoCE) ----------------------------------------------------------------------
  netdev="$(cat /sys/class/infiniband/"${device:-$(devices | head -1)}"/ports/1/gid_attrs/ndevs/* 2>/dev/null | grep -v '^$' | head -1)"
  if [ "$mtu_test" != 1 ]; then
    verdict "mtu-1500" "SKIP" "not asked (--mtu-test)"
  elif [ -z "$netdev" ] || [ "$(id -u)" != 0 ]; then
    verdict "mtu-1500" "SKIP" "needs root and a RoCE netdev"
  else
    mtu_restore="$netdev $(cat "/sys/class/net/$netdev/mtu")"
    ip link set dev "$netdev" mtu 1500
    kill "$server_pid"; wait "$server_pid" 2>/dev/null
    ok=1
    start_server && section "round trips at MTU 1500" && round_trips
    ip link set dev "$netdev" mtu "${mtu_restore##* }"
    mtu_restore=""
    if [ "$ok" = 1 ]; then
      verdict "mtu-1500" "GO" "round trips with $netdev at MTU 1500"
    else
      verdict "mtu-1500" "NO-GO" "round trips failed at MTU 1500 (path MTU clamp)"
    fi
  fi
  rm -rf "$shm"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null
  server_pid=""
  record cat "$work/server.log"
fi

# ---- 8. two nodes: inter-node RDMA on vs off ---------------------------------------------------
if [ -z "$peer" ]; then
  verdict "inter-node-rdma" "SKIP" "no --peer given"
else
  verdict "inter-node-rdma" "SKIP" "start a two-node deployment (docs/runbook.md) with \
MINIO_RDMA_INTERNODE=on, then off, and compare bench/cluster_bench.py on both"
fi

# ---- 9. resources and counters after -----------------------------------------------------------
if have rdma; then
  rdma resource show >"$work/resource.after" 2>&1
  section "rdma resource show: before / after"
  cat "$work/resource.before" "$work/resource.after" >>"$report"
  if diff -q "$work/resource.before" "$work/resource.after" >/dev/null; then
    verdict "resources-released" "GO" "rdma resource show back to its baseline"
  else
    verdict "resources-released" "NO-GO" "QPs/CQs/MRs left behind (diff in the report)"
  fi
else
  verdict "resources-released" "SKIP" "the rdma tool (iproute2) is missing"
fi
counters >"$work/counters.after"
section "hw counters that changed (before -> after)"
join "$work/counters.before" "$work/counters.after" |
  awk '$2 != $3 {print $1, $2, "->", $3, "(+" $3 - $2 ")"}' >>"$report"

if [ "$nogo" = 0 ]; then
  log "verdict: GO (report: $report)"
  exit 0
fi
log "verdict: NO-GO (report: $report)"
exit 1
