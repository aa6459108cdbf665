import { ApiProperty } from '@nestjs/swagger';

/** Where GET /emails/{id}/content got the message from. */
export enum EmailContentOrigin {
  /** The rendered message stored with the record at send time (transactional and workflow mail). */
  STORED = 'STORED',
  /** Campaign mail stores its content once: rendered now for the contact as it is now. */
  RENDERED = 'RENDERED',
}

/** The message of one email record (GET /emails/{id}/content). */
export class EmailContentResponse {
  @ApiProperty() subject: string;
  @ApiProperty({
    description:
      'The HTML body as composed, before delivery adds the open pixel and rewrites tracked links',
  })
  html: string;
  @ApiProperty({ description: 'The plain-text part' }) text: string;
  @ApiProperty({
    enum: EmailContentOrigin,
    enumName: 'EmailContentOrigin',
    description:
      'STORED: the rendered message stored when the email was accepted, what delivery sends (its unsubscribe links shown as the preview link). RENDERED: campaign mail, whose content is stored once per campaign and rendered per recipient at delivery; rendered again now with the contact’s current data, so it differs from what was sent if that data changed since, and its unsubscribe link is a preview link',
  })
  origin: EmailContentOrigin;
}
