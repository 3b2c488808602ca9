#!/usr/bin/env node
// Says in one line what to run when this Node.js is older than package.json's `engines.node`
// (the highest minimum the dependencies declare), instead of the stack trace an old Node prints on
// a TypeScript source. Plain CommonJS with old syntax only, so that any Node.js can run it. Used by
// the npm scripts (`predemo`, `pretest`, ...) and by bin/concordance-worker.js.
'use strict';
var fs = require('fs');
var path = require('path');

/** `>=22.22` → [22, 22, 0]. */
function floorOf(range) {
  var match = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(String(range).trim());
  if (match === null) throw new Error('engines.node must read ">=X.Y[.Z]", not ' + range);
  return [Number(match[1]), Number(match[2] || 0), Number(match[3] || 0)];
}

/** Whether `version` (`20.20.2`) is below `floor`. */
function isOlder(version, floor) {
  var parts = String(version).replace(/^v/, '').split('.').map(Number);
  for (var i = 0; i < 3; i++) {
    if ((parts[i] || 0) !== floor[i]) return (parts[i] || 0) < floor[i];
  }
  return false;
}

/** The one line for a Node.js older than the floor; undefined when it is new enough. */
function nodeVersionProblem(version, range) {
  var floor = floorOf(range);
  if (!isOlder(version, floor)) return undefined;
  return (
    'concordance-worker needs Node.js ' +
    range +
    ' and this is Node.js v' +
    String(version).replace(/^v/, '') +
    ': run `source scripts/use-node.sh` (it installs Node 24 when yours is older), then the same command again.'
  );
}

function engineRange() {
  var pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  return pkg.engines.node;
}

module.exports = { nodeVersionProblem: nodeVersionProblem, engineRange: engineRange };

if (require.main === module) {
  var problem = nodeVersionProblem(process.versions.node, engineRange());
  if (problem !== undefined) {
    process.stderr.write(problem + '\n');
    process.exit(1);
  }
}
