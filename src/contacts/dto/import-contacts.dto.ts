import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** One row of a JSON import: the fields of POST /contacts. */
export class ImportContactRowDto {
  @ApiProperty({ example: 'ada@example.com' })
  email: string;

  @ApiPropertyOptional({
    description: 'Omitted: new contacts are subscribed, existing ones keep their state',
  })
  subscribed?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Merged into contact.data; at most 64 KB',
  })
  data?: Record<string, unknown>;
}

/** JSON body of POST /contacts/import (checked by import-rows.ts, not by a validation DTO). */
export class ImportContactsDto {
  @ApiProperty({ type: [ImportContactRowDto], minItems: 1, maxItems: 10000 })
  contacts: ImportContactRowDto[];
}
