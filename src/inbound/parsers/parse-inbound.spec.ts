import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ParsedInbound, ParsedRecipient } from '../parsed-inbound';
import { parseInbound } from './index';

const FIXTURES = join(__dirname, '../../../test/fixtures/bounces');
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const crlf = (raw: Buffer) => Buffer.from(raw.toString('utf8').replace(/\r?\n/g, '\r\n'), 'utf8');
const rp = (token: string) => `b-${token}@bounces.example.com`;
const msgId = (n: string) => `0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a${n}@example.com`;

const cases: Array<[string, ParsedInbound]> = [
  [
    'gmail-dsn.eml',
    dsn(
      [
        hard(
          'no-such-user@gmail.com',
          '5.1.1',
          "550 5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos or unnecessary spaces. For more information, go to https://support.google.com/mail/?p=NoSuchUser a1si1234567wrb.2 - gsmtp",
        ),
      ],
      [rp('1e139e83002e457f00f6682120cc2da2b2109ad80c5aced0c8cb7')],
      [msgId('01')],
    ),
  ],
  [
    'outlook-ndr.eml',
    dsn(
      [
        hard(
          'gone.person@outlook.com',
          '5.1.10',
          '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
        ),
      ],
      [rp('1c2d7838414d1916b556af4207b4614542f63388926c206bef298')],
      [msgId('02')],
    ),
  ],
  [
    'yahoo-dsn.eml',
    dsn(
      [
        hard(
          'closed.account@yahoo.com',
          '5.0.0',
          "554 delivery error: dd This user doesn't have a yahoo.com account (closed.account@yahoo.com) [0] - mta4011.mail.gq1.yahoo.com",
        ),
      ],
      [rp('18c62e798072e358235a37efdcf56be9abaf73f6bd9ab7c1e1dcd')],
      [msgId('03')],
    ),
  ],
  [
    'postfix-dsn.eml',
    dsn(
      [
        hard(
          'left.company@example.net',
          '5.1.1',
          '550 5.1.1 <left.company@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
        ),
      ],
      [rp('12966a9176b41ade674beab2680fc8792d8b5dc86fef0c1ccf179')],
      [msgId('04')],
      '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a04',
    ),
  ],
  [
    'postfix-plain.eml',
    textBounce(
      [
        hard(
          'moved.away@example.org',
          '5.1.1',
          '550 5.1.1 <moved.away@example.org>: Recipient address rejected: User unknown in local recipient table (in reply to RCPT TO command)',
        ),
      ],
      [rp('166cd6cd728e5f85ccab1fddb9d2487f62cd01bcc2788a2fb37dc')],
      [msgId('05')],
    ),
  ],
  [
    'exim.eml',
    textBounce(
      [
        hard(
          'typo.user@example.co.uk',
          '5.1.1',
          '550 5.1.1 <typo.user@example.co.uk>: Recipient address rejected: User unknown in local recipient table',
        ),
      ],
      [rp('1a29681f43e9e0cdb7e2ca41bb8f856029d254fca93b2cc206324')],
      [msgId('06')],
    ),
  ],
  [
    'qmail.eml',
    textBounce(
      [
        hard(
          'nobody.here@example.info',
          '5.1.1',
          '550 5.1.1 <nobody.here@example.info>: Recipient address rejected: User unknown',
        ),
        {
          kind: 'soft',
          recipient: 'slow.server@example.info',
          status: '4.3.0',
          diagnostic: '451 4.3.0 Temporary lookup failure',
        },
      ],
      [rp('1ddb466f60c0091d15baded798bf90df067e6ade91533ee8642fc')],
      [msgId('07')],
    ),
  ],
  [
    // SES rewrites the envelope sender: the returned Return-Path is its own, the Message-ID ours.
    'ses-forwarded.eml',
    dsn(
      [hard('no.mailbox@example.org', '5.1.1', '550 5.1.1 user unknown')],
      ['0100019364a1b2c3-11112222-3333-4444-5555-666677778888-000000@amazonses.com'],
      [msgId('08')],
    ),
  ],
  [
    'smtputf8-dsn.eml',
    dsn(
      [
        hard(
          '用户@例子.example',
          '5.1.1',
          '550 5.1.1 <用户@例子.example>: Recipient address rejected: User unknown',
        ),
      ],
      [rp('1a0cf50532a71ab1aa2d1d01a7fbe78569e25b89a00209b68246e')],
      [msgId('09')],
    ),
  ],
  [
    'microsoft-arf.eml',
    arf(
      'complaint',
      'annoyed.reader@hotmail.com',
      'abuse',
      [rp('146ac46ae9409ba86c7a319f90d644821da975e1cd6f69e017827')],
      [msgId('10')],
    ),
  ],
  [
    'yahoo-arf.eml',
    arf(
      'complaint',
      'shopper@yahoo.com',
      'abuse',
      [rp('1ea16973eac4f4feaf7a13ff4eaf2535c416bef33477e21ff2fe7')],
      [msgId('11')],
    ),
  ],
  [
    'not-spam-arf.eml',
    arf(
      'ignored',
      'happy.customer@yahoo.com',
      'not-spam',
      [rp('118376844037eb31752e924a4bf05f53287f1b84a117a908d35a1')],
      [msgId('12')],
    ),
  ],
  [
    'vacation.eml',
    {
      format: 'auto-reply',
      recipients: [],
      feedbackType: null,
      returnPaths: [],
      messageIds: [],
      envelopeId: null,
    },
  ],
  [
    'delayed-dsn.eml',
    dsn(
      [
        {
          kind: 'delayed',
          recipient: 'patient.reader@example.net',
          status: '4.4.1',
          diagnostic: 'connect to mx.example.net[198.51.100.20]:25: Connection timed out',
        },
      ],
      [rp('18bf1b98035b410f5bbf7f628f83be1c1a250405f9687ea09f274')],
      [msgId('14')],
      '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a14',
    ),
  ],
  [
    'soft-dsn.eml',
    dsn(
      [
        {
          kind: 'soft',
          recipient: 'full.box@example.net',
          status: '4.2.2',
          diagnostic: '452 4.2.2 Mailbox full',
        },
      ],
      [rp('188f5158dc744b5ae05f4136d488d4c82d8866c4896b2949b6414')],
      [msgId('15')],
    ),
  ],
];

