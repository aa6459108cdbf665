import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityViolations, launchChromium, screenshot } from '../support/browser';
import { startTestDnsServer, TestDnsServer } from '../support/dns-server';
import { linksOf } from '../support/links';
import { pollUntil } from '../support/poll';
import {
  callApi,
  deploymentEnv,
  mailEnv,
  ServiceCluster,
  verifyDomainOverHttp,
} from '../support/services';
import { startTestSmtpServer, TestSmtpServer } from '../support/smtp-server';
import { createTestDatabase, flushPrefix } from '../support/test-app';

/**
 * The template and campaign pages in Chromium against the built service (an API and a worker
 * process, their own database, the loopback SMTP and DNS servers, a verified sender domain): a
 * template's live preview and its Liquid error at the line; a campaign composed in the page for a
 * segment of 200 contacts, test-sent (the SMTP server gets it), sent, and watched until SENT with
 * its chart; who opened; axe-core on every page visited.
 */
describe('templates and campaigns in Chromium', () => {
  const prefix = `mwbrowsercamp${process.pid}`;
  const RECIPIENTS = 200;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let cluster: ServiceCluster;
  let base: string;
  let project: { id: string; secretKey: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let campaignUrl: string;
  let segmentId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer();
    const cwd = mkdtempSync(join(tmpdir(), 'mw-browser-camp-'));
    cluster = new ServiceCluster(
      () => ({ ...deploymentEnv(db.url, prefix), ...mailEnv(smtp, dns, join(cwd, 'outbox')) }),
      process.cwd(),
    );
    ({ base } = await cluster.startApi());
    // A busy machine can take well over 30 s to start a worker.
    const worker = cluster.startWorker({}, 120_000);
    project = cluster.createProject('Campaign Browser Co');
    await verifyDomainOverHttp(base, project.secretKey, 'news.example', dns);
    // 200 recipients and one outsider, 20 requests at a time.
    const emails = Array.from(
      { length: RECIPIENTS },
      (_, i) => `reader${String(i).padStart(3, '0')}@audience.example`,
    );
    emails.push('outsider@elsewhere.example');
    for (let i = 0; i < emails.length; i += 20) {
      await Promise.all(
        emails.slice(i, i + 20).map(async (email) => {
          const res = await callApi(base, project.secretKey, 'POST', '/contacts', {
            email,
            subscribed: true,
            data: { firstName: `Reader ${email.slice(6, 9)}` },
          });
          if (res.status !== 201) throw new Error(`POST /contacts: ${res.status}`);
        }),
      );
    }
    const segment = await callApi(base, project.secretKey, 'POST', '/segments', {
      name: 'Audience readers',
      condition: {
        logic: 'AND',
        conditions: [{ field: 'email', operator: 'endsWith', value: '@audience.example' }],
      },
    });
    if (segment.status !== 201) throw new Error(`POST /segments: ${segment.status}`);
    segmentId = segment.body.data.id;
    [browser] = await Promise.all([launchChromium(), worker]);
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
    // Send now, Delete and Cancel ask first.
    page.on('dialog', (dialog) => void dialog.accept());
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.killAll();
    await smtp?.close();
    await dns?.stop();
    await db?.drop();
    await flushPrefix(prefix);
  });

  async function expectAccessible(): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
  }

  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();

  it('creates a template and shows its live preview and a Liquid error at its line', async () => {
    await page.goto(`${base}/app/`);
    await page.getByLabel('Secret key').fill(project.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();

    await nav('Templates');
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    await page.getByText('No templates yet.').waitFor();
    await page.getByText('New template').click();
    await page.getByLabel('Template name').fill('Monthly news');
    await page.getByRole('button', { name: 'Create template' }).click();
    await page.getByRole('heading', { name: 'Monthly news', level: 1 }).waitFor();

    // What is typed is rendered by the API with the sample data, without saving.
    await page.getByLabel('Subject (Liquid)').fill('News for {{ firstName }}');
    await page
      .getByLabel('Body (HTML with Liquid)')
      .fill(
        '<h1>Hello {{ firstName }}</h1>\n<p>Plan: {{ plan | default: "free" }}</p>\n<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
      );
    await page.getByLabel('Sample data (JSON)').fill('{"firstName": "Ada", "plan": "pro"}');
    const frame = page.frameLocator('iframe[title="Rendered email"]');
    await frame.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await frame.getByText('Plan: pro').waitFor();
    await page.getByText('News for Ada').waitFor();
    await page.getByText('Unsaved changes').waitFor();

    // Broken Liquid: the API's message, with the line it names.
    await page
      .getByLabel('Body (HTML with Liquid)')
      .fill('<h1>Hello {{ firstName }}</h1>\n<p>\n{% if plan %}\nPro</p>');
    const alert = page.getByRole('alert');
    await alert.getByText(/Body, line 3: .*not closed/).waitFor();
    await alert.getByRole('button', { name: 'Go to line 3' }).click();
    expect(await page.evaluate<string>('document.activeElement?.tagName')).toBe('TEXTAREA');
    await expectAccessible();

    await page
      .getByLabel('Body (HTML with Liquid)')
      .fill(
        '<h1>Hello {{ firstName }}</h1>\n<p>Our news this month.</p>\n<p><a href="https://news.example/read">Read</a> · <a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
      );
    await frame.getByText('Our news this month.').waitFor();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^Saved at /).waitFor();
    await expectAccessible();
    await screenshot(page, 'template-editor');
    const list = await callApi(base, project.secretKey, 'GET', '/templates');
    expect(list.body.data.items[0]).toMatchObject({
      name: 'Monthly news',
      subject: 'News for {{ firstName }}',
    });
  });

  it('composes a campaign for a segment with its live count, test-sends it, sends it and watches it reach SENT', async () => {
    await nav('Campaigns');
    await page.getByRole('heading', { name: 'Campaigns', level: 1 }).waitFor();
    await page.getByText('No campaigns yet.').waitFor();
    await expectAccessible();
    await page.getByRole('link', { name: 'New campaign' }).click();
    await page.getByRole('heading', { name: 'New campaign', level: 1 }).waitFor();
    await page.getByLabel('Campaign name').fill('November news');
    await page.getByLabel('From address').fill('hello@news.example');
    await page
      .getByLabel('Start from a template (copies its subject and body)')
      .selectOption({ label: 'Monthly news' });
    await expect(page.getByLabel('Subject (Liquid)').inputValue()).resolves.toBe(
      'News for {{ firstName }}',
    );
    // All subscribed contacts first, then the segment: the count follows the choice.
    await page.getByText(`${RECIPIENTS + 1} subscribed recipients now`).waitFor();
    // A filter: the condition builder, empty to begin with (every subscribed contact).
    await page.getByLabel('Contacts matching a filter').check();
    await page.getByRole('group', { name: 'Audience filter' }).waitFor();
    await page.getByText(`${RECIPIENTS + 1} subscribed recipients now`).waitFor();
    await page.getByLabel('A segment').check();
    await page.getByLabel('Segment', { exact: true }).selectOption(segmentId);
    await page.getByText(`${RECIPIENTS} subscribed recipients now`).waitFor();
    await expectAccessible();
    await screenshot(page, 'campaign-editor');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('heading', { name: 'November news', level: 1 }).waitFor();
    campaignUrl = page.url();
    await page.locator('.badge-draft').first().waitFor();

    // Test send: the SMTP server gets the [TEST] message; the campaign stays a DRAFT.
    await page.getByLabel('Send a test to (up to 5 addresses)').fill('qa@checker.example');
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.getByText('Test sent to qa@checker.example.').waitFor();
    await pollUntil(
      async () => smtp.messagesTo('qa@checker.example').length,
      (n) => n > 0,
      20_000,
    );
    expect(smtp.messagesTo('qa@checker.example')[0].parsed?.subject).toMatch(/^\[TEST\] News for/);
    expect(
      (await callApi(base, project.secretKey, 'GET', `/campaigns/${campaignUrl.split('/').pop()}`))
        .body.data.status,
    ).toBe('DRAFT');

    const started = Date.now();
    await page.getByRole('button', { name: 'Send now' }).click();
    // The page polls the stats every 2 s until the campaign is final.
    await page.locator('.badge-sent').first().waitFor({ timeout: 40_000 });
    const cards = page.getByLabel('Campaign stats');
    await cards
      .locator('.card', { hasText: 'Sent' })
      .getByText(String(RECIPIENTS), { exact: true })
      .waitFor();
    await page.getByText(`Delivered or settled: ${RECIPIENTS} of ${RECIPIENTS}`).waitFor();
    await page.locator('.chart canvas').waitFor();
    console.log(`campaign of ${RECIPIENTS}: SENT shown ${Date.now() - started} ms after Send now`);
    const delivered = smtp.messages.filter((m) =>
      m.to.some((t) => t.endsWith('@audience.example')),
    );
    expect(delivered).toHaveLength(RECIPIENTS);
    expect(smtp.messagesTo('outsider@elsewhere.example')).toHaveLength(0);
    await expectAccessible();
    await screenshot(page, 'campaign-sent');
  });

  it('lists who opened, filters campaigns by status, and fits a 360 px screen', async () => {
    const message = smtp.messagesTo('reader007@audience.example')[0];
    const pixel = linksOf(String(message.parsed?.html)).images[0];
    expect((await fetch(`${base}${new URL(pixel).pathname}`)).status).toBe(200);
    const id = campaignUrl.split('/').pop();
    await pollUntil(
      () => callApi(base, project.secretKey, 'GET', `/emails?campaignId=${id}&opened=true`),
      (r) => r.body.data.total === 1,
      20_000,
      250,
    );
    await page.goto(campaignUrl);
    await page
      .getByRole('region', { name: 'Recipients who engaged' })
      .getByRole('link', { name: 'reader007@audience.example' })
      .waitFor();
    await page.getByRole('button', { name: 'Clicked' }).click();
    await page.getByText('No one has clicked yet.').waitFor();
    await expectAccessible();

    // One email's page: its delivery, the message in a frame sandboxed to nothing, and for a
    // hard-bounced one (reported through POST /bounces) the bounce's details.
    const opened = await callApi(
      base,
      project.secretKey,
      'GET',
      `/emails?campaignId=${id}&opened=true`,
    );
    const openedId = opened.body.data.items[0].id as string;
    const unopened = await callApi(
      base,
      project.secretKey,
      'GET',
      `/emails?campaignId=${id}&opened=false&limit=1`,
    );
    const bouncedId = unopened.body.data.items[0].id as string;
    const bounce = await callApi(base, project.secretKey, 'POST', '/bounces', {
      emailId: bouncedId,
      type: 'hard',
      status: '5.1.1',
      diagnostic: '550 5.1.1 mailbox unknown',
    });
    expect(bounce.status).toBe(200);
    const emailPage = `${base}/app/emails/${openedId}`;
    await page.goto(emailPage);
    await page.getByRole('heading', { name: 'News for Reader 007', level: 1 }).waitFor();
    const frame = page.getByTitle('Rendered email');
    await expect(frame.getAttribute('sandbox')).resolves.toBe('');
    await expect(frame.getAttribute('srcdoc')).resolves.toContain('Reader 007');
    await page
      .frameLocator('iframe[title="Rendered email"]')
      .getByText(/Reader 007/)
      .first()
      .waitFor();
    await page.getByText(/rendered again now for the contact/).waitFor();
    await page.getByRole('button', { name: 'Text', exact: true }).click();
    await page
      .locator('pre')
      .getByText(/Reader 007/)
      .waitFor();
    await expectAccessible();
    await screenshot(page, 'email');
    await page.goto(`${base}/app/emails/${bouncedId}`);
    await page.getByRole('heading', { name: 'Bounce', level: 2 }).waitFor();
    await page.getByText('550 5.1.1 mailbox unknown').waitFor();
    await page.getByText('5.1.1', { exact: true }).waitFor();
    await expectAccessible();

    await nav('Campaigns');
    await page.getByLabel('Status').selectOption('DRAFT');
    await page.getByText('No campaigns match.').waitFor();
    await page.getByLabel('Status').selectOption('SENT');
    await page.getByRole('link', { name: 'November news' }).waitFor();

    await page.setViewportSize({ width: 360, height: 740 });
    for (const url of [campaignUrl, `${base}/app/campaigns/new`, emailPage]) {
      await page.goto(url);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
      const sticking = await page.evaluate<string[]>(`[...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap'))
        .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' ' + (e.textContent || '').slice(0, 30))`);
      expect(sticking).toEqual([]);
    }
    await screenshot(page, 'campaign-360');
  });
});
