import { newId } from '../database/id';
import { ReturnPathTokens } from '../sending/return-path';
import { emailCandidates, pickEmail, reportsOf } from './inbound-correlation';
import type { ParsedInbound } from './parsed-inbound';

const tokens = new ReturnPathTokens('unit-secret-unit-secret-unit-secret-0123');

function parsed(overrides: Partial<ParsedInbound> = {}): ParsedInbound {
  return {
    format: 'dsn',
    recipients: [],
    feedbackType: null,
    returnPaths: [],
    messageIds: [],
    envelopeId: null,
    ...overrides,
  };
}

describe('emailCandidates and pickEmail', () => {
  const a = newId();
  const b = newId();
  const c = newId();

  it('trusts the envelope token first, then the returned return path, envelope id and Message-ID', () => {
    const candidates = emailCandidates(
      [tokens.address(a, 'bounces.x.example').toUpperCase()],
      parsed({
        returnPaths: [tokens.address(b, 'bounces.y.example'), 'someone@else.example'],
        envelopeId: c,
        messageIds: [`${b}@mail.example`, 'not-ours@elsewhere.example'],
      }),
      tokens,
    );
    expect(candidates.map((x) => [x.emailId, x.matchedBy])).toEqual([
      [a, 'envelope'],
      [b, 'return-path'],
      [c, 'envelope-id'],
      [b, 'message-id'],
    ]);
    expect(
      pickEmail(
        candidates,
        new Map([
          [a, null],
          [b, null],
        ]),
      )?.matchedBy,
    ).toBe('envelope');
    // The envelope's email no longer exists: the returned headers decide.
    expect(pickEmail(candidates, new Map([[b, `<${b}@mail.example>`]]))?.matchedBy).toBe(
      'return-path',
    );
  });

  it('takes a Message-ID only when the stored one is the same (a relay may have replaced ours)', () => {
    const candidates = emailCandidates([], parsed({ messageIds: [`${a}@mail.example`] }), tokens);
    expect(pickEmail(candidates, new Map([[a, `<${a}@mail.example>`]]))).toEqual({
      emailId: a,
      matchedBy: 'message-id',
      messageId: `<${a}@mail.example>`,
    });
    expect(pickEmail(candidates, new Map([[a, `<${a}@other.example>`]]))).toBeNull();
    expect(pickEmail(candidates, new Map([[a, null]]))).toBeNull();
  });

  it('ignores forged tokens and foreign ids', () => {
    const forged = new ReturnPathTokens('another-secret-another-secret-000000').address(
      a,
      'b.example',
    );
    expect(
      emailCandidates(
        [forged, `fbl@bounces.example`],
        parsed({ returnPaths: [forged], envelopeId: 'xyz' }),
        tokens,
      ),
    ).toEqual([]);
  });
});

describe('reportsOf', () => {
  const dsn = parsed({
    recipients: [
      {
        kind: 'hard',
        recipient: 'a@x.example',
        status: '5.1.1',
        diagnostic: 'smtp; 550 no such user',
      },
      { kind: 'ignored', recipient: 'b@x.example', status: '2.0.0', diagnostic: null },
      { kind: 'delayed', recipient: 'c@x.example', status: '4.4.7', diagnostic: null },
    ],
  });

  it('makes one report per block a policy acts on, keyed by content and position', () => {
    const raw = Buffer.from('the raw message');
    const reports = reportsOf(raw, dsn, 'e1');
    expect(reports.map((r) => [r.kind, r.recipient, r.source, r.emailId])).toEqual([
      ['hard', 'a@x.example', 'dsn', 'e1'],
      ['delayed', 'c@x.example', 'dsn', 'e1'],
    ]);
    expect(reports[0].dedupeKey).toMatch(/^inbound-[0-9a-f]{32}-0$/);
    expect(reports[1].dedupeKey).toMatch(/-2$/);
    // The same bytes (a resent message, a retried job) give the same keys; other bytes do not.
    expect(reportsOf(Buffer.from('the raw message'), dsn, null).map((r) => r.dedupeKey)).toEqual(
      reports.map((r) => r.dedupeKey),
    );
    expect(reportsOf(Buffer.from('another message'), dsn, 'e1')[0].dedupeKey).not.toBe(
      reports[0].dedupeKey,
    );
  });

  it('marks ARF complaints as source arf with their feedback type', () => {
    const arf = parsed({
      format: 'arf',
      feedbackType: 'abuse',
      recipients: [{ kind: 'complaint', recipient: 'a@x.example', status: null, diagnostic: null }],
    });
    expect(reportsOf(Buffer.from('x'), arf, 'e1')).toEqual([
      expect.objectContaining({
        kind: 'complaint',
        source: 'arf',
        feedbackType: 'abuse',
        projectId: null,
      }),
    ]);
    expect(reportsOf(Buffer.from('x'), parsed({ format: 'auto-reply' }), 'e1')).toEqual([]);
  });

  it('drops NUL characters, which Postgres refuses in text and jsonb', () => {
    const nul = parsed({
      recipients: [
        {
          kind: 'hard',
          recipient: 'a@x.example\u0000',
          status: '5.1.1',
          diagnostic: '550 bad\u0000byte',
        },
      ],
    });
    expect(reportsOf(Buffer.from('x'), nul, 'e1')[0]).toMatchObject({
      recipient: 'a@x.example',
      diagnostic: '550 badbyte',
    });
  });
});
