import { environmentWithDotEnv, loadConfig } from '../config/config';
import { probeWorkerHeartbeat, workerHeartbeatPath } from '../queue/worker-heartbeat';

/**
 * `node dist/health/worker-probe.js`: the container health check of a worker
 * process. Exits 0 when this machine's (container's) worker process consumes
 * every queue, 1 otherwise, with one line saying why. It loads only the
 * configuration and reads one file (see worker-heartbeat.ts), so it costs a
 * fraction of the full CLI (`node dist/cli.js health worker`, the same check).
 */
function main(): number {
  try {
    const config = loadConfig(environmentWithDotEnv());
    const result = probeWorkerHeartbeat(workerHeartbeatPath(config.queuePrefix));
    const stream = result.healthy ? process.stdout : process.stderr;
    stream.write(`${result.healthy ? 'healthy' : 'unhealthy'}: ${result.reason}\n`);
    return result.healthy ? 0 : 1;
  } catch (error) {
    process.stderr.write(`unhealthy: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

process.exitCode = main();
