#!/bin/bash
# macOS CI (the `macos` job of .github/workflows/ci.yml, on GitHub's arm64 and Intel macOS runners,
# as the runner's own user, with sudo available but not used). Only what a Mac has: Go, hdiutil,
# diskutil. Steps:
#   1. go vet of every package that builds for macOS: all but the guest runner (internal/runner,
#      cmd/limactl-mcp-runner), which is Linux's: it is cross-built for linux and embedded.
#   2. the darwin builds: limactl-mcp for darwin/arm64 and darwin/amd64 as released (CGO_ENABLED=0,
#      -trimpath); the runner's own architecture's binary runs --version.
#   3. the unit tests of every package whose tests need no Linux sshd host. The real-sshd tests
#      (internal/testutil/sshd's fixture: Debian's sshd layout, runuser, and the Linux guest runner
#      run on that same host) and the Lima VM tests run on Linux only (.ci/run); the macos-lima job
#      runs a real VM from macOS.
#   4. the name rules of real APFS volumes: a case-insensitive APFS disk image (APFS's default, what
#      most Macs have) and a case-sensitive one, made with hdiutil and attached, and
#      internal/review's TestProbeNameRuleOnVolume run on each, and on the runner's own volume
#      ($RUNNER_TEMP or TMPDIR: case-insensitive APFS on GitHub's images) as the folding kind.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(uname -s)" = Darwin ] || { echo "ci-macos.sh: runs on macOS (this is $(uname -s))" >&2; exit 1; }
M=$(go list -m)
export CGO_ENABLED=0

t0=$SECONDS
phase() { echo "==> [$((SECONDS - t0)) s] $*"; }

# Every package of the module but the guest runner's.
host_pkgs=()
while IFS= read -r p; do
  case "$p" in
    "$M/internal/runner" | "$M/cmd/limactl-mcp-runner") ;;
    *) host_pkgs+=("$p") ;;
  esac
done < <(go list ./...)

phase "go vet (${#host_pkgs[@]} packages, darwin/$(go env GOARCH))"
go vet "${host_pkgs[@]}"

phase "darwin builds"
out=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lmcp-build.XXXXXX")
for arch in arm64 amd64; do
  GOOS=darwin GOARCH=$arch go build -trimpath -o "$out/limactl-mcp-$arch" ./cmd/limactl-mcp
  file "$out/limactl-mcp-$arch"
done
native=$out/limactl-mcp-$(go env GOARCH)
"$native" --version
"$native" --version | head -n 1 | grep -q '^limactl-mcp version .*(github.com/limactl-mcp/limactl-mcp' ||
  { echo "$native --version does not say it is this limactl-mcp" >&2; exit 1; }

# The packages whose tests (and the packages those import) need none of the Linux fixtures: the
# real sshd, tmux's TUI driver, the Lima VM kit. Not run here either: internal/testutil/sshd's
# own tests (the fixture's), and internal/netpolicy's (the guest's enforcement, Linux's; the host
# links only its policy vocabulary, tested on Linux).
phase "unit tests"
unit=()
while IFS= read -r p; do
  case "$p" in "$M/internal/testutil/sshd" | "$M/internal/netpolicy") continue ;; esac
  unit+=("$p")
done < <(go list -test -f '{{.ImportPath}}|{{join .Deps " "}}' "${host_pkgs[@]}" | awk -F'|' -v M="$M" '
  $1 ~ / \[.*\.test\]$/ {
    split($1, a, " "); p = a[1]; sub(/_test$/, "", p)
    if ($2 ~ ("(^| )" M "/internal/testutil/(sshd|tmuxtest|limavm)( |$)")) bad[p] = 1; else ok[p] = 1
  }
  END { for (p in ok) if (!(p in bad)) print p }' | sort)
[ ${#unit[@]} -gt 0 ] || { echo "no unit-test packages found" >&2; exit 1; }
printf '    %s\n' "${unit[@]}"
go test -count=1 "${unit[@]}"

phase "name rules on real APFS volumes"
images=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lmcp-apfs.XXXXXX")
mounts=()
detach_all() {
  local m
  for m in ${mounts[@]+"${mounts[@]}"}; do hdiutil detach -force "$m" >/dev/null 2>&1 || true; done
}
trap detach_all EXIT
attach() { # attach NAME FS: make an APFS image of that kind, attach it, print its mount point
  local name=$1 fs=$2
  hdiutil create -quiet -size 64m -fs "$fs" -volname "$name" -type UDIF "$images/$name.dmg"
  mkdir -p "$images/$name"
  hdiutil attach -quiet -nobrowse -mountpoint "$images/$name" "$images/$name.dmg"
  mounts+=("$images/$name")
  diskutil info "$images/$name" | grep -E 'File System Personality|Name \(User Visible\)' || true
}
attach folding APFS
attach sensitive "Case-sensitive APFS"
own=${RUNNER_TEMP:-${TMPDIR:-/tmp}}
diskutil info "$(df "$own" | awk 'NR==2 {print $1}')" | grep -E 'File System Personality|Name \(User Visible\)' || true
run_volume_test() { # run_volume_test FOLDING_DIR SENSITIVE_DIR: the test must run both, not skip
  local log
  log=$(mktemp "$images/test.XXXXXX")
  LIMACTL_MCP_TEST_VOLUME_FOLDING=$1 LIMACTL_MCP_TEST_VOLUME_SENSITIVE=$2 \
    go test -count=1 -v -run '^TestProbeNameRuleOnVolume$' ./internal/review 2>&1 | tee "$log"
  for v in LIMACTL_MCP_TEST_VOLUME_FOLDING LIMACTL_MCP_TEST_VOLUME_SENSITIVE; do
    grep -q -- "--- PASS: TestProbeNameRuleOnVolume/$v " "$log" ||
      { echo "TestProbeNameRuleOnVolume/$v did not pass (skipped or failed)" >&2; return 1; }
  done
}
run_volume_test "$images/folding" "$images/sensitive"
run_volume_test "$own" "$images/sensitive"
echo "ok: vet, darwin builds, ${#unit[@]} unit-test packages, APFS name rules ($((SECONDS - t0)) s)"
