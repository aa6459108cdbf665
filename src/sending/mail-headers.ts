import { FieldError } from '../common/errors/api-exception';

/**
 * Headers the system writes itself. Letting a caller set them would allow
 * spoofing (From, Sender), hidden recipients (Bcc), broken MIME (Content-*),
 * forged signatures or unsubscribe links.
 */
const RESERVED = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'reply-to',
  'sender',
  'message-id',
  'date',
  'mime-version',
  'dkim-signature',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'return-path',
  'received',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
  'received-spf',
  'resent-from',
  'resent-to',
  'resent-cc',
  'resent-bcc',
  'resent-sender',
  'resent-date',
  'resent-message-id',
  'delivered-to',
  'x-original-to',
]);

/** RFC 5322 field name: printable ASCII except colon and space. */
const FIELD_NAME = /^[!-9;-~]{1,76}$/;
const MAX_VALUE = 998;

/** Validates caller headers; returns them as strings, or the field errors (`headers.X-Name`). */
export function validateMailHeaders(headers: Record<string, unknown> | undefined): {
  headers: Record<string, string>;
  errors: FieldError[];
} {
  const valid: Array<[string, string]> = [];
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    const field = `headers.${name}`;
    const lower = name.toLowerCase();
    if (!FIELD_NAME.test(name)) {
      errors.push({
        field,
        message: 'header names are 1..76 printable ASCII characters without ":"',
        code: 'invalid_string',
      });
    } else if (RESERVED.has(lower) || lower.startsWith('content-')) {
      errors.push({
        field,
        message: `the ${name} header is set by Mailwright and cannot be given`,
        code: 'custom',
      });
    } else if (typeof value !== 'string') {
      errors.push({ field, message: 'header values must be strings', code: 'invalid_type' });
    } else if (/[\r\n\0]/.test(value)) {
      errors.push({
        field,
        message: 'header values must not contain line breaks',
        code: 'invalid_string',
      });
    } else if (value.length > MAX_VALUE) {
      errors.push({
        field,
        message: `header values are at most ${MAX_VALUE} characters`,
        code: 'too_big',
      });
    } else {
      valid.push([name, value]);
    }
  }
  // fromEntries defines own properties: a header named like an Object.prototype member stays a header.
  return { headers: Object.fromEntries(valid), errors };
}
