import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { OperationsRepository } from './operations.repository';

/** Operations: GET /metrics (Prometheus). */
@Module({
  imports: [EventsModule],
  controllers: [MetricsController],
  providers: [OperationsRepository, MetricsService],
})
export class OperationsModule {}
