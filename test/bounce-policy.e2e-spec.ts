import { DataSource } from 'typeorm';
import { BouncePolicy } from '../src/bounces/bounce-policy';
import type { BounceReport } from '../src/bounces/bounce-report';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The bounce policy end to end (real Postgres, Redis, SMTP server): each kind
 * of report applied to a delivered email, its effects in the database and in
 * GET /emails/{id} and GET /contacts/{id}, idempotency, statuses that never
 * go backwards, reports that match no email of the project, the soft-bounce
 * rule, and the delivery's own 5xx going through the same policy.
 */
describe('bounce policy (e2e)', () => {
  let t: SendingTest;
  let policy: BouncePolicy;
  let db: DataSource;
  let seq = 0;
  const req = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const email = async (id: string) => (await req('GET', `/emails/${id}`)).body.data as Json;
  const report = (over: Partial<BounceReport>): BounceReport => ({
    kind: 'hard',
    source: 'dsn',
    emailId: null,
    recipient: null,
    status: '5.1.1',
    diagnostic: 'smtp; 550 5.1.1 user unknown',
    feedbackType: null,
    dedupeKey: `test-${++seq}`,
    projectId: null,
    ...over,
  });
  const events = async (contactId: string, name: string) =>
    (await req('GET', `/events?contactId=${contactId}&name=${name}`)).body.data.items as Json[];

  /** Sends one message and waits for the SMTP server's 250: answers the email record. */
  async function delivered(to: string): Promise<Json> {
    const res = await t.send({ to, from: 'hello@acme.test', subject: 'Hi', body: '<p>Hi</p>' });
    expect(res.status).toBe(200);
    return waitForEmailStatus(t.app, t.project.secretKey, res.body.data.emails[0].id, ['SENT']);
  }

  beforeAll(async () => {
    t = await startSendingTest('Bounce policy');
    policy = t.app.app.get(BouncePolicy);
    db = t.app.app.get(DataSource);
  });

  afterAll(async () => t?.close());

  it('hard: BOUNCED with its bounce, contact suppressed, email.bounced; the same report again changes nothing', async () => {
    const sent = await delivered('hard@example.org');
    const hard = report({ emailId: sent.id, recipient: 'hard@example.org' });
    expect(await policy.apply(hard)).toBe('applied');
    const after = await email(sent.id);
    expect(after).toMatchObject({
      status: 'BOUNCED',
      bounce: {
        type: 'hard',
        status: '5.1.1',
        diagnostic: 'smtp; 550 5.1.1 user unknown',
        source: 'dsn',
      },
      complainedAt: null,
    });
    expect(after.bouncedAt).not.toBeNull();
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: true, subscribed: false });
    const bounced = await events(sent.contactId, 'email.bounced');
    expect(bounced).toHaveLength(1);
    expect(bounced[0]).toMatchObject({
      emailId: sent.id,
      data: { type: 'hard', status: '5.1.1', diagnostic: hard.diagnostic, source: 'dsn' },
    });

    expect(await policy.apply(hard)).toBe('duplicate');
    expect(await email(sent.id)).toEqual(after);
    expect(await events(sent.contactId, 'email.bounced')).toHaveLength(1);
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM bounce_reports WHERE dedupe_key = $1`,
      [hard.dedupeKey],
    );
    expect(n).toBe(1);
  });

  it('complaint: COMPLAINED, complainedAt, contact unsubscribed and suppressed, email.complained; after a hard bounce too; never backwards', async () => {
    const sent = await delivered('spam@example.org');
    expect(await policy.apply(report({ emailId: sent.id }))).toBe('applied');
    expect(
      await policy.apply(
        report({ kind: 'complaint', source: 'arf', emailId: sent.id, feedbackType: 'abuse' }),
      ),
    ).toBe('applied');
    const after = await email(sent.id);
    expect(after.status).toBe('COMPLAINED');
    expect(after.complainedAt).not.toBeNull();
    expect(after.bounce).toMatchObject({ type: 'hard' });
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: true, subscribed: false });
    const complained = await events(sent.contactId, 'email.complained');
    expect(complained).toHaveLength(1);
    expect(complained[0]).toMatchObject({
      emailId: sent.id,
      data: { feedbackType: 'abuse', source: 'arf' },
    });

    // A later hard, soft or delayed report, or a second complaint, moves nothing back.
    for (const kind of ['hard', 'soft', 'delayed', 'complaint'] as const)
      expect(await policy.apply(report({ kind, emailId: sent.id }))).toBe('ignored');
    expect(await email(sent.id)).toEqual(after);
    expect(await events(sent.contactId, 'email.complained')).toHaveLength(1);
    expect(await events(sent.contactId, 'email.bounced')).toHaveLength(1);

    const [{ reason }] = await db.query(
      `SELECT suppressed_reason AS reason FROM contacts WHERE id = $1`,
      [sent.contactId],
    );
    expect(reason).toBe('complaint');
  });

  it('a complaint of a subscribed contact records contact.unsubscribed', async () => {
    const contact = await req('POST', '/contacts', { email: 'fan@example.org', subscribed: true });
    const sent = await delivered('fan@example.org');
    expect(sent.contactId).toBe(contact.body.data.id);
    await policy.apply(report({ kind: 'complaint', source: 'api', emailId: sent.id }));
    expect(await events(sent.contactId, 'contact.unsubscribed')).toHaveLength(1);
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: true, subscribed: false });
  });

  it('soft and delayed: events only, the status stays SENT', async () => {
    const sent = await delivered('full@example.org');
    expect(await policy.apply(report({ kind: 'soft', status: '4.2.2', emailId: sent.id }))).toBe(
      'applied',
    );
    expect(await policy.apply(report({ kind: 'delayed', status: '4.4.7', emailId: sent.id }))).toBe(
      'applied',
    );
    const after = await email(sent.id);
    expect(after).toMatchObject({ status: 'SENT', bounce: { type: 'soft', status: '4.2.2' } });
    expect(after.bouncedAt).toBeNull();
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: false });
    expect((await events(sent.contactId, 'email.bounced'))[0].data).toMatchObject({
      type: 'soft',
      status: '4.2.2',
    });
    expect((await events(sent.contactId, 'email.delayed'))[0]).toMatchObject({
      emailId: sent.id,
      data: { status: '4.4.7', diagnostic: 'smtp; 550 5.1.1 user unknown' },
    });
  });

  it('soft: the contact is suppressed once 3 of its last 5 emails soft-bounced', async () => {
    const sent: Json[] = [];
    for (let i = 0; i < 5; i++) sent.push(await delivered('flaky@example.org'));
    const contactId = sent[0].contactId as string;
    await policy.apply(report({ kind: 'soft', emailId: sent[0].id }));
    await policy.apply(report({ kind: 'soft', emailId: sent[2].id }));
    expect(await t.contact(contactId)).toMatchObject({ suppressed: false });
    await policy.apply(report({ kind: 'soft', emailId: sent[4].id }));
    expect(await t.contact(contactId)).toMatchObject({ suppressed: true });
    // Soft bounces further back than the last 5 do not count.
    const older: Json[] = [];
    for (let i = 0; i < 7; i++) older.push(await delivered('flaky2@example.org'));
    for (const i of [0, 1, 4]) await policy.apply(report({ kind: 'soft', emailId: older[i].id }));
    expect(await t.contact(older[0].contactId)).toMatchObject({ suppressed: false });
  });

  it('unmatched: no email, an unknown one, or another project’s email when the channel names a project; kept, nothing changed', async () => {
    const other = await t.app.createProject('Bounce other');
    const sent = await delivered('mine@example.org');
    const before = await email(sent.id);
    const foreign = report({ emailId: sent.id, projectId: other.id });
    expect(await policy.apply(foreign)).toBe('unmatched');
    expect(await policy.apply(report({ emailId: null }))).toBe('unmatched');
    expect(await policy.apply(report({ emailId: '01900000-0000-7000-8000-000000000000' }))).toBe(
      'unmatched',
    );
    expect(await email(sent.id)).toEqual(before);
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: false });
    const rows = await db.query(
      `SELECT email_id, project_id, outcome FROM bounce_reports WHERE dedupe_key = $1`,
      [foreign.dedupeKey],
    );
    expect(rows).toEqual([{ email_id: null, project_id: other.id, outcome: 'unmatched' }]);
    expect(await policy.apply(foreign)).toBe('duplicate');
  });

  it('the delivery’s own 5xx goes through the policy: BOUNCED with source smtp and the enhanced status', async () => {
    t.smtp.fail({
      stage: 'RCPT',
      code: 550,
      recipient: 'nobody@example.org',
      message: '5.1.1 No such user',
    });
    const res = await t.send({
      to: 'nobody@example.org',
      from: 'hello@acme.test',
      subject: 'Hi',
      body: '<p>Hi</p>',
    });
    const bounced = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      res.body.data.emails[0].id,
      ['BOUNCED', 'FAILED', 'SENT'],
    );
    expect(bounced).toMatchObject({
      status: 'BOUNCED',
      bounce: { type: 'hard', status: '5.1.1', source: 'smtp' },
    });
    expect(bounced.error).toContain('550');
    expect((await events(bounced.contactId, 'email.bounced'))[0].data).toMatchObject({
      type: 'hard',
      source: 'smtp',
    });
    t.smtp.clearRules();
  });
});
