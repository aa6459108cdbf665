import type { ContactRow } from './contact.row';

/** The export's columns, in order; `data` is the contact's data as one JSON object. */
export const CONTACT_CSV_COLUMNS = [
  'id',
  'email',
  'subscribed',
  'suppressed',
  'createdAt',
  'data',
] as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

export function contactCsvHeader(): string {
  return `${CONTACT_CSV_COLUMNS.join(',')}\r\n`;
}

export function contactCsvLine(row: ContactRow): string {
  return (
    [
      row.id,
      row.email,
      String(row.subscribed),
      String(row.suppressed),
      row.createdAt.toISOString(),
      JSON.stringify(row.data ?? {}),
    ]
      .map(csvField)
      .join(',') + '\r\n'
  );
}
