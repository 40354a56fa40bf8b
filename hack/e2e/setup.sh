#!/bin/bash
# As root: everything the end-to-end tests (go test -tags e2e ./...) need on the host. Idempotent;
# a second run takes a second or two.
#   1. setup-host.sh      host packages, the unprivileged user ($LIMA_USER, default limatest),
#                         limactl + lima-guestagent v2.2.0 in $KIT_DIR/prefix
#   2. build-image.sh fast the Debian 12 guest image in $KIT_DIR/image-fast
#   3. openssh-server, openssh-sftp-server, tmux, jq, qemu-user on the host (only those missing)
#      and /run/sshd; qemu-user's qemu-aarch64 runs the embedded arm64 guest runner for
#      internal/runner's tests, which fail without it
# Environment: KIT_DIR (default /var/cache/lima-vm-kit), LIMA_USER, LIMA_VERSION, GO, APT_SOURCES
# are passed through to the scripts above.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export KIT_DIR=${KIT_DIR:-/var/cache/lima-vm-kit}

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: must run as root (try: sudo $0)" >&2
  exit 1
fi

phase() { printf '\n== setup.sh: %s\n' "$*"; }
t0=$(date +%s)

phase "host: packages, user, limactl (setup-host.sh)"
"$HERE/setup-host.sh"

phase "guest image: fast (build-image.sh fast)"
"$HERE/build-image.sh" fast

phase "extra host packages"
need=()
extra=(openssh-server openssh-sftp-server tmux jq qemu-user)
for p in "${extra[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
else
  echo "already installed: ${extra[*]}"
fi
mkdir -p /run/sshd
chmod 755 /run/sshd

echo "setup.sh: done in $(( $(date +%s) - t0 )) s (KIT_DIR=$KIT_DIR)"
