import { Client } from 'pg';
import { ReturnPathTokens, UNSUBSCRIBE_KIND } from '../src/sending/return-path';
import { plainMessage, sendInbound, TEST_TOKENS } from './support/inbound';
import { pollUntil } from './support/poll';
import { freePort } from './support/processes';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';
import { ReceivedMessage } from './support/smtp-server';

/**
 * Unsubscribe by mail (contract "Unsubscribe by mail", issue 27 item 4):
 * marketing mail's List-Unsubscribe carries `<mailto:u-<token>@<return-path
 * domain>>` beside the HTTPS link; real SMTP to that address at the inbound
 * listener unsubscribes the contact as the one-click POST does (same event,
 * the campaign's `unsubscribed` count, idempotent); a forged token is 550.
 */
const RETURN_PATH_DOMAIN = 'rp.mailwright.test';
const TEST_SECRET = 'test-secret-test-secret-test-secret-0123456789';
const LIST_UNSUBSCRIBE =
  /^<(https:\/\/mail\.example\.test\/unsubscribe\/[A-Za-z0-9_-]+)>, <mailto:(u-[a-z0-9]{53}@([a-z0-9.-]+))>$/;

type Event = { name: string; emailId: string | null; data: Record<string, unknown> };

describe('unsubscribe by mail (e2e)', () => {
  let t: SendingTest;
  let port: number;
  let pg: Client;

  const req = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const events = async (contactId: string): Promise<Event[]> =>
    (await req('GET', `/events?contactId=${contactId}&limit=100`)).body.data.items;
  const unsubscribedEvents = async (contactId: string) =>
    (await events(contactId)).filter((e) => e.name === 'contact.unsubscribed');
  const listUnsubscribe = (message: ReceivedMessage) => {
    // The header as written (unfolded), not mailparser's reading of it.
    const raw = message.raw.toString('latin1');
    const head = raw.slice(0, raw.search(/\r?\n\r?\n/)).replace(/\r?\n[ \t]+/g, ' ');
    const line = /^List-Unsubscribe: (.+)$/im.exec(head);
    if (!line) throw new Error('no List-Unsubscribe header');
    const match = LIST_UNSUBSCRIBE.exec(line[1].trim());
    if (!match) throw new Error(`unexpected List-Unsubscribe: ${line[1]}`);
    return { https: match[1], mailto: match[2], domain: match[3] };
  };
  const inboundRows = async () =>
    (
      await pg.query<{ id: string; status: string; rcpt_to: string[] }>(
        'SELECT id, status, rcpt_to FROM inbound_messages ORDER BY received_at',
      )
    ).rows;
  /** Sends a message to `to` at the listener; waits until the worker has finished it. */
  const mailTo = async (to: string, from: string) => {
    const answer = await sendInbound(
      port,
      { from, to: [to] },
      plainMessage('please unsubscribe me'),
    );
    expect(answer.code).toBe(250);
    const id = /Stored as ([0-9a-f-]{36})/.exec(answer.response)![1];
    const rows = await pollUntil(
      inboundRows,
      (r) => r.some((row) => row.id === id && row.status !== 'RECEIVED'),
      15_000,
    );
    return rows.find((row) => row.id === id)!;
  };

  beforeAll(async () => {
    port = await freePort();
    t = await startSendingTest('MailUnsubscribe', {
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
      RETURN_PATH_DOMAIN,
    });
    pg = new Client({ connectionString: t.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  it('a campaign message: SMTP to its mailto address unsubscribes once and counts in the campaign', async () => {
    const readers = ['reader1@example.org', 'reader2@example.org'];
    const contacts: Record<string, string> = {};
    for (const email of readers) {
      const res = await req('POST', '/contacts', { email });
      expect(res.status).toBe(201);
      contacts[email] = res.body.data.id;
    }
    const campaign = (
      await req('POST', '/campaigns', {
        name: 'News',
        subject: 'News',
        body: '<p>Hello</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
        from: 'news@acme.test',
        audienceType: 'ALL',
      })
    ).body.data;
    expect((await req('POST', `/campaigns/${campaign.id}/send`, {})).status).toBeLessThan(300);
    await pollUntil(
      async () => (await req('GET', `/campaigns/${campaign.id}`)).body.data.status,
      (status) => status === 'SENT',
      30_000,
    );
    const [message] = t.smtp.messagesTo(readers[0]);
    const header = listUnsubscribe(message);
    // The mailto sits on the return path's domain (here RETURN_PATH_DOMAIN), so it reaches this listener.
    expect(header.domain).toBe(RETURN_PATH_DOMAIN);
    expect(message.from).toMatch(new RegExp(`^b-[a-z0-9]+@${RETURN_PATH_DOMAIN}$`));
    // The one-click header still names the HTTPS link only for POST.
    expect(message.raw.toString('latin1')).toMatch(
      /^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/im,
    );
    const [emailRow] = (
      await pg.query<{ id: string }>(
        'SELECT id FROM emails WHERE campaign_id = $1 AND to_email = $2',
        [campaign.id, readers[0]],
      )
    ).rows;

    // Any subject, any body, any sender; the local part in another case still verifies.
    const first = await mailTo(header.mailto.toUpperCase(), 'someone@else.example');
    expect(first.status).toBe('PROCESSED');
    const contactId = contacts[readers[0]];
    expect((await t.contact(contactId)).subscribed).toBe(false);
    expect((await t.contact(contacts[readers[1]])).subscribed).toBe(true);
    const recorded = await unsubscribedEvents(contactId);
    expect(recorded).toEqual([
      expect.objectContaining({
        emailId: emailRow.id,
        data: { source: 'unsubscribe-mail', emailId: emailRow.id },
      }),
    ]);
    const stats = (await req('GET', `/campaigns/${campaign.id}/stats`)).body.data;
    expect(stats.unsubscribed).toBe(1);

    // Again by mail, then by the one-click POST: nothing changes any more.
    await mailTo(header.mailto, readers[0]);
    const oneClick = await t.app.request({
      method: 'POST',
      url: new URL(header.https).pathname,
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(oneClick.status).toBe(200);
    expect(await unsubscribedEvents(contactId)).toHaveLength(1);
    expect((await req('GET', `/campaigns/${campaign.id}/stats`)).body.data.unsubscribed).toBe(1);
  });

  it('a marketing template sent through /v1/send carries the mailto too; transactional mail carries none', async () => {
    const template = await t.createTemplate({
      name: 'Promo',
      subject: 'Promo',
      body: '<p>Deal</p>',
      type: 'MARKETING',
    });
    expect(template.status).toBe(201);
    const to = 'promo@example.org';
    // A send creates contacts unsubscribed: marketing mail needs a subscribed one.
    expect((await req('POST', '/contacts', { email: to })).status).toBe(201);
    const sent = await t.send({ to, from: 'news@acme.test', template: template.body.data.id });
    expect(sent.status).toBe(200);
    await waitForEmailStatus(t.app, t.project.secretKey, sent.body.data.emails[0].id, ['SENT']);
    const header = listUnsubscribe(t.smtp.messagesTo(to)[0]);
    const result = await mailTo(header.mailto, to);
    expect(result.status).toBe('PROCESSED');
    expect((await t.contact(sent.body.data.contact)).subscribed).toBe(false);

    const plain = await t.send({
      to: 'plain@example.org',
      from: 'hi@acme.test',
      subject: 'x',
      body: 'x',
    });
    await waitForEmailStatus(t.app, t.project.secretKey, plain.body.data.emails[0].id, ['SENT']);
    expect(t.smtp.messagesTo('plain@example.org')[0].raw.toString('latin1')).not.toMatch(
      /^List-Unsubscribe:/m,
    );
  });

  it('refuses at RCPT (550) an unsubscribe address whose token does not verify', async () => {
    const emailId = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const genuine = new ReturnPathTokens(TEST_SECRET, [], UNSUBSCRIBE_KIND).address(
      emailId,
      RETURN_PATH_DOMAIN,
    );
    const flipped = genuine.replace(
      /^(u-.{52})(.)/,
      (_, head: string, last: string) => head + (last === '0' ? '1' : '0'),
    );
    const forged = [
      flipped,
      // A return path's token is no unsubscribe token, and the other way round.
      TEST_TOKENS.address(emailId, RETURN_PATH_DOMAIN).replace(/^b-/, 'u-'),
      new ReturnPathTokens(
        'another-secret-another-secret-another-0001',
        [],
        UNSUBSCRIBE_KIND,
      ).address(emailId, RETURN_PATH_DOMAIN),
      `u-${'0'.repeat(53)}@${RETURN_PATH_DOMAIN}`,
    ];
    const before = (await inboundRows()).length;
    for (const to of forged) {
      const answer = await sendInbound(
        port,
        { from: 'x@example.org', to: [to] },
        plainMessage('x'),
      );
      expect(answer.code).toBe(550);
    }
    expect(await inboundRows()).toHaveLength(before);
    // The genuine address of an email that does not exist is accepted and kept as unmatched.
    expect((await mailTo(genuine, 'x@example.org')).status).toBe('UNMATCHED');
  });
});
