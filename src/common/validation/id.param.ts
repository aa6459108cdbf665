import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

/**
 * Path `{id}` of every route (`@Param() params: IdParamDto`): anything but a
 * UUID is a 400 BAD_REQUEST whose `errors[0].field` is `id`, before a service
 * runs; a well-formed id no row has is the service's 404 `<RESOURCE>_NOT_FOUND`.
 * A route with a second id declares its own DTO with that parameter's name.
 */
export class IdParamDto {
  @ApiProperty({
    format: 'uuid',
    description: 'A UUID; anything else is a 400 naming the parameter',
  })
  @IsUUID('all')
  id: string;
}
