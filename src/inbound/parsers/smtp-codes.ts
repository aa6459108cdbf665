/** An SMTP reply code (`550`) or an RFC 3463 enhanced status (`5.1.1`) found in a report. */
export interface SmtpReply {
  /** Where the reply starts in the text searched. */
  index: number;
  /** The enhanced status when there is one, else the reply code: what `status` reports. */
  status: string;
  kind: 'hard' | 'soft';
}

const ENHANCED_FIELD = /^\s*([245]\.\d{1,3}\.\d{1,3})(?![\d.])/;
// A reply code not glued to a port (`:587`), an address or a longer number, optionally followed by its enhanced status.
const REPLY = /(?<![\w.:[#/-])([45]\d\d)(?:[ -]+#?([45]\.\d{1,3}\.\d{1,3}))?(?=[\s:,;)'"-]|$)/;
const ENHANCED = /(?<![\w.])([45]\.\d{1,3}\.\d{1,3})(?![\w.])/;

/** The enhanced status at the start of a DSN `Status:` field (`5.1.1 (user unknown)` → `5.1.1`). */
export function statusField(value: string | null): string | null {
  const match = value === null ? null : ENHANCED_FIELD.exec(value);
  return match ? match[1] : null;
}

/** 5 → hard, 4 → soft, anything else (2.x.x success) → null. */
export function kindOf(status: string): 'hard' | 'soft' | null {
  if (status.startsWith('5')) return 'hard';
  if (status.startsWith('4')) return 'soft';
  return null;
}

/** The first failure reply in the text: a 4xx/5xx code (with its enhanced status), else a bare 4.x.x/5.x.x. */
export function findReply(text: string): SmtpReply | null {
  const reply = REPLY.exec(text);
  if (reply) {
    const status = reply[2] ?? reply[1];
    return { index: reply.index, status, kind: kindOf(status) ?? kindOf(reply[1])! };
  }
  const enhanced = ENHANCED.exec(text);
  if (enhanced) return { index: enhanced.index, status: enhanced[1], kind: kindOf(enhanced[1])! };
  return null;
}

/**
 * A multiline reply as one line: `550-5.1.1 a 550-5.1.1 b 550 5.1.1 c` →
 * `550 5.1.1 a b c` (Gmail folds its replies this way).
 */
export function joinReplyLines(reply: string): string {
  const first = /^([245]\d\d)[ -]((?:[245]\.\d{1,3}\.\d{1,3})?)\s*/.exec(reply);
  if (!first) return reply;
  const prefix = first[2] ? `${first[1]}[ -]${first[2].replace(/\./g, '\\.')}` : `${first[1]}[ -]`;
  const rest = reply.slice(first[0].length).replace(new RegExp(`\\s${prefix}(?=\\s)`, 'g'), '');
  return `${first[1]}${first[2] ? ' ' + first[2] : ''} ${rest.replace(/\s+/g, ' ').trim()}`.trim();
}
