import { ApiProperty } from '@nestjs/swagger';
import { ContactEmailField } from '../../contacts/dto/validators';

export class CreateSuppressionDto {
  @ApiProperty({
    example: 'ada@example.com',
    description: 'The contact is created (unsubscribed) when the project has none with this email',
  })
  @ContactEmailField()
  email: string;
}
