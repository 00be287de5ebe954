#!/usr/bin/env bash
# Runs a command inside a QEMU guest that has a real kernel RDMA stack (Soft-RoCE, rdma_rxe), and
# returns its exit status and output (issue 31). The guest boots Debian 12's own kernel (unpacked
# from its package, never installed) with this host's root file system shared over virtfs (9p), so
# the command sees the same files, binaries and build trees, at the same paths, as root.
#
#   scripts/rdma-vm.sh [--timeout S] [--mem MiB] [--devices 0|1|2] [--] CMD [ARG...]
#
#   --timeout S   wall-clock bound of the whole run, boot included (RDMASTOR_VM_TIMEOUT, 600);
#                 on expiry the guest is killed and the exit status is 124
#   --mem MiB     guest memory (RDMASTOR_VM_MEM, 3072)
#   --devices N   1 (default, RDMASTOR_VM_DEVICES): rxe0 on dummy netdev rxv0, 10.77.0.1/24;
#                 2: rxe0 on rxv0 (10.77.0.1/24) and rxe1 on rxv1 (10.77.1.1/24), the two ends
#                 of a veth pair, with policy routing that makes 10.77.0.0/24 <-> 10.77.1.0/24
#                 cross the pair (packets leave one device and arrive on the other: a
#                 two-host-like test in one guest, docs/runbook.md); 0: none (rdma_rxe loaded:
#                 for a command that creates its own, e.g. hw-validate.sh --rxe)
#   --prepare     only download/unpack the kernel and build the initramfs (install-deps, CI)
#
# CMD runs in the caller's working directory with the caller's exported environment, stdin from
# /dev/null, stdout and stderr to this script's stdout and stderr (streamed), plus in the guest:
#   RDMASTOR_VM=1, RDMASTOR_VM_RXE_IP=10.77.0.1 (rxe0's address: RoCE v2 GID, rdma_cm binds),
#   RDMASTOR_VM_KERNEL_ROOT (the unpacked kernel: `modprobe -d "$RDMASTOR_VM_KERNEL_ROOT" MOD`),
#   /tmp, /run and /dev/shm private to the guest (tmpfs), `ulimit -l unlimited`, lo up, no other
#   network (-nic none). Files written anywhere else land on the host.
#
# Cache: RDMASTOR_VM_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rdmastor-vm) keeps the unpacked
# kernel and the initramfs; the first run downloads the kernel package that linux-image-amd64
# depends on with `apt-get download` (Debian's registry only). Later runs boot in seconds.
# Packages (scripts/install-deps.sh): qemu-system-x86 busybox-static kmod cpio rdma-core.
#
# Exit status: CMD's; 124 when the time ran out; 125 when the guest could not run CMD (the guest
# console, kept in the cache's jobs/ directory, is printed).
set -uo pipefail

self="$(readlink -f "$0")"

