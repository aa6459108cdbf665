#!/usr/bin/env node
// Checks that every relative link and #anchor in README.md and docs/*.md resolves: the file (or
// folder) exists in the repository, and an anchor into a Markdown file names one of its headings
// as GitHub slugs them. External links (http:, https:, mailto:) are not fetched. Exit 1 on any
// broken link, each printed as file:line.
'use strict';
const { existsSync, readdirSync, readFileSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');

const root = resolve(__dirname, '..');

/** GitHub's heading slug: lower case, punctuation and symbols dropped, spaces to hyphens. */
function slug(heading) {
  const text = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images: their alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/<[^>]+>/g, ''); // inline HTML tags
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown) {
  const lines = [];
  let fence = null;
  markdown.split('\n').forEach((line, i) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (
        marker &&
        marker[1][0] === fence[0] &&
        marker[1].length >= fence.length &&
        /^ {0,3}[`~]+\s*$/.test(line)
      )
        fence = null;
      return;
    }
    if (marker) {
      fence = marker[1];
      return;
    }
    lines.push({ text: line, number: i + 1 });
  });
  return lines;
}

const anchorCache = new Map();
/** Every anchor a Markdown file offers: heading slugs (numbered when repeated) and explicit ids. */
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const anchors = new Set();
  const seen = new Map();
  for (const { text } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading) {
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const id of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id[1]);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** The link targets on one line, inline code spans left out. */
function targets(line) {
  const prose = line.replace(/(`+)[^`]*?\1/g, '');
  const found = [];
  for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push(m[1]);
  const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(prose);
  if (definition) found.push(definition[1]);
  return found;
}

function filesToCheck() {
  const docs = join(root, 'docs');
  const files = [join(root, 'README.md')];
  if (existsSync(docs)) {
    for (const name of readdirSync(docs).sort())
      if (name.endsWith('.md')) files.push(join(docs, name));
  }
  return files;
}

const problems = [];
let checked = 0;
for (const file of filesToCheck()) {
  const where = relative(root, file);
  for (const { text, number } of proseLines(readFileSync(file, 'utf8'))) {
    for (const target of targets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: …
      checked += 1;
      const [pathPart, anchor] = target.split('#', 2);
      const destination = pathPart ? resolve(dirname(file), decodeURIComponent(pathPart)) : file;
      if (!destination.startsWith(root)) {
        problems.push(`${where}:${number}: ${target} points outside the repository`);
        continue;
      }
      if (!existsSync(destination)) {
        problems.push(`${where}:${number}: ${target}: no such file ${relative(root, destination)}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
        problems.push(
          `${where}:${number}: ${target}: an anchor into something that is not a Markdown file`,
        );
      } else if (!anchorsOf(destination).has(decodeURIComponent(anchor))) {
        problems.push(
          `${where}:${number}: ${target}: ${relative(root, destination)} has no heading #${anchor}`,
        );
      }
    }
  }
}

// The README is a README: reference material belongs in docs/ (one page per module).
const README_LINES = 450;
const readmeLines = readFileSync(resolve(root, 'README.md'), 'utf8').split('\n').length - 1;
if (readmeLines >= README_LINES) {
  problems.push(`README.md: ${readmeLines} lines; keep it under ${README_LINES} and move reference to docs/`);
}

if (problems.length) {
  console.error(`${problems.length} problem(s), ${checked} links checked:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`links: ${checked} relative links and anchors in README.md and docs/*.md resolve`);
