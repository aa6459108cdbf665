import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppMetrics, METRICS_REGISTRY } from './metrics';

/** Provides the application's AppMetrics (created with the HTTP adapter, see create-app.ts) everywhere. */
@Global()
@Module({})
export class MetricsModule {
  static forRoot(metrics: AppMetrics): DynamicModule {
    return {
      module: MetricsModule,
      providers: [{ provide: METRICS_REGISTRY, useValue: metrics }],
      exports: [METRICS_REGISTRY],
    };
  }
}
