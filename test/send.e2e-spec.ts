import { DataSource } from 'typeorm';
import { EventHooks, RecordedEvent } from '../src/events/event-hooks';
import { holdContactLocks, lockWaiters } from './support/locks';
import { SendingTest, startSendingTest, verifyDkim, waitForEmailStatus } from './support/sending';

describe('POST /v1/send (real SMTP server, DKIM checked against the published key)', () => {
  let t: SendingTest;

  beforeAll(async () => {
    t = await startSendingTest('Sending', { DELIVERY_BACKOFF_MS: '50' });
  });

  afterAll(async () => t?.close());

  beforeEach(() => t.smtp.reset());

  it("delivers one signed message per recipient, rendered with each recipient's variables", async () => {
    // An existing contact's data is available to the template; the send's data wins over it.
    await t.send({
      to: 'carol@example.org',
      subject: 'seed',
      body: 'x',
      from: 'hello@acme.test',
      data: { plan: 'gold', city: 'Oslo' },
    });
    await t.smtp.waitForMessages(1);
    t.smtp.reset();

    const res = await t.send({
      to: ['ada@example.org', { email: 'Bob@Example.org', name: 'Bob Stone' }, 'carol@example.org'],
      from: { email: 'hello@acme.test', name: 'Acme' },
      subject: 'Hi {{ email }} ({{ plan | default: "free" }})',
      body: '<h1>Hello {{ contact.email }}</h1><p>City: {{ city | default: "unknown" }}</p><p>Order {{ order }}</p>',
      data: { order: 'A-17', plan: 'silver' },
      replyTo: 'support@acme.test',
      headers: { 'X-Campaign-Ref': 'spring' },
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const data = res.body.data;
    expect(data.emails).toHaveLength(3);
    expect(data.emails.map((e: { to: string }) => e.to)).toEqual([
      'ada@example.org',
      'bob@example.org',
      'carol@example.org',
    ]);
    expect(data.emails.every((e: { status: string }) => e.status === 'QUEUED')).toBe(true);
    expect(Object.keys(data)).toEqual(['contact', 'event', 'timestamp', 'emails']);
    for (const item of data.emails)
      expect(Object.keys(item)).toEqual(['id', 'to', 'contact', 'status']);
    expect(data.contact).toBe(data.emails[0].contact);
    const queuedEvents = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${data.contact}&name=email.queued`,
      key: t.project.secretKey,
    });
    expect(queuedEvents.body.data.items.map((e: { id: string }) => e.id)).toContain(data.event);
    expect(new Date(data.timestamp).toString()).not.toBe('Invalid Date');

    await t.smtp.waitForMessages(3);
    const bob = t.smtp.messagesTo('bob@example.org')[0].parsed!;
    expect(bob.subject).toBe('Hi bob@example.org (silver)');
    expect(bob.from?.value[0]).toEqual({ address: 'hello@acme.test', name: 'Acme' });
    expect(bob.to && !Array.isArray(bob.to) ? bob.to.value[0] : null).toEqual({
      address: 'bob@example.org',
      name: 'Bob Stone',
    });
    expect(bob.replyTo?.value[0].address).toBe('support@acme.test');
    expect(bob.headers.get('x-campaign-ref')).toBe('spring');
    expect(bob.messageId).toMatch(/^<[0-9a-f-]{36}@acme\.test>$/);
    expect(bob.html).toContain('<h1>Hello bob@example.org</h1>');
    expect(bob.text).toContain('Hello bob@example.org');
    expect(bob.text).toContain('Order A-17');
    // Transactional mail carries no List-Unsubscribe.
    expect(bob.headers.has('list-unsubscribe')).toBe(false);

    const carol = t.smtp.messagesTo('carol@example.org')[0].parsed!;
    expect(carol.html).toContain('City: Oslo');
    expect(carol.subject).toBe('Hi carol@example.org (silver)');

    for (const message of t.smtp.messages) {
      const results = await verifyDkim(message.raw, t.dns);
      expect(results).toHaveLength(1);
      expect(results[0].status.result).toBe('pass');
      expect(results[0].signingDomain).toBe('acme.test');
    }

    const record = await waitForEmailStatus(t.app, t.project.secretKey, data.emails[1].id, [
      'SENT',
    ]);
    expect(record).toMatchObject({
      to: 'bob@example.org',
      from: 'hello@acme.test',
      subject: 'Hi bob@example.org (silver)',
      source: 'TRANSACTIONAL',
      attempts: 1,
      error: null,
      dkimSigned: true,
      templateId: null,
      campaignId: null,
    });
    expect(Object.keys(record).sort()).toEqual(
      [
        'id',
        'to',
        'from',
        'subject',
        'status',
        'source',
        'contactId',
        'templateId',
        'campaignId',
        'messageId',
        'attempts',
        'error',
        'dkimSigned',
        'returnPath',
        'trackOpens',
        'trackClicks',
        'opens',
        'clicks',
        'queuedAt',
        'sentAt',
        'openedAt',
        'clickedAt',
        'bouncedAt',
        'complainedAt',
        'bounce',
      ].sort(),
    );
    expect(record.messageId).toBe(bob.messageId);
    expect(record.sentAt).not.toBeNull();

    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${data.contact}`,
      key: t.project.secretKey,
    });
    expect(events.status).toBe(200);
    const names = events.body.data.items.map((e: { name: string }) => e.name);
    expect(names).toEqual(expect.arrayContaining(['email.queued', 'email.sent']));
  });

  it('creates new contacts unsubscribed unless subscribed:true, and merges data into them', async () => {
    const res = await t.send({
      to: 'new1@example.org',
      subject: 's',
      body: 'b',
      from: 'hello@acme.test',
      data: { tier: 3 },
    });
    expect(res.status).toBe(200);
    const contact = await t.app.request({
      method: 'GET',
      url: `/contacts/${res.body.data.contact}`,
      key: t.project.secretKey,
    });
    expect(contact.status).toBe(200);
    expect(contact.body.data.subscribed).toBe(false);
    expect(contact.body.data.data).toEqual({ tier: 3 });
    const res2 = await t.send({
      to: 'new2@example.org',
      subject: 's',
      body: 'b',
      from: 'hello@acme.test',
      subscribed: true,
    });
    const contact2 = await t.app.request({
      method: 'GET',
      url: `/contacts/${res2.body.data.contact}`,
      key: t.project.secretKey,
    });
    expect(contact2.status).toBe(200);
    expect(contact2.body.data.subscribed).toBe(true);
    await t.smtp.waitForMessages(2);
  });

  it("sends a stored template, with request fields overriding the template's", async () => {
    const template = await t.createTemplate({
      name: 'Receipt',
      subject: 'Receipt {{ number }}',
      body: '<p>Thanks {{ name }}, receipt {{ number }}</p>',
      type: 'TRANSACTIONAL',
      from: 'billing@acme.test',
      fromName: 'Acme Billing',
      replyTo: 'billing-replies@acme.test',
    });
    expect(template.status).toBe(201);
    const templateId = template.body.data.id;

    const plain = await t.send({
      to: 'tpl1@example.org',
      template: templateId,
      data: { number: 42, name: 'Ada' },
    });
    expect(plain.status).toBe(200);
    const overridden = await t.send({
      to: 'tpl2@example.org',
      template: templateId,
      data: { number: 43, name: 'Bob' },
      subject: 'Your receipt #{{ number }}',
      from: 'receipts@acme.test',
      name: 'Receipts',
      replyTo: 'help@acme.test',
    });
    expect(overridden.status).toBe(200);
    await t.smtp.waitForMessages(2);

    const first = t.smtp.messagesTo('tpl1@example.org')[0].parsed!;
    expect(first.subject).toBe('Receipt 42');
    expect(first.from?.value[0]).toEqual({ address: 'billing@acme.test', name: 'Acme Billing' });
    expect(first.replyTo?.value[0].address).toBe('billing-replies@acme.test');
    expect(first.html).toContain('Thanks Ada, receipt 42');

    const second = t.smtp.messagesTo('tpl2@example.org')[0].parsed!;
    expect(second.subject).toBe('Your receipt #43');
    expect(second.from?.value[0]).toEqual({ address: 'receipts@acme.test', name: 'Receipts' });
    expect(second.replyTo?.value[0].address).toBe('help@acme.test');
    expect(second.html).toContain('Thanks Bob, receipt 43');

    const record = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      overridden.body.data.emails[0].id,
      ['SENT'],
    );
    expect(record.templateId).toBe(templateId);
  });

  it('renders markdown bodies to HTML after Liquid, and escapes variables in HTML', async () => {
    const res = await t.send({
      to: 'md@example.org',
      from: 'hello@acme.test',
      subject: 'Markdown',
      body: '# Hello {{ name }}\n\n* one\n* two',
      type: 'markdown',
      data: { name: '<script>x</script>' },
    });
    expect(res.status).toBe(200);
    await t.smtp.waitForMessages(1);
    const parsed = t.smtp.messages[0].parsed!;
    expect(parsed.html).toContain('<h1>Hello &lt;script&gt;x&lt;/script&gt;</h1>');
    expect(parsed.html).toContain('<li>one</li>');
    expect(parsed.text).toContain('Hello <script>x</script>');
  });

  it('delivers attachments byte for byte', async () => {
    // 1.5 MB: over the 1 MB body limit of other routes, inside /v1/send's 10 MB.
    const pdf = Buffer.from(Array.from({ length: 1_500_000 }, (_, i) => (i * 7) % 256));
    const note = Buffer.from('plain text note\n', 'utf8');
    const res = await t.send({
      to: ['att1@example.org', 'att2@example.org'],
      from: 'hello@acme.test',
      subject: 'Files',
      body: '<p>see attached</p>',
      attachments: [
        { filename: 'report.pdf', content: pdf.toString('base64'), contentType: 'application/pdf' },
        { filename: 'note.txt', content: note.toString('base64') },
      ],
    });
    expect(res.status).toBe(200);
    await t.smtp.waitForMessages(2);
    for (const message of t.smtp.messages) {
      const attachments = message.parsed!.attachments;
      expect(attachments.map((a) => a.filename)).toEqual(['report.pdf', 'note.txt']);
      expect(attachments[0].contentType).toBe('application/pdf');
      expect(Buffer.compare(attachments[0].content, pdf)).toBe(0);
      expect(attachments[1].contentType).toBe('text/plain');
      expect(attachments[1].content.toString('utf8')).toBe('plain text note\n');
      expect((await verifyDkim(message.raw, t.dns))[0].status.result).toBe('pass');
    }
  });

  it('refuses more than 10 attachments (422) and a body over 10 MB (413)', async () => {
    const base = { to: 'x@example.org', from: 'hello@acme.test', subject: 'ok', body: 'b' };
    const eleven = Array.from({ length: 11 }, (_, i) => ({
      filename: `f${i}.txt`,
      content: 'aGk=',
    }));
    const tooMany = await t.send({ ...base, attachments: eleven });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.errors[0]).toMatchObject({ field: 'attachments', code: 'too_big' });
    const huge = await t.send({
      ...base,
      attachments: [{ filename: 'big.bin', content: 'A'.repeat(11 * 1024 * 1024) }],
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses CR/LF in the subject or a header, reserved headers, and more than 50 recipients (422)', async () => {
    const base = { to: 'x@example.org', from: 'hello@acme.test', subject: 'ok', body: 'b' };
    const crlfSubject = await t.send({ ...base, subject: 'Hi\r\nBcc: victim@example.org' });
    expect(crlfSubject.status).toBe(422);
    expect(crlfSubject.body.error.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'subject', code: 'invalid_string' }),
      ]),
    );
    const crlfHeader = await t.send({
      ...base,
      headers: { 'X-Note': 'a\nBcc: victim@example.org' },
    });
    expect(crlfHeader.status).toBe(422);
    expect(crlfHeader.body.error.errors[0]).toMatchObject({
      field: 'headers.X-Note',
      code: 'invalid_string',
    });
    const reserved = await t.send({
      ...base,
      headers: { Bcc: 'victim@example.org', 'Content-Type': 'text/plain' },
    });
    expect(reserved.status).toBe(422);
    expect(reserved.body.error.errors.map((e: { field: string }) => e.field)).toEqual([
      'headers.Bcc',
      'headers.Content-Type',
    ]);

    const many = await t.send({
      ...base,
      to: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`),
    });
    expect(many.status).toBe(422);
    expect(many.body.error.errors[0]).toMatchObject({ field: 'to', code: 'too_big' });

    const badRecipient = await t.send({
      ...base,
      to: ['ok@example.org', { email: 'not-an-email' }],
    });
    expect(badRecipient.status).toBe(422);
    expect(badRecipient.body.error.errors[0]).toMatchObject({
      field: 'to[1].email',
      code: 'invalid_string',
    });

    const unknown = await t.send({ ...base, cc: 'someone@example.org' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.errors[0]).toMatchObject({ field: 'cc', code: 'unrecognized_keys' });

    const noFrom = await t.send({ to: 'x@example.org', subject: 's', body: 'b' });
    expect(noFrom.status).toBe(422);
    expect(noFrom.body.error.errors).toEqual([
      expect.objectContaining({ field: 'from', code: 'required' }),
    ]);

    const noContent = await t.send({ to: 'x@example.org', from: 'hello@acme.test' });
    expect(noContent.status).toBe(422);
    expect(noContent.body.error.errors.map((e: { field: string }) => e.field)).toEqual([
      'subject',
      'body',
    ]);

    const badLiquid = await t.send({ ...base, body: '{% if %}' });
    expect(badLiquid.status).toBe(422);
    expect(badLiquid.body.error.errors[0]).toMatchObject({
      field: 'body',
      code: 'invalid_template',
    });

    // Nothing was accepted, so nothing was sent (a fixed wait on purpose: it asserts that nothing happens).
    await new Promise((r) => setTimeout(r, 300));
    expect(t.smtp.accepted).toBe(0);
  });

  it('counts distinct recipients: duplicates are sent once, 51 distinct addresses are 422, huge lists are refused cheaply', async () => {
    const base = { from: 'hello@acme.test', subject: 's', body: 'b' };
    const fifty = Array.from({ length: 50 }, (_, i) => `dist${i}@example.org`);
    // 55 entries, 50 distinct addresses once case is ignored.
    const withDuplicates = await t.send({
      ...base,
      to: [
        ...fifty,
        'DIST0@example.org',
        { email: 'dist1@example.org' },
        'dist2@example.org',
        ' dist3@example.org',
        'Dist4@Example.org',
      ],
    });
    expect(withDuplicates.status).toBe(200);
    expect(withDuplicates.body.data.emails).toHaveLength(50);
    await t.smtp.waitForMessages(50);

    const fiftyOne = await t.send({ ...base, to: [...fifty, 'dist50@example.org'] });
    expect(fiftyOne.status).toBe(422);
    expect(fiftyOne.body.error.errors).toEqual([
      expect.objectContaining({ field: 'to', code: 'too_big' }),
    ]);

    // 20,000 entries: one error, not one per entry.
    const huge = await t.send({
      ...base,
      to: Array.from({ length: 20_000 }, (_, i) => `h${i}@example.org`),
    });
    expect(huge.status).toBe(422);
    expect(huge.body.error.errors).toEqual([
      expect.objectContaining({ field: 'to', code: 'too_big' }),
    ]);
    const hugeBad = await t.send({ ...base, to: Array.from({ length: 20_000 }, () => 7) });
    expect(hugeBad.status).toBe(422);
    expect(hugeBad.body.error.errors.length).toBeLessThanOrEqual(102);

    for (const [to, code] of [
      [null, 'required'],
      [7, 'invalid_type'],
      [[], 'too_small'],
    ] as const) {
      const res = await t.send({ ...base, to });
      expect(res.status).toBe(422);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'to', code })]);
    }
    const fromList = await t.send({
      ...base,
      to: 'x@example.org',
      from: [{ email: 'hello@acme.test' }],
    });
    expect(fromList.status).toBe(422);
    expect(fromList.body.error.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'from', code: 'invalid_type' })]),
    );
    const pdf = await t.send({ ...base, to: 'x@example.org', type: 'pdf' });
    expect(pdf.status).toBe(422);
    expect(pdf.body.error.errors).toEqual([
      expect.objectContaining({ field: 'type', code: 'invalid_enum_value' }),
    ]);
    const badHeaderValue = await t.send({
      ...base,
      to: 'x@example.org',
      headers: { 'X-Count': 5, 'X-Obj': { a: 1 } },
    });
    expect(badHeaderValue.status).toBe(422);
    expect(
      badHeaderValue.body.error.errors.map(
        (e: { field: string; code: string }) => `${e.field}:${e.code}`,
      ),
    ).toEqual(['headers.X-Count:invalid_type', 'headers.X-Obj:invalid_type']);
    const badBase64 = await t.send({
      ...base,
      to: 'x@example.org',
      attachments: [{ filename: 'a.bin', content: '!!!not base64' }],
    });
    expect(badBase64.status).toBe(422);
    expect(badBase64.body.error.errors).toEqual([
      expect.objectContaining({ field: 'attachments[0].content', code: 'invalid_string' }),
    ]);
    expect(t.smtp.accepted).toBe(50);
  });

  it('keeps data and header keys named like Object.prototype members', async () => {
    const res = await t.send({
      to: 'keys@example.org',
      from: 'hello@acme.test',
      subject: 'Keys',
      body: '<p>[{{ toString }}|{{ valueOf }}]</p>',
      data: { toString: 'TS', valueOf: 'VO' },
      headers: { toString: 'header-ts', 'X-Ok': 'yes' },
    });
    expect(res.status).toBe(200);
    await t.smtp.waitForMessages(1);
    const message = t.smtp.messages[0].parsed!;
    expect(message.html).toContain('[TS|VO]');
    expect(message.headers.get('tostring')).toBe('header-ts');
    expect(message.headers.get('x-ok')).toBe('yes');
    const contact = await t.app.request({
      method: 'GET',
      url: `/contacts/${res.body.data.contact}`,
      key: t.project.secretKey,
    });
    expect(contact.body.data.data).toEqual({ toString: 'TS', valueOf: 'VO' });
  });

  it('accepts MIME-style base64 with line breaks in attachments', async () => {
    const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 13) % 256));
    const wrapped = bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
    expect(wrapped).toContain('\r\n');
    const res = await t.send({
      to: 'wrap@example.org',
      from: 'hello@acme.test',
      subject: 'Wrapped',
      body: 'b',
      attachments: [{ filename: 'w.bin', content: wrapped }],
    });
    expect(res.status).toBe(200);
    await t.smtp.waitForMessages(1);
    expect(Buffer.compare(t.smtp.messages[0].parsed!.attachments[0].content, bytes)).toBe(0);
  });

  it("records contact.subscribed / contact.unsubscribed when a send changes an existing contact's subscription", async () => {
    const base = { to: 'flip@example.org', from: 'hello@acme.test', subject: 's', body: 'b' };
    const created = await t.send(base);
    const contactId = created.body.data.contact;
    const names = async () =>
      (
        await t.app.request({
          method: 'GET',
          url: `/events?contactId=${contactId}`,
          key: t.project.secretKey,
        })
      ).body.data.items
        .map((e: { name: string }) => e.name)
        .filter((n: string) => n.startsWith('contact.'));
    // Created unsubscribed: no subscription event.
    expect(await names()).toEqual([]);
    await t.send({ ...base, subscribed: true });
    await t.send({ ...base, subscribed: true });
    expect(await names()).toEqual(['contact.subscribed']);
    await t.send({ ...base, subscribed: false });
    expect(await names()).toEqual(['contact.unsubscribed', 'contact.subscribed']);
    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${contactId}&name=contact.subscribed`,
      key: t.project.secretKey,
    });
    expect(events.body.data.items[0].data).toEqual({ source: 'send' });
    await t.smtp.waitForMessages(4);
  });

  it('tells after-commit listeners about each email.queued, with the recipient address', async () => {
    const heard: RecordedEvent[] = [];
    t.app.app
      .get(EventHooks)
      .register({ onEventsRecorded: (events) => void heard.push(...events) });
    const res = await t.send({
      to: ['heard-1@example.org', 'heard-2@example.org'],
      from: 'hello@acme.test',
      subject: 's',
      body: 'b',
    });
    expect(res.status).toBe(200);
    const queued = heard.filter((e) => e.name === 'email.queued');
    expect(queued.map((e) => e.email).sort()).toEqual([
      'heard-1@example.org',
      'heard-2@example.org',
    ]);
    expect(queued.map((e) => e.emailId).sort()).toEqual(
      res.body.data.emails.map((e: { id: string }) => e.id).sort(),
    );
    expect(queued.find((e) => e.email === 'heard-1@example.org')?.id).toBe(res.body.data.event);
    await t.smtp.waitForMessages(2);
  });

  it("locks the recipients' contacts in email order, so a writer using that order cannot deadlock with it", async () => {
    const dataSource = t.app.app.get(DataSource);
    for (const email of ['lock-a@example.org', 'lock-b@example.org']) {
      const created = await t.app.request({
        method: 'POST',
        url: '/contacts',
        key: t.project.secretKey,
        body: { email },
      });
      expect(created.status).toBe(201);
    }
    // Another transaction (an import chunk, a track batch) holds lock-a and will want lock-b next.
    const held = await holdContactLocks(dataSource, t.project.id, ['lock-a@example.org']);
    try {
      const sending = t.send({
        to: ['lock-b@example.org', 'lock-a@example.org'],
        from: 'hello@acme.test',
        subject: 'locks',
        body: 'x',
      });
      expect(await lockWaiters(dataSource)).toBe(1); // the send waits for lock-a, holding no contact
      await held.lock(['lock-b@example.org']); // so this does not wait: in recipient order it would deadlock
      await held.commit();
      const res = await sending;
      expect(res.status).toBe(200);
      expect(res.body.data.emails.map((e: { to: string }) => e.to)).toEqual([
        'lock-b@example.org',
        'lock-a@example.org',
      ]);
    } finally {
      await held.rollback();
    }
  });

  it('runs its transaction again when Postgres breaks a deadlock by aborting it', async () => {
    const dataSource = t.app.app.get(DataSource);
    // Postgres aborts the session whose deadlock_timeout (1 s) runs out after the cycle closed. That
    // is the send, which waited first, unless this test closes the cycle more than a second after
    // the send began waiting (a loaded machine): then the check falls to the test's own session, the
    // send was not aborted, and the round proves nothing. Such a round is run again with new contacts.
    let proven = false;
    for (let round = 0; round < 4 && !proven; round++) {
      const a = `dl-a${round}@example.org`;
      const b = `dl-b${round}@example.org`;
      const created = await t.app.request({
        method: 'POST',
        url: '/contacts',
        key: t.project.secretKey,
        body: { email: a },
      });
      expect(created.status).toBe(201);
      // Another transaction has inserted b (not committed yet) and will want a next, as an
      // import chunk does between its insert pass and its update pass.
      const other = await holdContactLocks(dataSource, t.project.id, []);
      let sending: ReturnType<typeof t.send> | undefined;
      try {
        await other.query(
          `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
           VALUES (gen_random_uuid(), $1, $2, true, false, '{}', now(), now())`,
          [t.project.id, b],
        );
        sending = t.send({ to: [a, b], from: 'hello@acme.test', subject: 'deadlock', body: 'x' });
        expect(await lockWaiters(dataSource)).toBe(1); // the send holds a and waits for b
        try {
          await other.lock([a]); // closes the cycle
        } catch (error) {
          if (!/deadlock detected/.test(String(error))) throw error;
          continue; // this session was the victim (finally rolls it back; the send then goes through)
        }
        await other.commit();
        proven = true;
      } finally {
        await other.rollback();
        if (sending) {
          const res = await sending;
          expect(res.status).toBe(200);
          expect(res.body.data.emails).toHaveLength(2);
        }
      }
    }
    expect(proven).toBe(true);
  });

  it('refuses a sender on a domain that is not verified for this project (403)', async () => {
    const res = await t.send({
      to: 'x@example.org',
      from: 'someone@unverified.test',
      subject: 's',
      body: 'b',
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
    // With SMTP the caller is a tenant: no hint about switching the check off.
    expect(res.body.error.suggestion).toContain('POST /domains');
    expect(res.body.error.suggestion).not.toContain('REQUIRE_VERIFIED_SENDER');
    const other = await t.app.createProject('Other');
    const foreign = await t.app.request({
      method: 'POST',
      url: '/v1/send',
      key: other.secretKey,
      body: { to: 'x@example.org', from: 'hello@acme.test', subject: 's', body: 'b' },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
  });

  it("lists email records with filters, shows each one's stored message, and hides other projects' records", async () => {
    const res = await t.send({
      to: ['list1@example.org', 'list2@example.org'],
      from: 'hello@acme.test',
      subject: 'For {{ email }}',
      body: '<p>Hi <b>{{ email }}</b> <a href="{{ unsubscribeUrl }}">Leave</a></p>',
      track: true,
    });
    const [first] = res.body.data.emails;
    await waitForEmailStatus(t.app, t.project.secretKey, first.id, ['SENT']);
    const byContact = await t.app.request({
      method: 'GET',
      url: `/emails?contactId=${first.contact}`,
      key: t.project.secretKey,
    });
    expect(byContact.status).toBe(200);
    expect(byContact.body.data.items.map((e: { id: string }) => e.id)).toEqual([first.id]);
    const sent = await t.app.request({
      method: 'GET',
      url: '/emails?status=SENT&limit=1',
      key: t.project.secretKey,
    });
    expect(sent.body.data.items).toHaveLength(1);
    expect(sent.body.data.hasMore).toBe(true);
    expect(sent.body.data.total).toBeGreaterThan(1);
    const other = await t.app.createProject('Nosy');
    const foreign = await t.app.request({
      method: 'GET',
      url: `/emails/${first.id}`,
      key: other.secretKey,
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('EMAIL_NOT_FOUND');
    // The stored message as composed for this recipient, without the open pixel delivery added,
    // and with the preview unsubscribe link where the mail had a working token.
    const content = await t.app.request({
      method: 'GET',
      url: `/emails/${first.id}/content`,
      key: t.project.secretKey,
    });
    expect(content.status).toBe(200);
    expect(content.body.data).toEqual({
      subject: `For ${first.to}`,
      html: expect.stringMatching(
        /^<p>Hi <b>[^<]+<\/b> <a href="[^"]+\/unsubscribe\/preview">Leave<\/a><\/p>$/,
      ),
      text: expect.stringContaining(`Hi ${first.to}`),
      origin: 'STORED',
    });
    expect(content.body.data.html).toContain(`<b>${first.to}</b>`);
    const delivered = t.smtp.messagesTo(first.to).pop()!;
    expect(String(delivered.parsed!.html)).toContain('/t/o/');
    const working = /\/unsubscribe\/([A-Za-z0-9_-]{40,})/.exec(String(delivered.parsed!.text));
    expect(working).not.toBeNull();
    expect(content.body.data.text).toContain('/unsubscribe/preview');
    expect(JSON.stringify(content.body.data)).not.toContain(working![1]);
    const foreignContent = await t.app.request({
      method: 'GET',
      url: `/emails/${first.id}/content`,
      key: other.secretKey,
    });
    expect(foreignContent.status).toBe(404);
    expect(foreignContent.body.error.code).toBe('EMAIL_NOT_FOUND');
    const badId = await t.app.request({
      method: 'GET',
      url: '/emails/nope/content',
      key: t.project.secretKey,
    });
    expect(badId.status).toBe(400);
    expect(badId.body.error.code).toBe('BAD_REQUEST');
    const bad = await t.app.request({
      method: 'GET',
      url: '/emails?status=LOST',
      key: t.project.secretKey,
    });
    expect(bad.status).toBe(400);
  });
});
