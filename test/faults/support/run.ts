import { spawn, SpawnOptions } from 'node:child_process';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end without blocking the event loop (the fault suite's
 * SMTP servers and load clients live in the test process). Rejects when it
 * exits non-zero, with its output, unless `allowFailure`.
 */
export function run(
  command: string,
  args: string[],
  options: SpawnOptions & { timeoutMs?: number; allowFailure?: boolean } = {},
): Promise<RunResult> {
  const { timeoutMs = 120_000, allowFailure = false, ...spawnOptions } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = { code, signal, stdout, stderr };
      if (code === 0 || allowFailure) resolve(result);
      else
        reject(
          new Error(`${command} ${args.join(' ')} failed (${code ?? signal}): ${stdout}${stderr}`),
        );
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether a process id is alive (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
