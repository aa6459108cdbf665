#!/usr/bin/env node
/**
 * Fails the build when the dashboard's initial JavaScript (the scripts and module preloads
 * dist/web/index.html loads) is over its budget gzipped: the first page must stay quick on a slow link.
 * Usage: node scripts/check-web-budget.js [limit in KB, default 250]
 */
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { gzipSync } = require('node:zlib');

const web = join(__dirname, '..', 'dist', 'web');
const limitKb = Number(process.argv[2] ?? 250);
const html = readFileSync(join(web, 'index.html'), 'utf8');
const srcs = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="\/app\/([^"]+)"/g)].map(
  (m) => m[1],
);
if (srcs.length === 0) {
  console.error('check-web-budget: no script found in dist/web/index.html');
  process.exit(1);
}
const bytes = srcs.reduce((sum, src) => sum + gzipSync(readFileSync(join(web, src)), { level: 9 }).length, 0);
const kb = bytes / 1024;
if (kb > limitKb) {
  console.error(`check-web-budget: initial JavaScript is ${kb.toFixed(1)} KB gzipped, over ${limitKb} KB`);
  process.exit(1);
}
console.error(`check-web-budget: initial JavaScript ${kb.toFixed(1)} KB gzipped (budget ${limitKb} KB)`);