describe('parseInbound: one fixture per format', () => {
  it.each(cases)('%s', async (name, expected) => {
    expect(await parseInbound(fixture(name))).toEqual(expected);
  });

  it.each(cases)('%s with CRLF line ends, as SMTP delivers it', async (name, expected) => {
    expect(await parseInbound(crlf(fixture(name)))).toEqual(expected);
  });
});

describe('parseInbound: DSN per-recipient blocks', () => {
  const report = (blocks: string) =>
    message(
      'Content-Type: multipart/report; report-type=delivery-status; boundary="R"',
      `--R\nContent-Type: text/plain\n\nReport.\n\n--R\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n${blocks}\n--R--\n`,
    );

  it('ignores delivered, relayed and expanded, and classifies each block on its own', async () => {
    const parsed = await parseInbound(
      report(
        [
          'Final-Recipient: rfc822; a@example.net\nAction: delivered\nStatus: 2.0.0',
          'Final-Recipient: rfc822; b@example.net\nAction: relayed\nStatus: 2.0.0',
          'Final-Recipient: rfc822; c@example.net\nAction: expanded\nStatus: 2.0.0',
          'Final-Recipient: rfc822;<D@Example.net>\nAction: FAILED\nStatus: 5.7.1 (policy)',
        ].join('\n\n') + '\n',
      ),
    );
    expect(parsed.format).toBe('dsn');
    expect(parsed.recipients.map((r) => [r.kind, r.recipient, r.status])).toEqual([
      ['ignored', 'a@example.net', '2.0.0'],
      ['ignored', 'b@example.net', '2.0.0'],
      ['ignored', 'c@example.net', '2.0.0'],
      ['hard', 'd@example.net', '5.7.1'],
    ]);
  });

  it('falls back to the diagnostic reply code without a Status, and to soft without any code', async () => {
    const parsed = await parseInbound(
      report(
        'Final-Recipient: rfc822; a@example.net\nAction: failed\nDiagnostic-Code: smtp; 550 no such user\n\n' +
          'Original-Recipient: rfc822; b@example.net\nAction: failed\nDiagnostic-Code: X-Unix; mailbox locked\n',
      ),
    );
    expect(parsed.recipients).toEqual([
      { kind: 'hard', recipient: 'a@example.net', status: '550', diagnostic: '550 no such user' },
      { kind: 'soft', recipient: 'b@example.net', status: null, diagnostic: 'mailbox locked' },
    ]);
  });
  it('names the returned message by X-Original-Message-ID or In-Reply-To when no copy is attached', async () => {
    const bare = (headers: string, perMessage: string) =>
      message(
        `${headers}\nContent-Type: multipart/report; report-type=delivery-status; boundary="R"`,
        `--R\nContent-Type: message/delivery-status\n\n${perMessage}Reporting-MTA: dns; mx.example.net\n\n` +
          'Final-Recipient: rfc822; a@example.net\nAction: failed\nStatus: 5.1.1\n\n--R--\n',
      );
    const byOriginalId = await parseInbound(
      bare('Subject: failure', `X-Original-Message-ID: <${msgId('97')}>\n`),
    );
    const byReply = await parseInbound(bare(`In-Reply-To: <${msgId('98')}>`, ''));
    expect([byOriginalId.messageIds, byReply.messageIds]).toEqual([[msgId('97')], [msgId('98')]]);
  });
});

