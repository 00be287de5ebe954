#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan+UBSan) and runs them:
#   scripts/fuzz.sh [TARGET|all] [SECONDS]     (default: all, 60 s each)
# TARGET is one of: sigv4 aws_chunked xml range rdma_token ellipsis peer_wire metrics_jwt.
# Each run starts from the committed seeds (fuzz/corpus/TARGET) plus what earlier runs found
# (build-fuzz/corpus/TARGET, not committed). A crash leaves crash-* under build-fuzz/artifacts/
# and fails the script; reproduce with: build-fuzz/fuzz_TARGET build-fuzz/artifacts/crash-...
# FUZZ_BUILD_DIR overrides build-fuzz; FUZZ_JOBS the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${1:-all}"
seconds="${2:-60}"
dir="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
all=(sigv4 aws_chunked xml range rdma_token ellipsis peer_wire metrics_jwt)
if [ "$target" = all ]; then
  targets=("${all[@]}")
else
  case " ${all[*]} " in *" $target "*) ;; *) echo "unknown target '$target' (${all[*]})" >&2; exit 2 ;; esac
  targets=("$target")
fi
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/install-deps.sh)" >&2; exit 2; }
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S fuzz -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
ninja -C "$dir" -j"${FUZZ_JOBS:-$(nproc)}" $(printf 'fuzz_%s ' "${targets[@]}")
mkdir -p "$dir/artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t"
  echo "=== fuzz_$t for ${seconds}s"
  log="$dir/fuzz_$t.log"
  # -rss_limit_mb: a parser that blows up memory is a finding too.
  if ! "$dir/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
      "$dir/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz_$t FAILED (log: $log)"; tail -40 "$log"; status=1
    continue
  fi
  # The last status line: executions, coverage, corpus; and the rate.
  grep -E '^#[0-9]+' "$log" | tail -1
  grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' "$log" | tr '\n' ' '; echo
done
exit $status
