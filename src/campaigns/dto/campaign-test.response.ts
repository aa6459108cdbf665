import { ApiProperty } from '@nestjs/swagger';
import { EmailStatus } from '../../sending/email.entity';

export class CampaignTestEmail {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'email' }) to: string;
  @ApiProperty({ format: 'uuid' }) contact: string;
  @ApiProperty({ enum: EmailStatus, enumName: 'EmailStatus' }) status: EmailStatus;
}

export class CampaignTestResponse {
  @ApiProperty({
    type: [CampaignTestEmail],
    description: 'One email record per address (GET /emails/{id}); not counted in the campaign',
  })
  emails: CampaignTestEmail[];
}
