#!/bin/sh
# Runs a command with a Node.js that package.json's engines.node accepts first on PATH: this
# machine's when it is new enough, else the one bin/project-node.cjs fetches once from the npm
# registry into ~/.cache/concordance-worker/node. Every npm script goes through it, so that
# `npm run demo` and `npm test` work as they stand on a machine whose node is older.
# Usage (package.json): sh scripts/with-node.sh vitest run
set -e
dir=$("${npm_node_execpath:-node}" "$(dirname "$0")/../bin/project-node.cjs")
PATH="$dir:$PATH"
export PATH
exec "$@"
