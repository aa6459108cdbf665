import { Module } from '@nestjs/common';
import { ConditionsRepository } from './conditions.repository';
import { ConditionsService } from './conditions.service';

/** Import this module wherever a condition is validated or compiled (segments, campaigns, workflows). */
@Module({
  providers: [ConditionsService, ConditionsRepository],
  exports: [ConditionsService],
})
export class ConditionsModule {}
