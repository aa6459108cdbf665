import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsEnum, IsOptional, IsString, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { TemplateType } from '../template.entity';

export class ListTemplatesQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: TemplateType, enumName: 'TemplateType' })
  @IsOptional()
  @IsEnum(TemplateType)
  type?: TemplateType;

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  search?: string;
}
