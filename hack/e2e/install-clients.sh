#!/bin/bash
# Install the real agent clients that `limactl mcp configure` writes for, pinned, for the
# end-to-end test test/e2e/clients_test.go: each client's own MCP listing command
# (`claude mcp list`, `gemini mcp list`, `codex mcp list`, `opencode mcp list`) must see and,
# where it checks, connect to our server in the real Lima VM, offline, with no API key.
#
#   hack/e2e/install-clients.sh [DIR]     (default DIR: /var/cache/limactl-mcp-clients)
#
# Installs with npm into DIR/node_modules (never globally, one npm install for all four); each
# client is then DIR/node_modules/.bin/NAME and runs offline. Idempotent: does nothing when DIR
# already has the pinned versions. The tests run the clients as an unprivileged user, so DIR is
# made readable by everyone. clients_test.go reads the *_VERSION lines below to check what is
# installed: bump a version here, then run this script again.
#
# Scripts: --ignore-scripts keeps npm from building Gemini CLI's optional native modules
# (node-pty, keytar: not needed to list servers) with node-gyp; the two postinstall scripts that
# matter are run by hand afterwards: Claude Code's and OpenCode's link their platform package's
# native binary (an optional dependency npm already downloaded) into place; without them `claude`
# and `opencode` are stubs that print an error. Neither script goes to the network.
# Claude Code declares node >=22 but its CLI is that native binary: node 20 only runs the
# postinstall (hence --engine-strict=false).
set -euo pipefail

CLAUDE_VERSION=2.1.332
GEMINI_VERSION=0.61.0
CODEX_VERSION=0.169.0
OPENCODE_VERSION=1.18.33
DIR=${1:-/var/cache/limactl-mcp-clients}

# package name, pinned version, executable name
clients=(
  "@anthropic-ai/claude-code $CLAUDE_VERSION claude"
  "@google/gemini-cli $GEMINI_VERSION gemini"
  "@openai/codex $CODEX_VERSION codex"
  "opencode-ai $OPENCODE_VERSION opencode"
)

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-clients.sh: $tool is not installed (Debian: apt-get install nodejs npm, or NodeSource's nodejs)" >&2
    exit 1
  fi
done

# The clients' --version runs with a throwaway HOME, so that nothing is written to root's.
scratch_home=$(mktemp -d)
trap 'rm -rf "$scratch_home"' EXIT
version_of() {
  HOME=$scratch_home timeout 60 "$DIR/node_modules/.bin/$1" --version 2>&1 </dev/null
}

installed_version() {
  local pj="$DIR/node_modules/$1/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$pj" 2>/dev/null || true
}

# A client counts as installed when its package has the pinned version and its executable runs
# (`--version` exits 0: a stub left by a skipped postinstall exits 1).
client_ok() {
  local pkg=$1 version=$2 bin=$3
  [ "$(installed_version "$pkg")" = "$version" ] || return 1
  [ -x "$DIR/node_modules/.bin/$bin" ] || return 1
  version_of "$bin" >/dev/null
}

all_ok() {
  local c
  for c in "${clients[@]}"; do
    # shellcheck disable=SC2086
    client_ok $c || return 1
  done
}

if all_ok; then
  echo "install-clients.sh: $(for c in "${clients[@]}"; do read -r pkg version _ <<<"$c"; printf '%s@%s ' "$pkg" "$version"; done)already installed in $DIR"
  exit 0
fi

specs=()
deps=""
for c in "${clients[@]}"; do
  read -r pkg version _ <<<"$c"
  specs+=("$pkg@$version")
  deps+="${deps:+,}"$'\n'"    \"$pkg\": \"$version\""
done

echo "install-clients.sh: installing ${specs[*]} into $DIR (node $(node --version), npm $(npm --version 2>/dev/null))"
mkdir -p "$DIR"
# A package.json of our own, so that npm treats DIR as the project root (and does not walk up).
cat >"$DIR/package.json" <<EOF
{
  "name": "limactl-mcp-clients",
  "private": true,
  "description": "Agent clients for limactl-mcp's end-to-end tests (hack/e2e/install-clients.sh)",
  "dependencies": {$deps
  }
}
EOF
npm install --prefix "$DIR" --no-audit --no-fund --no-update-notifier --ignore-scripts \
  --engine-strict=false --loglevel=error --save-exact "${specs[@]}"
(cd "$DIR/node_modules/@anthropic-ai/claude-code" && node install.cjs)
(cd "$DIR/node_modules/opencode-ai" && node ./postinstall.mjs)
chmod -R a+rX "$DIR"

for c in "${clients[@]}"; do
  read -r pkg version bin <<<"$c"
  if ! client_ok "$pkg" "$version" "$bin"; then
    echo "install-clients.sh: installation of $pkg@$version failed: found version '$(installed_version "$pkg")'; $DIR/node_modules/.bin/$bin --version:" >&2
    version_of "$bin" >&2 || true
    exit 1
  fi
  echo "install-clients.sh: $pkg@$version: $DIR/node_modules/.bin/$bin (--version: $(version_of "$bin" | tail -n 1))"
done