# ------------------------------------------------------------------------------------------------
# Inside the guest: pid 1 after switch_root onto the host's root (see the initramfs /init below).
# ------------------------------------------------------------------------------------------------
if [ "${1:-}" = "--guest-init" ]; then
  job="$2"
  echo "rdma-vm(guest): init running"
  [ "${RDMASTOR_VM_DEBUG:-0}" = 1 ] && set -x
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  # The guest's own /proc, /sys, /dev; /tmp, /run and /dev/shm private to it (tests write there).
  # busybox's mount: util-linux's locks /run/mount/utab, which over 9p is the host's and hangs.
  bb=/bin/busybox
  $bb mount -t proc proc /proc
  $bb mount -t sysfs sysfs /sys
  $bb mount -t devtmpfs devtmpfs /dev
  mkdir -p /dev/pts /dev/shm
  $bb mount -t devpts devpts /dev/pts
  $bb mount -t tmpfs tmpfs /dev/shm
  $bb mount -t tmpfs tmpfs /tmp
  $bb mount -t tmpfs tmpfs /run
  # Kernel chatter off the console (the job's output is in files) unless debugging.
  [ "${RDMASTOR_VM_DEBUG:-0}" = 1 ] || echo 1 >/proc/sys/kernel/printk
  kroot="$(cat "$job/kernel_root")"
  say() { echo "rdma-vm(guest): $*" >>"$job/setup.log"; }
  {
    hostname rdmavm
    ip link set lo up
    # The host root has no /lib/modules: the kernel's own module requests (rxe asks for crc32)
    # go through a wrapper that points modprobe at the unpacked kernel.
    printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$kroot" >/run/modprobe
    chmod +x /run/modprobe
    echo /run/modprobe >/proc/sys/kernel/modprobe
    n="$(cat "$job/devices")"
    if [ "$n" = 2 ]; then
      # Two devices joined by a wire: a veth pair. Both addresses are local to this one kernel,
      # so by default their traffic takes `lo`, where rxe drops it (rxe takes packets only from
      # its own netdev) and rdma_cm's passive side refuses the request (its reply route must
      # leave through the device the request came in on: EHOSTUNREACH, REJECTED status 28).
      # Policy routing sends 10.77.0.0/24 <-> 10.77.1.0/24 over the pair instead, locally
      # generated packets (iif lo) and lookups bound to a netdev (oif) alike; what arrives on
      # the pair is still delivered locally (the local table, after these rules).
      ip link add rxv0 type veth peer name rxv1
      for d in all default rxv0 rxv1; do
        sysctl -qw "net.ipv4.conf.$d.accept_local=1" "net.ipv4.conf.$d.rp_filter=0"
      done
      # A 1 MiB RDMA READ answers with 1024 packets in one burst; the default backlog (1000)
      # dropped them and the requester gave up after its retries (completer_retry_err).
      sysctl -qw net.core.netdev_max_backlog=65536
    else
      for i in $(seq 0 $((n - 1))); do ip link add "rxv$i" type dummy || say "rxv$i failed"; done
    fi
    for i in $(seq 0 $((n - 1))); do
      ip addr add "10.77.$i.1/24" dev "rxv$i" &&
        ip link set "rxv$i" up &&
        rdma link add "rxe$i" type rxe netdev "rxv$i" || say "creating rxe$i failed"
    done
    if [ "$n" = 2 ]; then  # (routes need their devices up)
      ip route add 10.77.0.0/24 dev rxv1 table 100
      ip route add 10.77.1.0/24 dev rxv0 table 101
      ip rule add pref 10 iif lo from 10.77.1.0/24 to 10.77.0.0/24 lookup 100
      ip rule add pref 11 iif lo from 10.77.0.0/24 to 10.77.1.0/24 lookup 101
      ip rule add pref 12 oif rxv1 to 10.77.0.0/24 lookup 100
      ip rule add pref 13 oif rxv0 to 10.77.1.0/24 lookup 101
      ip rule add pref 100 lookup local
      ip rule del pref 0
    fi
    rdma link show
  } >>"$job/setup.log" 2>&1
  say "ready at guest uptime $(cut -d' ' -f1 /proc/uptime)s"
  ulimit -l unlimited
  # shellcheck disable=SC1091
  (
    set +u
    . "$job/env"
    export RDMASTOR_VM=1 RDMASTOR_VM_RXE_IP=10.77.0.1 RDMASTOR_VM_KERNEL_ROOT="$kroot" HOME="${HOME:-/root}"
    cd "$(cat "$job/cwd")" && exec bash "$job/cmd" </dev/null >"$job/stdout" 2>"$job/stderr"
  )
  echo "$?" >"$job/rc.tmp" && mv "$job/rc.tmp" "$job/rc"
  say "CMD ended at guest uptime $(cut -d' ' -f1 /proc/uptime)s"
  sync
  /bin/busybox poweroff -f
  exit 0  # not reached; if it were, the kernel's panic=-1 and QEMU's -no-reboot end the guest
fi

# ------------------------------------------------------------------------------------------------
# On the host.
# ------------------------------------------------------------------------------------------------
timeout_s="${RDMASTOR_VM_TIMEOUT:-600}"
mem="${RDMASTOR_VM_MEM:-3072}"
devices="${RDMASTOR_VM_DEVICES:-1}"
prepare_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout_s="${2:?--timeout needs seconds}"; shift 2 ;;
    --mem) mem="${2:?--mem needs MiB}"; shift 2 ;;
    --devices) devices="${2:?--devices needs 0, 1 or 2}"; shift 2 ;;
    --prepare) prepare_only=1; shift ;;
    -h|--help) sed -n '2,33p' "$self"; exit 0 ;;
    --) shift; break ;;
    -*) echo "rdma-vm: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$devices" in 0|1|2) ;; *) echo "rdma-vm: --devices is 0, 1 or 2" >&2; exit 2 ;; esac
