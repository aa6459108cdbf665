import { Global, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';
import { ReadDatabase } from './read-database';
import { statementTimeoutDriver } from './statement-timeout';

/**
 * The options of the app's pools. DATABASE_URL differing from DATABASE_DIRECT_URL means it goes
 * through a transaction pooler (PgBouncer): statement timeouts then travel with each transaction,
 * never with the session (statement-timeout.ts). The read pool follows the same rule.
 */
function poolOptions(config: AppConfig, url: string): DataSourceOptions {
  return {
    ...dataSourceOptions(url, config.databasePoolSize),
    migrations: [],
    // Migrations (prepareDatabase) build their own data source and keep no statement timeout.
    driver: statementTimeoutDriver(
      {
        apiMs: config.apiStatementTimeoutMs,
        backgroundMs: config.backgroundStatementTimeoutMs,
      },
      config.role === 'api' ? config.apiStatementTimeoutMs : config.backgroundStatementTimeoutMs,
      {
        transactionPooled: config.databaseUrl !== config.databaseDirectUrl,
        preparedStatements: config.databasePreparedStatements,
      },
    ),
  };
}

/**
 * Migrations are applied before the app boots (prepareDatabase), never here. Every statement runs
 * under a statement timeout: an API request's bound or the background bound (statement-timeout.ts).
 * ReadDatabase is the primary itself unless DATABASE_READ_URL names a replica.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => poolOptions(config, config.databaseUrl),
    }),
  ],
  providers: [
    {
      provide: ReadDatabase,
      inject: [APP_CONFIG, getDataSourceToken()],
      useFactory: async (config: AppConfig, primary: DataSource) => {
        if (!config.databaseReadUrl) return new ReadDatabase(primary, false);
        const replica = new DataSource(poolOptions(config, config.databaseReadUrl));
        await replica.initialize();
        return new ReadDatabase(replica, true);
      },
    },
  ],
  exports: [ReadDatabase],
})
export class DatabaseModule {}
