import { DataSource } from 'typeorm';
import { ContactsService } from '../src/contacts/contacts.service';
import { Email, EmailSource, EmailStatus } from '../src/sending/email.entity';
import { EmailsRepository } from '../src/sending/emails.repository';
import { setupTestApp, TestApp } from './support/test-app';

/**
 * EmailsRepository.insertEmails writes rows from one JSON parameter
 * (jsonb_populate_recordset): every value must arrive as given, text of any
 * shape included, and a property left undefined must take its column's
 * default, never another row's value or NULL.
 */
describe('EmailsRepository.insertEmails', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let dataSource: DataSource;
  let repository: EmailsRepository;
  let projectId: string;
  let contactId: string;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    dataSource = app.app.get(DataSource);
    repository = app.app.get(EmailsRepository);
    projectId = (await app.createProject()).id;
    const contacts = app.app.get(ContactsService);
    contactId = (
      await dataSource.transaction((m) =>
        contacts.upsertByEmail(m, projectId, 'insert@example.com', { defaultSubscribed: true }),
      )
    ).contact.id;
  });
  afterAll(async () => env?.close());

  function email(overrides: Partial<Email>): Email {
    const row = new Email();
    Object.assign(row, {
      projectId,
      contactId,
      templateId: null,
      campaignId: null,
      workflowExecutionId: null,
      workflowStepId: null,
      source: EmailSource.TRANSACTIONAL,
      marketing: false,
      trackOpens: false,
      trackClicks: false,
      toEmail: 'insert@example.com',
      toName: null,
      fromEmail: 'hello@example.com',
      fromName: null,
      replyTo: null,
      subject: 'Hello',
      html: '<p>Hi</p>',
      text: 'Hi',
      contentId: null,
      headers: {},
      attachments: [],
      status: EmailStatus.QUEUED,
      error: null,
      attempts: 0,
      priority: 1,
      ...overrides,
    });
    return row;
  }

  it('stores every value as given: quotes, backslashes, newlines, non-ASCII, JSON-looking text, jsonb objects, dates', async () => {
    const tricky =
      'a "quoted" \\ back\\slash\nnew line\r\n\ttab — ünïcödé 🚀 {"not": "json"} \u2028 end';
    const queuedAt = new Date('2026-01-02T03:04:05.678Z');
    const given = {
      subject: tricky,
      html: `<p title="${tricky}">${tricky}</p>`,
      text: tricky,
      toName: 'Zoë "Z" O\'Brien',
      headers: { 'X-Tricky': tricky, 'X-Plain': 'v' },
      priority: 3,
      marketing: true,
      trackOpens: true,
      queuedAt,
    };
    const row = email(given);
    await dataSource.transaction((m) => repository.insertEmails(m, [row]));
    const [stored] = await dataSource.query(
      `SELECT subject, html, text, to_name AS "toName", headers, priority, marketing, track_opens AS "trackOpens",
              track_clicks AS "trackClicks", queued_at AS "queuedAt", status, source, attachments
         FROM emails WHERE id = $1`,
      [row.id],
    );
    expect(stored).toEqual({
      ...given,
      trackClicks: false,
      status: 'QUEUED',
      source: 'TRANSACTIONAL',
      attachments: [],
    });
  });

  it('gives an undefined property its column default, in a batch whose other rows set it', async () => {
    const set = email({ queuedAt: new Date('2020-05-05T00:00:00.000Z'), subject: 'set' });
    const unset = email({ subject: 'unset' });
    delete (unset as Partial<Email>).queuedAt;
    delete (unset as Partial<Email>).headers;
    const before = new Date();
    await dataSource.transaction((m) => repository.insertEmails(m, [set, unset]));
    const rows: { id: string; queuedAt: Date; headers: unknown; createdAt: Date }[] =
      await dataSource.query(
        `SELECT id, queued_at AS "queuedAt", headers, created_at AS "createdAt" FROM emails WHERE id = ANY($1::uuid[])`,
        [[set.id, unset.id]],
      );
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(set.id)?.queuedAt).toEqual(new Date('2020-05-05T00:00:00.000Z'));
    // Defaults: now() and '{}' (a NULL here would break the NOT NULL columns or read as "no headers").
    expect(byId.get(unset.id)?.queuedAt.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5_000);
    expect(byId.get(unset.id)?.headers).toEqual({});
    expect(byId.get(unset.id)?.createdAt).toBeInstanceOf(Date);
  });

  it('inserts nothing when one row is refused (the whole call is one transaction with the caller)', async () => {
    const good = email({ subject: 'good' });
    const bad = email({ subject: 'bad', toEmail: 'x'.repeat(400) });
    await expect(
      dataSource.transaction((m) => repository.insertEmails(m, [good, bad])),
    ).rejects.toThrow();
    const [{ n }] = await dataSource.query(
      `SELECT count(*)::int AS n FROM emails WHERE id = ANY($1::uuid[])`,
      [[good.id, bad.id]],
    );
    expect(n).toBe(0);
  });

  it('inserts more rows than one statement takes (500), ids assigned when missing', async () => {
    const rows = Array.from({ length: 1203 }, (_, i) => email({ subject: `bulk ${i}` }));
    delete (rows[7] as Partial<Email>).id;
    await dataSource.transaction((m) => repository.insertEmails(m, rows));
    expect(rows[7].id).toMatch(/^[0-9a-f-]{36}$/);
    const [{ n, subjects }] = await dataSource.query(
      `SELECT count(*)::int AS n, count(DISTINCT subject)::int AS subjects FROM emails WHERE subject LIKE 'bulk %' AND project_id = $1`,
      [projectId],
    );
    expect(n).toBe(1203);
    expect(subjects).toBe(1203);
  });
});
