import { Client } from 'pg';
import { newId } from '../src/database/id';
import { InboundMessagesService } from '../src/inbound/inbound-messages.service';
import { arfMessage, dsnMessage, plainMessage, sendInbound, TEST_TOKENS } from './support/inbound';
import { pollUntil } from './support/poll';
import { freePort, runCli } from './support/processes';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

/**
 * From a message at the listener to its effect (contract: "Bounces and
 * complaints"): nodemailer sends DSN and ARF reports to the inbound listener
 * of an app that delivered real mail to a loopback SMTP server; the worker
 * parses them, finds the email (the envelope's return-path token, else the
 * returned Message-ID) and the bounce policy applies them once. Reports that
 * name no email of ours are kept as UNMATCHED and listed by the CLI.
 */
const DOMAIN = 'bounces.example.test';

type Row = { status: string; result: Record<string, any> | null }; // eslint-disable-line @typescript-eslint/no-explicit-any

function storedId(response: string): string {
  const match = /Stored as ([0-9a-f-]{36})/.exec(response);
  if (!match) throw new Error(`no stored id in "${response}"`);
  return match[1];
}

describe('inbound reports, end to end (e2e)', () => {
  let t: SendingTest;
  let pg: Client;
  let port: number;

  const finished = (id: string): Promise<Row> =>
    pollUntil(
      async () =>
        (await pg.query<Row>('SELECT status, result FROM inbound_messages WHERE id = $1', [id]))
          .rows[0],
      (row) => row !== undefined && row.status !== 'RECEIVED',
      20_000,
    );

  /** A message delivered to the loopback SMTP server: its id, recipient and stored Message-ID. */
  const sentEmail = async (to: string) => {
    const res = await t.send({ to, from: 'hello@acme.test', subject: 'Hi', body: '<p>hi</p>' });
    expect(res.status).toBe(200);
    const id = res.body.data.emails[0].id as string;
    await waitForEmailStatus(t.app, t.project.secretKey, id, ['SENT']);
    const row = await pg.query('SELECT message_id FROM emails WHERE id = $1', [id]);
    return { id, to, messageId: row.rows[0].message_id as string };
  };

  beforeAll(async () => {
    port = await freePort();
    t = await startSendingTest('Inbound reports', {
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

  it('a hard DSN to the return path bounces the email and suppresses the contact; the same DSN again changes nothing', async () => {
    const email = await sentEmail('gone@example.net');
    const dsn = dsnMessage({
      to: TEST_TOKENS.address(email.id, DOMAIN),
      recipient: email.to,
      tag: 'hard',
    });
    const answer = await sendInbound(
      port,
      { from: '', to: [TEST_TOKENS.address(email.id, DOMAIN)] },
      dsn,
    );
    expect(answer.code).toBe(250);
    const row = await finished(storedId(answer.response));
    expect(row).toMatchObject({
      status: 'PROCESSED',
      result: {
        format: 'dsn',
        emailId: email.id,
        matchedBy: 'envelope',
        reports: { 'hard:applied': 1 },
      },
    });
    const bounced = await waitForEmailStatus(t.app, t.project.secretKey, email.id, ['BOUNCED']);
    expect(bounced.bounce).toMatchObject({ type: 'hard', status: '5.1.1', source: 'dsn' });
    const contact = await t.app.request({
      method: 'GET',
      url: `/contacts?limit=100`,
      key: t.project.secretKey,
    });
    const gone = contact.body.data.items.find((c: { email: string }) => c.email === email.to);
    expect(gone.suppressed).toBe(true);

    // A sender that missed our 250 sends the same bytes again: stored again, applied once.
    const again = await sendInbound(
      port,
      { from: '', to: [TEST_TOKENS.address(email.id, DOMAIN)] },
      dsn,
    );
    const second = await finished(storedId(again.response));
    expect(second).toMatchObject({
      status: 'PROCESSED',
      result: { reports: { 'hard:duplicate': 1 } },
    });
    const events = await pg.query(
      `SELECT count(*)::int AS n FROM events WHERE name = 'email.bounced' AND email_id = $1`,
      [email.id],
    );
    expect(events.rows[0].n).toBe(1);
  });

  it('an ARF complaint at fbl@ finds its email by the returned Message-ID', async () => {
    const email = await sentEmail('angry@example.net');
    const answer = await sendInbound(
      port,
      { from: 'feedback@fbl.example.net', to: [`fbl@${DOMAIN}`] },
      arfMessage({ to: `fbl@${DOMAIN}`, recipient: email.to, messageId: email.messageId }),
    );
    expect(answer.code).toBe(250);
    const row = await finished(storedId(answer.response));
    expect(row).toMatchObject({
      status: 'PROCESSED',
      result: { format: 'arf', emailId: email.id, matchedBy: 'message-id' },
    });
    await waitForEmailStatus(t.app, t.project.secretKey, email.id, ['COMPLAINED']);
  });

  it('a report naming no email of ours is kept UNMATCHED and listed by `inbound list`; an auto-reply is IGNORED', async () => {
    const unmatched = await sendInbound(
      port,
      { from: '', to: [`fbl@${DOMAIN}`] },
      dsnMessage({ to: `fbl@${DOMAIN}`, recipient: 'stranger@example.org', tag: 'stranger' }),
    );
    const unmatchedId = storedId(unmatched.response);
    expect(await finished(unmatchedId)).toMatchObject({
      status: 'UNMATCHED',
      result: { format: 'dsn', emailId: null, reports: { 'hard:unmatched': 1 } },
    });

    const vacation = await sendInbound(
      port,
      { from: 'someone@example.net', to: [`fbl@${DOMAIN}`] },
      plainMessage('Out of office').replace('Subject:', 'Auto-Submitted: auto-replied\r\nSubject:'),
    );
    expect(await finished(storedId(vacation.response))).toMatchObject({ status: 'IGNORED' });

    const cli = runCli(['inbound', 'list', '--status', 'UNMATCHED', '--json'], {
      DATABASE_URL: t.db.url,
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    });
    expect(cli.status).toBe(0);
    const listed = JSON.parse(cli.stdout).messages as Array<{ id: string; status: string }>;
    expect(listed.map((m) => m.id)).toContain(unmatchedId);
    expect(listed.every((m) => m.status === 'UNMATCHED')).toBe(true);
    const text = runCli(['inbound', 'list'], {
      DATABASE_URL: t.db.url,
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    });
    expect(text.stdout).toContain(unmatchedId);
    expect(text.stdout).toContain('IGNORED');
  });
  it('the recovery adds the job of a message left RECEIVED, and deletes messages 30 days after processing', async () => {
    // Stored, its enqueue lost: only the row exists.
    const lost = newId();
    await pg.query(
      `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to) VALUES ($1, $2, '', $3)`,
      [
        lost,
        Buffer.from(
          dsnMessage({ to: `fbl@${DOMAIN}`, recipient: 'lost@example.org', tag: 'lost' }),
        ),
        [`fbl@${DOMAIN}`],
      ],
    );
    const [old, recent] = [newId(), newId()];
    for (const [id, days] of [
      [old, 31],
      [recent, 29],
    ] as const) {
      await pg.query(
        `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to, status, processed_at)
         VALUES ($1, 'x', '', '{}', 'PROCESSED', now() - make_interval(days => $2))`,
        [id, days],
      );
    }
    const run = await t.app.app.get(InboundMessagesService).recover();
    expect(run.found).toBeGreaterThanOrEqual(1);
    expect(run.deleted).toBe(1);
    expect(await finished(lost)).toMatchObject({ status: 'UNMATCHED' });
    const left = await pg.query('SELECT id FROM inbound_messages WHERE id = ANY($1::uuid[])', [
      [old, recent],
    ]);
    expect(left.rows.map((r) => r.id)).toEqual([recent]);
  });
});
