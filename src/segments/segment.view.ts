import { ApiProperty } from '@nestjs/swagger';
import { ContactView } from '../contacts/contact.view';
import type { ConditionGroup } from '../conditions/condition.types';

export class SegmentView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ nullable: true, type: String })
  description: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true })
  condition: ConditionGroup;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Contacts matching the condition; cached for up to 60 seconds' })
  memberCount: number;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;
}

export class SegmentPreviewView {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Contacts matching the condition now' })
  count: number;

  @ApiProperty({ type: [ContactView], description: 'Up to 10 matching contacts, newest first' })
  sample: ContactView[];
}
