import { promises as dnsPromises } from 'node:dns';
import type { DKIMResult } from 'mailauth';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { DataSource } from 'typeorm';
import { ContactsService } from '../../src/contacts/contacts.service';
import { Email, EmailSource } from '../../src/sending/email.entity';
import { EmailsService } from '../../src/sending/emails.service';
import { startTestDnsServer, TestDnsServer } from './dns-server';
import { verifyDomainForTest } from './domains';
import { startTestSmtpServer, TestSmtpServer, TestSmtpServerOptions } from './smtp-server';
import { InjectResult, setupTestApp, TestApp, TestProject } from './test-app';

/** mailauth's DKIM check, resolving keys on the loopback test DNS server (the published records). */
export async function verifyDkim(raw: Buffer, dns: TestDnsServer): Promise<DKIMResult[]> {
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([dns.address]);
  const result = await dkimVerify(raw, {
    resolver: (name: string, rrtype: string) =>
      resolver.resolve(name, rrtype) as Promise<string[][] | string[]>,
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

/** The world of a sending test: loopback DNS and SMTP servers, an app wired to both, a project that may send. */
export interface SendingTest {
  dns: TestDnsServer;
  smtp: TestSmtpServer;
  app: TestApp;
  /** Its test database and queue prefix, for worker processes that share them. */
  db: { url: string; name: string };
  prefix: string;
  /** Owns the verified domain `acme.test`. */
  project: TestProject;
  /** POST /v1/send with the project's secret key. */
  send(body: unknown, headers?: Record<string, string>): Promise<InjectResult>;
  /** POST /templates with the project's secret key. */
  createTemplate(body: Record<string, unknown>): Promise<InjectResult>;
  /** GET /contacts/{id} of the project: the response's `data` (undefined on an error). */
  contact(id: string): Promise<InjectResult['body']>;
  close(): Promise<void>;
}

/** The sender domain every sending test verifies for its project. */
export const SENDER_DOMAIN = 'acme.test';

/**
 * Starts a DNS server, an SMTP server and an app (SMTP_URL and DNS_SERVERS
 * pointing at them, links on https://mail.example.test, the rate limit out
 * of the way), then creates a project and verifies `acme.test` for it.
 * `env` adds to or overrides the app's environment.
 */
export async function startSendingTest(
  projectName: string,
  env: Record<string, string> = {},
  smtpOptions?: TestSmtpServerOptions,
): Promise<SendingTest> {
  const dns = await startTestDnsServer();
  const smtp = await startTestSmtpServer(smtpOptions);
  let ctx: Awaited<ReturnType<typeof setupTestApp>> | undefined;
  let project: TestProject;
  try {
    ctx = await setupTestApp({
      DNS_SERVERS: dns.address,
      SMTP_URL: smtp.url,
      PUBLIC_URL: 'https://mail.example.test',
      EMAIL_RATE_PER_SECOND: '1000',
      ...env,
    });
    project = await ctx.app.createProject(projectName);
    await verifyDomainForTest(ctx.app, project, SENDER_DOMAIN, dns);
  } catch (error) {
    // A half-started world would keep Jest alive: stop what did start.
    await ctx?.close();
    await smtp.close();
    await dns.stop();
    throw error;
  }
  const app = ctx;
  return {
    dns,
    smtp,
    app: app.app,
    db: app.db,
    prefix: app.prefix,
    project,
    send: (body, headers) =>
      app.app.request({ method: 'POST', url: '/v1/send', key: project.secretKey, body, headers }),
    createTemplate: (body) =>
      app.app.request({ method: 'POST', url: '/templates', key: project.secretKey, body }),
    contact: async (id) =>
      (await app.app.request({ method: 'GET', url: `/contacts/${id}`, key: project.secretKey }))
        .body.data,
    close: async () => {
      await app.close();
      await smtp.close();
      await dns.stop();
    },
  };
}

/**
 * Email rows committed the way campaigns and workflows create them (compose,
 * then insert in a transaction) but without their jobs: the test decides
 * whether and when they are enqueued, or leaves them to the recovery.
 */
export function insertEmailsWithoutJobs(
  t: SendingTest,
  to: string,
  sources: EmailSource[],
): Promise<Email[]> {
  const emails = t.app.app.get(EmailsService);
  return t.app.app.get(DataSource).transaction(async (manager) => {
    const { contact } = await t.app.app
      .get(ContactsService)
      .upsertByEmail(manager, t.project.id, to, { defaultSubscribed: false });
    const rows: Email[] = [];
    for (const source of sources) {
      rows.push(
        await emails.compose({
          projectId: t.project.id,
          contact,
          source,
          marketing: false,
          from: { email: 'hello@acme.test' },
          content: { subject: source, body: '<p>x</p>' },
        }),
      );
    }
    await emails.insert(manager, rows);
    return rows;
  });
}
