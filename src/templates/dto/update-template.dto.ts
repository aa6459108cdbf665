import { IntersectionType, OmitType, PartialType, PickType } from '@nestjs/swagger';
import { CreateTemplateDto } from './create-template.dto';

/** The sender fields may be cleared with null; the others may be left out but never nulled. */
const NULLABLE_FIELDS = ['from', 'fromName', 'replyTo'] as const;

export class UpdateTemplateDto extends IntersectionType(
  PartialType(OmitType(CreateTemplateDto, NULLABLE_FIELDS), { skipNullProperties: false }),
  PartialType(PickType(CreateTemplateDto, NULLABLE_FIELDS)),
) {}
