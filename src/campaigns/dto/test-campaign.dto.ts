import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { toNormalizedEmail } from '../../common/validation/validators';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsEmail,
  MaxLength,
} from 'class-validator';

export class TestCampaignDto {
  @ApiProperty({
    type: [String],
    format: 'email',
    minItems: 1,
    maxItems: 5,
    example: ['me@example.com'],
  })
  @Transform(({ value }) =>
    Array.isArray(value) ? value.map((v: unknown) => toNormalizedEmail({ value: v })) : value,
  )
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(5)
  @ArrayUnique()
  @IsEmail({}, { each: true })
  @MaxLength(320, { each: true })
  emails: string[];
}
