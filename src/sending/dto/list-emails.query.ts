import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsEnum, IsOptional, IsUUID } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { toBooleanQuery } from '../../common/validation/validators';
import { EmailStatus } from '../email.entity';

export class ListEmailsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: EmailStatus, enumName: 'EmailStatus' })
  @IsOptional()
  @IsEnum(EmailStatus)
  status?: EmailStatus;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  contactId?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  campaignId?: string;

  // Per-recipient open and click lists (a campaign's page in the dashboard).
  @ApiPropertyOptional({
    type: Boolean,
    description: 'true: only emails opened at least once (openedAt set); false: never opened',
  })
  @IsOptional()
  @Transform(toBooleanQuery)
  @IsBoolean()
  opened?: boolean;

  @ApiPropertyOptional({
    type: Boolean,
    description: 'true: only emails with at least one tracked click (clickedAt set); false: none',
  })
  @IsOptional()
  @Transform(toBooleanQuery)
  @IsBoolean()
  clicked?: boolean;
}
