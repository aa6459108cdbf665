#!/usr/bin/env node
'use strict';
/**
 * The import rules of src/ (docs/architecture.md), checked on the sources:
 *
 * 1. No import cycles between files.
 * 2. The platform folders (common, config, database, queue) import nothing
 *    from a feature folder.
 * 3. Feature folders depend on each other one way only: the folder graph has
 *    no cycles.
 *
 * Type-only imports count too: a type pulled from a feature still couples the
 * layer to it. The files at the top of src/ (main, cli, app.module,
 * create-app) are the composition root and may import anything.
 *
 *   node scripts/check-layers.js        (exit 1 and one line per violation)
 */
const { readdirSync, readFileSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve, sep } = require('node:path');

const SRC = resolve(__dirname, '..', 'src');
const PLATFORM = new Set(['common', 'config', 'database', 'queue']);

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of import/export-from/import()/require() statements. */
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:import|require)\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function resolveImport(from, specifier) {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // try the next form
    }
  }
  return null;
}

/** The top folder of src/ a file belongs to, or null for the composition root files. */
function folderOf(file) {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : null;
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((file) => [file, new Set()]));
const problems = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2] ?? match[3];
    const target = resolveImport(file, specifier);
    if (!target) {
      problems.push(`${relative(SRC, file)}: cannot resolve ${specifier}`);
      continue;
    }
    if (target.startsWith(SRC)) graph.get(file).add(target);
  }
}

/** Strongly connected components (Tarjan), iterative enough for a few hundred files. */
function cycles(nodes, edgesOf) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const found = [];
  const visit = (node) => {
    info.set(node, { index, low: index, onStack: true });
    index++;
    stack.push(node);
    for (const next of edgesOf(node)) {
      if (!info.has(next)) {
        visit(next);
        info.get(node).low = Math.min(info.get(node).low, info.get(next).low);
      } else if (info.get(next).onStack) {
        info.get(node).low = Math.min(info.get(node).low, info.get(next).index);
      }
    }
    if (info.get(node).low === info.get(node).index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        info.get(member).onStack = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || edgesOf(node).has(node)) found.push(component);
    }
  };
  for (const node of nodes) if (!info.has(node)) visit(node);
  return found;
}

for (const component of cycles(files, (file) => graph.get(file))) {
  problems.push(`import cycle between files: ${component.map((f) => relative(SRC, f)).sort().join(' <-> ')}`);
}

const folderEdges = new Map();
for (const [file, targets] of graph) {
  const from = folderOf(file);
  if (!from) continue;
  for (const target of targets) {
    const to = folderOf(target);
    if (!to || to === from) continue;
    if (PLATFORM.has(from) && !PLATFORM.has(to)) {
      problems.push(`${relative(SRC, file)}: the platform folder ${from}/ imports the feature folder ${to}/ (${relative(SRC, target)})`);
    }
    if (!folderEdges.has(from)) folderEdges.set(from, new Set());
    folderEdges.get(from).add(to);
  }
}
const folders = [...new Set([...folderEdges.keys(), ...[...folderEdges.values()].flatMap((s) => [...s])])];
for (const component of cycles(folders, (folder) => folderEdges.get(folder) ?? new Set())) {
  const members = new Set(component);
  const witnesses = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (!members.has(from)) continue;
    for (const target of targets) {
      const to = folderOf(target);
      if (to && to !== from && members.has(to)) witnesses.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  const shown = witnesses.slice(0, 8).join('; ') + (witnesses.length > 8 ? `; and ${witnesses.length - 8} more` : '');
  problems.push(`folders depend on each other both ways: ${component.sort().join(', ')} (${shown})`);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(`\n${problems.length} layering problem(s); see docs/architecture.md`);
  process.exit(1);
}
console.log(`layers: ${files.length} files, ${folders.length} folders, no cycles, platform folders import no feature`);
