import { isEmail } from 'class-validator';

/** Stored form of every address: trimmed and lower-cased, so uniqueness is case-insensitive. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** RFC 5322 dot-atom text (and UTF-8 letters, RFC 6532): what a sender's local part may be. */
const DOT_ATOM = /^[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+(\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+)*$/u;

/**
 * A sender's local part is a dot-atom: quoted local parts (`"x@bank.com"@acme.com`) are valid
 * addresses but let a sender show a second address in its own.
 */
export function hasDotAtomLocalPart(email: string): boolean {
  const at = email.lastIndexOf('@');
  return at > 0 && DOT_ATOM.test(email.slice(0, at));
}

/** The one email rule (API bodies and import rows alike). */
export function isValidEmail(email: string): boolean {
  return email.length <= 320 && isEmail(email, { allow_display_name: false, require_tld: true });
}
