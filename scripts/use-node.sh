#!/usr/bin/env bash
# Source this file: it makes sure a Node.js as new as package.json's engines.node is first on PATH.
# If the system node is older (or absent), Node 24 LTS is installed from the npm registry
# into a cache directory (no root needed) and put first on PATH.
# Usage: source scripts/use-node.sh
CW_CHECK_NODE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/check-node.cjs"
if ! node "$CW_CHECK_NODE" >/dev/null 2>&1; then
  CW_NODE_CACHE="${CW_NODE_CACHE:-$HOME/.cache/node24}"
  CW_NODE_BIN="$CW_NODE_CACHE/node_modules/node/bin"
  if [ ! -x "$CW_NODE_BIN/node" ]; then
    echo "use-node: system node is $(node --version 2>/dev/null || echo absent); installing Node 24 into $CW_NODE_CACHE" >&2
    npm install --prefix "$CW_NODE_CACHE" --no-save --no-audit --no-fund node@24 >&2
  fi
  export PATH="$CW_NODE_BIN:$PATH"
fi
echo "use-node: using node $(node --version) at $(command -v node)" >&2
