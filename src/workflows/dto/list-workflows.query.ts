import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { toBooleanQuery } from '../../common/validation/validators';

export class ListWorkflowsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ type: Boolean })
  @IsOptional()
  @Transform(toBooleanQuery)
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  search?: string;
}
