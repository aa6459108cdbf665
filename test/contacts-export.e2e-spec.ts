import { parse } from 'csv-parse/sync';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import type { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { ContactsRepository } from '../src/contacts/contacts.repository';
import { ContactsService } from '../src/contacts/contacts.service';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/** GET /contacts/export: the list's filters, every matching contact, streamed a page at a time. */
describe('contacts CSV export (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let db: DataSource;
  let project: TestProject;
  let other: TestProject;
  const COUNT = 4500;
  const TRICKY = {
    note: 'says "hi", then\nleaves',
    city: 'Zürich, CH',
    n: 3,
    nested: { a: [1, 2] },
  };

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    db = app.app.get(DataSource);
    project = await app.createProject('Export');
    other = await app.createProject('Other');
    // Ids in time order like the API's (UUIDv7-shaped from a counter), every 3rd unsubscribed.
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT ('01900000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1,
              'person' || i || '@example.com', i % 3 <> 0,
              CASE WHEN i = 7 THEN $2::jsonb ELSE jsonb_build_object('i', i) END,
              now(), now()
       FROM generate_series(1, $3::int) AS i`,
      [project.id, JSON.stringify(TRICKY), COUNT],
    );
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       VALUES ('01900000-0000-7000-9000-000000000001', $1, 'person1@example.com', true, '{}', now(), now())`,
      [other.id],
    );
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await ctx?.close();
  });

  const download = (query = '') =>
    app.request({ method: 'GET', url: `/contacts/export${query}`, key: project.secretKey });

  const rowsOf = (raw: string) =>
    parse(raw, { columns: true, skip_empty_lines: true }) as Array<Record<string, string>>;

  it('exports every contact of the project, newest first, with the documented columns and exact values', async () => {
    const res = await download();
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="contacts.csv"');
    // Streamed, not built into one payload first.
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.raw.split('\r\n')[0]).toBe('id,email,subscribed,suppressed,createdAt,data');
    const rows = rowsOf(res.raw);
    expect(rows).toHaveLength(COUNT);
    expect(new Set(rows.map((r) => r.id)).size).toBe(COUNT);
    expect(rows[0].email).toBe(`person${COUNT}@example.com`);
    expect(rows[COUNT - 1].email).toBe('person1@example.com');
    const ids = rows.map((r) => r.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const seven = rows.find((r) => r.email === 'person7@example.com')!;
    expect(JSON.parse(seven.data)).toEqual(TRICKY);
    expect(seven.subscribed).toBe('true');
    expect(seven.suppressed).toBe('false');
    expect(Number.isNaN(Date.parse(seven.createdAt))).toBe(false);
    expect(rows.find((r) => r.email === 'person9@example.com')!.subscribed).toBe('false');
    // Another project's contact with the same email is not in it.
    expect(rows.filter((r) => r.email === 'person1@example.com')).toHaveLength(1);
  });

  it('the list filters select the same contacts as GET /contacts', async () => {
    for (const query of ['?subscribed=false', '?search=PERSON44', '?email=Person12@Example.com']) {
      const exported = rowsOf((await download(query)).raw).map((r) => r.id);
      const listed = await app.request({
        method: 'GET',
        url: `/contacts${query}&limit=1`,
        key: project.secretKey,
      });
      expect(listed.status).toBe(200);
      expect(exported.length).toBe(listed.body.data.total);
      expect(exported.length).toBeGreaterThan(0);
      expect(exported[0]).toBe(listed.body.data.items[0].id);
    }
    expect(rowsOf((await download('?subscribed=false')).raw)).toHaveLength(COUNT / 3);
    const none = await download('?email=nobody@example.com');
    expect(none.status).toBe(200);
    expect(none.raw).toBe('id,email,subscribed,suppressed,createdAt,data\r\n');
  });

  it('bad filters are 400; the export needs a secret key', async () => {
    const bad = await download('?subscribed=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('BAD_REQUEST');
    const anonymous = await app.request({ method: 'GET', url: '/contacts/export' });
    expect(anonymous.status).toBe(401);
  });

  it('reads a page only when the reader has taken the previous one (never the whole table at once)', async () => {
    const pages = jest.spyOn(ContactsRepository.prototype, 'exportPage');
    pages.mockClear();
    const stream: Readable = app.app.get(ContactsService).exportCsv(project.id, {});
    const first = await new Promise<string>((resolve) =>
      stream.once('data', (chunk: Buffer | string) => {
        stream.pause();
        resolve(String(chunk));
      }),
    );
    expect(first).toBe('id,email,subscribed,suppressed,createdAt,data\r\n');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // A paused reader: at most the page being buffered ahead, not the 5 pages of the table.
    expect(pages.mock.calls.length).toBeLessThanOrEqual(2);
    let rest = '';
    stream.on('data', (chunk: Buffer | string) => (rest += String(chunk)));
    stream.resume();
    await new Promise((resolve) => stream.once('end', resolve));
    expect(pages.mock.calls.length).toBe(5);
    expect(rowsOf(first + rest)).toHaveLength(COUNT);
    pages.mockRestore();
  });

  it('over real HTTP, a client that stops reading stops the reads', async () => {
    const pages = jest.spyOn(ContactsRepository.prototype, 'exportPage');
    await app.app.listen(0, '127.0.0.1');
    const port = (app.app.getHttpServer().address() as AddressInfo).port;
    pages.mockClear();
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/contacts/export',
          headers: { authorization: `Bearer ${project.secretKey}` },
        },
        (res) => {
          expect(res.statusCode).toBe(200);
          res.once('data', () => {
            // Gone after the first bytes: the server must not go on reading every page.
            res.destroy();
            req.destroy();
            setTimeout(resolve, 500);
          });
        },
      );
      req.on('error', () => undefined);
      req.end();
      setTimeout(() => reject(new Error('no answer')), 10_000);
    });
    expect(pages.mock.calls.length).toBeLessThan(5);
    pages.mockRestore();
  });
});
