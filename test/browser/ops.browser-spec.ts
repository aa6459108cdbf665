import { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityViolations, launchChromium, screenshot } from '../support/browser';
import { HttpReceiver } from '../support/http-receiver';
import { callApi, deploymentEnv, ServiceCluster } from '../support/services';
import { createTestDatabase, flushPrefix } from '../support/test-app';

/**
 * The dashboard's operations pages in Chromium against the built service (one APP_ROLE=all
 * process, so imports and webhook deliveries run): a CSV import with a bad row watched to its
 * end, a webhook endpoint whose failed delivery is retried from the page, and an API key made
 * (shown once) and revoked in Settings, and the Overview's rates and live chart. The
 * cross-origin CSRF attempt is dashboard.browser-spec's.
 */
describe('dashboard operations in Chromium', () => {
  const prefix = `mwops${process.pid}`;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let cluster: ServiceCluster;
  let receiver: HttpReceiver;
  let base: string;
  let project: { id: string; secretKey: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await new HttpReceiver().start();
    cluster = new ServiceCluster(
      () => ({
        ...deploymentEnv(db.url, prefix),
        // The receiver is on loopback; retries wait long enough that only the page's Retry sends again.
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_DELAYS_MS: '600000',
      }),
      process.cwd(),
    );
    ({ base } = await cluster.startApi({ APP_ROLE: 'all' }));
    project = cluster.createProject('Ops Test Co');
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.killAll();
    await receiver?.close();
    await db?.drop();
    await flushPrefix(prefix);
  });

  beforeEach(async () => {
    context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    page = await context.newPage();
  });

  afterEach(async () => {
    await context.close();
  });

  async function expectAccessible(): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
  }

  async function signIn(): Promise<void> {
    await page.goto(`${base}/app/`);
    await page.getByLabel('Secret key').fill(project.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  }

  const go = async (label: string) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label }).click();
    await page.getByRole('heading', { name: label, level: 1 }).waitFor();
  };

  it('imports a CSV with a bad row: the progress reaches the end and the row error is shown', async () => {
    await signIn();
    await go('Contacts');
    const rows = ['email,plan'];
    for (let i = 0; i < 40; i++) rows.push(`imported${i}@customers.example,pro`);
    rows.splice(21, 0, 'not-an-email,free');
    await page.getByText('Import contacts from CSV').click();
    await page.getByLabel('CSV file').setInputFiles({
      name: 'contacts.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(rows.join('\n') + '\n'),
    });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const status = page.getByTestId('import-status');
    await status.filter({ hasText: /Import completed: 41 of 41 rows/ }).waitFor();
    await expect(status.textContent()).resolves.toMatch(/40 created, 0 updated, 1 failed/);
    expect(
      await page
        .locator('progress')
        .evaluate((p) => [p.getAttribute('value'), p.getAttribute('max')]),
    ).toEqual(['41', '41']);
    const errors = page.getByTestId('import-error');
    await expect(errors.count()).resolves.toBe(1);
    // Line 22: the header is line 1, the bad record is the 21st data row.
    await expect(errors.first().textContent()).resolves.toMatch(/^22not-an-emailemail.+/);
    // The list under it was reloaded when the import ended.
    await page.getByText(/^Page 1 · 40 contacts$/).waitFor();
    await expectAccessible();
    await screenshot(page, 'contacts-import');
  });

  it('creates a webhook endpoint (secret shown once), sees a failed delivery and retries it to success', async () => {
    receiver.answers = [{ status: 500, body: 'down for a moment' }];
    receiver.fallback = { status: 204 };
    await signIn();
    await go('Webhooks');
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/hooks`);
    await page.getByLabel(/^Events/).fill('email.*, contact.*');
    await page.getByLabel('Description (optional)').fill('Browser receiver');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = page.getByTestId('webhook-secret');
    await expect(secret.textContent()).resolves.toMatch(/^whsec_/);
    await expect(page.getByRole('button', { name: 'Copy signing secret' }).count()).resolves.toBe(
      1,
    );
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect(secret.count()).resolves.toBe(0);

    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await page.getByRole('heading', { name: 'Webhook endpoint', level: 1 }).waitFor();
    // The secret is not on the endpoint's own page.
    expect(await page.content()).not.toMatch(/whsec_/);

    await page.getByRole('button', { name: 'Send test event' }).click();
    const delivery = page.getByTestId('delivery').first();
    // The first attempt got a 500: still PENDING, its response code and error shown.
    await delivery.filter({ hasText: '500' }).waitFor();
    await expect(delivery.textContent()).resolves.toMatch(/webhook\.testPENDING1500/);
    await receiver.waitFor(1);
    await expectAccessible();
    await screenshot(page, 'webhook-deliveries');

    // A retry starts a fresh schedule: attempts count from 1 again.
    await delivery.getByRole('button', { name: /^Retry/ }).click();
    await delivery.filter({ hasText: 'SUCCEEDED' }).waitFor();
    await expect(delivery.textContent()).resolves.toMatch(/webhook\.testSUCCEEDED1204/);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1].headers['webhook-signature']).toMatch(/^v1,/);

    // Edit: disable it, and the list says so.
    await page.getByLabel('Enabled').uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved').waitFor();
    await go('Webhooks');
    await page.getByText('Disabled', { exact: true }).waitFor();
  });

  it('creates an API key shown once, then revokes it; the revoked key gets 401', async () => {
    await signIn();
    await go('Settings');
    await page.getByLabel('Key type').selectOption('secret');
    await page.getByLabel('Name (optional)').fill('Browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('new-api-key');
    const apiKey = (await shown.textContent()) ?? '';
    expect(apiKey).toMatch(/^sk_/);
    expect((await callApi(base, apiKey, 'GET', '/project')).status).toBe(200);
    const row = page.getByTestId('api-key').filter({ hasText: 'Browser key' });
    await expect(row.textContent()).resolves.toMatch(/secretActive/);
    await expectAccessible();
    await screenshot(page, 'settings-keys');

    // Shown once: after a reload only its prefix is on the page.
    await page.reload();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await row.waitFor();
    expect(await page.content()).not.toContain(apiKey);

    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Revoke Browser key' }).click();
    await page.getByText(/Key Browser key .* revoked\./).waitFor();
    await row.filter({ hasText: 'Revoked' }).waitFor();
    expect((await callApi(base, apiKey, 'GET', '/project')).status).toBe(401);

    // The last active secret key cannot be revoked: the API's reason, in words.
    page.once('dialog', (dialog) => void dialog.accept());
    await page
      .getByTestId('api-key')
      .filter({ hasText: 'Active' })
      .filter({ hasText: 'secret' })
      .getByRole('button', { name: /^Revoke/ })
      .click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/last active secret key/);
  });

  it('shows the last 30 days against the 30 before and events per minute, live, within six API calls', async () => {
    for (const event of ['signed-up', 'upgraded']) {
      const res = await callApi(base, project.secretKey, 'POST', '/v1/track', {
        email: 'live@customers.example',
        event,
      });
      expect(res.status).toBeLessThan(300);
    }
    const calls: string[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (!url.pathname.startsWith('/app/') && request.resourceType() === 'fetch')
        calls.push(url.pathname);
    });
    await signIn();
    await page.getByRole('heading', { name: /^Last 30 days/ }).waitFor();
    await page.getByText('Open rate').waitFor();
    await page.getByText('Complaint rate').waitFor();
    const live = page.getByTestId('events-per-minute');
    await live.filter({ hasText: /in the last hour/ }).waitFor();
    const hour = Number(/(\d+) in the last hour/.exec((await live.textContent()) ?? '')?.[1]);
    expect(hour).toBeGreaterThanOrEqual(2);
    // The chart (uPlot, its own chunk) draws a canvas.
    await page.locator('.chart canvas').first().waitFor();
    await expectAccessible();
    await screenshot(page, 'overview-stats');
    // The Overview asked for at most six things, /session (the sign-in's) counted among them.
    const overview = calls.filter((path) => path !== '/session');
    expect(new Set(calls).size).toBeLessThanOrEqual(6);
    expect(overview).toContain('/project/stats');
    expect(overview).toContain('/events/per-minute');

    // A fresh load of a signed-in browser asks for the page's data before the session answers.
    const order: string[] = [];
    page.on('request', (r) => order.push(`ask ${new URL(r.url()).pathname}`));
    page.on('response', (r) => order.push(`got ${new URL(r.url()).pathname}`));
    await page.reload();
    await page.getByRole('heading', { name: /^Last 30 days/ }).waitFor();
    expect(order).toContain('got /session');
    expect(order.indexOf('ask /project/stats')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('ask /project/stats')).toBeLessThan(order.indexOf('got /session'));
  });

  it('fits a 360 px wide screen on the overview, webhooks and settings pages', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await signIn();
    for (const [path, label] of [
      ['', 'Overview'],
      ['webhooks', 'Webhooks'],
      ['settings', 'Settings'],
    ]) {
      await page.goto(`${base}/app/${path}`);
      await page.getByRole('heading', { name: label, level: 1 }).waitFor();
      await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
      const sticking = await page.evaluate<string[]>(`[...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap'))
        .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' ' + (e.textContent || '').slice(0, 30))`);
      expect(sticking).toEqual([]);
    }
  });
});
