#!/bin/bash
# macOS smoke test with a real Lima VM (the `macos-lima` job of .github/workflows/ci.yml; needs a
# Mac that can start a VM: on GitHub, an Intel runner; see the job's comment). As the runner's own
# user. Steps:
#   1. Lima $LIMA_VERSION (the version the Linux e2e kit builds) from its GitHub release archive,
#      checked against the release's SHA256SUMS, unpacked into a temporary prefix, with its bundled
#      limactl-mcp in prefix/libexec/lima; this limactl-mcp built and put on PATH before it.
#   2. `limactl mcp --version`: this plugin, not Lima's bundled one, is what `limactl mcp` runs.
#   3. A VM without host mounts (Lima's default template, vz; --cpus 1 --memory 1, as Lima's own CI
#      does for vz on GitHub's runners).
#   4. In a project under the runner's home (/Users/runner/..., the APFS volume, case-insensitive):
#      `limactl mcp shell --yes` runs commands in the VM on the staged copy (at the same path) and
#      applies what they changed: a new file comes back; a rename that only changes case
#      (notes.txt -> NOTES.txt) is applied as one rename on the case-insensitive volume.
# On failure, the tail of the instance's logs. The VM is deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(uname -s)" = Darwin ] || { echo "macos-lima-smoke.sh: runs on macOS (this is $(uname -s))" >&2; exit 1; }
LIMA_VERSION=${LIMA_VERSION:-v2.2.0}
INSTANCE=${INSTANCE:-lmcp-smoke}
export CGO_ENABLED=0

t0=$SECONDS
phase() { echo "==> [$((SECONDS - t0)) s] $*"; }

work=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lmcp-smoke.XXXXXX")
prefix=$work/lima
mkdir -p "$prefix" "$work/bin"

phase "Lima $LIMA_VERSION"
v=${LIMA_VERSION#v}
asset=lima-$v-Darwin-$(uname -m).tar.gz
base=https://github.com/lima-vm/lima/releases/download/$LIMA_VERSION
curl -fsSL --retry 3 -o "$work/$asset" "$base/$asset"
curl -fsSL --retry 3 -o "$work/SHA256SUMS" "$base/SHA256SUMS"
(cd "$work" && grep -E "[[:space:]]\*?$asset\$" SHA256SUMS | shasum -a 256 -c -)
tar -C "$prefix" -xzf "$work/$asset"
[ -x "$prefix/libexec/lima/limactl-mcp" ] && echo "Lima's bundled plugin: $prefix/libexec/lima/limactl-mcp"

phase "this limactl-mcp"
go build -trimpath -o "$work/bin/limactl-mcp" ./cmd/limactl-mcp
export PATH=$work/bin:$prefix/bin:$PATH
limactl --version
got=$(limactl mcp --version)
echo "$got"
echo "$got" | head -n 1 | grep -q '(github.com/limactl-mcp/limactl-mcp' ||
  { echo "limactl mcp runs another limactl-mcp than this one" >&2; exit 1; }

logs() {
  local d=${LIMA_HOME:-$HOME/.lima}/$INSTANCE f
  for f in ha.stderr.log serial.log serialv.log; do
    [ -f "$d/$f" ] && { echo "---- $d/$f (tail)"; tail -n 60 "$d/$f"; }
  done
  return 0
}
cleanup() {
  local rc=$?
  [ "$rc" -eq 0 ] || logs
  limactl delete --force "$INSTANCE" >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

phase "limactl start --mount-none (vz)"
limactl start --tty=false --name="$INSTANCE" --mount-none --cpus=1 --memory=1 template:default
limactl list

phase "limactl mcp shell --yes: a new file, a case-only rename"
proj=$HOME/lmcp-smoke-$$
rm -rf "$proj"; mkdir -p "$proj"
echo "from the host" >"$proj/notes.txt"
cd "$proj"
out=$(limactl mcp shell --yes "$INSTANCE" -- sh -c 'cat notes.txt; pwd; uname -m; echo "from the guest" > made-in-vm.txt')
echo "$out"
echo "$out" | grep -qx "from the host" || { echo "the guest did not see the staged notes.txt" >&2; exit 1; }
echo "$out" | grep -qx "$proj" || { echo "the staged copy is not at the project's own path $proj" >&2; exit 1; }
[ "$(cat made-in-vm.txt)" = "from the guest" ] || { echo "made-in-vm.txt did not come back to the host" >&2; exit 1; }

limactl mcp shell --yes "$INSTANCE" -- mv notes.txt NOTES.txt
names=$(ls)
echo "$names"
echo "$names" | grep -qx NOTES.txt && ! echo "$names" | grep -qx notes.txt ||
  { echo "the case-only rename notes.txt -> NOTES.txt was not applied as a rename" >&2; exit 1; }
[ "$(cat NOTES.txt)" = "from the host" ] || { echo "NOTES.txt lost its content" >&2; exit 1; }
limactl mcp status "$INSTANCE"
limactl mcp discard --yes "$INSTANCE"
cd / && rm -rf "$proj"
echo "ok: Lima $LIMA_VERSION VM, this limactl-mcp's shell and review on APFS ($((SECONDS - t0)) s)"
