import { DEFAULT_QUEUE_PREFIX, environmentWithDotEnv } from '../config/config';
import { probeWorkerHeartbeat, workerHeartbeatPath } from '../queue/worker-heartbeat';
import { errorMessage } from '../common/errors/error-message';

/**
 * `node dist/health/worker-probe.js`: the container health check of a worker
 * process. Exits 0 when this machine's (container's) worker process consumes
 * every queue, 1 otherwise, with one line saying why. It reads QUEUE_PREFIX
 * (environment over .env) and one file (see worker-heartbeat.ts), nothing
 * else: no secret is generated, no connection opened. The full CLI
 * (`node dist/cli.js health worker`) makes the same check.
 */
function main(): number {
  try {
    const prefix = environmentWithDotEnv().QUEUE_PREFIX?.trim() || DEFAULT_QUEUE_PREFIX;
    const result = probeWorkerHeartbeat(workerHeartbeatPath(prefix));
    const stream = result.healthy ? process.stdout : process.stderr;
    stream.write(`${result.healthy ? 'healthy' : 'unhealthy'}: ${result.reason}\n`);
    return result.healthy ? 0 : 1;
  } catch (error) {
    process.stderr.write(`unhealthy: ${errorMessage(error)}\n`);
    return 1;
  }
}

process.exitCode = main();
