#!/usr/bin/env node
// Runs before `npm start`: rebuilds dist/ when it is missing or older than the sources,
// so a `git pull` followed by `npm start` never runs the previous build. Otherwise it
// returns at once and the start costs nothing.
'use strict';
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = process.cwd();
const built = join(root, 'dist', 'main.js');

/**
 * The newest modification time under a file or folder, and the path that has it. A folder's own
 * time counts too: it changes when a file in it is deleted or renamed.
 */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return { mtimeMs: 0, file: null };
  if (!stat.isDirectory()) return { mtimeMs: stat.mtimeMs, file: path };
  let best = { mtimeMs: stat.mtimeMs, file: path };
  for (const entry of readdirSync(path)) {
    const found = newest(join(path, entry));
    if (found.mtimeMs > best.mtimeMs) best = found;
  }
  return best;
}

function reason() {
  if (!existsSync(built)) return 'dist/main.js is missing';
  const buildTime = statSync(built).mtimeMs;
  for (const source of ['src', 'web', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
    const found = newest(join(root, source));
    if (found.mtimeMs > buildTime)
      return `${found.file.slice(root.length + 1)} is newer than dist/main.js`;
  }
  return null;
}

const why = reason();
if (why) {
  console.log(`prestart: ${why}; building first (npm run build)`);
  const npm = process.env.npm_execpath
    ? spawnSync(process.execPath, [process.env.npm_execpath, 'run', 'build'], { stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(npm.status ?? 1);
}