if [ "$prepare_only" = 0 ] && [ $# -eq 0 ]; then
  echo "usage: scripts/rdma-vm.sh [--timeout S] [--mem MiB] [--devices 0|1|2] CMD [ARG...]" >&2
  exit 2
fi
die() { echo "rdma-vm: $*" >&2; exit 125; }
for tool in qemu-system-x86_64 busybox cpio depmod dpkg-deb apt-get; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool is missing: scripts/install-deps.sh installs qemu-system-x86 busybox-static kmod cpio"
done
[ "$(id -u)" = 0 ] || die "needs root (the guest runs CMD as root on the host's file system)"

cache="${RDMASTOR_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmastor-vm}"
mkdir -p "$cache/jobs" || die "cannot create $cache"

# The kernel: the package linux-image-amd64 depends on, unpacked once into $cache/<package>/root.
# Once there it is used as is (no registry needed); remove $cache to move to a newer one.
prepare_kernel() {
  local pkg dl
  if [ -s "$cache/current" ] && [ -f "$cache/$(cat "$cache/current")/ready" ]; then return 0; fi
  pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  if [ -z "$pkg" ]; then
    apt-get update -qq >&2 || true
    pkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  fi
  [ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 (a Debian 12 host with its registry is needed)"
  echo "rdma-vm: fetching $pkg (once; cached in $cache)" >&2
  dl="$(mktemp -d "$cache/dl.XXXXXX")"
  (cd "$dl" && apt-get download -q "$pkg" >&2 2>/dev/null) || { rm -rf "$dl"; die "apt-get download $pkg failed"; }
  rm -rf "${cache:?}/$pkg"
  mkdir -p "$cache/$pkg/root"
  dpkg-deb -x "$dl"/*.deb "$cache/$pkg/root" || { rm -rf "$dl"; die "dpkg-deb -x $pkg failed"; }
  rm -rf "$dl"
  local ver
  ver="$(ls "$cache/$pkg/root/lib/modules")"
  depmod -b "$cache/$pkg/root" "$ver" || die "depmod for $ver failed"
  touch "$cache/$pkg/ready"
  echo "$pkg" >"$cache/current"
}

# The initramfs: static busybox, the modules that mount the host's root over virtio 9p and the
# RDMA stack's (in the order modules.dep gives), and an /init that mounts it and hands over to --guest-init.
prepare_initramfs() {
  local kroot="$1" ver="$2" out="$3" dir m dep
  [ -s "$out" ] && return 0
  dir="$(mktemp -d "$cache/initrd.XXXXXX")"
  mkdir -p "$dir"/{bin,dev,proc,sys,host,mod}
  cp "$(command -v busybox)" "$dir/bin/busybox"
  local order=() seen=" "
  add_module() {  # add_module NAME: its dependencies first
    local path line deps d
    path="$(awk -F: -v n="/$1.ko" 'index($1, n) && substr($1, length($1) - length(n) + 1) == n {print $1; exit}' \
      "$kroot/lib/modules/$ver/modules.dep")"
    [ -n "$path" ] || die "module $1 not in $kroot"
    case "$seen" in *" $path "*) return ;; esac
    line="$(grep "^$path:" "$kroot/lib/modules/$ver/modules.dep")"
    deps="${line#*:}"
    local rev=()
    for d in $deps; do rev=("$d" "${rev[@]}"); done
    for d in "${rev[@]}"; do
      d="${d##*/}"
      add_module "${d%.ko}"
    done
    seen="$seen$path "
    order+=("$path")
  }
  # The 9p root, and the RDMA stack loaded from RAM (from 9p under TCG it takes tens of seconds).
  for m in virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe rdma_ucm dummy veth; do add_module "$m"; done
  local list=""
  for dep in "${order[@]}"; do
    cp "$kroot/lib/modules/$ver/$dep" "$dir/mod/"
    list="$list ${dep##*/}"
  done
  cat >"$dir/init" <<EOF
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
for m in$list; do /bin/busybox insmod /mod/\$m || echo "rdma-vm(initramfs): insmod \$m failed"; done
job=""
cache=mmap
for a in \$(/bin/busybox cat /proc/cmdline); do
  case "\$a" in
    rdmavm.job=*) job="\${a#rdmavm.job=}" ;;
    rdmavm.cache=*) cache="\${a#rdmavm.cache=}" ;;
  esac
done
if /bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=\$cache hostroot /host; then
  echo "rdma-vm(initramfs): host root mounted, switching to it"
  /bin/busybox umount /proc /sys /dev
  exec /bin/busybox switch_root /host /bin/bash "\$(/bin/busybox cat /host/\$job/script)" --guest-init "/\$job"
