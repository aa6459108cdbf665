/**
 * An event as EventsRepository returns it and as other features receive it
 * from EventsService.record: a database row. What the API shows is
 * EventResponse (dto/event.response.ts).
 */
export interface EventRow {
  id: string;
  projectId: string;
  contactId: string | null;
  emailId: string | null;
  name: string;
  data: Record<string, unknown>;
  createdAt: Date;
}
