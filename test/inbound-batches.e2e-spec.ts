import { Client } from 'pg';
import { newId } from '../src/database/id';
import { InboundReports } from '../src/inbound/inbound-reports';
import { dsnMessage, plainMessage, sendInbound, TEST_TOKENS } from './support/inbound';
import { freePort } from './support/processes';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

/**
 * How the inbound pipeline batches (docs/deliverability.md): the listener
 * writes the messages that arrive together in one statement and still
 * answers each session only once its row is committed; the worker applies
 * the messages of concurrent jobs in one transaction, and a message
 * Postgres refuses does not hold back the others of its batch.
 */
const DOMAIN = 'bounces.batches.test';

function storedId(response: string): string {
  const match = /Stored as ([0-9a-f-]{36})/.exec(response);
  if (!match) throw new Error(`no stored id in "${response}"`);
  return match[1];
}

describe('inbound batches (e2e)', () => {
  let t: SendingTest;
  let pg: Client;
  let port: number;

  const sentEmail = async (to: string) => {
    const res = await t.send({ to, from: 'hello@acme.test', subject: 'Hi', body: '<p>hi</p>' });
    expect(res.status).toBe(200);
    const id = res.body.data.emails[0].id as string;
    await waitForEmailStatus(t.app, t.project.secretKey, id, ['SENT']);
    return id;
  };

  /** A stored DSN for the email (a row only: no job, so only the test's calls process it). */
  const storedDsn = async (emailId: string, recipient: string, tag: string) => {
    const id = newId();
    const to = TEST_TOKENS.address(emailId, DOMAIN);
    await pg.query(
      `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to) VALUES ($1, $2, '', $3)`,
      [id, Buffer.from(dsnMessage({ to, recipient, tag })), [to]],
    );
    return id;
  };

  const rowsOf = async (ids: string[]) =>
    (
      await pg.query<{ id: string; status: string; processed_at: Date | null }>(
        'SELECT id, status, processed_at FROM inbound_messages WHERE id = ANY($1::uuid[])',
        [ids],
      )
    ).rows;

  beforeAll(async () => {
    port = await freePort();
    t = await startSendingTest('Inbound batches', {
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
      RETURN_PATH_DOMAIN: DOMAIN,
    });
    pg = new Client({ connectionString: t.db.url });
    await pg.connect();
  });

  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  it('the listener writes concurrent messages together and answers each session only after its row is committed', async () => {
    const locker = new Client({ connectionString: t.db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE inbound_messages IN ACCESS EXCLUSIVE MODE');
      let answered = 0;
      const sending = Array.from({ length: 8 }, (_, i) =>
        sendInbound(
          port,
          { from: '', to: [TEST_TOKENS.address(newId(), DOMAIN)] },
          plainMessage(`group commit ${i}`),
        ).then((answer) => {
          answered += 1;
          return answer;
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(answered).toBe(0);
      await locker.query('COMMIT');
      const answers = await Promise.all(sending);
      expect(answers.map((answer) => answer.code)).toEqual(Array(8).fill(250));
      const ids = answers.map((answer) => storedId(answer.response));
      expect(new Set(ids).size).toBe(8);
      const rows = await pg.query<{ raw: Buffer; received_at: Date }>(
        'SELECT raw, received_at FROM inbound_messages WHERE id = ANY($1::uuid[])',
        [ids],
      );
      expect(rows.rows.map((row) => row.raw.toString()).sort()).toEqual(
        Array.from({ length: 8 }, (_, i) => expect.stringContaining(`group commit ${i}`)),
      );
      // Rows of one statement share its transaction's timestamp: the messages that waited went in one write.
      const stamps = new Set(rows.rows.map((row) => row.received_at.toISOString()));
      expect(stamps.size).toBeLessThan(8);
    } finally {
      await locker.end();
    }
  });

  it('the worker applies the messages of concurrent jobs in one transaction; the same report twice in a batch applies once', async () => {
    const emails = await Promise.all(
      [0, 1, 2, 3].map((i) => sentEmail(`batch${i}@example.net`).then((id) => ({ id, i }))),
    );
    const ids: string[] = [];
    for (const { id, i } of emails)
      ids.push(await storedDsn(id, `batch${i}@example.net`, `batch${i}`));
    // The first DSN stored twice (a sender that missed our 250): the same bytes, the same dedupe keys.
    const twin = newId();
    await pg.query(
      `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to)
       SELECT $2, raw, mail_from, rcpt_to FROM inbound_messages WHERE id = $1`,
      [ids[0], twin],
    );
    const reports = t.app.app.get(InboundReports);
    const outcomes = await Promise.all([...ids, twin].map((id) => reports.process(id)));
    expect(outcomes).toEqual(Array(5).fill('PROCESSED'));

    const rows = await rowsOf([...ids, twin]);
    expect(rows.every((row) => row.status === 'PROCESSED')).toBe(true);
    // now() of one transaction: every row was finished by the same one.
    expect(new Set(rows.map((row) => row.processed_at?.toISOString())).size).toBe(1);
    const results = await pg.query<{ id: string; result: { reports: Record<string, number> } }>(
      'SELECT id, result FROM inbound_messages WHERE id = ANY($1::uuid[])',
      [[ids[0], twin]],
    );
    expect(results.rows.map((row) => JSON.stringify(row.result.reports)).sort()).toEqual([
      '{"hard:applied":1}',
      '{"hard:duplicate":1}',
    ]);
    for (const { id } of emails) {
      const email = await waitForEmailStatus(t.app, t.project.secretKey, id, ['BOUNCED']);
      expect(email.bounce).toMatchObject({ type: 'hard', source: 'dsn' });
    }
    const events = await pg.query(
      `SELECT count(*)::int AS n FROM events WHERE name = 'email.bounced' AND email_id = ANY($1::uuid[])`,
      [emails.map((email) => email.id)],
    );
    expect(events.rows[0].n).toBe(4);
  });

  it('a message Postgres refuses fails on its own: the other messages of its batch are applied', async () => {
    const good = await Promise.all(
      [0, 1, 2].map((i) => sentEmail(`fine${i}@example.net`).then((id) => ({ id, i }))),
    );
    const poisonEmail = await sentEmail('poison@example.net');
    // A real refusal by Postgres for one report of the batch (as a constraint or a bad byte would).
    await pg.query(`CREATE OR REPLACE FUNCTION refuse_poison() RETURNS trigger AS $$
      BEGIN
        IF NEW.recipient = 'poison@example.net' THEN RAISE EXCEPTION 'refused for the test'; END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await pg.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON bounce_reports
      FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const goodIds: string[] = [];
      for (const { id, i } of good)
        goodIds.push(await storedDsn(id, `fine${i}@example.net`, `fine${i}`));
      const poisonId = await storedDsn(poisonEmail, 'poison@example.net', 'poison');
      const reports = t.app.app.get(InboundReports);
      const settled = await Promise.allSettled(
        [goodIds[0], poisonId, goodIds[1], goodIds[2]].map((id) => reports.process(id)),
      );
      expect(settled.map((s) => s.status)).toEqual([
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
      const rows = new Map((await rowsOf([...goodIds, poisonId])).map((row) => [row.id, row]));
      for (const id of goodIds) expect(rows.get(id)?.status).toBe('PROCESSED');
      expect(rows.get(poisonId)?.status).toBe('RECEIVED');
      for (const { id } of good)
        await waitForEmailStatus(t.app, t.project.secretKey, id, ['BOUNCED']);
      const poison = await pg.query('SELECT status FROM emails WHERE id = $1', [poisonEmail]);
      expect(poison.rows[0].status).toBe('SENT');
    } finally {
      await pg.query('DROP TRIGGER refuse_poison ON bounce_reports');
    }
  });

  it('a message over the batch size limit is applied on its own run', async () => {
    const emailId = await sentEmail('large@example.net');
    const to = TEST_TOKENS.address(emailId, DOMAIN);
    const dsn = dsnMessage({ to, recipient: 'large@example.net', tag: 'large' });
    // The returned part padded past 1 MiB (the parsers read the report part first).
    const large = dsn.replace(
      'Subject: Hello',
      `Subject: Hello\r\nX-Padding: ${'x'.repeat(1100 * 1024)}`,
    );
    const answer = await sendInbound(port, { from: '', to: [to] }, large);
    expect(answer.code).toBe(250);
    await waitForEmailStatus(t.app, t.project.secretKey, emailId, ['BOUNCED']);
    const rows = await rowsOf([storedId(answer.response)]);
    expect(rows[0].status).toBe('PROCESSED');
  });
});
