import { Inject, Injectable } from '@nestjs/common';
import { promises as dns } from 'node:dns';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';

/**
 * The answer for one lookup. ABSENT is definitive (NXDOMAIN or no record of
 * that type at the name); ERROR is a failure to get an answer (timeout,
 * SERVFAIL, refused), which must not count as "the record is gone".
 */
export type DnsLookup<T> =
  | { kind: 'FOUND'; records: T[] }
  | { kind: 'ABSENT'; nxdomain: boolean }
  | { kind: 'ERROR'; code: string };

/** TXT records, each as its character-strings. */
export type TxtLookup = DnsLookup<string[]>;
/** CNAME targets, as the resolver returns them. */
export type CnameLookup = DnsLookup<string>;
/** MX records: exchange host and preference. */
export type MxLookup = DnsLookup<{ exchange: string; priority: number }>;

/** How long one lookup may wait: per try, and how many tries. */
export interface LookupBudget {
  timeoutMs: number;
  tries: number;
}

/** TXT, CNAME and MX lookups through the resolvers of DNS_SERVERS (system resolvers when unset), with a bounded wait. */
@Injectable()
export class DnsResolver {
  /** Per-try timeout and tries: a check of five names stays well under the 10 s a verify request may take. */
  static readonly TIMEOUT_MS = 2000;
  static readonly TRIES = 2;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  lookupTxt(name: string): Promise<TxtLookup> {
    return this.lookup(name, (resolver) => resolver.resolveTxt(name));
  }

  lookupCname(name: string): Promise<CnameLookup> {
    return this.lookup(name, (resolver) => resolver.resolveCname(name));
  }

  /** MX records; delivery asks with a short budget of its own so a slow resolver never stalls it. */
  lookupMx(name: string, budget?: LookupBudget): Promise<MxLookup> {
    return this.lookup(name, (resolver) => resolver.resolveMx(name), budget);
  }

  private async lookup<T>(
    name: string,
    query: (resolver: dns.Resolver) => Promise<T[]>,
    budget: LookupBudget = { timeoutMs: DnsResolver.TIMEOUT_MS, tries: DnsResolver.TRIES },
  ): Promise<DnsLookup<T>> {
    // One Resolver per lookup: cheap, and concurrent lookups never share (or cancel) each other's channel.
    const resolver = new dns.Resolver({ timeout: budget.timeoutMs, tries: budget.tries });
    if (this.config.dnsServers.length > 0) resolver.setServers(this.config.dnsServers);
    try {
      return { kind: 'FOUND', records: await query(resolver) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      if (code === dns.NOTFOUND) return { kind: 'ABSENT', nxdomain: true };
      if (code === dns.NODATA) return { kind: 'ABSENT', nxdomain: false };
      return { kind: 'ERROR', code };
    }
  }
}
