import 'reflect-metadata';
import { ConfigValidationError, environmentWithDotEnv, loadConfig, runsApi } from './config/config';
import { createApp } from './create-app';
import { prepareDatabase } from './database/prepare-database';

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
  await prepareDatabase(config.databaseUrl);
  const app = await createApp(config);
  if (runsApi(config)) {
    await app.listen({ port: config.port, host: config.host });
  }
}

bootstrap().catch((error: unknown) => {
  console.error('Mailwright failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
