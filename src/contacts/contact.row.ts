/**
 * A contact as the contacts queries return it (ContactsRepository, the
 * segment member queries): a database row, for code inside the application.
 * What the API shows is ContactResponse (dto/contact.response.ts).
 */
export interface ContactRow {
  id: string;
  projectId: string;
  email: string;
  subscribed: boolean;
  suppressed: boolean;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

const FIELDS = [
  'id',
  'project_id AS "projectId"',
  'email',
  'subscribed',
  'suppressed',
  'data',
  'created_at AS "createdAt"',
  'updated_at AS "updatedAt"',
];

/** The columns of a ContactRow from `contacts` (or any relation with its column names), unqualified. */
export const CONTACT_ROW_FIELDS = FIELDS.join(', ');

/** The same from `contacts c`, for statements that alias or join contacts. */
export const CONTACT_COLUMNS = FIELDS.map((field) => `c.${field}`).join(', ');
