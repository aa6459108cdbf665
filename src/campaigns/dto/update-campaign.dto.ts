import {
  ApiPropertyOptional,
  IntersectionType,
  OmitType,
  PartialType,
  PickType,
} from '@nestjs/swagger';
import { IsDateString, IsOptional } from 'class-validator';
import { CreateCampaignDto } from './create-campaign.dto';

/** Fields null may clear; the others may be left out but never nulled. */
const NULLABLE_FIELDS = [
  'description',
  'fromName',
  'replyTo',
  'segmentId',
  'audienceFilter',
] as const;

class ScheduleField {
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'SCHEDULED campaigns only: null returns it to DRAFT; a future time (at most a year ahead) moves the schedule',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  scheduledAt?: string | null;
}

/** PATCH /campaigns/{id}: DRAFT or SCHEDULED only (409 otherwise). */
export class UpdateCampaignDto extends IntersectionType(
  PartialType(OmitType(CreateCampaignDto, NULLABLE_FIELDS), { skipNullProperties: false }),
  PartialType(PickType(CreateCampaignDto, NULLABLE_FIELDS)),
  ScheduleField,
) {}
