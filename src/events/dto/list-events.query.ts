import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { MAX_EVENT_NAME_LENGTH } from '../event-names';

export class ListEventsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ description: 'Exact event name' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_EVENT_NAME_LENGTH)
  name?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID('all')
  contactId?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Events created at or after this instant',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  since?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Events created before this instant' })
  @IsOptional()
  @IsISO8601({ strict: true })
  until?: string;
}