describe('parseInbound: ARF recipient and type', () => {
  it("takes the returned message's To when Original-Rcpt-To is redacted away, and lower-cases the type", async () => {
    const parsed = await parseInbound(
      message(
        'Content-Type: multipart/report; report-type=feedback-report; boundary="F"',
        '--F\nContent-Type: text/plain\n\nA report.\n\n--F\nContent-Type: message/feedback-report\n\n' +
          'Feedback-Type: Fraud\nVersion: 1\nUser-Agent: SomeFBL/1.0\n\n' +
          '--F\nContent-Type: text/rfc822-headers\n\nFrom: news@example.com\nTo: "Some One" <Some.One@example.org>\n' +
          `Message-ID: <${msgId('99')}>\n\n--F--\n`,
      ),
    );
    expect(parsed).toEqual({
      format: 'arf',
      recipients: [
        { kind: 'complaint', recipient: 'some.one@example.org', status: null, diagnostic: null },
      ],
      feedbackType: 'fraud',
      returnPaths: [],
      messageIds: [msgId('99')],
      envelopeId: null,
    });
  });
});

describe('parseInbound: non-standard bounces', () => {
  it('reads an Exchange-style X-Failed-Recipients bounce whose text names the reply apart from the address', async () => {
    const parsed = await parseInbound(
      message(
        'X-Failed-Recipients: Someone@Contoso.example\nSubject: Undeliverable: hello\nContent-Type: text/plain',
        'Delivery has failed to these recipients or groups:\n\nSomeone (Someone@contoso.example)\n' +
          "Your message wasn't delivered. Remote server returned '554 5.4.14 Hop count exceeded - possible mail loop'\n",
      ),
    );
    expect(parsed.format).toBe('text-bounce');
    expect(parsed.recipients).toEqual([
      {
        kind: 'hard',
        recipient: 'someone@contoso.example',
        status: '5.4.14',
        diagnostic: '554 5.4.14 Hop count exceeded - possible mail loop',
      },
    ]);
  });

  it('reads a text delay warning as delayed, 4xx or not', async () => {
    const parsed = await parseInbound(
      message(
        'From: MAILER-DAEMON@relay.example.net\nSubject: Warning: message 1tX-0001 delayed 24 hours',
        'This message was created automatically by mail delivery software.\n' +
          'A message that you sent has not yet been delivered to one or more of its\nrecipients after more than 24 hours on the queue.\n\n' +
          '  slow@example.net\n    host mx.example.net [203.0.113.9]\n    451 4.7.1 Greylisted, try again\n',
      ),
    );
    expect(parsed.format).toBe('text-bounce');
    expect(parsed.recipients.map((r) => [r.kind, r.recipient, r.status])).toEqual([
      ['delayed', 'slow@example.net', '4.7.1'],
    ]);
  });

  it("reads Gmail's older text bounce, whose reply stands paragraphs away from the address", async () => {
    const parsed = await parseInbound(
      message(
        'From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>\nSubject: Delivery Status Notification (Failure)',
        'Delivery to the following recipient failed permanently:\n\n     Old.Friend@example.org\n\n' +
          'Technical details of permanent failure:\nGoogle tried to deliver your message, but it was rejected by the server ' +
          'for the recipient domain example.org by mx.example.org. [203.0.113.60].\n\n' +
          'The error that the other server returned was:\n550 5.1.1 <old.friend@example.org>... User unknown\n',
      ),
    );
    expect(parsed.recipients).toEqual([
      {
        kind: 'hard',
        recipient: 'old.friend@example.org',
        status: '5.1.1',
        diagnostic: '550 5.1.1 <old.friend@example.org>... User unknown',
      },
    ]);
  });

  it('reports the reply with no recipient when the text names none (the return path still names the email)', async () => {
    const parsed = await parseInbound(
      message(
        'Subject: Returned mail: see transcript for details',
        'This is the mail system at host relay.example.net.\n\nFor help, write to\n\n  postmaster@relay.example.net\n\n' +
          'The server said: 550 5.7.1 Message rejected as spam\n',
      ),
    );
    expect(parsed).toMatchObject({
      format: 'text-bounce',
      recipients: [
        {
          kind: 'hard',
          recipient: null,
          status: '5.7.1',
          diagnostic: '550 5.7.1 Message rejected as spam',
        },
      ],
    });
  });

  it('reads a bounce sent only as HTML', async () => {
    const parsed = await parseInbound(
      message(
        'X-Failed-Recipients: gone@contoso.example\nSubject: Undeliverable: hi\nContent-Type: text/html; charset=utf-8',
        '<html><body><p><b>Delivery has failed to these recipients or groups:</b></p>' +
          '<p><a href="mailto:gone@contoso.example">gone@contoso.example</a><br>' +
          "Remote server returned '550 5.1.1 RESOLVER.ADR.RecipNotFound; not found'</p></body></html>\n",
      ),
    );
    expect(parsed.recipients).toEqual([
      {
        kind: 'hard',
        recipient: 'gone@contoso.example',
        status: '5.1.1',
        diagnostic: '550 5.1.1 RESOLVER.ADR.RecipNotFound; not found',
      },
    ]);
  });

  it('does not read a success notice from a mailer daemon as a bounce', async () => {
    const parsed = await parseInbound(
      message(
        'From: Mail Delivery Subsystem <mailer-daemon@example.net>\nSubject: Delivery Status Notification (Success)',
        'Your message was successfully delivered to the destination(s) listed below.\n\n  ok@example.net\n',
      ),
    );
    expect(parsed.format).toBe('unknown');
  });

  it('does not mistake a port or an address for a reply code', async () => {
    const parsed = await parseInbound(
      message(
        'From: MAILER-DAEMON@relay.example.net\nSubject: Undelivered Mail Returned to Sender',
        'This is the mail system at host relay.example.net.\n\n' +
          '<x@example.net>: connect to mx.example.net[203.0.113.45]:587: Connection refused\n',
      ),
    );
    expect(parsed.recipients).toEqual([
      {
        kind: 'soft',
        recipient: 'x@example.net',
        status: null,
        diagnostic: 'connect to mx.example.net[203.0.113.45]:587: Connection refused',
      },
    ]);
  });
});

