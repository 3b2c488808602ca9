#!/usr/bin/env bash
# Source this file for a shell whose `node` is one that package.json's engines.node accepts: this
# machine's when it is new enough, else the one bin/project-node.cjs fetches once from the npm
# registry into ~/.cache/concordance-worker/node (the npm scripts do the same by themselves,
# through scripts/with-node.sh). The repository's own scripts (verify-chart, verify-image) use it.
# Usage: source scripts/use-node.sh
if CW_NODE_DIR="$(node "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/project-node.cjs")"; then
  if [ "$CW_NODE_DIR" != "$(dirname "$(command -v node)")" ] && [ -z "${npm_config_globalconfig:-}" ]; then
    # npm run by another node looks for its global npmrc under that node's prefix: keep this
    # machine's (its registry, proxy or CA file) for the npm and npx run from this shell.
    npm_config_globalconfig="$(npm config get globalconfig 2>/dev/null || true)"
    export npm_config_globalconfig
  fi
  export PATH="$CW_NODE_DIR:$PATH"
  echo "use-node: using node $(node --version) at $(command -v node)" >&2
else
  return 1 2>/dev/null || exit 1
fi