fi
echo "rdma-vm(initramfs): mounting the host root over 9p failed"
/bin/busybox poweroff -f
EOF
  chmod +x "$dir/init"
  rm -f "${out%/*}"/initramfs-*.gz  # older ones
  (cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" && mv "$out.tmp" "$out"
  rm -rf "$dir"
}

(
  flock 9
  prepare_kernel
) 9>"$cache/.lock" || exit 125
pkg="$(cat "$cache/current")"
kroot="$cache/$pkg/root"
ver="$(ls "$kroot/lib/modules")"
# Named after the code that builds it, so a change to that code builds a new one.
initrd="$cache/$pkg/initramfs-$(sed -n '/^prepare_initramfs() {/,/^}/p' "$self" | md5sum | cut -c1-12).gz"
( flock 9; prepare_initramfs "$kroot" "$ver" "$initrd" ) 9>"$cache/.lock" || exit 125
[ -s "$initrd" ] || die "no initramfs at $initrd"
if [ "$prepare_only" = 1 ]; then
  echo "rdma-vm: kernel $ver and initramfs ready in $cache/$pkg"
  exit 0
fi

job="$(mktemp -d "$cache/jobs/job.XXXXXX")"
qemu_pid=""
tails=()
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
  [ -n "$qemu_pid" ] && kill -9 "$qemu_pid" 2>/dev/null
  for t in "${tails[@]}"; do kill "$t" 2>/dev/null; done
  [ "${RDMASTOR_VM_KEEP:-0}" = 1 ] || rm -rf "$job"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "$kroot" >"$job/kernel_root"
echo "$devices" >"$job/devices"
echo "$self" >"$job/script"
pwd >"$job/cwd"
# The caller's exported environment (minus the shell's own bookkeeping), then the command.
export -p | grep -vE '^declare -x (BASH_[A-Z_]*|SHLVL|PWD|OLDPWD|_|TERM|SSH_[A-Z_]*|DISPLAY)=' >"$job/env"
{
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"$job/cmd"
: >"$job/stdout"
: >"$job/stderr"
: >"$job/setup.log"

append="console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check rdmavm.job=${job#/} rdmavm.cache=${RDMASTOR_VM_9P_CACHE:-loose}"
# RDMASTOR_VM_DEBUG=1: the kernel's messages and the guest setup's trace on the console log.
[ "${RDMASTOR_VM_DEBUG:-0}" = 1 ] && append="${append/quiet loglevel=3/} RDMASTOR_VM_DEBUG=1"
# 9p cache=loose (RDMASTOR_VM_9P_CACHE): the guest caches what it reads from the host; importing
# boto3 and pytest took 85 s instead of 168 s with cache=mmap (host under load). The host does not
# change the guest's files while it runs; the guest's writes reach the host by writeback, and all
# of them by the `sync` before poweroff.
start_ms=$(($(date +%s%N) / 1000000))
# The guest: TCG (KVM did not boot these guests), 2 vCPUs, no network device at all; the host's
# root over virtio 9p, read-write, ownership passed through. The console goes to a log file.
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
  -accel tcg -cpu max -smp 2 -m "$mem" -nic none -no-reboot \
  -display none -monitor none -serial "file:$job/console.log" \
  -kernel "$kroot/boot/vmlinuz-$ver" -initrd "$initrd" \
  -append "$append" \
  -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap" &
qemu_pid=$!
tail -n +1 -F --pid="$qemu_pid" "$job/stdout" 2>/dev/null &
tails+=($!)
tail -n +1 -F --pid="$qemu_pid" "$job/stderr" >&2 2>/dev/null &
tails+=($!)
wait "$qemu_pid"
qrc=$?
qemu_pid=""
for t in "${tails[@]}"; do wait "$t" 2>/dev/null; done
tails=()
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
elapsed="$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))"
if [ -f "$job/rc" ]; then
  rc="$(cat "$job/rc")"
  [ "${RDMASTOR_VM_VERBOSE:-0}" = 1 ] && { cat "$job/setup.log" >&2; echo "rdma-vm: CMD exited $rc after ${elapsed}s in the guest" >&2; }
  exit "$rc"
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  echo "rdma-vm: timed out after ${timeout_s}s (RDMASTOR_VM_TIMEOUT / --timeout); guest setup and console:" >&2
  rc=124
else
  echo "rdma-vm: the guest ended (qemu status $qrc) without running CMD to its end; setup and console:" >&2
  rc=125
fi
cat "$job/setup.log" >&2
tail -n 40 "$job/console.log" >&2 2>/dev/null
exit "$rc"
