import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');
export const DIST_MAIN = join(ROOT, 'dist', 'main.js');
export const DIST_CLI = join(ROOT, 'dist', 'cli.js');

/** A free TCP port on loopback, chosen by the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs the built CLI synchronously; stdout is the JSON document with --json. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): { status: number; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [DIST_CLI, ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  /** Exit code, or the signal name when the process ended by one. */
  exited: Promise<number | string | null>;
}

/**
 * Starts `node dist/main.js` with the given environment (no other variable of the test's
 * environment leaks in but PATH/HOME; a `.env` in `cwd` is read, as the service always does).
 */
export function startService(env: Record<string, string>, cwd = ROOT): ServiceProcess {
  const child = spawn(process.execPath, [DIST_MAIN], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  return { child, output: () => out, exited };
}

/** Polls a URL until it answers 200 or the deadline passes. */
export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}
