import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsOptional } from 'class-validator';

export class SendCampaignDto {
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'Omitted, null or in the past: send now. Future (at most one year ahead): SCHEDULED until then.',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  scheduledFor?: string | null;
}
