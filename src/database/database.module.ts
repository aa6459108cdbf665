import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';

/** Migrations are applied before the app boots (prepareDatabase), never here. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.databaseUrl),
        migrations: [],
      }),
    }),
  ],
})
export class DatabaseModule {}
