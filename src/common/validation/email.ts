import { isEmail } from 'class-validator';

/** Stored form of every address: trimmed and lower-cased, so uniqueness is case-insensitive. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The one email rule (API bodies and import rows alike). */
export function isValidEmail(email: string): boolean {
  return email.length <= 320 && isEmail(email, { allow_display_name: false, require_tld: true });
}
