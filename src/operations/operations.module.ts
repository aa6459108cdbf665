import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { OperationsRepository } from './operations.repository';
import { WorkerMetricsServer } from './worker-metrics-server';

/** Operations: GET /metrics (Prometheus), in a worker-only process on WORKER_METRICS_PORT. */
@Module({
  imports: [EventsModule],
  controllers: [MetricsController],
  providers: [OperationsRepository, MetricsService, WorkerMetricsServer],
})
export class OperationsModule {}
