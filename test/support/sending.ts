import { promises as dnsPromises } from 'node:dns';
import type { DKIMResult } from 'mailauth';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { TestDnsServer } from './dns-server';
import { TestApp } from './test-app';

/** mailauth's DKIM check, resolving keys on the loopback test DNS server (the published records). */
export async function verifyDkim(raw: Buffer, dns: TestDnsServer): Promise<DKIMResult[]> {
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([dns.address]);
  const result = await dkimVerify(raw, {
    resolver: (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>,
  });
  return result.results;
}

/** Polls GET /emails/{id} until the status is one of `statuses`. */
export async function waitForEmailStatus(
  app: TestApp,
  key: string,
  emailId: string,
  statuses: string[],
  timeoutMs = 20_000,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the e2e assertions read fields directly
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const res = await app.request({ method: 'GET', url: `/emails/${emailId}`, key });
    last = res.body;
    if (res.status === 200 && statuses.includes(res.body.data.status)) return res.body.data;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`email ${emailId} did not reach ${statuses.join('/')}: ${JSON.stringify(last)}`);
}
