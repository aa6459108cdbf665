import { join } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import { SnakeNamingStrategy } from './snake-naming.strategy';

/**
 * Entities and migrations are found by file pattern so a new feature folder
 * needs no registration here; the same options serve the app, the CLI and
 * TypeORM's own migration commands.
 */
export function dataSourceOptions(databaseUrl: string, poolSize = 20): DataSourceOptions {
  const root = join(__dirname, '..');
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: [join(root, '**/*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations/*.{ts,js}')],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    namingStrategy: new SnakeNamingStrategy(),
    synchronize: false,
    logging: false,
    // One pool per data source and process (DATABASE_POOL_SIZE): see docs/scaling.md.
    extra: { max: poolSize, application_name: 'mailwright' },
  };
}
