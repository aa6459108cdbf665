import { domainToASCII } from 'node:url';
import { parse } from 'tldts';

export type DomainNameResult =
  { ok: true; domain: string } | { ok: false; reason: string; tooLong?: boolean };

const MAX_NAME = 253;
/** Reserved for testing and documentation (RFC 2606): accepted so examples and test setups work. */
const DOCUMENTATION_SUFFIXES = new Set(['test', 'example']);
/** Special-use names the public suffix list carries but no one on the internet can resolve (RFC 8375, RFC 7686). */
const SPECIAL_USE_SUFFIXES = new Set(['home.arpa', 'onion']);
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Turns user input into the stored form of a sending domain: IDNA to punycode,
 * lower case, and refuses anything that is not a hostname someone can own
 * (schemes, paths, ports, trailing dots, IP addresses, single labels and
 * names that are themselves a public suffix, such as `com` or `co.uk`).
 */
export function normalizeDomainName(input: string): DomainNameResult {
  const raw = input.trim();
  if (raw === '') return { ok: false, reason: 'domain must not be empty' };
  if (/[\s/\\:@?#]/.test(raw)) {
    return {
      ok: false,
      reason:
        'domain must be a bare hostname such as "example.com": no scheme, path, port or address',
    };
  }
  if (raw.endsWith('.')) return { ok: false, reason: 'domain must not end with a dot' };
  const ascii = domainToASCII(raw);
  if (ascii === '') return { ok: false, reason: 'domain is not a valid hostname' };
  if (ascii.length > MAX_NAME) {
    return {
      ok: false,
      reason: `domain must be at most ${MAX_NAME} characters (in punycode)`,
      tooLong: true,
    };
  }
  const labels = ascii.split('.');
  if (labels.length < 2)
    return { ok: false, reason: 'domain must have at least two labels, such as "example.com"' };
  if (!labels.every((label) => LABEL.test(label))) {
    return {
      ok: false,
      reason:
        'each label must be 1-63 letters, digits or hyphens, not starting or ending with a hyphen',
    };
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1]))
    return { ok: false, reason: 'domain must not be an IP address' };
  // Private suffixes count too: nobody sends as "github.io", but "alice.github.io" is an owned name.
  const parsed = parse(ascii, { allowPrivateDomains: true });
  if (parsed.isIp || parsed.domain === null) {
    return { ok: false, reason: `"${ascii}" is a public suffix; use a domain registered under it` };
  }
  // A name only a private network resolves (corp.internal, *.svc.cluster.local) can never pass
  // receivers' checks, and its TXT values would be looked up inside that network.
  const suffix = parsed.publicSuffix ?? '';
  const publicName =
    (parsed.isIcann || parsed.isPrivate || DOCUMENTATION_SUFFIXES.has(suffix)) &&
    !SPECIAL_USE_SUFFIXES.has(suffix);
  if (!publicName) {
    return {
      ok: false,
      reason: `"${ascii}" is not a public name (".${suffix}" is not a public suffix); use a domain registered on the internet`,
    };
  }
  return { ok: true, domain: ascii };
}

/**
 * The domain part of a sender address in stored form, or null when the
 * address has none. Accepts `a@b.com` and `Name <a@b.com>`.
 */
export function senderDomainOf(fromAddress: string): string | null {
  const angle = /<([^<>]*)>\s*$/.exec(fromAddress);
  const address = (angle ? angle[1] : fromAddress).trim();
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return null;
  const host = address.slice(at + 1);
  if (/[\s/\\:@?#]/.test(host) || host.endsWith('.')) return null;
  const ascii = domainToASCII(host);
  return ascii === '' ? null : ascii;
}
