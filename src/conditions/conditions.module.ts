import { Module } from '@nestjs/common';
import { ConditionsService } from './conditions.service';

/** Import this module wherever a condition is validated or compiled (segments, campaigns, workflows). */
@Module({
  providers: [ConditionsService],
  exports: [ConditionsService],
})
export class ConditionsModule {}
