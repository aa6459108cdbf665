import type { ParsedRecipient } from '../parsed-inbound';
import { addressIn, firstField, parseFieldBlocks, withoutType, type FieldBlock } from './fields';
import { findReply, joinReplyLines, kindOf, statusField } from './smtp-codes';

export interface DeliveryStatus {
  recipients: ParsedRecipient[];
  /** `Original-Envelope-Id` of the per-message block. */
  envelopeId: string | null;
  /** `Message-ID`s some MTAs quote in the per-message block (Gmail's `X-Original-Message-ID`). */
  messageIds: string[];
}

/**
 * A `message/delivery-status` (RFC 3464) or `message/global-delivery-status`
 * (RFC 6533, UTF-8) body: a per-message block, then one block per recipient.
 * Returns null when the part holds no recipient block.
 */
export function parseDeliveryStatus(text: string): DeliveryStatus | null {
  const blocks = parseFieldBlocks(text);
  const isRecipient = (block: FieldBlock) =>
    block.has('final-recipient') || block.has('original-recipient') || block.has('action');
  const recipientBlocks = blocks.filter(isRecipient);
  if (recipientBlocks.length === 0) return null;
  // The per-message block comes first; some MTAs (SES) omit it or put only Reporting-MTA there.
  const messageBlock = blocks.find((block) => !isRecipient(block));
  const envelopeId = firstField(messageBlock, 'original-envelope-id');
  const originalId = firstField(messageBlock, 'x-original-message-id');
  return {
    recipients: recipientBlocks.map(recipientOf),
    envelopeId,
    messageIds: originalId ? [originalId.replace(/^<|>$/g, '')] : [],
  };
}

function recipientOf(block: FieldBlock): ParsedRecipient {
  const finalRecipient = firstField(block, 'final-recipient');
  const original = firstField(block, 'original-recipient');
  const recipient = addressIn(finalRecipient === null ? original : withoutType(finalRecipient));
  const diagnosticField = firstField(block, 'diagnostic-code');
  const diagnostic =
    diagnosticField === null ? null : joinReplyLines(withoutType(diagnosticField)) || null;
  const reply = diagnostic === null ? null : findReply(diagnostic);
  const status = statusField(firstField(block, 'status')) ?? reply?.status ?? null;
  const action = (firstField(block, 'action') ?? '').toLowerCase().split(/[\s(]/)[0];
  return { kind: kindFor(action, status), recipient, status, diagnostic };
}

function kindFor(action: string, status: string | null): ParsedRecipient['kind'] {
  if (action === 'delayed') return 'delayed';
  // delivered, relayed, expanded (and anything unknown) are news no policy acts on.
  if (action !== 'failed') return 'ignored';
  // A failure without a usable code is treated as soft: soft bounces suppress only when they repeat.
  return (status === null ? null : kindOf(status)) ?? 'soft';
}
