import {
  mailgunEvents,
  postmarkEvents,
  resendEvents,
  sendgridEvents,
  sesEvents,
} from './provider-events';
import { hostMatches } from './sns-verifier';

describe('provider events', () => {
  it('ses: Permanent → hard, Transient/Undetermined → soft, one per recipient, ids for correlation', () => {
    const mail = {
      source: 'b-1abc@bounces.example.com',
      headers: [{ name: 'Message-ID', value: '<0190-id@acme.test>' }],
      commonHeaders: { messageId: '<other@acme.test>' },
    };
    const events = sesEvents(
      {
        notificationType: 'Bounce',
        mail,
        bounce: {
          bounceType: 'Permanent',
          feedbackId: 'fb-1',
          bouncedRecipients: [
            { emailAddress: 'a@x.org', status: '5.1.1', diagnosticCode: 'smtp; 550' },
            { emailAddress: 'b@x.org' },
          ],
        },
      },
      'sns-1',
    );
    expect(events.map((e) => [e.kind, e.recipient, e.eventId])).toEqual([
      ['hard', 'a@x.org', 'fb-1'],
      ['hard', 'b@x.org', 'fb-1'],
    ]);
    expect(events[0]).toMatchObject({
      status: '5.1.1',
      diagnostic: 'smtp; 550',
      returnPath: 'b-1abc@bounces.example.com',
      messageIds: ['<0190-id@acme.test>', '<other@acme.test>'],
    });
    for (const bounceType of ['Transient', 'Undetermined'])
      expect(
        sesEvents(
          {
            eventType: 'Bounce',
            bounce: { bounceType, bouncedRecipients: [{ emailAddress: 'a@x' }] },
          },
          's',
        )[0].kind,
      ).toBe('soft');
    expect(sesEvents({ notificationType: 'Delivery', mail }, 's')).toEqual([]);
  });

  it('postmark: types map to kinds; unknown and auto-responder records are nothing', () => {
    const kind = (Type: string, RecordType = 'Bounce') =>
      postmarkEvents({ RecordType, Type, ID: 7, Email: 'a@x.org' })[0]?.kind ?? null;
    expect(kind('HardBounce')).toBe('hard');
    expect(kind('BadEmailAddress')).toBe('hard');
    expect(kind('SoftBounce')).toBe('soft');
    expect(kind('Transient')).toBe('delayed');
    expect(kind('SpamComplaint', 'SpamComplaint')).toBe('complaint');
    expect(kind('AutoResponder')).toBeNull();
    expect(kind('HardBounce', 'Delivery')).toBeNull();
  });

  it('mailgun: failed permanent/temporary, complained; the enhanced code as status', () => {
    const failed = (severity: string) =>
      mailgunEvents({
        event: 'failed',
        id: 'e1',
        severity,
        recipient: 'a@x.org',
        'delivery-status': { code: 550, 'enhanced-code': '5.1.1', message: 'no such user' },
        message: { headers: { 'message-id': 'abc@acme.test' } },
        envelope: { sender: 'b-1@bounces.acme.test' },
      })[0];
    expect(failed('permanent')).toMatchObject({
      kind: 'hard',
      status: '5.1.1',
      diagnostic: 'no such user',
      messageIds: ['abc@acme.test'],
      returnPath: 'b-1@bounces.acme.test',
    });
    expect(failed('temporary').kind).toBe('soft');
    expect(mailgunEvents({ event: 'complained', id: 'c1' })[0].kind).toBe('complaint');
    expect(mailgunEvents({ event: 'delivered', id: 'd1' })).toEqual([]);
  });

  it('sendgrid: bounce/blocked, dropped by reason, spamreport, deferred; others skipped', () => {
    const kinds = sendgridEvents([
      { event: 'bounce', type: 'bounce', sg_event_id: '1', email: 'a@x' },
      { event: 'bounce', type: 'blocked', sg_event_id: '2', email: 'a@x' },
      { event: 'dropped', reason: 'Bounced Address', sg_event_id: '3', email: 'a@x' },
      { event: 'dropped', reason: 'Spam Reporting Address', sg_event_id: '4', email: 'a@x' },
      { event: 'dropped', reason: 'Spam Content', sg_event_id: '5', email: 'a@x' },
      { event: 'spamreport', sg_event_id: '6', email: 'a@x' },
      { event: 'deferred', sg_event_id: '7', email: 'a@x' },
      { event: 'open', sg_event_id: '8', email: 'a@x' },
      'not an event',
    ]).map((e) => e.kind);
    expect(kinds).toEqual(['hard', 'soft', 'hard', 'complaint', 'soft', 'complaint', 'delayed']);
  });

  it('resend: bounced (Transient → soft), complained, delivery_delayed; one per recipient', () => {
    const events = resendEvents(
      { type: 'email.bounced', data: { to: ['a@x', 'b@x'], bounce: { type: 'Permanent' } } },
      'msg_1',
    );
    expect(events.map((e) => [e.kind, e.recipient, e.eventId])).toEqual([
      ['hard', 'a@x', 'msg_1'],
      ['hard', 'b@x', 'msg_1'],
    ]);
    expect(
      resendEvents(
        { type: 'email.bounced', data: { to: 'a@x', bounce: { type: 'Transient' } } },
        'm',
      )[0].kind,
    ).toBe('soft');
    expect(resendEvents({ type: 'email.complained', data: { to: ['a@x'] } }, 'm')[0].kind).toBe(
      'complaint',
    );
    expect(resendEvents({ type: 'email.delivered', data: { to: ['a@x'] } }, 'm')).toEqual([]);
  });
});

describe('SES_SNS_HOST_PATTERN matching', () => {
  it('`*` is exactly one DNS label', () => {
    const patterns = ['sns.*.amazonaws.com'];
    expect(hostMatches('sns.us-east-1.amazonaws.com', patterns)).toBe(true);
    expect(hostMatches('SNS.eu-west-3.AmazonAWS.com', patterns)).toBe(true);
    expect(hostMatches('sns.amazonaws.com', patterns)).toBe(false);
    expect(hostMatches('sns.a.b.amazonaws.com', patterns)).toBe(false);
    expect(hostMatches('sns.us-east-1.amazonaws.com.evil.test', patterns)).toBe(false);
    expect(hostMatches('evil.test', patterns)).toBe(false);
  });
});
