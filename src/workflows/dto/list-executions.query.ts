import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsEnum, IsOptional, IsUUID } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { ExecutionStatus } from '../workflow.entity';

export class ListExecutionsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: ExecutionStatus, enumName: 'ExecutionStatus' })
  @IsOptional()
  @IsEnum(ExecutionStatus)
  status?: ExecutionStatus;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID('all')
  contactId?: string;
}
