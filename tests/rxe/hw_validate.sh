#!/usr/bin/env bash
# ctest rxe.hw_validate, run inside scripts/rdma-vm.sh's guest (no RDMA device yet): the
# first-contact check must create its own Soft-RoCE device and end in GO, with every step that
# matters here GO (not merely "nothing to validate", which also exits 0).
#   tests/rxe/hw_validate.sh BUILD_DIR
set -uo pipefail
build="${1:?usage: hw_validate.sh BUILD_DIR}"
[ "${RDMASTOR_VM:-}" = 1 ] || { echo "hw_validate.sh: run it through scripts/rdma-vm.sh" >&2; exit 2; }
# The report stays on the host, beside ctest's own logs.
mkdir -p "$build/Testing"
report="$build/Testing/hw-report-rxe.txt"
# No device yet: a host meant to serve RDMA with none is NO-GO (exit 1), unless none is expected.
fail=0
scripts/hw-validate.sh --build "$build" --report /tmp/hw-nodev.txt >/tmp/hw-nodev.out 2>&1
nodev_rc=$?
if [ "$nodev_rc" != 1 ] || ! grep -qE '^rdma-device +NO-GO ' /tmp/hw-nodev.out; then
  echo "FAIL: without a device hw-validate.sh exited $nodev_rc, not 1 with rdma-device NO-GO:"
  cat /tmp/hw-nodev.out
  fail=1
fi
scripts/hw-validate.sh --no-device-ok --build "$build" --report /tmp/hw-nodev.txt \
  >/tmp/hw-nodev.out 2>&1 || { echo "FAIL: --no-device-ok without a device did not exit 0"; fail=1; }
scripts/hw-validate.sh --rxe --build "$build" --report "$report" 2>&1 | tee /tmp/hw-validate.out
rc=${PIPESTATUS[0]}
want() {  # want STEP: the step's verdict line says GO
  if ! grep -qE "^$1 +GO " /tmp/hw-validate.out; then
    echo "FAIL: step $1 is not GO"
    fail=1
  fi
}
want soft-roce
want facts
want rdma-check
want ctest-hw
want resources-released
grep -q '^verdict: GO' /tmp/hw-validate.out || { echo "FAIL: no 'verdict: GO' (exit $rc)"; fail=1; }
[ "$rc" = 0 ] || { echo "FAIL: hw-validate.sh exited $rc"; fail=1; }
# The DC tests must skip on rxe, naming why; the RC loopback must have run and passed.
grep -q 'no DC-capable device (DC needs an mlx5 NIC; rxe_hw0 has RC only)' "$report" ||
  { echo "FAIL: the DC tests did not skip naming the missing DC"; fail=1; }
grep -qE '\[ +OK \] VerbsRc.LoopbackWriteThenRead' "$report" ||
  { echo "FAIL: VerbsRc.LoopbackWriteThenRead did not pass"; fail=1; }
[ "$fail" = 0 ] || echo "the whole report: $report"
exit "$fail"
