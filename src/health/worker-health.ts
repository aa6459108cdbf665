import { ApiException } from '../common/errors/api-exception';
import { AppConfig } from '../config/config';
import { probeWorkerHeartbeat, workerHeartbeatPath } from '../queue/worker-heartbeat';

/**
 * `node dist/cli.js health worker`: whether a worker process on this machine
 * (container) consumes every queue of QUEUE_PREFIX. Throws WORKER_UNHEALTHY
 * (exit 1) when not. Reads the heartbeat file only: no database, no Redis.
 */
export function workerHealth(config: AppConfig): { json: unknown; text: string } {
  const result = probeWorkerHeartbeat(workerHeartbeatPath(config.queuePrefix));
  if (!result.healthy) throw new ApiException(503, 'WORKER_UNHEALTHY', result.reason);
  return {
    json: {
      status: 'ok',
      pid: result.heartbeat?.pid,
      queues: result.heartbeat?.queues,
      heartbeatAgeMs: result.ageMs,
    },
    text: `healthy: ${result.reason}`,
  };
}
