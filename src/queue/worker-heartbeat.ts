import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Worker liveness for a container health check, without HTTP (worker
 * processes serve none).
 *
 * A process that runs the queue workers (APP_ROLE=worker or all) writes a
 * heartbeat file every HEARTBEAT_INTERVAL_MS saying whether every one of its
 * BullMQ workers is consuming: its main loop runs, it is not paused, its
 * blocking (job-fetching) Redis connection is up and Redis answers a PING on
 * its command connection. The probe (`node dist/health/worker-probe.js`, or
 * `node dist/cli.js health worker`) reads that file and fails when it is
 * missing (no worker process, or it shut down and removed it), when its
 * process is gone, when it is stale (the event loop is stuck, so no job moves
 * either) or when it lists problems.
 *
 * Why a file rather than asking Redis (BullMQ's Queue.getWorkers()): the
 * probe must judge this container's process, and an open connection seen by
 * Redis says nothing of a blocked event loop; the file is written by the very
 * loop that runs the jobs. Reading it costs the probe no connection at all.
 *
 * The file lives in the OS temp directory (per container), one per
 * QUEUE_PREFIX, so deployments sharing a host do not read each other's.
 */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** Six missed beats: slower than any hiccup of a live process, quick enough for Docker. */
export const HEARTBEAT_MAX_AGE_MS = 30_000;
/** A PING that takes longer than this counts as Redis not answering. */
export const HEARTBEAT_PING_TIMEOUT_MS = 2_000;

export interface Heartbeat {
  pid: number;
  /** Epoch milliseconds of the check. */
  at: number;
  queues: string[];
  /** Empty when every queue is consumed. */
  problems: string[];
}

export interface ConsumptionReport {
  queues: string[];
  problems: string[];
}

export function workerHeartbeatPath(queuePrefix: string, dir: string = tmpdir()): string {
  return join(dir, `mailwright-worker-${queuePrefix}.json`);
}

export function writeHeartbeat(path: string, heartbeat: Heartbeat): void {
  // Written aside then renamed, so a probe never reads half a file.
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(heartbeat));
  renameSync(partial, path);
}

function readHeartbeat(path: string): Heartbeat | null | 'unreadable' {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return 'unreadable';
  }
  try {
    const parsed = JSON.parse(raw) as Partial<Heartbeat>;
    if (
      typeof parsed.pid === 'number' &&
      typeof parsed.at === 'number' &&
      Array.isArray(parsed.queues) &&
      Array.isArray(parsed.problems)
    ) {
      return parsed as Heartbeat;
    }
  } catch {
    // reported below
  }
  return 'unreadable';
}

/** Removes the file if it is this process's (another live worker of the prefix may own it). */
function removeHeartbeat(path: string, pid: number): void {
  const current = readHeartbeat(path);
  if (current === null || (current !== 'unreadable' && current.pid !== pid)) return;
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * At boot, before anything else: a heartbeat left by a process that is gone,
 * or by an earlier process that had this very pid (a restarted container
 * numbers its processes the same way), must not vouch for this one while it
 * is still migrating. A live other worker's file is left alone.
 */
export function clearStaleHeartbeat(path: string): void {
  const current = readHeartbeat(path);
  if (current === null) return;
  if (current !== 'unreadable' && current.pid !== process.pid && processAlive(current.pid)) return;
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Whether a process with this id exists (EPERM: it does, under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ProbeResult {
  healthy: boolean;
  reason: string;
  heartbeat: Heartbeat | null;
  ageMs: number | null;
}

export function probeWorkerHeartbeat(
  path: string,
  options: { now?: number; maxAgeMs?: number; isAlive?: (pid: number) => boolean } = {},
): ProbeResult {
  const { now = Date.now(), maxAgeMs = HEARTBEAT_MAX_AGE_MS, isAlive = processAlive } = options;
  const heartbeat = readHeartbeat(path);
  if (heartbeat === null) {
    return {
      healthy: false,
      reason: `no worker heartbeat at ${path}: no worker process (APP_ROLE=worker or all) runs here, or it is starting or stopping`,
      heartbeat: null,
      ageMs: null,
    };
  }
  if (heartbeat === 'unreadable') {
    return {
      healthy: false,
      reason: `worker heartbeat at ${path} is unreadable`,
      heartbeat: null,
      ageMs: null,
    };
  }
  const ageMs = Math.max(0, now - heartbeat.at);
  const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;
  const unhealthy = (reason: string): ProbeResult => ({ healthy: false, reason, heartbeat, ageMs });
  if (!isAlive(heartbeat.pid)) return unhealthy(`worker process ${heartbeat.pid} is not running`);
  if (ageMs > maxAgeMs) {
    return unhealthy(
      `last worker heartbeat ${seconds(ageMs)} ago (limit ${seconds(maxAgeMs)}): process ${heartbeat.pid} is stuck`,
    );
  }
  if (heartbeat.problems.length > 0)
    return unhealthy(`queues not consumed: ${heartbeat.problems.join('; ')}`);
  return {
    healthy: true,
    reason: `${heartbeat.queues.length} queues consumed by process ${heartbeat.pid} (${heartbeat.queues.join(', ')}), heartbeat ${seconds(ageMs)} ago`,
    heartbeat,
    ageMs,
  };
}

/**
 * Writes the heartbeat at start and then every interval, until stop(), which
 * removes the file: a draining process no longer takes jobs.
 */
export class WorkerHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly path: string,
    private readonly check: () => Promise<ConsumptionReport>,
    private readonly onError: (error: unknown) => void = () => undefined,
    private readonly intervalMs: number = HEARTBEAT_INTERVAL_MS,
  ) {}

  async start(): Promise<void> {
    // A file left by an earlier process (killed, or the container restarted)
    // must not vouch for this one before its first beat.
    try {
      unlinkSync(this.path);
    } catch {
      // none
    }
    this.beating = this.beat();
    await this.beating;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
    removeHeartbeat(this.path, process.pid);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => this.schedule());
    }, this.intervalMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    let report: ConsumptionReport;
    try {
      report = await this.check();
    } catch (error) {
      report = {
        queues: [],
        problems: [`check failed: ${error instanceof Error ? error.message : String(error)}`],
      };
    }
    if (this.stopped) return;
    try {
      writeHeartbeat(this.path, { pid: process.pid, at: Date.now(), ...report });
    } catch (error) {
      this.onError(error);
    }
  }
}
