#!/bin/bash
# Install the official MCP Inspector (@modelcontextprotocol/inspector), pinned, for the
# end-to-end test test/e2e/inspector_test.go, which runs its CLI mode against our server.
#
#   hack/e2e/install-inspector.sh [DIR]     (default DIR: /var/cache/limactl-mcp-inspector)
#
# Installs with npm into DIR/node_modules (never globally); the CLI is then
#   DIR/node_modules/.bin/mcp-inspector --cli ...
# and runs offline (no npx, no registry look-up). Idempotent: does nothing when DIR already has
# the pinned version. The end-to-end tests run it as an unprivileged user, so DIR must be readable
# by everyone (it is made so). The test reads INSPECTOR_VERSION below to check the installed
# version: bump it here, then run this script again.
#
# 2.12.0 declares node >=22.19 but its CLI mode works with the Debian/NodeSource node 20 of the
# project's machines (checked: tools/list and tools/call over stdio and HTTP), hence
# --engine-strict=false. Its postinstall script only installs a source checkout's client
# dependencies (a no-op under node_modules), hence --ignore-scripts.
set -euo pipefail

INSPECTOR_VERSION=2.12.0
PKG=@modelcontextprotocol/inspector
DIR=${1:-/var/cache/limactl-mcp-inspector}

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-inspector.sh: $tool is not installed (Debian: apt-get install nodejs npm, or NodeSource's nodejs)" >&2
    exit 1
  fi
done

installed_version() {
  local pj="$DIR/node_modules/$PKG/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$pj" 2>/dev/null || true
}

bin="$DIR/node_modules/.bin/mcp-inspector"
if [ "$(installed_version)" = "$INSPECTOR_VERSION" ] && [ -x "$bin" ]; then
  echo "install-inspector.sh: $PKG@$INSPECTOR_VERSION already installed in $DIR"
  exit 0
fi

echo "install-inspector.sh: installing $PKG@$INSPECTOR_VERSION into $DIR (node $(node --version), npm $(npm --version 2>/dev/null))"
mkdir -p "$DIR"
# A package.json of our own, so that npm treats DIR as the project root (and does not walk up).
cat >"$DIR/package.json" <<EOF
{
  "name": "limactl-mcp-inspector",
  "private": true,
  "description": "The MCP Inspector for limactl-mcp's end-to-end tests (hack/e2e/install-inspector.sh)",
  "dependencies": {
    "$PKG": "$INSPECTOR_VERSION"
  }
}
EOF
npm install --prefix "$DIR" --no-audit --no-fund --no-update-notifier --ignore-scripts \
  --engine-strict=false --loglevel=error --save-exact "$PKG@$INSPECTOR_VERSION"
chmod -R a+rX "$DIR"

got=$(installed_version)
if [ "$got" != "$INSPECTOR_VERSION" ] || [ ! -x "$bin" ]; then
  echo "install-inspector.sh: installation failed: found version '${got:-none}', $bin executable: $([ -x "$bin" ] && echo yes || echo no)" >&2
  exit 1
fi
# The CLI must start (offline: no network is needed from here on).
if ! v=$("$bin" --cli --version 2>&1); then
  echo "install-inspector.sh: $bin --cli --version failed:" >&2
  echo "$v" >&2
  exit 1
fi
echo "install-inspector.sh: installed $PKG@$INSPECTOR_VERSION in $DIR: $bin (--cli --version: $v)"
