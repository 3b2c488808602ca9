#!/usr/bin/env bash
# Source this file for a shell whose `node` is one that package.json's engines.node accepts: this
# machine's when it is new enough, else the one bin/project-node.cjs fetches once from the npm
# registry into ~/.cache/concordance-worker/node (the npm scripts do the same by themselves,
# through scripts/with-node.sh). The repository's own scripts (verify-chart, verify-image) use it.
# Usage: source scripts/use-node.sh
if CW_NODE_DIR="$(node "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/project-node.cjs")"; then
  export PATH="$CW_NODE_DIR:$PATH"
  echo "use-node: using node $(node --version) at $(command -v node)" >&2
else
  return 1 2>/dev/null || exit 1
fi
