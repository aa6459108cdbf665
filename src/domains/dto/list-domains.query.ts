import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsEnum, IsOptional } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { DomainStatus } from '../domain.entity';

export class ListDomainsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: DomainStatus, enumName: 'DomainStatus' })
  @IsOptional()
  @IsEnum(DomainStatus)
  status?: DomainStatus;
}
