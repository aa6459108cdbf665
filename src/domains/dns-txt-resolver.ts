import { Inject, Injectable } from '@nestjs/common';
import { promises as dns } from 'node:dns';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';

/**
 * The answer for one TXT lookup. ABSENT is definitive (NXDOMAIN or no TXT at
 * the name); ERROR is a failure to get an answer (timeout, SERVFAIL, refused),
 * which must not count as "the record is gone".
 */
export type TxtLookup =
  | { kind: 'FOUND'; records: string[][] }
  | { kind: 'ABSENT'; nxdomain: boolean }
  | { kind: 'ERROR'; code: string };

/** TXT lookups through the resolvers of DNS_SERVERS (system resolvers when unset), with a bounded wait. */
@Injectable()
export class DnsTxtResolver {
  /** Per-try timeout and tries: a check of four names stays well under the 10 s a verify request may take. */
  static readonly TIMEOUT_MS = 2000;
  static readonly TRIES = 2;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async lookupTxt(name: string): Promise<TxtLookup> {
    // One Resolver per lookup: cheap, and concurrent lookups never share (or cancel) each other's channel.
    const resolver = new dns.Resolver({
      timeout: DnsTxtResolver.TIMEOUT_MS,
      tries: DnsTxtResolver.TRIES,
    });
    if (this.config.dnsServers.length > 0) resolver.setServers(this.config.dnsServers);
    try {
      return { kind: 'FOUND', records: await resolver.resolveTxt(name) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      if (code === dns.NOTFOUND) return { kind: 'ABSENT', nxdomain: true };
      if (code === dns.NODATA) return { kind: 'ABSENT', nxdomain: false };
      return { kind: 'ERROR', code };
    }
  }
}
