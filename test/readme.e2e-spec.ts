import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { fencedBlocks } from './support/markdown';
import { pollUntil } from './support/poll';
import { freePort, ROOT, waitForHttp } from './support/processes';
import { flushPrefix, PG_ADMIN_URL, TEST_REDIS_URL, uniqueName } from './support/test-app';

/**
 * The README's quick start, run as a newcomer runs it: the blocks are read from README.md by their
 * fence marker (```sh quickstart-server, ```sh quickstart), never copied here, so deleting or
 * breaking them fails this spec.
 */

/** Exactly one block with this marker, or an error that names what is missing. */
function theBlock(marker: string): string {
  const blocks = fencedBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'sh', marker);
  if (blocks.length !== 1)
    throw new Error(
      `README.md has ${blocks.length} \`\`\`sh ${marker} blocks; the quick start needs exactly one`,
    );
  return blocks[0];
}

/**
 * Runs a script with bash in its own process group. `npm ci` is not run again: this checkout is
 * installed, and `npm test` built dist/ (its pretest); a shell function stands in for that one
 * subcommand and passes every other npm command through, so the README's line runs as written.
 */
function bash(script: string, cwd: string, env: Record<string, string>) {
  const prelude = [
    'set -euo pipefail',
    'npm() { if [ "${1:-}" = ci ]; then echo "readme spec: npm ci skipped (installed checkout, dist/ built by pretest)"; return 0; fi; command npm "$@"; }',
  ].join('\n');
  const child = spawn('bash', ['-c', `${prelude}\n${script}`], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  return { child, output: () => out, exited };
}

/** SIGTERM to the whole process group (bash, npm, node), then wait for the leader. */
async function stop(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  await exited;
}

describe('README quick start', () => {
  let cwd: string;
  const database = uniqueName('mw_readme');
  const prefix = uniqueName('mwreadme');
  let port: number;
  let env: Record<string, string>;
  let server: ReturnType<typeof bash> | undefined;

  beforeAll(async () => {
    // A fresh checkout as seen from the quick start: the project's files, no var/ and no .env.
    // Should npm start rebuild here (sources newer than dist/), `rimraf dist` removes only the
    // link and the build lands in this folder, so the dist/ other specs run is never replaced.
    cwd = mkdtempSync(join(tmpdir(), 'mw-readme-'));
    for (const entry of [
      'dist',
      'node_modules',
      'src',
      'web',
      'scripts',
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
    ]) {
      symlinkSync(join(ROOT, entry), join(cwd, entry));
    }
    port = await freePort();
    const databaseUrl = new URL(PG_ADMIN_URL);
    databaseUrl.pathname = `/${database}`; // does not exist yet: the service creates it on first start
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(port),
      DATABASE_URL: databaseUrl.toString(),
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
    };
  });

  afterAll(async () => {
    if (server) await stop(server.child, server.exited);
    await flushPrefix(prefix);
    const admin = new Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    } finally {
      await admin.end();
    }
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('starts with the two commands and lands the first email in ./var/outbox', async () => {
    const serverBlock = theBlock('quickstart-server');
    const firstEmail = theBlock('quickstart');
    expect(serverBlock).toMatch(/\bnpm start\b/);

    server = bash(serverBlock, cwd, env);
    const started = server;
    const early = started.exited.then((code) => {
      throw new Error(
        `the quick-start server exited (${code}) before it answered:\n${started.output().slice(-4000)}`,
      );
    });
    await Promise.race([waitForHttp(`http://127.0.0.1:${port}/health/ready`, 150_000), early]);
    early.catch(() => undefined);

    const run = bash(firstEmail, cwd, env);
    const timer = setTimeout(() => void stop(run.child, run.exited), 60_000);
    const code = await run.exited;
    clearTimeout(timer);
    if (code !== 0)
      throw new Error(
        `the first-email block ended with ${code}:\n${run.output()}\n--- server ---\n${started.output().slice(-4000)}`,
      );

    const outbox = join(cwd, 'var', 'outbox');
    const files = await pollUntil(
      async () => (existsSync(outbox) ? readdirSync(outbox).filter((f) => f.endsWith('.eml')) : []),
      (found) => found.length > 0,
      30_000,
    );
    expect(files).toHaveLength(1);
    // The block's last command lists what arrived.
    expect(run.output()).toContain(files[0]);
    const message = readFileSync(join(outbox, files[0]), 'utf8');
    expect(message).toMatch(/^Subject: .+/m);
    expect(message).toMatch(/^To: .+@.+/m);
  }, 240_000); // npm start rebuilds first when the sources are newer than dist/ (a minute on two cores)
});

describe('scripts/prestart.js (run by npm start)', () => {
  // A project of its own in a temp folder whose "build" writes dist/main.js and counts itself,
  // so the real dist/ (which other specs run) is never rebuilt under them.
  let dir: string;
  const builds = () => join(dir, 'builds.log');
  const prestart = (): { code: number | null; output: string } => {
    const res = spawnSync(process.execPath, [join(ROOT, 'scripts', 'prestart.js')], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
      encoding: 'utf8',
    });
    return { code: res.status, output: `${res.stdout}${res.stderr}` };
  };
  const buildCount = () =>
    existsSync(builds()) ? readFileSync(builds(), 'utf8').split('\n').filter(Boolean).length : 0;
  const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mw-prestart-'));
    mkdirSync(join(dir, 'src', 'nested'), { recursive: true });
    writeFileSync(join(dir, 'src', 'nested', 'thing.ts'), 'export const x = 1;\n');
    writeFileSync(join(dir, 'tsconfig.json'), '{}\n');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'prestart-fixture',
        private: true,
        scripts: {
          build: `node -e "require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/main.js','');require('fs').appendFileSync('builds.log','built\\n')"`,
        },
      }),
    );
    const old = Date.now() / 1000 - 3600;
    for (const path of [
      'src',
      'src/nested',
      'src/nested/thing.ts',
      'tsconfig.json',
      'package.json',
    ])
      at(join(dir, path), old);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds when dist/main.js is missing, not when the build is newer, and again when a source is newer', () => {
    let run = prestart();
    expect(run.code).toBe(0);
    expect(run.output).toContain('dist/main.js is missing');
    expect(buildCount()).toBe(1);

    run = prestart();
    expect(run.code).toBe(0);
    expect(buildCount()).toBe(1); // up to date: starts at once

    at(join(dir, 'src', 'nested', 'thing.ts'), Date.now() / 1000 + 5);
    run = prestart();
    expect(run.code).toBe(0);
    expect(run.output).toContain('src/nested/thing.ts is newer than dist/main.js');
    expect(buildCount()).toBe(2);

    at(join(dir, 'src', 'nested', 'thing.ts'), Date.now() / 1000 - 3600);
    at(join(dir, 'package.json'), Date.now() / 1000 + 10);
    run = prestart();
    expect(run.output).toContain('package.json is newer than dist/main.js');
    expect(buildCount()).toBe(3);
  });

  it('fails the start when the build fails', () => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    pkg.scripts.build = 'node -e "process.exit(3)"';
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    at(join(dir, 'package.json'), Date.now() / 1000 + 60);
    expect(prestart().code).not.toBe(0);
  });
});
