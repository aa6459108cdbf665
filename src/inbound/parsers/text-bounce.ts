import type { ParsedRecipient } from '../parsed-inbound';
import { addressIn } from './fields';
import { findReply, joinReplyLines } from './smtp-codes';

export interface TextBounceInput {
  subject: string;
  /** The From address and display name, as one string. */
  from: string;
  /** `X-Failed-Recipients` (Exim, Exchange), already split. */
  failedRecipients: string[];
  /** The message's text (text/plain, else HTML converted), without attached messages. */
  text: string;
}

/** Openings of the bounce texts MTAs write (Postfix, Exim, qmail, Exchange, Yahoo, Gmail, sendmail). */
const BOUNCE_TEXT = new RegExp(
  [
    'This is the mail system at host',
    'This is the Postfix program at host',
    'This message was created automatically by mail delivery software',
    'Mail delivery failed',
    'This is the qmail-send program',
    "I'm afraid I wasn't able to deliver your message",
    'Delivery has failed to these recipients',
    'Delivery to the following recipients? failed',
    'Your message (?:to .{1,200} )?(?:could not|couldn.t) be delivered',
    'could not be delivered to one or more (?:of its )?recipients',
    'Sorry, we were unable to deliver your message',
    'The original message was received at',
    '- The following addresses had permanent fatal errors -',
  ].join('|'),
  'i',
);
const BOUNCE_SUBJECT =
  /^\s*(?:Undeliver(?:ed|able)\b|Mail delivery failed|Delivery Status Notification \((?:Failure|Delay)\)|failure notice|Returned mail|Delivery failure|Mail System Error|Delayed Mail|Warning: message .* delayed|Non[- ]?delivery)/i;
const BOUNCE_SENDER = /\b(?:mailer-daemon|postmaster|mail delivery (?:system|subsystem))\b/i;
const DAEMON_ADDRESS = /^(?:mailer-daemon|postmaster)@/i;
const DELAY_NOTICE =
  /THIS IS A WARNING ONLY|will be retried|still being retried|will (?:keep|continue) trying|has not yet been delivered|delivery (?:has been|is) delayed|^[ \t]*Delayed Mail|^[ \t]*Warning: message .* delayed/im;
/** Where the returned copy of the message starts in a text bounce: everything after it is the sender's own mail. */
const RETURNED_COPY =
  /^[ \t]*-{2,}[ \t]*(?:This is a copy of the message|Below this line is a copy of the message|Original message|Returned message|Undelivered message|The header of the original message|Forwarded message|Message headers follow)|^(?:Return-Path|Received):/im;
const LEADING_ADDRESS = /^\s*<([^<>\s]+@[^<>\s]+)>:?|^\s*([^\s<>@:'"]+@[^\s<>:'"]+?):?\s*$/;
const MAX_DIAGNOSTIC = 1000;
/** A bounce names a few recipients; searching the text for thousands would cost more than it tells. */
const MAX_RECIPIENTS = 100;

/** The human part of a text bounce, before the copy of the returned message. */
export function reportPart(text: string): string {
  const copy = RETURNED_COPY.exec(text);
  return copy ? text.slice(0, copy.index) : text;
}

/** The part after the report: the returned message, when the bounce quotes it inline. */
export function returnedPart(text: string): string {
  const copy = RETURNED_COPY.exec(text);
  return copy ? text.slice(copy.index) : '';
}

/**
 * A bounce that is not a DSN: recognised by `X-Failed-Recipients`, by the text
 * MTAs open their bounces with, or by a daemon sender with a bounce subject.
 * Each recipient's paragraph decides: a 5xx reply → hard, 4xx → soft; a delay
 * warning → delayed; a failure without a code → soft. Null when it is not a bounce.
 */
export function parseTextBounce(input: TextBounceInput): ParsedRecipient[] | null {
  const report = reportPart(input.text);
  const looksLikeBounce =
    input.failedRecipients.length > 0 ||
    BOUNCE_TEXT.test(report) ||
    (BOUNCE_SENDER.test(input.from) && BOUNCE_SUBJECT.test(input.subject));
  if (!looksLikeBounce) return null;

  const delayed = DELAY_NOTICE.test(input.subject) || DELAY_NOTICE.test(report);
  const paragraphs = report.split(/\r?\n[ \t]*\r?\n/);
  const leading = new Map<string, string>();
  for (const paragraph of paragraphs) {
    const match = LEADING_ADDRESS.exec(paragraph.split(/\r?\n/, 1)[0]);
    const address = match ? addressIn(match[1] ?? match[2]) : null;
    // `postmaster@…` on a line of its own is whom to ask for help, not who failed.
    if (address === null || DAEMON_ADDRESS.test(address) || leading.has(address)) continue;
    leading.set(address, paragraph);
  }
  const addresses = new Set<string>();
  for (const failed of input.failedRecipients) {
    const address = addressIn(failed);
    if (address !== null) addresses.add(address);
  }
  for (const address of leading.keys()) addresses.add(address);
  const named = [...addresses].slice(0, MAX_RECIPIENTS);

  const recipients: ParsedRecipient[] = [];
  for (const address of named) {
    const paragraph =
      leading.get(address) ?? paragraphs.find((text) => text.toLowerCase().includes(address));
    // With one recipient the whole report is about it, wherever the MTA put the reply.
    const replyElsewhere =
      named.length === 1 &&
      (paragraph === undefined || findReply(paragraph) === null) &&
      findReply(report) !== null;
    const block = replyElsewhere ? report : (paragraph ?? '');
    recipients.push(recipientOf(address, block, delayed));
  }
  if (recipients.length === 0) {
    const reply = findReply(report);
    if (reply || delayed) recipients.push(recipientOf(null, reply ? report : '', delayed));
  }
  return recipients;
}

function recipientOf(address: string | null, block: string, delayed: boolean): ParsedRecipient {
  const reply = findReply(block);
  const diagnostic = reply ? replyText(block, reply.index) : withoutAddress(block);
  return {
    kind: delayed ? 'delayed' : (reply?.kind ?? 'soft'),
    recipient: address,
    status: reply?.status ?? null,
    diagnostic: diagnostic === '' ? null : diagnostic.slice(0, MAX_DIAGNOSTIC),
  };
}

/** The reply from its code to the end of its line, plus the indented lines continuing it. */
function replyText(block: string, index: number): string {
  const lines = block.slice(index).split(/\r?\n/);
  const kept = [lines[0]];
  for (const line of lines.slice(1)) {
    if (!/^[ \t]+\S/.test(line)) break;
    kept.push(line);
  }
  const reply = joinReplyLines(collapse(kept.join(' ')));
  // Exchange quotes the reply: `Remote server returned '550 5.1.1 …'`.
  const quote = block[index - 1];
  return (quote === "'" || quote === '"') && reply.endsWith(quote) ? reply.slice(0, -1) : reply;
}

function withoutAddress(block: string): string {
  const [first, ...rest] = block.split(/\r?\n/);
  return collapse([first.replace(LEADING_ADDRESS, ''), ...rest].join(' '));
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
