import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';
import { statementTimeoutDriver } from './statement-timeout';

/**
 * Migrations are applied before the app boots (prepareDatabase), never here. Every statement runs
 * under a statement timeout: an API request's bound or the background bound (statement-timeout.ts).
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.databaseUrl),
        migrations: [],
        // Migrations (prepareDatabase) build their own data source and keep no statement timeout.
        driver: statementTimeoutDriver(
          {
            apiMs: config.apiStatementTimeoutMs,
            backgroundMs: config.backgroundStatementTimeoutMs,
          },
          config.role === 'api'
            ? config.apiStatementTimeoutMs
            : config.backgroundStatementTimeoutMs,
        ),
      }),
    }),
  ],
})
export class DatabaseModule {}
