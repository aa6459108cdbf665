import { DataSource } from 'typeorm';
import { ContactsService } from '../src/contacts/contacts.service';
import { EventsService } from '../src/events/events.service';
import { setupTestApp, TestApp } from './support/test-app';

/** ContactsService.upsertByEmail and EventsService.record as other features use them: inside their transaction. */
describe('ContactsService.upsertByEmail / EventsService.record', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let contacts: ContactsService;
  let events: EventsService;
  let dataSource: DataSource;
  let projectId: string;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    contacts = app.app.get(ContactsService);
    events = app.app.get(EventsService);
    dataSource = app.app.get(DataSource);
    projectId = (await app.createProject()).id;
  });
  afterAll(async () => env?.close());

  it('creates exactly one contact when many transactions upsert the same new email at once', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        dataSource.transaction((manager) =>
          contacts.upsertByEmail(manager, projectId, '  Race@Example.COM ', {
            defaultSubscribed: false,
            data: { [`k${i}`]: i },
          }),
        ),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.contact.id)).size).toBe(1);
    const [{ count }] = await dataSource.query(
      `SELECT count(*)::int AS count FROM contacts WHERE project_id = $1`,
      [projectId],
    );
    expect(count).toBe(1);
    const [row] = await dataSource.query(
      `SELECT email, subscribed, data FROM contacts WHERE project_id = $1`,
      [projectId],
    );
    expect(row.email).toBe('race@example.com');
    expect(row.subscribed).toBe(false);
    expect(Object.keys(row.data).sort()).toEqual(
      Array.from({ length: 12 }, (_, i) => `k${i}`).sort(),
    );
  });

  it('merges data, drops non-persistent values, removes null keys and reports subscription changes', async () => {
    const first = await dataSource.transaction((m) =>
      contacts.upsertByEmail(m, projectId, 'merge@example.com', {
        defaultSubscribed: true,
        data: { a: 1, b: 2 },
      }),
    );
    expect(first.created).toBe(true);
    const second = await dataSource.transaction((m) =>
      contacts.upsertByEmail(m, projectId, 'MERGE@example.com', {
        defaultSubscribed: true,
        subscribed: false,
        data: { b: null, c: { value: 3, persistent: false }, d: { value: 4, persistent: true } },
      }),
    );
    expect(second.created).toBe(false);
    expect(second.subscriptionChanged).toBe(true);
    expect(second.contact.subscribed).toBe(false);
    expect(second.contact.data).toEqual({ a: 1, d: 4 });
    const third = await dataSource.transaction((m) =>
      contacts.upsertByEmail(m, projectId, 'merge@example.com', {
        defaultSubscribed: true,
        subscribed: false,
      }),
    );
    expect(third.subscriptionChanged).toBe(false);
  });

  it('records events inside the caller transaction and rolls them back with it', async () => {
    const contact = (
      await dataSource.transaction((m) =>
        contacts.upsertByEmail(m, projectId, 'ev@example.com', { defaultSubscribed: true }),
      )
    ).contact;
    const recorded = await dataSource.transaction((m) =>
      events.record(m, { projectId, contactId: contact.id, name: 'email.sent', data: { x: 1 } }),
    );
    expect(recorded).toMatchObject({
      contactId: contact.id,
      name: 'email.sent',
      emailId: null,
      data: { x: 1 },
    });
    await expect(
      dataSource.transaction(async (m) => {
        await events.record(m, { projectId, contactId: contact.id, name: 'rolled.back' });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    const names = await dataSource.query(`SELECT name FROM events WHERE contact_id = $1`, [
      contact.id,
    ]);
    expect(names.map((r: { name: string }) => r.name)).toEqual(['email.sent']);
  });
});
