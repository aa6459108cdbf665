import { IntersectionType, OmitType, PartialType, PickType } from '@nestjs/swagger';
import { CreateWebhookDto } from './create-webhook.dto';

/** `description` may be cleared with null; the others may be left out but never nulled. */
export class UpdateWebhookDto extends IntersectionType(
  PartialType(OmitType(CreateWebhookDto, ['description'] as const), { skipNullProperties: false }),
  PartialType(PickType(CreateWebhookDto, ['description'] as const)),
) {}
