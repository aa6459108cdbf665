import { ApiProperty } from '@nestjs/swagger';

export type SubscribeStatus = 'pending' | 'subscribed';

/** What POST /v1/subscribe answers. */
export class SubscribeResponse {
  @ApiProperty({ format: 'uuid', description: 'contact id' })
  contact: string;

  @ApiProperty({
    enum: ['pending', 'subscribed'],
    description:
      'subscribed: the contact is subscribed now; pending: it stays unsubscribed until the link of the confirmation email is followed',
  })
  status: SubscribeStatus;
}
