import { ApiProperty } from '@nestjs/swagger';
import type { ConditionGroup } from '../../conditions/condition.types';
import { ContactResponse } from '../../contacts/dto/contact.response';
import type { Segment } from '../segment.entity';

export class SegmentResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ nullable: true, type: String })
  description: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true })
  condition: ConditionGroup;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Contacts matching the condition; cached for up to 60 seconds, except for a segment an enabled SEGMENT_ENTRY/SEGMENT_EXIT workflow uses, whose count is exact (its kept membership)',
  })
  memberCount: number;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;
}

export class SegmentPreviewResponse {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Contacts matching the condition now' })
  count: number;

  @ApiProperty({ type: [ContactResponse], description: 'Up to 10 matching contacts, newest first' })
  sample: ContactResponse[];
}

/** The segment with the member count the caller settled on (stored, or counted now). */
export function toSegmentResponse(segment: Segment, memberCount: number): SegmentResponse {
  return {
    id: segment.id,
    name: segment.name,
    description: segment.description,
    condition: segment.condition,
    memberCount,
    createdAt: segment.createdAt.toISOString(),
    updatedAt: segment.updatedAt.toISOString(),
  };
}
