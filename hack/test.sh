#!/bin/bash
# The one command that tests limactl-mcp on a fresh Debian 12 machine, as root (or a user with
# sudo): prepare the host for the end-to-end tests (QEMU, limactl v2.2.0, the guest image, an
# unprivileged user, sshd, tmux), install the MCP Inspector and the agent clients from npm,
# download modules, check the GitHub workflows with actionlint, then run every test, the e2e
# ones included (each e2e test binary boots its own real Lima VM under QEMU TCG). Each step is
# skipped quickly when already done, so a second run costs the tests alone.
#
#   hack/test.sh             everything (about an hour on a quiet 2-core machine, e2e included)
#   hack/test.sh --no-e2e    setup, then the tests without the VM (unit, real sshd, tmux)
#   hack/test.sh --release   everything, then `goreleaser check` and a release snapshot
#
# .ci/run is `hack/test.sh --release`. It prints the 30 slowest tests and each phase's time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

e2e=1 release=0
for a in "$@"; do
  case $a in
    --no-e2e) e2e=0 ;;
    --release) release=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "hack/test.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done

# A minimal CI image may have Go only in its default install location.
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin

phases=()
run_phase() {
  local name=$1; shift
  local t0=$SECONDS
  echo "==> [$name] $*"
  local rc=0
  "$@" || rc=$?
  local dt=$((SECONDS - t0))
  phases+=("$(printf '%-12s %5d s%s' "$name" "$dt" "$([ "$rc" -eq 0 ] || echo " (failed, exit $rc)")")")
  echo "<== [$name] $([ "$rc" -eq 0 ] && echo done || echo "FAILED (exit $rc)") in ${dt} s"
  return "$rc"
}
summary() {
  local rc=$?
  echo "==> timings:"
  if [ ${#phases[@]} -gt 0 ]; then printf '    %s\n' "${phases[@]}"; fi
  echo "    total        $(printf '%5d' "$SECONDS") s (exit $rc)"
}
trap summary EXIT

if [ "$(id -u)" -eq 0 ]; then
  run_phase setup hack/e2e/setup.sh
else
  run_phase setup sudo hack/e2e/setup.sh
fi
run_phase inspector hack/e2e/install-inspector.sh
run_phase clients hack/e2e/install-clients.sh
run_phase mod go mod download
run_phase workflows hack/actionlint-check.sh
# go test -json through hack/testreport: the same lines as go test without -v (results, the
# whole output of a failed test), then the slowest tests, so the log says where the time went.
# LIMACTL_MCP_TEST_JSON=FILE keeps every event (every test's log) in FILE.
go_test() {
  local report
  report=$(mktemp -d)/testreport
  go build -o "$report" ./hack/testreport || return
  go test -json "$@" | "$report" -top 30 ${LIMACTL_MCP_TEST_JSON:+-json "$LIMACTL_MCP_TEST_JSON"}
}
if [ "$e2e" -eq 1 ]; then
  # The VM's package runs last, after the others, on its own. Tried (2026-11-28): started first
  # (`./test/e2e/ ./...`: go test starts packages in the order given), beside the others, its
  # tests ran about twice as slow while the others ran (the emulated guest competes for the
  # two cores) and the others about three times as slow: on course for a longer run, not a
  # shorter one (stopped after 13 minutes).
  run_phase test go_test -tags e2e -timeout 75m -count=1 ./...
else
  run_phase test go_test -timeout 30m -count=1 ./...
fi
if [ "$release" -eq 1 ]; then
  run_phase release hack/goreleaser-check.sh
fi
