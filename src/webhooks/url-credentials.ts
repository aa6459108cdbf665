/** What an answer shows in place of a credential. */
export const MASK = '***';

/** An endpoint's sealed URL is bound to "url:<id>": it opens on no other row, nor as its signing secret. */
export function endpointUrlAad(endpointId: string): string {
  return `url:${endpointId}`;
}

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/** Whether the URL carries credentials (`https://user:pass@host/…`). */
export function hasCredentials(url: string): boolean {
  const parsed = parse(url);
  return parsed !== null && (parsed.username !== '' || parsed.password !== '');
}

/** The URL with its credentials replaced by `***` (`https://***@host/…`); a URL without them as it is. */
export function maskCredentials(url: string): string {
  const parsed = parse(url);
  if (!parsed || (parsed.username === '' && parsed.password === '')) return url;
  parsed.username = MASK;
  parsed.password = '';
  return parsed.toString();
}

/** Whether the URL's credentials are the mask an answer showed (`***@` or `***:***@`): "keep the stored ones". */
export function isMaskedCredentials(url: string): boolean {
  const parsed = parse(url);
  return parsed !== null && parsed.username === MASK && ['', MASK].includes(parsed.password);
}

/**
 * The real URL for a request that sent back the masked one: `url` with the
 * stored URL's credentials, or null when the stored URL has none or points at
 * another origin (credentials are never carried to a host they were not
 * given for).
 */
export function restoreCredentials(url: string, stored: string): string | null {
  const target = parse(url);
  const source = parse(stored);
  if (!target || !source || (source.username === '' && source.password === '')) return null;
  if (target.origin !== source.origin) return null;
  target.username = source.username;
  target.password = source.password;
  return target.toString();
}
