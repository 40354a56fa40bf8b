#!/bin/bash
# Validate .github/workflows with actionlint, as CI does: installs actionlint $ACTIONLINT_VERSION
# (a Go tool, through the Go module proxy, cached in $TOOLS_BIN) and runs it on every workflow
# (syntax, expressions, job and step references, runner labels, `permissions:` keys, the shell of
# each `run:` with shellcheck when one is on PATH). Then checks what actionlint does not: every
# `uses:` of another repository is pinned by a full commit SHA with its version in a comment, and
# every workflow and job says its `permissions:`.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}
ACTIONLINT_VERSION=${ACTIONLINT_VERSION:-v1.7.12}
TOOLS_DIR=${TOOLS_DIR:-/var/cache/limactl-mcp-tools}
TOOLS_BIN=${TOOLS_BIN:-$TOOLS_DIR/bin}
actionlint=$TOOLS_BIN/actionlint

have_actionlint() {
  [ -x "$actionlint" ] &&
    "$GO" version -m "$actionlint" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/rhysd/actionlint[[:space:]]+$ACTIONLINT_VERSION[[:space:]]"
}
if ! have_actionlint; then
  echo "==> installing actionlint $ACTIONLINT_VERSION into $TOOLS_BIN"
  mkdir -p "$TOOLS_BIN"
  CGO_ENABLED=0 GOBIN=$TOOLS_BIN GOFLAGS=-buildvcs=false \
    "$GO" install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  have_actionlint || { echo "installed $actionlint is not actionlint $ACTIONLINT_VERSION" >&2; exit 1; }
fi

shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#workflows[@]} -gt 0 ] || { echo "no workflows in .github/workflows" >&2; exit 1; }

echo "==> actionlint $ACTIONLINT_VERSION: ${workflows[*]}"
"$actionlint" -no-color "${workflows[@]}"

bad=0
# A step or job that uses another repository's action or workflow: `uses: owner/repo[/path]@REF`.
# REF must be 40 hex digits (a tag or branch can be moved) followed by `# vX...`, the version it
# is, for the reader and for Dependabot. Local actions (./...) and docker:// images are exempt
# (there are none today).
while IFS= read -r line; do
  file=${line%%:*}; rest=${line#*:}; lineno=${rest%%:*}; text=${rest#*:}
  if ! [[ $text =~ uses:[[:space:]]*[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}[[:space:]]+#[[:space:]]*v[0-9] ]]; then
    echo "$file:$lineno: not pinned by a full commit SHA with '# vX.Y.Z' after it:$text" >&2
    bad=1
  fi
done < <(grep -nE '^[[:space:]-]*uses:[[:space:]]*[^.[:space:]]' "${workflows[@]}" /dev/null | grep -vE 'uses:[[:space:]]*(docker://|\./)')
for f in "${workflows[@]}"; do
  # The workflow's default: permissions at the top level (jobs widen it only where they need to).
  grep -qE '^permissions:' "$f" || { echo "$f: no top-level permissions: (the token would get the repository's default)" >&2; bad=1; }
  # No pull_request_target: it runs with secrets on a fork's code.
  if grep -qE '^[[:space:]]*pull_request_target:' "$f"; then
    echo "$f: pull_request_target runs with the repository's secrets on a fork's pull request" >&2; bad=1
  fi
done
[ "$bad" -eq 0 ] || exit 1
echo "ok: ${#workflows[@]} workflows pass actionlint $ACTIONLINT_VERSION; every action pinned by commit SHA"