describe('parseInbound: auto-replies and everything else', () => {
  it.each([
    ['Auto-Submitted: auto-generated', 'auto-reply'],
    ['Auto-Submitted: auto-replied; owner-email="pat@example.org"', 'auto-reply'],
    ['Auto-Submitted: no', 'unknown'],
    ['X-Autoreply: yes', 'auto-reply'],
    ['X-Autorespond: Out of office', 'auto-reply'],
    ['Precedence: auto_reply', 'auto-reply'],
    ['Precedence: bulk', 'unknown'],
  ])('%s → %s', async (header, format) => {
    const parsed = await parseInbound(message(`${header}\nSubject: Re: hello`, 'Thanks!\n'));
    expect(parsed.format).toBe(format);
    expect(parsed.recipients).toEqual([]);
  });

  it('keeps a token found in a human reply so the worker can still match it', async () => {
    const token = rp('1eea860f9277f82be40d0cc3abe9cca08a772a4201a5241f3c4ae');
    const parsed = await parseInbound(
      message('Subject: Re: hello', `Why did ${token.toUpperCase()} write to me?\n`),
    );
    expect(parsed).toMatchObject({ format: 'unknown', recipients: [], returnPaths: [token] });
  });

  it('survives a part whose Content-Type is empty', async () => {
    const parsed = await parseInbound(
      message('Content-Type: multipart/mixed; boundary=X', '--X\nContent-Type: ;\n\nabc\n--X--\n'),
    );
    expect(parsed).toMatchObject({ format: 'unknown', recipients: [] });
  });

  it('answers unknown for bytes that are not mail', async () => {
    const parsed = await parseInbound(Buffer.from([0, 255, 1, 254, 10, 13, 10, 0, 42]));
    expect(parsed).toMatchObject({ format: 'unknown', recipients: [] });
  });
});

