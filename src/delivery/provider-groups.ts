import { Injectable } from '@nestjs/common';
import { parse as parseDomain } from 'tldts';
import type { ProviderGroup } from '../config/config';
import { DnsResolver, MxLookup } from '../domains/dns-resolver';

/** The contract's well-known domains, by exact name. */
const KNOWN_DOMAINS: ReadonlyMap<string, ProviderGroup> = new Map<string, ProviderGroup>([
  ['gmail.com', 'google'],
  ['googlemail.com', 'google'],
  ['outlook.com', 'microsoft'],
  ['msn.com', 'microsoft'],
  ['ymail.com', 'yahoo'],
  ['rocketmail.com', 'yahoo'],
  ['aol.com', 'yahoo'],
  ['icloud.com', 'apple'],
  ['me.com', 'apple'],
  ['mac.com', 'apple'],
]);

/** `hotmail.*`, `live.*`, `yahoo.*`: the label before any public suffix (hotmail.co.uk, yahoo.co.jp). */
const KNOWN_LABELS: ReadonlyMap<string, ProviderGroup> = new Map<string, ProviderGroup>([
  ['hotmail', 'microsoft'],
  ['live', 'microsoft'],
  ['yahoo', 'yahoo'],
]);

/** MX host suffixes, matched on whole labels (`aspmx.l.google.com` ends in `google.com`). */
const MX_SUFFIXES: ReadonlyArray<[string, ProviderGroup]> = [
  ['google.com', 'google'],
  ['googlemail.com', 'google'],
  ['outlook.com', 'microsoft'],
  ['protection.outlook.com', 'microsoft'],
  ['yahoodns.net', 'yahoo'],
];

/** The group of a domain by its name alone, or null when only its MX hosts can tell. */
export function groupOfDomainName(domain: string): ProviderGroup | null {
  const name = domain.toLowerCase().replace(/\.$/, '');
  const known = KNOWN_DOMAINS.get(name);
  if (known) return known;
  const parsed = parseDomain(name);
  if (parsed.subdomain === '' && parsed.domainWithoutSuffix)
    return KNOWN_LABELS.get(parsed.domainWithoutSuffix) ?? null;
  return null;
}

/**
 * The group of a domain by its MX answer: the most preferred host decides
 * (the server that receives the mail), `other` when no host is a provider's
 * or there is no answer.
 */
export function groupOfMxAnswer(answer: MxLookup): ProviderGroup {
  if (answer.kind !== 'FOUND' || answer.records.length === 0) return 'other';
  const best = Math.min(...answer.records.map((r) => r.priority));
  for (const record of answer.records) {
    if (record.priority !== best) continue;
    const host = record.exchange.toLowerCase().replace(/\.$/, '');
    for (const [suffix, group] of MX_SUFFIXES) {
      if (host === suffix || host.endsWith(`.${suffix}`)) return group;
    }
  }
  return 'other';
}

/** The domain part of an address (lower case). */
export function recipientDomain(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * An MX answer is kept an hour: the contract's floor (node's resolver does
 * not report an MX record's TTL, so the floor is the whole rule). A failed
 * lookup is kept 5 minutes, as `other`.
 */
export const MX_CACHE_MS = 3_600_000;
export const MX_FAILURE_CACHE_MS = 300_000;
/** A delivery waits at most this long for an MX answer (one try), then goes as `other`. */
export const MX_LOOKUP_BUDGET = { timeoutMs: 1000, tries: 1 };
const CACHE_SIZE = 10_000;

/**
 * Which provider group a recipient belongs to: the static table first, else
 * the domain's MX hosts through the resolvers of DNS_SERVERS, cached per
 * process. Concurrent deliveries to one new domain share one lookup.
 */
@Injectable()
export class ProviderGroups {
  private readonly cache = new Map<string, { group: ProviderGroup; until: number }>();
  private readonly pending = new Map<string, Promise<ProviderGroup>>();

  constructor(private readonly dns: DnsResolver) {}

  async groupOf(recipient: string): Promise<ProviderGroup> {
    const domain = recipientDomain(recipient);
    const cached = this.cache.get(domain);
    if (cached && cached.until > Date.now()) return cached.group;
    const byName = groupOfDomainName(domain);
    if (byName) {
      this.remember(domain, byName, Number.POSITIVE_INFINITY);
      return byName;
    }
    let lookup = this.pending.get(domain);
    if (!lookup) {
      lookup = this.lookup(domain).finally(() => this.pending.delete(domain));
      this.pending.set(domain, lookup);
    }
    return lookup;
  }

  private async lookup(domain: string): Promise<ProviderGroup> {
    const answer = await this.dns.lookupMx(domain, MX_LOOKUP_BUDGET);
    const group = groupOfMxAnswer(answer);
    this.remember(domain, group, answer.kind === 'ERROR' ? MX_FAILURE_CACHE_MS : MX_CACHE_MS);
    return group;
  }

  private remember(domain: string, group: ProviderGroup, forMs: number): void {
    if (this.cache.size >= CACHE_SIZE && !this.cache.has(domain))
      this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(domain, { group, until: Date.now() + forMs });
  }
}
