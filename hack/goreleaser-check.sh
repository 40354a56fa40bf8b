#!/bin/bash
# Validate .goreleaser.yaml and build a release snapshot, as CI does: installs GoReleaser
# $GORELEASER_VERSION and cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION (the SBOM tool .goreleaser.yaml
# runs; both through the Go module proxy, cached in $TOOLS_BIN), runs `goreleaser check`, then
# `goreleaser release --snapshot --clean --skip=publish,sign` (every build, archive, SBOM,
# checksum and the Homebrew cask, written to dist/, nothing published, nothing signed: keyless
# signing needs the release workflow's OIDC identity; needs no tag, token or network beyond the
# module proxy), and checks that the linux/amd64 binary reports the snapshot version, that every
# archive and SBOM is in checksums.txt (the file the release signs) with its right SHA-256, and
# that each SBOM is a CycloneDX document naming this module.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}
GORELEASER_VERSION=${GORELEASER_VERSION:-v2.15.1}
# Keep in step with CYCLONEDX_GOMOD_VERSION in .github/workflows/release.yml.
CYCLONEDX_GOMOD_VERSION=${CYCLONEDX_GOMOD_VERSION:-v1.10.0}
TOOLS_DIR=${TOOLS_DIR:-/var/cache/limactl-mcp-tools}
TOOLS_BIN=${TOOLS_BIN:-$TOOLS_DIR/bin}
goreleaser=$TOOLS_BIN/goreleaser

t0=$SECONDS
phase() { echo "==> [$((SECONDS - t0)) s] $*"; }

have_goreleaser() {
  [ -x "$goreleaser" ] &&
    "$GO" version -m "$goreleaser" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/goreleaser/goreleaser/v2[[:space:]]+$GORELEASER_VERSION[[:space:]]"
}

if ! have_goreleaser; then
  phase "installing GoReleaser $GORELEASER_VERSION into $TOOLS_BIN"
  mkdir -p "$TOOLS_BIN"
  # GoReleaser needs no cgo; a static binary keeps working if the C toolchain changes.
  if ! CGO_ENABLED=0 GOBIN=$TOOLS_BIN GOFLAGS=-buildvcs=false \
    "$GO" install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"; then
    # `go install ...@version` may need the proxy's version list, which some proxies refuse;
    # a throwaway module that pins the version needs only the endpoints that work.
    echo "go install failed; building from a module that pins $GORELEASER_VERSION" >&2
    build=$TOOLS_DIR/goreleaser-build
    mkdir -p "$build"
    cat >"$build/go.mod" <<EOM
module tools/goreleaserbuild

go 1.26

require github.com/goreleaser/goreleaser/v2 $GORELEASER_VERSION
EOM
    cat >"$build/tools.go" <<'EOM'
//go:build tools

package tools

import _ "github.com/goreleaser/goreleaser/v2"
EOM
    (cd "$build" && "$GO" mod tidy &&
      CGO_ENABLED=0 GOFLAGS=-buildvcs=false "$GO" build -o "$goreleaser" github.com/goreleaser/goreleaser/v2)
  fi
  have_goreleaser || { echo "installed $goreleaser is not GoReleaser $GORELEASER_VERSION" >&2; exit 1; }
fi

cdx=$TOOLS_BIN/cyclonedx-gomod
have_cdx() {
  [ -x "$cdx" ] &&
    "$GO" version -m "$cdx" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/CycloneDX/cyclonedx-gomod[[:space:]]+$CYCLONEDX_GOMOD_VERSION[[:space:]]"
}
if ! have_cdx; then
  phase "installing cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION into $TOOLS_BIN"
  mkdir -p "$TOOLS_BIN"
  CGO_ENABLED=0 GOBIN=$TOOLS_BIN GOFLAGS=-buildvcs=false \
    "$GO" install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
  have_cdx || { echo "installed $cdx is not cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION" >&2; exit 1; }
fi
# .goreleaser.yaml runs the SBOM tool by name.
export PATH=$TOOLS_BIN:$PATH

phase "goreleaser check"
"$goreleaser" check

phase "goreleaser release --snapshot --clean --skip=publish,sign"
"$goreleaser" release --snapshot --clean --skip=publish,sign

phase "verifying the snapshot"
# dist/metadata.json is one JSON object; its "version" is the snapshot version stamped in.
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
[ -n "$version" ] || { echo "no version in dist/metadata.json" >&2; exit 1; }
bin=dist/limactl-mcp_linux_amd64_v1/limactl-mcp
# The first line names the version stamped in, then says whose plugin this is; the second is
# the binary's path.
got=$("$bin" --version | head -n 1)
want="limactl-mcp version $version (github.com/limactl-mcp/limactl-mcp, which replaces Lima's bundled limactl-mcp)"
if [ "$got" != "$want" ]; then
  echo "$bin --version: got \"$got\", want \"$want\"" >&2
  exit 1
fi
for f in checksums.txt homebrew/Casks/limactl-mcp.rb \
  limactl-mcp_"$version"_{darwin,linux}_{amd64,arm64}.tar.gz; do
  [ -s "dist/$f" ] || { echo "dist/$f is missing" >&2; exit 1; }
done
tar -tzf "dist/limactl-mcp_${version}_darwin_arm64.tar.gz" | grep -qx limactl-mcp ||
  { echo "the darwin/arm64 archive has no limactl-mcp at its top" >&2; exit 1; }
# Signed-ready: checksums.txt, the one file the release signs, covers every archive and SBOM.
for os in darwin linux; do
  for arch in amd64 arm64; do
    for f in "limactl-mcp_${version}_${os}_${arch}.tar.gz" "limactl-mcp_${version}_${os}_${arch}.sbom.cdx.json"; do
      [ -s "dist/$f" ] || { echo "dist/$f is missing" >&2; exit 1; }
      sum=$(sha256sum "dist/$f" | cut -d' ' -f1)
      grep -qxF "$sum  $f" dist/checksums.txt ||
        { echo "dist/checksums.txt does not list $f with its SHA-256 $sum" >&2; exit 1; }
    done
    sbom=dist/limactl-mcp_${version}_${os}_${arch}.sbom.cdx.json
    grep -q '"bomFormat": *"CycloneDX"' "$sbom" && grep -q 'github.com/limactl-mcp/limactl-mcp' "$sbom" ||
      { echo "$sbom is not a CycloneDX SBOM of github.com/limactl-mcp/limactl-mcp" >&2; exit 1; }
  done
done
echo "ok: $got; archives, SBOMs, checksums and dist/homebrew/Casks/limactl-mcp.rb in dist/ ($((SECONDS - t0)) s)"
