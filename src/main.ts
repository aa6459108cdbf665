import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import {
  AppConfig,
  ConfigValidationError,
  environmentWithDotEnv,
  loadConfig,
  mailDestination,
  runsApi,
  runsWorkers,
} from './config/config';
import { createApp } from './create-app';
import { prepareDatabase } from './database/prepare-database';
import { clearStaleHeartbeat, workerHeartbeatPath } from './queue/worker-heartbeat';

/** The one line a newcomer reads: where the API is, its docs, the role, where mail goes. */
function announce(config: AppConfig): void {
  const mail = mailDestination(config);
  const senders = config.requireVerifiedSender
    ? 'verified sender domains only'
    : 'any sender domain (unsigned unless verified)';
  if (runsApi(config)) {
    const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
    new Logger('Mailwright').log(
      {
        url,
        docs: `${url}/docs`,
        role: config.role,
        mail,
        requireVerifiedSender: config.requireVerifiedSender,
      },
      `Mailwright listening on ${url} (API docs ${url}/docs), role ${config.role}, mail to ${mail}, ${senders}`,
    );
  } else {
    new Logger('Mailwright').log(
      { role: config.role, mail, requireVerifiedSender: config.requireVerifiedSender },
      `Mailwright ${config.role} started, mail to ${mail}, ${senders}`,
    );
  }
}

async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadConfig(environmentWithDotEnv());
  } catch (error) {
    if (error instanceof ConfigValidationError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  if (runsWorkers(config)) clearStaleHeartbeat(workerHeartbeatPath(config.queuePrefix));
  await prepareDatabase(config.databaseDirectUrl);
  const app = await createApp(config);
  if (runsApi(config)) {
    await app.listen({ port: config.port, host: config.host });
  }
  announce(config);
}

bootstrap().catch((error: unknown) => {
  console.error('Mailwright failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
