import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ImportStatus } from '../contact-import.entity';

/** One error of one input row (ImportRowError as the API shows it). */
export class ImportRowErrorResponse {
  @ApiProperty({ type: 'integer', minimum: 1, description: '1-based position among the data rows' })
  row: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'CSV only: the line the record starts on (the header is line 1)',
  })
  line?: number;

  @ApiProperty({ type: String, nullable: true })
  email: string | null;

  @ApiProperty({ example: 'email' })
  field: string;

  @ApiProperty({ example: 'invalid_string', description: 'A field code as in error.errors[].code' })
  code: string;

  @ApiProperty()
  message: string;
}

/** An import job (ContactImportView as a documented class). */
export class ContactImportResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ enum: ImportStatus, enumName: 'ImportStatus' })
  status: ImportStatus;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Rows received' })
  total: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  processed: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  created: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  updated: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  failed: number;

  @ApiProperty({
    type: [ImportRowErrorResponse],
    description: 'The first errors (bounded), in row order',
  })
  errors: ImportRowErrorResponse[];

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  finishedAt: string | null;
}

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