describe('parseInbound: pathological input stays cheap', () => {
  it('reads a DSN returning a 10 MB message, and 10 MB of one line, in bounded time', async () => {
    const dsnHead = fixture('soft-dsn.eml');
    const big = Buffer.concat([
      dsnHead.subarray(0, dsnHead.lastIndexOf('--5AbC')),
      Buffer.from(
        'x'
          .repeat(80)
          .concat('\n')
          .repeat(128 * 1024),
      ),
    ]);
    const line = Buffer.concat([
      Buffer.from('Subject: x\n\n'),
      Buffer.alloc(10 * 1024 * 1024, 'a'),
    ]);
    const started = Date.now();
    expect(big.length).toBeGreaterThan(10 * 1024 * 1024);
    expect((await parseInbound(big)).recipients.map((r) => r.kind)).toEqual(['soft']);
    expect((await parseInbound(line)).format).toBe('unknown');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('reads only the first MiB: a report part placed after 1 MiB of filler is not looked at', async () => {
    const filler = 'y'
      .repeat(76)
      .concat('\n')
      .repeat(14 * 1024);
    const parsed = await parseInbound(
      message(
        'Content-Type: multipart/report; report-type=delivery-status; boundary="R"',
        `--R\nContent-Type: text/plain\n\n${filler}\n--R\nContent-Type: message/delivery-status\n\n` +
          'Final-Recipient: rfc822; a@example.net\nAction: failed\nStatus: 5.1.1\n\n--R--\n',
      ),
    );
    expect(filler.length).toBeGreaterThan(1024 * 1024);
    expect(parsed.format).toBe('unknown');
  });

  it('reads input shaped to make patterns backtrack (long values without @, thousands of blank lines) in bounded time', async () => {
    const manyAddresses = Array.from({ length: 5000 }, (_, i) => `u${i}@example.net`).join(', ');
    const inputs = [
      message(`X-Failed-Recipients: ${'a'.repeat(200 * 1024)}`, 'x\n'),
      message(`X-Failed-Recipients: ${manyAddresses}`, 'x\n'.repeat(30 * 1024)),
      message(
        'Subject: Undelivered Mail Returned to Sender',
        '\n'.repeat(60 * 1024) + 'Delayed Mail',
      ),
      message(
        'Subject: x',
        `Return-Path: ${'a'.repeat(60 * 1024)}\nMessage-ID: ${'<'.repeat(60 * 1024)}\n`,
      ),
    ];
    const started = Date.now();
    for (const input of inputs) await parseInbound(input);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('converts at most a bounded slice of HTML, however deeply nested', async () => {
    const started = Date.now();
    const parsed = await parseInbound(
      message(
        'X-Failed-Recipients: a@example.net\nContent-Type: text/html',
        '<div>'.repeat(200 * 1024) + '550 5.1.1 gone',
      ),
    );
    expect(parsed.format).toBe('text-bounce');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('gives up on deeply nested multiparts instead of walking them', async () => {
    let head = '';
    let tail = '';
    for (let depth = 0; depth < 500; depth++) {
      head += `Content-Type: multipart/mixed; boundary="n${depth}"\n\n--n${depth}\n`;
      tail = `\n--n${depth}--\n${tail}`;
    }
    const parsed = await parseInbound(
      Buffer.from(
        `From: a@example.org\nX-Failed-Recipients: a@example.net\n${head}Content-Type: text/plain\n\n550 5.1.1 gone\n${tail}`,
      ),
    );
    expect(parsed).toMatchObject({ format: 'unknown', recipients: [] });
  });
});

function message(headers: string, body: string): Buffer {
  return Buffer.from(
    `From: someone@example.org\nTo: ${rp('1e139e83002e457f00f6682120cc2da2b2109ad80c5aced0c8cb7')}\n` +
      `MIME-Version: 1.0\n${headers}\n\n${body}`,
  );
}

function hard(recipient: string, status: string, diagnostic: string): ParsedRecipient {
  return { kind: 'hard', recipient, status, diagnostic };
}

function dsn(
  recipients: ParsedRecipient[],
  returnPaths: string[],
  messageIds: string[],
  envelopeId: string | null = null,
): ParsedInbound {
  return { format: 'dsn', recipients, feedbackType: null, returnPaths, messageIds, envelopeId };
}

function textBounce(
  recipients: ParsedRecipient[],
  returnPaths: string[],
  messageIds: string[],
): ParsedInbound {
  return {
    format: 'text-bounce',
    recipients,
    feedbackType: null,
    returnPaths,
    messageIds,
    envelopeId: null,
  };
}

function arf(
  kind: ParsedRecipient['kind'],
  recipient: string,
  feedbackType: string,
  returnPaths: string[],
  messageIds: string[],
): ParsedInbound {
  return {
    format: 'arf',
    recipients: [{ kind, recipient, status: null, diagnostic: null }],
    feedbackType,
    returnPaths,
    messageIds,
    envelopeId: null,
  };
}
