import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConditionsModule } from '../conditions/conditions.module';
import { EventsModule } from '../events/events.module';
import { SegmentDirtyListener } from './segment-dirty-listener';
import { SegmentMembershipProcessor } from './segment-membership.processor';
import { SegmentMembershipRecovery } from './segment-membership.recovery';
import { SegmentMembershipRepository } from './segment-membership.repository';
import { SegmentMembershipService } from './segment-membership.service';
import { Segment } from './segment.entity';
import { SegmentsController } from './segments.controller';
import { SegmentsRepository } from './segments.repository';
import { SegmentsService } from './segments.service';

/**
 * Segments, and the live membership of the segments workflows use
 * (SegmentMembershipService.keep, exported for the workflows module).
 */
@Module({
  imports: [TypeOrmModule.forFeature([Segment]), ConditionsModule, EventsModule],
  controllers: [SegmentsController],
  providers: [
    SegmentsService,
    SegmentsRepository,
    SegmentMembershipService,
    SegmentMembershipRepository,
    SegmentMembershipProcessor,
    SegmentMembershipRecovery,
    SegmentDirtyListener,
  ],
  exports: [SegmentsService, SegmentMembershipService],
})
export class SegmentsModule {}
