import { TestDnsServer } from './dns-server';
import { TestApp, TestProject } from './test-app';

export interface DnsRecord {
  type: 'TXT' | 'CNAME';
  name: string;
  value: string;
  purpose: 'OWNERSHIP' | 'DKIM' | 'SPF' | 'DMARC' | 'RETURN_PATH';
  required: boolean;
  status: 'PENDING' | 'VERIFIED' | 'FAILED';
  found?: string[];
  error?: 'NXDOMAIN' | 'NO_RECORD' | 'MISMATCH' | 'DNS_ERROR';
}

export interface DomainBody {
  id: string;
  domain: string;
  status: 'PENDING' | 'VERIFIED' | 'FAILED';
  records: DnsRecord[];
  lastCheckedAt: string | null;
  verifiedAt: string | null;
  createdAt: string;
}

/** Publishes records of a domain on the test DNS server (by default the two required ones); a CNAME as a CNAME. */
export function publishDomainRecords(
  dns: TestDnsServer,
  domain: DomainBody,
  purposes: DnsRecord['purpose'][] = ['OWNERSHIP', 'DKIM'],
): void {
  for (const record of domain.records) {
    if (!purposes.includes(record.purpose)) continue;
    if (record.type === 'CNAME') dns.setCname(record.name, record.value);
    else dns.setTxt(record.name, record.value);
  }
}

/**
 * A VERIFIED sending domain for a project, the way a user gets one: POST
 * /domains, publish the records on the test DNS server, POST /domains/{id}/verify.
 * The app must run with `DNS_SERVERS: dns.address`, e.g.
 *
 *   const dns = await startTestDnsServer();
 *   const ctx = await setupTestApp({ DNS_SERVERS: dns.address });
 *   const domain = await verifyDomainForTest(ctx.app, project, 'example.com', dns);
 *   // now { from: 'hello@example.com' } passes the sender check, DKIM-signed.
 */
export async function verifyDomainForTest(
  app: TestApp,
  project: TestProject,
  domainName: string,
  dns: TestDnsServer,
): Promise<DomainBody> {
  const created = await app.request<{ data: DomainBody }>({
    method: 'POST',
    url: '/domains',
    key: project.secretKey,
    body: { domain: domainName },
  });
  if (created.status !== 201)
    throw new Error(`POST /domains answered ${created.status}: ${created.raw}`);
  publishDomainRecords(dns, created.body.data);
  const verified = await app.request<{ data: DomainBody }>({
    method: 'POST',
    url: `/domains/${created.body.data.id}/verify`,
    key: project.secretKey,
  });
  if (verified.status !== 200 || verified.body.data.status !== 'VERIFIED') {
    throw new Error(`domain ${domainName} did not verify: ${verified.status} ${verified.raw}`);
  }
  return verified.body.data;
}
