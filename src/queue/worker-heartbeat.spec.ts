import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clearStaleHeartbeat,
  ConsumptionReport,
  HEARTBEAT_MAX_AGE_MS,
  probeWorkerHeartbeat,
  WorkerHeartbeat,
  workerHeartbeatPath,
  writeHeartbeat,
} from './worker-heartbeat';

describe('worker heartbeat', () => {
  let dir: string;
  let path: string;
  const alive = () => true;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mw-heartbeat-'));
    path = workerHeartbeatPath('mwt_prefix', dir);
  });

  it('is one file per queue prefix', () => {
    expect(workerHeartbeatPath('a', dir)).not.toBe(workerHeartbeatPath('b', dir));
  });

  it('is healthy when fresh, from a live process, without problems', () => {
    writeHeartbeat(path, { pid: 42, at: 1_000_000, queues: ['delivery', 'imports'], problems: [] });
    const result = probeWorkerHeartbeat(path, { now: 1_004_000, isAlive: alive });
    expect(result.healthy).toBe(true);
    expect(result.reason).toMatch(/2 queues consumed by process 42/);
    expect(result.ageMs).toBe(4000);
  });

  it('fails without a file, with a broken file, a dead process, a stale beat or problems', () => {
    expect(probeWorkerHeartbeat(path, { isAlive: alive })).toMatchObject({
      healthy: false,
      reason: expect.stringMatching(/no worker heartbeat/),
    });

    writeFileSync(path, '{"pid":');
    expect(probeWorkerHeartbeat(path, { isAlive: alive }).reason).toMatch(/unreadable/);

    writeHeartbeat(path, { pid: 42, at: 1_000_000, queues: ['delivery'], problems: [] });
    expect(probeWorkerHeartbeat(path, { now: 1_000_000, isAlive: () => false }).reason).toMatch(
      /process 42 is not running/,
    );
    const stale = probeWorkerHeartbeat(path, {
      now: 1_000_000 + HEARTBEAT_MAX_AGE_MS + 1,
      isAlive: alive,
    });
    expect(stale.healthy).toBe(false);
    expect(stale.reason).toMatch(/stuck/);

    writeHeartbeat(path, {
      pid: 42,
      at: 1_000_000,
      queues: ['delivery'],
      problems: ['delivery: worker paused'],
    });
    const troubled = probeWorkerHeartbeat(path, { now: 1_000_000, isAlive: alive });
    expect(troubled).toMatchObject({
      healthy: false,
      reason: 'queues not consumed: delivery: worker paused',
    });
  });

  it('beats at start and on its interval, reports failed checks, and removes its file on stop', async () => {
    writeHeartbeat(path, { pid: 1, at: Date.now(), queues: [], problems: [] });
    let report: ConsumptionReport = { queues: ['delivery'], problems: [] };
    let calls = 0;
    const heartbeat = new WorkerHeartbeat(
      path,
      async () => {
        calls++;
        if (calls === 3) throw new Error('boom');
        return report;
      },
      undefined,
      20,
    );
    await heartbeat.start();
    // The leftover of pid 1 was replaced by this process's first beat.
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({
      pid: process.pid,
      problems: [],
    });
    expect(probeWorkerHeartbeat(path).healthy).toBe(true);

    report = { queues: ['delivery'], problems: ['delivery: job-fetching connection reconnecting'] };
    await waitFor(() => calls >= 2);
    await waitFor(() => JSON.parse(readFileSync(path, 'utf8')).problems.length > 0);
    expect(probeWorkerHeartbeat(path).reason).toMatch(/reconnecting|check failed: boom/);
    await waitFor(() => calls >= 3);
    await waitFor(() => /boom/.test(readFileSync(path, 'utf8')));

    await heartbeat.stop();
    expect(existsSync(path)).toBe(false);
    const after = calls;
    await new Promise((r) => setTimeout(r, 60));
    expect(calls).toBe(after);
    expect(existsSync(path)).toBe(false);
  });

  it('leaves on stop a file that another process wrote', async () => {
    const heartbeat = new WorkerHeartbeat(
      path,
      async () => ({ queues: [], problems: [] }),
      undefined,
      60_000,
    );
    await heartbeat.start();
    writeHeartbeat(path, { pid: process.pid + 1, at: Date.now(), queues: [], problems: [] });
    await heartbeat.stop();
    expect(existsSync(path)).toBe(true);
  });
  it('is cleared at boot when left by a gone process or an earlier one with this pid, kept for a live other worker', () => {
    const beat = (pid: number) =>
      writeHeartbeat(path, { pid, at: Date.now(), queues: ['delivery'], problems: [] });
    beat(process.pid); // a restarted container: the new process got the old one's pid
    clearStaleHeartbeat(path);
    expect(existsSync(path)).toBe(false);
    beat(2 ** 22 + 17); // above Linux's pid_max: no such process
    clearStaleHeartbeat(path);
    expect(existsSync(path)).toBe(false);
    beat(process.ppid); // another live worker of this prefix on the machine
    clearStaleHeartbeat(path);
    expect(existsSync(path)).toBe(true);
    writeFileSync(path, 'not json');
    clearStaleHeartbeat(path);
    expect(existsSync(path)).toBe(false);
    clearStaleHeartbeat(path); // nothing there: nothing to do
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
