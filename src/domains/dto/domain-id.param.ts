import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

export class DomainIdParam {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}
