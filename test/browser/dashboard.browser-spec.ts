import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityViolations, launchChromium, screenshot } from '../support/browser';
import { startTestDnsServer, TestDnsServer } from '../support/dns-server';
import { DomainBody, publishDomainRecords } from '../support/domains';
import { callApi, deploymentEnv, ServiceCluster } from '../support/services';
import { createTestDatabase, flushPrefix } from '../support/test-app';

/**
 * The dashboard in a real browser against the built service (dist/main.js serving dist/web under
 * /app/) and its own database: sign-in and sign-out with the session cookie's flags, the contacts
 * list and a contact, a domain verified against the loopback DNS server, the emails log, a
 * cross-origin CSRF attempt, and axe-core on every page visited.
 */
describe('dashboard in Chromium', () => {
  const prefix = `mwbrowser${process.pid}`;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dns: TestDnsServer;
  let cluster: ServiceCluster;
  let base: string;
  let project: { id: string; secretKey: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const CONTACTS = 60;

  beforeAll(async () => {
    db = await createTestDatabase();
    dns = await startTestDnsServer();
    cluster = new ServiceCluster(
      () => ({ ...deploymentEnv(db.url, prefix), DNS_SERVERS: dns.address }),
      process.cwd(),
    );
    ({ base } = await cluster.startApi());
    project = cluster.createProject('Browser Test Co');
    for (let i = 0; i < CONTACTS; i++) {
      const email = `person${String(i).padStart(2, '0')}@customers.example`;
      const res = await callApi(base, project.secretKey, 'POST', '/contacts', {
        email,
        data: { plan: i % 2 ? 'pro' : 'free' },
      });
      if (res.status !== 201) throw new Error(`POST /contacts: ${res.status}`);
    }
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.killAll();
    await dns?.stop();
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

  /** Waits until no part of the page is loading (the app marks it aria-busy). */
  const idle = () => page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });

  async function signIn(): Promise<void> {
    await page.goto(`${base}/app/`);
    await page.getByLabel('Secret key').fill(project.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  }

  const sessionCookies = async () =>
    (await context.cookies(base)).filter((c) => c.httpOnly || /session/i.test(c.name));

  it('signs in with a secret key into an HttpOnly, SameSite=Strict session, and out on the server', async () => {
    await page.goto(`${base}/`);
    // GET / in a browser goes to the app, which asks for a key.
    expect(new URL(page.url()).pathname).toBe('/app/');
    await page.getByLabel('Secret key').waitFor();
    await expectAccessible();
    await screenshot(page, 'sign-in');

    // A wrong key: the API's message, in words.
    await page.getByLabel('Secret key').fill('sk_not_a_real_key_000000000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/invalid|revoked/i);
    expect(await sessionCookies()).toEqual([]);

    await page.getByLabel('Secret key').fill(project.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.getByText('Browser Test Co').waitFor();
    await page.getByText('Sender health').waitFor();
    await expectAccessible();
    await screenshot(page, 'overview');

    const cookies = await sessionCookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    // PUBLIC_URL is plain http here; Secure under https is the server's spec.
    expect(cookies[0].secure).toBe(false);
    // The key is nowhere the page's scripts can read.
    // (Page code is passed as text: the specs compile without the DOM's types.)
    const stored = await page.evaluate<string>(
      'JSON.stringify({ ...localStorage, ...sessionStorage, cookie: document.cookie })',
    );
    expect(stored).not.toContain(project.secretKey);
    expect(stored).not.toContain(cookies[0].value);

    // Signed in across a reload (the cookie, not page state).
    await page.reload();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();

    const value = cookies[0].value;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Secret key').waitFor();
    expect(await sessionCookies()).toEqual([]);
    // The old cookie no longer works: the session ended on the server, not only in the browser.
    const replay = await fetch(`${base}/session`, {
      headers: { cookie: `${cookies[0].name}=${value}` },
    });
    expect(replay.status).toBe(401);
  });

  it('lists contacts with search and paging, and shows a contact', async () => {
    await signIn();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Contacts' })
      .click();
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    const rows = page.locator('table tbody tr');
    await page.getByText(`${CONTACTS} contacts`).waitFor();
    expect(await rows.count()).toBe(50);
    await expectAccessible();
    await screenshot(page, 'contacts');

    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2').waitFor();
    await idle();
    expect(await rows.count()).toBe(CONTACTS - 50);
    await page.getByRole('button', { name: 'Previous' }).click();
    await page.getByText('Page 1').waitFor();

    // Export: the list's filters go to GET /contacts/export, answered with the session cookie.
    const exportLink = page.getByRole('link', { name: 'Export CSV' });
    const csv = await context.request.get(
      new URL((await exportLink.getAttribute('href')) as string, base).href,
    );
    expect(csv.status()).toBe(200);
    expect((await csv.text()).trim().split('\n')).toHaveLength(CONTACTS + 1);

    await page.getByLabel('Search by email').fill('person07@');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('1 contacts').waitFor();
    await page.getByRole('link', { name: 'person07@customers.example' }).click();
    await page.getByRole('heading', { name: 'person07@customers.example', level: 1 }).waitFor();
    // Its data fields in the edit form.
    await expect(page.getByLabel('Field 1 name').inputValue()).resolves.toBe('plan');
    await expect(page.getByLabel('Field 1 value').inputValue()).resolves.toBe('pro');
    await expectAccessible();

    // A deep link loads the same page from the server.
    const url = page.url();
    await page.goto(url);
    await page.getByRole('heading', { name: 'person07@customers.example', level: 1 }).waitFor();

    // A state-changing call with the session (and its CSRF token) works.
    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    await page.getByRole('button', { name: 'Subscribe', exact: true }).waitFor();
    const id = url.split('/').pop() as string;
    const after = await callApi(base, project.secretKey, 'GET', `/contacts/${id}`);
    expect(after.body.data.subscribed).toBe(false);

    // Adding a contact: a duplicate shows the API's message, a new one opens its page.
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Contacts' })
      .click();
    await page.getByText('Add a contact').click();
    await page.getByLabel('Email address').fill('person07@customers.example');
    await page.getByRole('button', { name: 'Add contact' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/exist|already/i);
    await page.getByLabel('Email address').fill('newcomer@customers.example');
    await page.getByRole('button', { name: 'Add contact' }).click();
    await page.getByRole('heading', { name: 'newcomer@customers.example', level: 1 }).waitFor();

    // Edit it: the header's Unsubscribe first (the form follows it), then a data field typed as
    // JSON and a text one. The address has no input: PATCH does not take email.
    const newcomerId = page.url().split('/').pop() as string;
    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    await page.getByRole('button', { name: 'Subscribe', exact: true }).waitFor();
    await expect(page.getByLabel('Subscribed').isChecked()).resolves.toBe(false);
    await expect(page.getByLabel('Email', { exact: true }).count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Add field' }).click();
    await page.getByLabel('Field 1 name').fill('score');
    await page.getByLabel('Field 1 value').fill('42');
    await page.getByRole('button', { name: 'Add field' }).click();
    await page.getByLabel('Field 2 name').fill('city');
    await page.getByLabel('Field 2 value').fill('Oslo');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    await expectAccessible();
    const edited = await callApi(base, project.secretKey, 'GET', `/contacts/${newcomerId}`);
    expect(edited.body.data).toMatchObject({
      email: 'newcomer@customers.example',
      subscribed: false,
      suppressed: false,
      data: { score: 42, city: 'Oslo' },
    });
    // A text field that reads as a number, set elsewhere: saving other changes leaves it text.
    await callApi(base, project.secretKey, 'PATCH', `/contacts/${newcomerId}`, {
      data: { zip: '12345' },
    });
    await page.reload();
    await page.getByLabel('Field 3 value').waitFor();
    // Removing a field removes the key.
    await page.getByRole('button', { name: 'Remove field city' }).click();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').getByText('Saved.').waitFor();
    const trimmed = await callApi(base, project.secretKey, 'GET', `/contacts/${newcomerId}`);
    expect(trimmed.body.data.data).toEqual({ score: 42, zip: '12345' });

    // Suppress through POST /suppressions (reason manual), then lift it.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Suppress', exact: true }).click();
    await page.getByRole('button', { name: 'Lift suppression' }).waitFor();
    await page.getByText('Suppressed', { exact: true }).waitFor();
    const suppressions = await callApi(base, project.secretKey, 'GET', '/suppressions');
    expect(suppressions.body.data.items).toContainEqual(
      expect.objectContaining({ contactId: newcomerId, reason: 'manual' }),
    );
    await expectAccessible();
    await page.getByRole('button', { name: 'Lift suppression' }).click();
    await page.getByRole('button', { name: 'Suppress', exact: true }).waitFor();
    const lifted = await callApi(base, project.secretKey, 'GET', `/contacts/${newcomerId}`);
    expect(lifted.body.data.suppressed).toBe(false);
  });

  it('adds a domain, shows its records with copy buttons and verifies it against DNS', async () => {
    await signIn();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Domains' })
      .click();
    await page.getByLabel('Add a sending domain').fill('dash-web.example');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { name: 'dash-web.example', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Copy OWNERSHIP record value' }).waitFor();
    await page.getByRole('button', { name: 'Copy DKIM record name' }).waitFor();
    await page.getByRole('button', { name: 'Verify' }).click();
    // Nothing is published yet: the reason per record.
    await page
      .getByText(/does not exist|No such record/)
      .first()
      .waitFor();
    await expectAccessible();

    const list = await callApi(base, project.secretKey, 'GET', '/domains');
    const domain = (list.body.data.items as DomainBody[]).find(
      (d) => d.domain === 'dash-web.example',
    );
    publishDomainRecords(dns, domain as DomainBody);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('status').getByText('VERIFIED').waitFor();
    await expectAccessible();
    await screenshot(page, 'domain');
  });

  it('shows the emails log with its status filter and the other list pages', async () => {
    await signIn();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Emails' }).click();
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    await page.getByLabel('Status').selectOption('BOUNCED');
    await page.getByText('No emails match.').waitFor();
    await expectAccessible();
    for (const name of [
      'Events',
      'Campaigns',
      'Templates',
      'Segments',
      'Workflows',
      'Webhooks',
      'Settings',
    ]) {
      await nav.getByRole('link', { name }).click();
      await page.getByRole('heading', { name, level: 1 }).waitFor();
      await idle();
      expect(await page.getByRole('alert').count()).toBe(0);
      await expectAccessible();
    }
  });

  it('is usable by keyboard and fits a 360 px wide screen', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await signIn();
    // Tab from the top: the skip link, then the controls; Enter on a navigation link follows it.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    const contacts = page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Contacts' });
    await contacts.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    // (The contacts journey may have added one.)
    await page.getByText(/^Page 1 · \d+ contacts$/).waitFor();
    // Nothing sticks out to the right but inside a scrolling table (named, so a failure says what).
    const overflowing = `[...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap'))
      .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' ' + (e.textContent || '').slice(0, 30))`;
    const sticking = await page.evaluate<string[]>(overflowing);
    expect(sticking).toEqual([]);
    await expectAccessible();
    await screenshot(page, 'contacts-360');
    // A contact's page with its edit form: the data rows stack, nothing sticks out. (person59 is on
    // page 1: the list is newest first, 50 a page.)
    await page.getByRole('link', { name: 'person59@customers.example' }).click();
    await page.getByRole('heading', { name: 'person59@customers.example', level: 1 }).waitFor();
    await page.getByLabel('Field 1 value').waitFor();
    expect(await page.evaluate<string[]>(overflowing)).toEqual([]);
    await expectAccessible();
  });

  it('refuses a state-changing call from another origin that has no CSRF token', async () => {
    await signIn();
    // Another origin on the same host (same site: SameSite does not stop it; the token must).
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>elsewhere</title>');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const evilBase = `http://localhost:${(evil.address() as AddressInfo).port}`;
      const other = await context.newPage();
      await other.goto(evilBase);
      const statuses = await other.evaluate(async (target) => {
        const body = JSON.stringify({ email: 'csrf@attacker.example' });
        const tries = [
          // A simple request (no preflight): the browser sends it with cookies.
          fetch(`${target}/contacts`, {
            method: 'POST',
            credentials: 'include',
            mode: 'no-cors',
            headers: { 'content-type': 'text/plain' },
            body,
          }),
          fetch(`${target}/contacts`, {
            method: 'POST',
            credentials: 'include',
            headers: { 'content-type': 'application/json' },
            body,
          }),
        ];
        return Promise.all(
          tries.map((p) =>
            p.then(
              (r) => r.type + ':' + r.status,
              (e) => String(e),
            ),
          ),
        );
      }, base);
      expect(statuses).toHaveLength(2);
      await other.close();
      const found = await callApi(
        base,
        project.secretKey,
        'GET',
        '/contacts?search=csrf%40attacker',
      );
      expect(found.body.data.total).toBe(0);
      // The same request from the app's own origin without the token is refused too.
      const direct = await page.evaluate<
        { status: number; body: { error: { code: string } } },
        string
      >(async (target) => {
        const r = await fetch(`${target}/contacts`, {
          method: 'POST',
          credentials: 'include',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'csrf2@attacker.example' }),
        });
        return { status: r.status, body: (await r.json()) as { error: { code: string } } };
      }, base);
      expect(direct.status).toBe(403);
      expect(direct.body.error.code).toBe('FORBIDDEN');
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
  });
});
