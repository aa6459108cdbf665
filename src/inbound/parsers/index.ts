import { compile } from 'html-to-text';
import {
  simpleParser,
  type Attachment,
  type ParsedMail,
  type SimpleParserOptions,
} from 'mailparser';
import type { ParsedInbound, ParsedRecipient } from '../parsed-inbound';
import { isAutoReply } from './auto-reply';
import { Correlation } from './correlation';
import { parseDeliveryStatus } from './delivery-status';
import { parseFeedbackReport } from './feedback-report';
import { parseHeaderBlock, type FieldBlock } from './fields';
import { parseTextBounce, returnedPart } from './text-bounce';

/**
 * The report parts come first in every format, so the first MiB holds all we
 * read: a 10 MB message (a bounce returning a large attachment) costs no more.
 */
const MAX_PARSE_BYTES = 1024 * 1024;
/** Header blocks, report parts and texts are scanned up to this many characters each. */
const MAX_SCAN_CHARS = 64 * 1024;

/** mailparser's options plus the mailsplit ones it passes through (not in its typings). */
/** mailparser's options for inbound mail (bench/bounces-baseline.js parses with the same). */
export const PARSER_OPTIONS: SimpleParserOptions & {
  ignoreEmbedded: boolean;
  maxChildNodes: number;
  maxHeadSize: number;
} = {
  keepDeliveryStatus: true,
  // A returned message stays one attachment whose headers we read, instead of being merged into the text.
  ignoreEmbedded: true,
  // Deeply nested multiparts fail fast (and end up `unknown`) instead of costing time.
  maxChildNodes: 100,
  maxHeadSize: 256 * 1024,
  // mailparser's own conversion is unbounded (1 MB of nested divs: 26 s); bodyText converts a bounded slice.
  skipHtmlToText: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  skipImageLinks: true,
};

/** Compiled once; the limits keep html-to-text, which recurses per nesting level, from overflowing the stack. */
const htmlToText = compile({
  wordwrap: false,
  limits: { maxDepth: 32, maxChildNodes: 5000 },
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { ignoreHref: true } },
  ],
});

const STATUS_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const FEEDBACK_TYPE = 'message/feedback-report';
const RETURNED_TYPES = new Set([
  'message/rfc822',
  'message/global',
  'text/rfc822-headers',
  'message/global-headers',
  'text/rfc822',
]);

/**
 * What an inbound message to a return path or the complaint-loop address is
 * (contract: "Bounces and complaints", Classification), and what in it names
 * the email it is about. Pure: no database, no I/O besides parsing the bytes.
 * A message mailparser cannot parse is `unknown`, never an error.
 */
export async function parseInbound(raw: Buffer): Promise<ParsedInbound> {
  let mail: ParsedMail;
  try {
    const input = raw.length > MAX_PARSE_BYTES ? raw.subarray(0, MAX_PARSE_BYTES) : raw;
    mail = await simpleParser(input, PARSER_OPTIONS);
  } catch {
    return result('unknown', [], null, null, new Correlation());
  }

  // Typed as string, but a part with an empty Content-Type has `false`.
  const partsOf = (accept: (type: string) => boolean) =>
    mail.attachments.filter((part) => accept(String(part.contentType ?? '').toLowerCase()));
  const statusParts = partsOf((type) => STATUS_TYPES.has(type));
  const feedbackParts = partsOf((type) => type === FEEDBACK_TYPE);
  const returnedParts = partsOf((type) => RETURNED_TYPES.has(type));
  const header = headerReader(mail);
  const text = bodyText(mail);

  const correlation = new Correlation();
  const returnedHeaders: FieldBlock[] = returnedParts.map((part) => parseHeaderBlock(textOf(part)));
  for (const headers of returnedHeaders) correlation.addHeaders(headers);
  correlation.addInlineCopy(returnedPart(text));
  for (const part of [...statusParts, ...feedbackParts, ...returnedParts]) {
    correlation.scanTokens(textOf(part));
  }
  correlation.scanTokens(text);

  if (feedbackParts.length > 0) {
    const report = parseFeedbackReport(textOf(feedbackParts[0]), returnedHeaders[0]);
    correlation.addReturnPath(report.mailFrom);
    return result('arf', [report.recipient], report.feedbackType, null, correlation);
  }

  const recipients: ParsedRecipient[] = [];
  let envelopeId: string | null = null;
  let isDsn = false;
  for (const part of statusParts) {
    const status = parseDeliveryStatus(textOf(part));
    if (status === null) continue;
    isDsn = true;
    recipients.push(...status.recipients);
    envelopeId ??= status.envelopeId;
    for (const id of status.messageIds) correlation.addMessageId(id);
  }
  if (isDsn) {
    correlation.addMessageId(header('in-reply-to')[0] ?? null);
    return result('dsn', recipients, null, envelopeId, correlation);
  }

  const textBounce = parseTextBounce({
    subject: mail.subject ?? '',
    from: mail.from?.text ?? '',
    failedRecipients: header('x-failed-recipients').flatMap((value) => value.split(',')),
    text,
  });
  if (textBounce !== null) {
    correlation.addMessageId(header('in-reply-to')[0] ?? null);
    return result('text-bounce', textBounce, null, null, correlation);
  }

  const autoReply = isAutoReply((name) => header(name)[0] ?? null);
  return result(autoReply ? 'auto-reply' : 'unknown', [], null, null, correlation);
}

function result(
  format: ParsedInbound['format'],
  recipients: ParsedRecipient[],
  feedbackType: string | null,
  envelopeId: string | null,
  correlation: Correlation,
): ParsedInbound {
  return {
    format,
    recipients,
    feedbackType,
    returnPaths: [...correlation.returnPaths],
    messageIds: [...correlation.messageIds],
    envelopeId,
  };
}

/** The text/plain body, else the HTML one as text (some Exchange and Gmail bounces send only HTML). */
function bodyText(mail: ParsedMail): string {
  if (mail.text?.trim()) return mail.text.slice(0, MAX_SCAN_CHARS);
  return typeof mail.html === 'string' ? htmlToText(mail.html.slice(0, MAX_SCAN_CHARS)) : '';
}

function textOf(part: Attachment): string {
  return Buffer.isBuffer(part.content)
    ? part.content.subarray(0, MAX_SCAN_CHARS).toString('utf8')
    : '';
}

/** The top-level header's raw values by lower-case name, unfolded; `[]` when absent. */
function headerReader(mail: ParsedMail): (name: string) => string[] {
  return (name) =>
    (mail.headerLines ?? [])
      .filter((header) => header.key === name)
      .map((header) =>
        header.line
          .slice(header.line.indexOf(':') + 1)
          .replace(/\r?\n[ \t]*/g, ' ')
          .trim(),
      );
}
