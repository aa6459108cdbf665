import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ImportStatus } from '../contact-import.entity';
import type { ImportRow } from '../contact-imports.repository';

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

/** An import job. */
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

export function toContactImportResponse(row: ImportRow): ContactImportResponse {
  return {
    id: row.id,
    status: row.status,
    total: row.total,
    processed: row.processed,
    created: row.created,
    updated: row.updated,
    failed: row.failed,
    errors: row.errors,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    finishedAt: row.finishedAt ? row.finishedAt.toISOString() : null,
  };
}
