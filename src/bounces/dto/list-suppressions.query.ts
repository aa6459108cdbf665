import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsEnum, IsOptional } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { SuppressionReason } from '../../contacts/contact.entity';

export class ListSuppressionsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: SuppressionReason, enumName: 'SuppressionReason' })
  @IsOptional()
  @IsEnum(SuppressionReason)
  reason?: SuppressionReason;
}
