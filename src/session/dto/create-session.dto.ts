import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

export class CreateSessionDto {
  @ApiProperty({
    description:
      "A project's secret key (sk_…); it is exchanged for the session cookie and not kept",
    example: 'sk_…',
  })
  @IsString()
  @MaxLength(200)
  key: string;
}
