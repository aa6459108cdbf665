import { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityViolations, launchChromium, screenshot } from '../support/browser';
import { callApi, deploymentEnv, ServiceCluster } from '../support/services';
import { createTestDatabase, flushPrefix } from '../support/test-app';

/**
 * The segment builder and the workflow pages in Chromium against the built service (API and
 * worker roles in one process) and its own database: a condition with a nested group built by clicking, its live count
 * checked against contacts made through the API, the saved segment's members; a workflow started
 * by POST /v1/track, its step tree, its execution and the steps it ran; the API's 422 in words.
 */
describe('segments and workflows in Chromium', () => {
  const prefix = `mwsegwf${process.pid}`;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let cluster: ServiceCluster;
  let base: string;
  let project: { id: string; secretKey: string };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  // Twelve contacts: odd ones on the pro plan, every third at vip.example, three bought something.
  const CONTACTS = Array.from({ length: 12 }, (_, i) => ({
    email: `c${String(i).padStart(2, '0')}@${i % 3 === 0 ? 'vip' : 'plain'}.example`,
    plan: i % 2 ? 'pro' : 'free',
    bought: [1, 2, 5].includes(i),
  }));
  // The condition the journey builds: plan is pro AND (email ends with @vip.example OR bought).
  const EXPECTED = CONTACTS.filter(
    (c) => c.plan === 'pro' && (c.email.endsWith('@vip.example') || c.bought),
  ).map((c) => c.email);

  beforeAll(async () => {
    db = await createTestDatabase();
    cluster = new ServiceCluster(() => deploymentEnv(db.url, prefix), process.cwd());
    // One process with both roles: the worker runs the executions the journey looks at.
    ({ base } = await cluster.startApi({ APP_ROLE: 'all' }));
    project = cluster.createProject('Segments Co');
    for (const c of CONTACTS) {
      const res = await callApi(base, project.secretKey, 'POST', '/contacts', {
        email: c.email,
        data: { plan: c.plan },
      });
      if (res.status !== 201) throw new Error(`POST /contacts: ${res.status}`);
      if (c.bought) {
        const tracked = await callApi(base, project.secretKey, 'POST', '/v1/track', {
          email: c.email,
          event: 'purchase',
        });
        if (tracked.status !== 200) throw new Error(`POST /v1/track: ${tracked.status}`);
      }
    }
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await cluster?.killAll();
    await db?.drop();
    await flushPrefix(prefix);
  });

  beforeEach(async () => {
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    page = await context.newPage();
  });

  afterEach(async () => {
    await context.close();
  });

  async function expectAccessible(): Promise<void> {
    expect(await accessibilityViolations(page)).toEqual([]);
  }

  const idle = () => page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });

  async function signIn(): Promise<void> {
    await page.goto(`${base}/app/`);
    await page.getByLabel('Secret key').fill(project.secretKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  }

  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
  const group = (name: string) => page.getByRole('group', { name, exact: true });
  /** What sticks out to the right of the screen, outside a scrolling table (named, so a failure says what). */
  const overflowing = () =>
    page.evaluate<string[]>(`[...document.querySelectorAll('main *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap'))
      .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' ' + (e.textContent || '').slice(0, 30))`);
  const liveCount = () => page.getByRole('status').filter({ hasText: /match|valid|Counting/ });

  it('builds a segment with a nested group, counts it live, saves it and lists its members', async () => {
    await signIn();
    await nav('Segments');
    await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'New segment' }).click();
    await page.getByRole('heading', { name: 'New segment', level: 1 }).waitFor();
    // No condition yet: everyone.
    await liveCount().getByText(`${CONTACTS.length} contacts match`).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('Pro VIPs and buyers');
    await page.getByRole('button', { name: 'Add condition', exact: true }).click();
    const first = group('Condition 1');
    // The keyboard goes on in the new condition: its first control has the focus.
    const fieldId = await first.getByLabel('Field').getAttribute('id');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe(fieldId);
    await first.getByLabel('Field').selectOption('data.');
    // A data field without a key: the API's 422, in words, where the count was.
    await page
      .getByRole('alert')
      .getByText(/empty key/)
      .first()
      .waitFor();
    await expect(liveCount().textContent()).resolves.toMatch(/not valid/);
    await first.getByLabel('Data key').fill('plan');
    // A list typed key by key keeps its commas while it is sent as ["pro", "free"].
    await first.getByLabel('Operator').selectOption('in');
    await first.getByLabel('Values (comma-separated)').pressSequentially('pro, free');
    await expect(first.getByLabel('Values (comma-separated)').inputValue()).resolves.toBe(
      'pro, free',
    );
    await liveCount().getByText(`${CONTACTS.length} contacts match`).waitFor();
    await first.getByLabel('Operator').selectOption('equals');
    await first.getByLabel('Value', { exact: true }).fill('pro');
    await liveCount()
      .getByText(`${CONTACTS.filter((c) => c.plan === 'pro').length} contacts match`)
      .waitFor();

    await page.getByRole('button', { name: 'Add group', exact: true }).click();
    const nested = group('Group 2');
    await nested.getByLabel('Match').selectOption('OR');
    await nested.getByRole('button', { name: 'Add condition to group 2' }).click();
    const vip = group('Condition 2.1');
    await vip.getByLabel('Field').selectOption('email');
    await vip.getByLabel('Operator').selectOption('endsWith');
    await vip.getByLabel('Value', { exact: true }).fill('@vip.example');
    await nested.getByRole('button', { name: 'Add condition to group 2' }).click();
    const bought = group('Condition 2.2');
    await bought.getByLabel('Field').selectOption('event.');
    await bought.getByLabel('Event name').fill('purchase');
    await bought.getByLabel('Operator').selectOption('triggered');
    await liveCount().getByText(`${EXPECTED.length} contacts match`).waitFor();
    // The same condition through the API agrees (the count is not the page's own arithmetic).
    expect(EXPECTED.length).toBeGreaterThan(1);
    expect(EXPECTED.length).toBeLessThan(CONTACTS.length / 2);
    await expectAccessible();
    await screenshot(page, 'segment-builder');

    await page.getByRole('button', { name: 'Create segment' }).click();
    await page.getByRole('heading', { name: 'Pro VIPs and buyers', level: 1 }).waitFor();
    await page.getByText(`Page 1 · ${EXPECTED.length} members`).waitFor();
    await idle();
    const members = await page.locator('table tbody tr td:first-child').allTextContents();
    expect(members.sort()).toEqual([...EXPECTED].sort());
    await expectAccessible();
    await screenshot(page, 'segment');

    // What was saved is the condition built, with the group nested.
    const id = page.url().split('/').pop() as string;
    const saved = await callApi(base, project.secretKey, 'GET', `/segments/${id}`);
    expect(saved.body.data.condition).toEqual({
      logic: 'AND',
      conditions: [
        { field: 'data.plan', operator: 'equals', value: 'pro' },
        {
          logic: 'OR',
          conditions: [
            { field: 'email', operator: 'endsWith', value: '@vip.example' },
            { field: 'event.purchase', operator: 'triggered' },
          ],
        },
      ],
    });

    // Edit at 360 px: the saved condition comes back into the builder, and nothing sticks out.
    await page.setViewportSize({ width: 360, height: 740 });
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit segment', level: 1 }).waitFor();
    await liveCount().getByText(`${EXPECTED.length} contacts match`).waitFor();
    expect(await overflowing()).toEqual([]);
    await expectAccessible();
    await screenshot(page, 'segment-builder-360');
    await group('Condition 2.1').getByRole('button', { name: 'Remove condition 2.1' }).click();
    await liveCount()
      .getByText(`${CONTACTS.filter((c) => c.plan === 'pro' && c.bought).length} contacts match`)
      .waitFor();
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.getByRole('heading', { name: 'Pro VIPs and buyers', level: 1 }).waitFor();
    await page
      .getByText(`Page 1 · ${CONTACTS.filter((c) => c.plan === 'pro' && c.bought).length} members`)
      .waitFor();

    // Delete asks first, then goes back to the list.
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete segment' }).click();
    await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
    await page.getByText('No segments yet.').waitFor();
  });

  it('shows a workflow started by a tracked event: its step tree, execution and steps', async () => {
    const created = await callApi(base, project.secretKey, 'POST', '/workflows', {
      name: 'Onboarding',
      enabled: true,
      trigger: { type: 'EVENT', event: 'signup.done' },
      steps: [
        { id: 'tag', type: 'UPDATE_CONTACT', data: { onboarded: true } },
        {
          id: 'check',
          type: 'CONDITION',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.onboarded', operator: 'equals', value: true }],
          },
          then: [{ id: 'welcomed', type: 'UPDATE_CONTACT', data: { stage: 'welcomed' } }],
          else: [{ id: 'stop', type: 'EXIT' }],
        },
      ],
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.data.id as string;
    const tracked = await callApi(base, project.secretKey, 'POST', '/v1/track', {
      email: 'newbie@plain.example',
      event: 'signup.done',
    });
    expect(tracked.status).toBe(200);
    // The worker runs it; wait for the end through the API, then look in the browser.
    const deadline = Date.now() + 20_000;
    let status = '';
    while (Date.now() < deadline) {
      const list = await callApi(
        base,
        project.secretKey,
        'GET',
        `/workflows/${workflowId}/executions`,
      );
      status = list.body.data.items[0]?.status ?? '';
      if (status === 'COMPLETED' || status === 'FAILED') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe('COMPLETED');

    await signIn();
    await nav('Workflows');
    await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Onboarding' }).click();
    await page.getByRole('heading', { name: 'Onboarding', level: 1 }).waitFor();
    await idle();
    // The tree: the condition's branches under it, in words.
    const tree = page.getByRole('list', { name: 'Steps', exact: true });
    await tree.getByText('if data.onboarded is true').waitFor();
    await tree.getByText('Then (condition holds)').waitFor();
    await page
      .getByRole('list', { name: 'Then (condition holds) of check' })
      .getByText('welcomed', { exact: true })
      .waitFor();
    await page
      .getByRole('list', { name: 'Else of check' })
      .getByText('EXIT', { exact: true })
      .waitFor();
    const executions = page.getByRole('region', { name: 'Executions' });
    await executions.locator('tbody').getByText('COMPLETED').waitFor();
    await expectAccessible();
    await screenshot(page, 'workflow');

    await executions.locator('tbody tr a').first().click();
    await page.getByRole('heading', { name: 'Execution', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'newbie@plain.example' }).waitFor();
    const rows = page.locator('table tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.locator('td:first-child').allTextContents()).toEqual([
      'tag',
      'check',
      'welcomed',
    ]);
    await expectAccessible();
    await screenshot(page, 'workflow-execution');

    // The advanced view holds the same steps as JSON; bad JSON keeps you there until it parses.
    // Then the visual tree: the condition in the condition builder, a step removed from its
    // "yes" branch and a delay added there; a bad value is the API's 422 with the path into the steps.
    await page.getByRole('link', { name: 'Onboarding' }).click();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit workflow', level: 1 }).waitFor();
    await page.getByLabel('Advanced: edit the steps as JSON').check();
    await expect(page.getByLabel('Steps (JSON)').inputValue()).resolves.toContain('"stop"');
    await page.getByLabel('Steps (JSON)').fill('[{"id": "tag",');
    await page.getByText(/Not valid JSON/).waitFor();
    await page.getByLabel('Advanced: edit the steps as JSON').click();
    await page
      .getByRole('alert')
      .getByText(/Fix the JSON/)
      .waitFor();
    await expect(page.getByLabel('Advanced: edit the steps as JSON').isChecked()).resolves.toBe(
      true,
    );
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit workflow', level: 1 }).waitFor();
    const check = page.getByRole('group', { name: 'Step check', exact: true });
    await check.getByRole('group', { name: 'Condition of check' }).waitFor();
    await check
      .getByRole('group', { name: 'Condition 1' })
      .getByLabel('Operator')
      .selectOption('notEquals');
    const yes = page.getByRole('list', { name: 'Steps of check (yes)' });
    await yes.getByRole('group', { name: 'Step welcomed' }).waitFor();
    await page
      .getByRole('list', { name: 'Steps of check (no)' })
      .getByRole('group', { name: 'Step stop' })
      .waitFor();
    await yes.getByRole('button', { name: 'Remove welcomed' }).click();
    await page.getByLabel('New step in check (yes)').selectOption('DELAY');
    // By keyboard: the add button takes Enter like any button.
    await page.getByRole('button', { name: 'Add step to check (yes)' }).focus();
    await page.keyboard.press('Enter');
    const delay = yes.getByRole('group', { name: /^Step delay-/ });
    await delay.getByLabel('Wait amount').fill('0');
    await expectAccessible();
    await screenshot(page, 'workflow-editor');
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await page
      .getByRole('alert')
      .getByText(/steps\[1\]\.then\[0\]\.amount/)
      .first()
      .waitFor();
    await delay.getByLabel('Wait amount').fill('2');
    await delay.getByLabel('Wait unit').selectOption('hours');
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await page.getByRole('heading', { name: 'Onboarding', level: 1 }).waitFor();
    await page.getByText('wait 2 hours').waitFor();
    const saved = await callApi(base, project.secretKey, 'GET', `/workflows/${workflowId}`);
    const savedCheck = saved.body.data.steps[1];
    expect(savedCheck.condition.conditions[0]).toMatchObject({
      field: 'data.onboarded',
      operator: 'notEquals',
    });
    expect(savedCheck.then).toEqual([
      { id: expect.stringMatching(/^delay-/), type: 'DELAY', amount: 2, unit: 'hours' },
    ]);
    expect(savedCheck.else).toMatchObject([{ id: 'stop', type: 'EXIT' }]);

    // Disable from the workflow's page.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    const after = await callApi(base, project.secretKey, 'GET', `/workflows/${workflowId}`);
    expect(after.body.data.enabled).toBe(false);
    expect(after.body.data.steps).toHaveLength(2);
  });

  it('creates a workflow in the form, with the trigger and steps it was given', async () => {
    await signIn();
    await nav('Workflows');
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByRole('heading', { name: 'New workflow', level: 1 }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Buyers');
    await page.getByLabel('Trigger event name').fill('purchase');
    // The example steps in the visual editor: at 360 px nothing sticks out, branches included.
    await page.setViewportSize({ width: 360, height: 740 });
    await page
      .getByRole('list', { name: 'Steps of check (no)' })
      .getByRole('group', { name: 'Step done' })
      .waitFor();
    expect(await overflowing()).toEqual([]);
    await expectAccessible();
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Buyers', level: 1 }).waitFor();
    await page.getByText('event purchase').waitFor();
    await page.getByText('No executions.').waitFor();
    // The step tree at 360 px: branches indent, long values wrap.
    await page.setViewportSize({ width: 360, height: 740 });
    await page.getByRole('list', { name: 'Else of check' }).waitFor();
    expect(await overflowing()).toEqual([]);
    await expectAccessible();
    await screenshot(page, 'workflow-360');
  });
});
