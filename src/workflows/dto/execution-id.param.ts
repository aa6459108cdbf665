import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

/** `/workflows/{id}/executions/{executionId}`. */
export class ExecutionIdParamDto {
  @ApiProperty({
    format: 'uuid',
    description: 'The workflow; anything but a UUID is a 400 naming the parameter',
  })
  @IsUUID('all')
  id: string;

  @ApiProperty({
    format: 'uuid',
    description: 'The execution; anything but a UUID is a 400 naming the parameter',
  })
  @IsUUID('all')
  executionId: string;
}
