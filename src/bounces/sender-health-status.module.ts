import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { ProjectsModule } from '../projects/projects.module';
import { SenderHealthStatus } from './sender-health-status';

/** The sender health status alone (no queues): for the CLI's `projects resume-sending`. */
@Module({
  imports: [ProjectsModule, EventsModule],
  providers: [SenderHealthStatus],
  exports: [SenderHealthStatus],
})
export class SenderHealthStatusModule {}
