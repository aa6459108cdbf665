import type { ParsedRecipient } from '../parsed-inbound';
import { addressIn, firstField, parseFieldBlocks, type FieldBlock } from './fields';

export interface FeedbackReport {
  recipient: ParsedRecipient;
  feedbackType: string | null;
  /** `Original-Mail-From`: the envelope sender of the reported message, our return path. */
  mailFrom: string | null;
}

/**
 * A `message/feedback-report` body (RFC 5965). Any type but `not-spam` is a
 * complaint. Providers often redact `Original-Rcpt-To`, so the recipient falls
 * back to the returned message: Microsoft's `X-HmXmrOriginalRecipient`, then `To`.
 */
export function parseFeedbackReport(
  text: string,
  returned: FieldBlock | undefined,
): FeedbackReport {
  const report = mergeBlocks(parseFieldBlocks(text));
  const feedbackType = firstField(report, 'feedback-type')?.toLowerCase() ?? null;
  const recipient =
    addressIn(firstField(report, 'original-rcpt-to')) ??
    addressIn(firstField(returned, 'x-hmxmroriginalrecipient')) ??
    addressIn(firstField(returned, 'to'));
  return {
    recipient: {
      kind: feedbackType === 'not-spam' ? 'ignored' : 'complaint',
      recipient,
      status: null,
      diagnostic: null,
    },
    feedbackType,
    mailFrom: addressIn(firstField(report, 'original-mail-from')),
  };
}

/** RFC 5965 has one block; a stray blank line must not hide the fields after it. */
function mergeBlocks(blocks: FieldBlock[]): FieldBlock {
  const merged: FieldBlock = new Map();
  for (const block of blocks) {
    for (const [name, values] of block) merged.set(name, [...(merged.get(name) ?? []), ...values]);
  }
  return merged;
}
