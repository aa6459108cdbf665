import { ApiProperty } from '@nestjs/swagger';
import { IdParamDto } from '../../common/validation/id.param';
import { IsUUID } from 'class-validator';

/** `/webhooks/{id}/deliveries/{deliveryId}/…` */
export class DeliveryParamDto extends IdParamDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  deliveryId: string;
}
