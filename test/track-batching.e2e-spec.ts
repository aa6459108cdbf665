import { DataSource } from 'typeorm';
import { newId } from '../src/database/id';
import {
  TrackBatchMismatchError,
  TrackRepository,
  TrackWrite,
} from '../src/track/track.repository';
import { TrackWriter } from '../src/track/track-writer';
import { holdContactLocks, lockWaiters } from './support/locks';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * POST /v1/track shares one statement between tracks that arrive together
 * (TrackWriter). These tests drive it hard enough that batches form, and check
 * that every request still gets its own contact and event, in its own project.
 */
describe('POST /v1/track under concurrency (batched writes)', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let dataSource: DataSource;
  let a: TestProject;
  let b: TestProject;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    dataSource = app.app.get(DataSource);
    a = await app.createProject('Batch A');
    b = await app.createProject('Batch B');
  });
  afterAll(async () => env?.close());

  const write = (
    projectId: string,
    email: string,
    name = 'batched',
    data: Record<string, unknown> = {},
  ): TrackWrite => ({
    projectId,
    email,
    patch: { set: data, remove: [] },
    event: { name, data },
  });

  it('gives each of 300 concurrent tracks its own event on the right contact of the right project', async () => {
    const emails = Array.from({ length: 30 }, (_, i) => `batch${i}@example.com`);
    // Existing contacts with a key that one of the tracks removes (null).
    for (const project of [a, b]) {
      for (const email of emails) {
        const res = await app.request({
          method: 'POST',
          url: '/contacts',
          key: project.secretKey,
          body: { email, data: { gone: 1, kept: 'yes' } },
        });
        expect(res.status).toBe(201);
      }
    }
    const sent: Array<{ project: TestProject; email: string; round: number }> = [];
    for (let round = 0; round < 5; round++) {
      for (const email of emails)
        for (const project of [a, b]) sent.push({ project, email, round });
    }
    const responses = await Promise.all(
      sent.map(({ project, email, round }) =>
        app.request({
          method: 'POST',
          url: '/v1/track',
          key: project.secretKey,
          body: {
            email: email.toUpperCase(),
            event: `round_${round}`,
            data: {
              [`k${round}`]: round,
              ...(round === 2 ? { gone: null } : {}),
              secret: { value: round, persistent: false },
            },
          },
        }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(sent.map(() => 200));

    for (const project of [a, b]) {
      const contacts = await dataSource.query(
        `SELECT id, email, data FROM contacts WHERE project_id = $1 ORDER BY email`,
        [project.id],
      );
      expect(contacts).toHaveLength(30);
      for (const contact of contacts) {
        expect(contact.data).toEqual({ kept: 'yes', k0: 0, k1: 1, k2: 2, k3: 3, k4: 4 });
      }
      const [{ count }] = await dataSource.query(
        `SELECT count(*)::int AS count FROM events WHERE project_id = $1`,
        [project.id],
      );
      expect(count).toBe(150);
    }

    // Each answer names the event recorded for that request, on that email's contact, in that project.
    const events = await dataSource.query(
      `SELECT e.id, e.project_id AS "projectId", e.name, e.data, e.created_at AS "createdAt", c.email, c.id AS "contactId"
       FROM events e JOIN contacts c ON c.id = e.contact_id WHERE e.project_id = ANY($1)`,
      [[a.id, b.id]],
    );
    const byId = new Map<string, (typeof events)[number]>(
      events.map((e: { id: string }) => [e.id, e]),
    );
    responses.forEach((res, i) => {
      const { project, email, round } = sent[i];
      const event = byId.get(res.body.data.event);
      expect(event).toMatchObject({
        projectId: project.id,
        contactId: res.body.data.contact,
        email,
        name: `round_${round}`,
        data: { [`k${round}`]: round, secret: { value: round, persistent: false } },
      });
      expect(new Date(res.body.data.timestamp).getTime()).toBe(new Date(event.createdAt).getTime());
    });
    expect(byId.size).toBe(300);

    // Batches formed: events written by one statement share its transaction's timestamp.
    const timestamps = new Set(
      events.map((e: { createdAt: Date }) => new Date(e.createdAt).getTime()),
    );
    expect(timestamps.size).toBeLessThan(100);
  });

  it('writes a failing track alone: its batch-mates still commit', async () => {
    const writer = app.app.get(TrackWriter);
    const missingProject = newId(); // the contacts' foreign key refuses it
    const writes = Array.from({ length: 10 }, (_, i) =>
      write(i === 6 ? missingProject : a.id, `mate${i}@example.com`, 'mate'),
    );
    const results = await Promise.allSettled(writes.map((w) => writer.write(w)));
    expect(results.map((r) => r.status)).toEqual(
      writes.map((_, i) => (i === 6 ? 'rejected' : 'fulfilled')),
    );
    expect((results[6] as PromiseRejectedResult).reason).toMatchObject({
      driverError: { code: '23503' },
    });
    const [{ count }] = await dataSource.query(
      `SELECT count(*)::int AS count FROM events WHERE project_id = $1 AND name = 'mate'`,
      [a.id],
    );
    expect(count).toBe(9);
  });

  it('does not let contacts locked elsewhere hold up the other tracks', async () => {
    const writer = app.app.get(TrackWriter);
    const busy = Array.from({ length: 6 }, (_, i) => `busy${i}@example.com`);
    for (const email of busy) await writer.write(write(a.id, email, 'seed'));
    // A long transaction elsewhere (an import chunk, a send rendering) holds all six contacts.
    const held = await holdContactLocks(dataSource, a.id, busy);
    try {
      // The first two tracks fill both statement slots, one busy contact each; the next batch
      // starts with the other four busy contacts, then 40 free ones.
      const blocked = busy.map((email) =>
        writer.write(write(a.id, email, 'held', { after: 'lock' })),
      );
      let blockedSettled = false;
      void Promise.allSettled(blocked).then(() => (blockedSettled = true));
      const others = Array.from({ length: 40 }, (_, i) =>
        writer.write(write(a.id, `free${i}@example.com`, 'free')),
      );
      // Without the lock timeout both slots would wait for the lock; with one retry lane and no
      // timeout there, the four busy contacts would fill it. Either way these would never finish.
      const timeout = new Promise<'stuck'>((resolve) =>
        setTimeout(() => resolve('stuck'), 5000).unref(),
      );
      expect(await Promise.race([Promise.all(others).then(() => 'done'), timeout])).toBe('done');
      expect(blockedSettled).toBe(false); // the busy contacts' tracks wait for the lock, apart
      expect(await lockWaiters(dataSource, 4)).toBe(4); // as many as the patient lane runs at once
      await held.commit();
      const rows = await Promise.all(blocked);
      expect(rows.map((r) => r.email)).toEqual(busy);
    } finally {
      await held.rollback();
    }
    const contacts = await dataSource.query(
      `SELECT data FROM contacts WHERE project_id = $1 AND email = ANY($2)`,
      [a.id, busy],
    );
    expect(contacts.map((c: { data: unknown }) => c.data)).toEqual(
      busy.map(() => ({ after: 'lock' })),
    );
  });

  it('answers an error to every track of a batch whose commit is unknown, and writes none of them again', async () => {
    const writer = app.app.get(TrackWriter);
    const repository = app.app.get(TrackRepository);
    const many = repository.upsertContactsAndInsertEvents.bind(repository);
    // The statement commits, then the answer is lost (as when the connection drops after COMMIT).
    const spy = jest
      .spyOn(repository, 'upsertContactsAndInsertEvents')
      .mockImplementation(async (m, ws) => {
        const rows = await many(m, ws);
        throw new TrackBatchMismatchError(rows.length - 1, ws.length);
      });
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          writer.write(write(b.id, `unknown${i}@example.com`, 'unknown')),
        ),
      );
      expect(results.every((r) => r.status === 'rejected')).toBe(true);
    } finally {
      spy.mockRestore();
    }
    const [{ count }] = await dataSource.query(
      `SELECT count(*)::int AS count FROM events WHERE project_id = $1 AND name = 'unknown'`,
      [b.id],
    );
    expect(count).toBe(8); // each written once, by its batch; no retry wrote a second copy
  });

  it('writes the tracks of one contact one statement after another, in arrival order', async () => {
    const writer = app.app.get(TrackWriter);
    const repository = app.app.get(TrackRepository);
    // Record when each statement runs and which contacts it writes (the real statements still run).
    const statements: Array<{ emails: string[]; start: number; end: number }> = [];
    const timed = <T>(emails: string[], run: () => Promise<T>): Promise<T> => {
      const entry = { emails, start: performance.now(), end: Infinity };
      statements.push(entry);
      return run().finally(() => (entry.end = performance.now()));
    };
    const one = repository.upsertContactAndInsertEvent.bind(repository);
    const many = repository.upsertContactsAndInsertEvents.bind(repository);
    const spies = [
      jest
        .spyOn(repository, 'upsertContactAndInsertEvent')
        .mockImplementation((m, w) => timed([w.email], () => one(m, w))),
      jest.spyOn(repository, 'upsertContactsAndInsertEvents').mockImplementation((m, ws) =>
        timed(
          ws.map((w) => w.email),
          () => many(m, ws),
        ),
      ),
    ];
    try {
      const email = 'order@example.com';
      const writes = Array.from({ length: 24 }, (_, i) =>
        i % 3 === 0
          ? write(b.id, email, 'ordered', { last: i })
          : write(b.id, `other${i}@example.com`),
      );
      const rows = await Promise.all(writes.map((w) => writer.write(w)));
      expect(new Set(rows.filter((r) => r.email === email).map((r) => r.contactId)).size).toBe(1);
      const mine = statements.filter((s) => s.emails.includes(email));
      expect(mine).toHaveLength(8);
      for (const s of mine) expect(s.emails.filter((e) => e === email)).toHaveLength(1);
      for (let i = 1; i < mine.length; i++)
        expect(mine[i].start).toBeGreaterThanOrEqual(mine[i - 1].end);
      expect(statements.length).toBeLessThan(24); // and the others did share statements
    } finally {
      spies.forEach((spy) => spy.mockRestore());
    }
    const [contact] = await dataSource.query(
      `SELECT data FROM contacts WHERE project_id = $1 AND email = $2`,
      [b.id, 'order@example.com'],
    );
    expect(contact.data).toEqual({ last: 21 });
  });

  it('cannot deadlock: concurrent batches over the same contacts in opposite orders all commit', async () => {
    const repository = app.app.get(TrackRepository);
    const emails = Array.from(
      { length: 200 },
      (_, i) => `lock${String(i).padStart(3, '0')}@example.com`,
    );
    // Without the function's lock timeout, so a wrong lock order shows as Postgres's deadlock
    // error (after 1 s) rather than as a timeout, and a slow commit cannot fail the test.
    await dataSource.query(`ALTER FUNCTION track_contacts_and_events(jsonb) RESET lock_timeout`);
    try {
      for (let round = 0; round < 5; round++) {
        const forward = emails.map((email) => write(a.id, email, `lock_${round % 3}`));
        const backward = [...forward].reverse();
        const shuffled = [...forward].sort(() => Math.random() - 0.5);
        const results = await Promise.all(
          [forward, backward, shuffled].map((batch) =>
            repository.upsertContactsAndInsertEvents(dataSource.manager, batch),
          ),
        );
        // Rows come back in the order of the input.
        results.forEach((rows, i) => {
          const input = [forward, backward, shuffled][i];
          expect(rows.map((row) => row.email)).toEqual(input.map((w) => w.email));
        });
      }
    } finally {
      await dataSource.query(
        `ALTER FUNCTION track_contacts_and_events(jsonb) SET lock_timeout = '100ms'`,
      );
    }
    const [{ count }] = await dataSource.query(
      `SELECT count(*)::int AS count FROM events WHERE project_id = $1 AND name LIKE 'lock_%'`,
      [a.id],
    );
    expect(count).toBe(200 * 3 * 5);
  });
});
