#!/usr/bin/env bash
# Builds rdmastor and s3bench, starts rdmastor and nginx on free loopback ports (temporary data
# and config directories), runs s3bench against both plus the local-file reference, prints the
# table, and stops everything on exit. See bench/README.md.
#
#   bench/run.sh                          # default run (< 3 minutes on 2 cores)
#   bench/run.sh --sizes 1MiB --concurrency 4 --duration-s 1     # extra args go to s3bench
#
# Environment: BUILD_DIR (default build, as scripts/build.sh standard), SKIP_BUILD=1 to use what
# is built, NGINX (default /usr/sbin/nginx; NGINX=none skips the nginx reference),
# BENCH_TMP (parent of the temporary directory, default $TMPDIR or /tmp), KEEP_TMP=1 to keep it,
# DRIVES (default 1: the plain layout; N > 1: N drive directories, erasure coded).
# Encryption: bench/run.sh --sse none,s3,c --sizes 1MiB,64MiB (the server gets a random master key
# and RDMASTOR_SSE_C_ALLOW_HTTP=on).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

build_dir="${BUILD_DIR:-build}"
case "$build_dir" in /*) ;; *) build_dir="$root/$build_dir" ;; esac
nginx_bin="${NGINX:-/usr/sbin/nginx}"
access_key=bench
secret_key=benchsecret

log() { printf 'run.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ "$build_dir" = "$root/build" ]; then
    log "building (scripts/build.sh standard s3bench rdmastor)"
    scripts/build.sh standard s3bench rdmastor >&2
  else
    log "building in $build_dir"
    ninja -C "$build_dir" s3bench rdmastor >&2
  fi
fi
server_bin="$build_dir/src/rdmastor"
bench_bin="$build_dir/bench/s3bench"
[ -x "$server_bin" ] || die "$server_bin not built"
[ -x "$bench_bin" ] || die "$bench_bin not built"

tmp="$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/rdmastor-bench.XXXXXX")"
server_pid=""
nginx_pid=""
stop_pid() {  # pid, signal, name: signal it, wait up to 10 s, then SIGKILL
  local pid="$1" sig="$2" name="$3" i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "warning: $name (pid $pid) did not exit within 10 s of SIG$sig; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$server_pid" TERM rdmastor
  stop_pid "$nginx_pid" QUIT nginx
  if [ "${KEEP_TMP:-0}" = 1 ] || [ "$rc" -ne 0 ]; then
    log "logs kept in $tmp (server.log, nginx/error.log)"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A free loopback TCP port: a random one nobody listens on (a race with another process is
# possible; the start-up check below catches it).
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Htln "sport = :$p" 2>/dev/null)" ] && [ "$p" != "${server_port:-}" ]; then
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

wait_http() {  # url, pid, name: waits until the URL answers (any HTTP status) or the pid died
  local url="$1" pid="$2" name="$3" i
  for i in $(seq 1 100); do
    if curl -s -o /dev/null --max-time 1 "$url"; then return 0; fi
    kill -0 "$pid" 2>/dev/null || die "$name exited during start-up"
    sleep 0.1
  done
  die "$name did not answer $url within 10 s"
}

# --- rdmastor ---
mkdir -p "$tmp/data" "$tmp/ref"
chmod 755 "$tmp" "$tmp/ref"  # nginx workers (user nobody when started as root) read ref files
drives="${DRIVES:-1}"
case "$drives" in '' | *[!0-9]*) die "DRIVES must be a number" ;; esac
drive_args=("$tmp/data")
if [ "$drives" -gt 1 ]; then
  for i in $(seq 1 "$drives"); do mkdir -p "$tmp/data/d$i"; done
  drive_args=("$tmp/data/d{1...$drives}")  # the server expands MinIO's ellipsis
fi
server_port="$(free_port)"
log "starting rdmastor on 127.0.0.1:$server_port (data $tmp/data, $drives drive(s))"
# A bench master key (SSE-S3) and SSE-C over loopback HTTP, so that `--sse none,s3,c` can run.
MINIO_ROOT_USER="$access_key" MINIO_ROOT_PASSWORD="$secret_key" MINIO_PROMETHEUS_AUTH_TYPE=public \
  MINIO_KMS_SECRET_KEY="${MINIO_KMS_SECRET_KEY:-bench-key:$(head -c 32 /dev/urandom | base64)}" \
  RDMASTOR_SSE_C_ALLOW_HTTP=on \
  "$server_bin" server --address "127.0.0.1:$server_port" "${drive_args[@]}" >"$tmp/server.log" 2>&1 &
server_pid=$!
wait_http "http://127.0.0.1:$server_port/minio/health/live" "$server_pid" rdmastor

# --- nginx (reference: a static file server using sendfile) ---
nginx_args=()
if [ "$nginx_bin" != none ]; then
  [ -x "$nginx_bin" ] || die "$nginx_bin not found (install nginx-light, or NGINX=none)"
  nginx_port="$(free_port)"
  mkdir -p "$tmp/nginx"
  nginx_v="$("$nginx_bin" -V 2>&1)"
  temp_paths="client_body_temp_path $tmp/nginx/body;"
  for m in proxy fastcgi uwsgi scgi; do
    case "$nginx_v" in *"--without-http_${m}_module"*) ;;
      *) temp_paths+=$'\n'"  ${m}_temp_path $tmp/nginx/$m;" ;;
    esac
  done
  user_line=""
  [ "$(id -u)" = 0 ] && user_line="user nobody nogroup;"
  cat >"$tmp/nginx/nginx.conf" <<EOF
$user_line
worker_processes 2;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  $temp_paths
  server {
    listen 127.0.0.1:$nginx_port;
    root $tmp/ref;
    location / { }
  }
}
EOF
  log "starting nginx on 127.0.0.1:$nginx_port (worker_processes 2, sendfile on, root $tmp/ref)"
  "$nginx_bin" -e "$tmp/nginx/error.log" -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" \
    >"$tmp/nginx/stdout.log" 2>&1 &
  nginx_pid=$!
  wait_http "http://127.0.0.1:$nginx_port/" "$nginx_pid" nginx
  nginx_args=(--nginx-url "http://127.0.0.1:$nginx_port")
fi

# --- the benchmark ---
echo "rdmastor $("$server_bin" --version 2>/dev/null | head -1 || true)"
echo "reference: pread of a local file (page cache) into 1 MiB buffers with the same threads"
if [ "$nginx_bin" != none ]; then
  echo "reference: $("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //'), static files," \
    "sendfile on, worker_processes 2, access_log off, keep-alive, over 127.0.0.1"
fi
echo "machine: $(nproc) CPUs, $(uname -sr); rdmastor on $drives drive(s)"
rc=0
# Server CPU per GiB always; storage syncs per PUT when this s3bench reads them (older builds do
# not: the same script then measures a baseline binary).
extra=(--server-pids "$server_pid")
"$bench_bin" --help 2>/dev/null | grep -q -- '--syncs' && extra+=(--syncs)
"$bench_bin" --endpoint "http://127.0.0.1:$server_port" \
  --access-key "$access_key" --secret-key "$secret_key" \
  --ref-file-dir "$tmp/ref" "${nginx_args[@]}" "${extra[@]}" "$@" || rc=$?
if ! kill -0 "$server_pid" 2>/dev/null; then
  log "rdmastor died during the run; last lines of its log:"
  tail -20 "$tmp/server.log" >&2 || true
  rc=1
fi
exit "$rc"
