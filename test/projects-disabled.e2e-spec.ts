import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/data-source-options';
import { DisabledProjects } from '../src/projects/disabled-projects';
import { ProjectsRepository } from '../src/projects/projects.repository';
import { ProjectsService } from '../src/projects/projects.service';
import { ParkedJobs } from '../src/queue/parked-jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { EmailSource } from '../src/sending/email.entity';
import { EmailsService } from '../src/sending/emails.service';
import { verifyDomainForTest } from './support/domains';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { insertEmailsWithoutJobs, SendingTest, startSendingTest } from './support/sending';
import { TestProject } from './support/test-app';

/**
 * A disabled project does no work (contract, "Tenant safety and limits"):
 * its queued mail stays QUEUED, its scheduled campaign does not start, its
 * workflow steps and webhook deliveries wait; enabling it resumes all of it,
 * each piece exactly once. Every test runs a second, enabled project's same
 * work over the same period: that work completing proves the workers were
 * running while the disabled project's work waited. Projects are disabled and
 * enabled through ProjectsService.setEnabled, what `projects disable|enable`
 * calls.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('disabled projects do no work (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let pairs = 0;

  const as = (project: TestProject) => ({
    req: (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
      t.app.request({ method, url, key: project.secretKey, body }),
  });
  const setEnabled = (project: TestProject, enabled: boolean) =>
    t.app.app.get(ProjectsService).setEnabled(project.id, enabled);
  /** Messages the SMTP server accepted for this recipient. */
  const mailTo = (address: string) =>
    t.smtp.messages.filter((m) => m.to.includes(address.toLowerCase())).length;
  const queue = (name: string) => t.app.app.get<Queue>(getQueueToken(name), { strict: false });

  /** A project to disable and one that stays enabled, each with a verified sender domain of its own. */
  async function projectPair(): Promise<{
    held: TestProject;
    heldDomain: string;
    other: TestProject;
    otherDomain: string;
  }> {
    pairs++;
    const held = await t.app.createProject(`Held ${pairs}`);
    const other = await t.app.createProject(`Other ${pairs}`);
    const heldDomain = `held${pairs}.test`;
    const otherDomain = `other${pairs}.test`;
    await verifyDomainForTest(t.app, held, heldDomain, t.dns);
    await verifyDomainForTest(t.app, other, otherDomain, t.dns);
    return { held, heldDomain, other, otherDomain };
  }

  beforeAll(async () => {
    t = await startSendingTest('Disabled projects', {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '1500,300,300',
      RECOVERY_EVERY_MS: '1000',
    });
    db = t.app.app.get(DataSource);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('queued mail stays QUEUED (no attempt used, its job parked) and is sent once after enable', async () => {
    // The held project is the one whose sender domain (acme.test) the inserted mail uses.
    const held = t.project;
    const { other, otherDomain } = await projectPair();
    // Committed while enabled, its job added once the project is disabled: the worker takes it while disabled.
    const [email] = await insertEmailsWithoutJobs(t, 'parked-mail@example.org', [
      EmailSource.TRANSACTIONAL,
    ]);
    await setEnabled(held, false);
    await t.app.app.get(EmailsService).enqueue([email]);
    const sent = await as(other).req('POST', '/v1/send', {
      to: 'other-mail@example.org',
      from: `hello@${otherDomain}`,
      subject: 'Other',
      body: '<p>other</p>',
    });
    expect(sent.status).toBe(200);

    const job = async () => (await queue(QUEUES.DELIVERY).getJob(email.id))?.getState();
    expect(
      await pollUntil(
        async () => ({ other: mailTo('other-mail@example.org'), job: await job() }),
        (s) => s.other === 1 && s.job === 'delayed',
        20_000,
      ),
    ).toEqual({ other: 1, job: 'delayed' });
    const row = async () =>
      (
        await db.query('SELECT status, attempts, error FROM emails WHERE id = $1', [email.id])
      )[0] as Json;
    expect(await row()).toEqual({ status: 'QUEUED', attempts: 0, error: null });
    expect(mailTo('parked-mail@example.org')).toBe(0);

    await setEnabled(held, true);
    // Promoted at the enable, not left to the parking's own timer (minutes).
    expect(await pollUntil(row, (r) => r.status === 'SENT', 15_000)).toMatchObject({
      status: 'SENT',
      attempts: 1,
    });
    await pollUntil(
      async () => mailTo('parked-mail@example.org'),
      (n) => n > 0,
      5_000,
    );
    expect(mailTo('parked-mail@example.org')).toBe(1);
  });

  it('a scheduled campaign does not start while disabled; enabled, it sends to each recipient once', async () => {
    const { held, heldDomain, other, otherDomain } = await projectPair();
    const campaign = async (project: TestProject, domain: string, to: string[], inMs: number) => {
      for (const email of to) {
        const c = await as(project).req('POST', '/contacts', { email, subscribed: true });
        expect(c.status).toBe(201);
      }
      const created = await as(project).req('POST', '/campaigns', {
        name: 'News',
        subject: 'News',
        body: '<p>Hello {{ contact.email }}</p>',
        from: `news@${domain}`,
        audienceType: 'ALL',
      });
      expect(created.status).toBe(201);
      const id = created.body.data.id as string;
      const scheduled = await as(project).req('POST', `/campaigns/${id}/send`, {
        scheduledFor: new Date(Date.now() + inMs).toISOString(),
      });
      expect(scheduled.body.data?.status).toBe('SCHEDULED');
      return id;
    };
    const heldTo = ['c1@held-campaign.example.org', 'c2@held-campaign.example.org'];
    // Workers see a disable within about a second: the held campaign is due well after it.
    const heldId = await campaign(held, heldDomain, heldTo, 3_000);
    await setEnabled(held, false);
    // Due after the held one: once it is SENT, the held campaign's time has passed too.
    const otherId = await campaign(other, otherDomain, ['c@other-campaign.example.org'], 4_000);
    const status = async (id: string) =>
      ((await db.query('SELECT status FROM campaigns WHERE id = $1', [id]))[0] as Json).status;

    expect(
      await pollUntil(
        () => status(otherId),
        (s) => s === 'SENT',
        30_000,
      ),
    ).toBe('SENT');
    expect(mailTo('c@other-campaign.example.org')).toBe(1);
    // Its RUN job came due and was parked.
    expect(
      await pollUntil(
        async () => (await queue(QUEUES.CAMPAIGNS).getJob(`campaign-${heldId}`))?.getState(),
        (s) => s === 'delayed',
        10_000,
      ),
    ).toBe('delayed');
    expect(await status(heldId)).toBe('SCHEDULED');
    expect(
      (await db.query('SELECT count(*)::int AS n FROM emails WHERE campaign_id = $1', [heldId]))[0]
        .n,
    ).toBe(0);
    expect(heldTo.map(mailTo)).toEqual([0, 0]);

    await setEnabled(held, true);
    expect(
      await pollUntil(
        () => status(heldId),
        (s) => s === 'SENT',
        30_000,
      ),
    ).toBe('SENT');
    await pollUntil(
      async () => heldTo.map(mailTo),
      (n) => n.every((x) => x > 0),
      5_000,
    );
    expect(heldTo.map(mailTo)).toEqual([1, 1]);
  });

  it('a workflow step waits while disabled (DELAY then SEND_EMAIL); enabled, the email goes out once', async () => {
    const { held, heldDomain, other, otherDomain } = await projectPair();
    const workflow = async (project: TestProject, domain: string) => {
      const template = await as(project).req('POST', '/templates', {
        name: 'Welcome',
        subject: 'Welcome {{ contact.email }}',
        body: '<p>Welcome</p>',
        from: `hello@${domain}`,
        type: 'TRANSACTIONAL',
      });
      expect(template.status).toBe(201);
      const created = await as(project).req('POST', '/workflows', {
        name: 'Welcome',
        trigger: { type: 'EVENT', event: 'joined' },
        enabled: true,
        steps: [
          // Workers see a disable within about a second: the held step's end comes well after it.
          { id: 'wait', type: 'DELAY', amount: 3, unit: 'seconds' },
          { id: 'mail', type: 'SEND_EMAIL', templateId: template.body.data.id },
        ],
      });
      expect(created.status).toBe(201);
      return created.body.data.id as string;
    };
    const heldFlow = await workflow(held, heldDomain);
    const otherFlow = await workflow(other, otherDomain);
    const tracked = await as(held).req('POST', '/v1/track', {
      email: 'flow@held.example.org',
      event: 'joined',
    });
    expect(tracked.status).toBe(200);
    await setEnabled(held, false);
    // Tracked after the held one: its DELAY ends later.
    expect(
      (
        await as(other).req('POST', '/v1/track', {
          email: 'flow@other.example.org',
          event: 'joined',
        })
      ).status,
    ).toBe(200);
    const executions = async (workflowId: string) =>
      (await db.query(
        'SELECT status, due_at AS "dueAt" FROM workflow_executions WHERE workflow_id = $1',
        [workflowId],
      )) as Json[];

    await pollUntil(
      async () => mailTo('flow@other.example.org'),
      (n) => n > 0,
      30_000,
    );
    expect(mailTo('flow@other.example.org')).toBe(1);
    expect(await executions(otherFlow)).toMatchObject([{ status: 'COMPLETED' }]);
    const [x] = await executions(heldFlow);
    expect(['RUNNING', 'WAITING']).toContain(x.status);
    // Its step was due before the other's mail went out, and is still waiting.
    expect(new Date(x.dueAt).getTime()).toBeLessThan(Date.now());
    expect(
      (
        await db.query(
          `SELECT count(*)::int AS n FROM emails e JOIN workflow_executions x ON x.id = e.workflow_execution_id
            WHERE x.workflow_id = $1`,
          [heldFlow],
        )
      )[0].n,
    ).toBe(0);
    expect(mailTo('flow@held.example.org')).toBe(0);

    await setEnabled(held, true);
    expect(
      await pollUntil(
        () => executions(heldFlow),
        (xs) => xs[0]?.status === 'COMPLETED',
        30_000,
      ),
    ).toMatchObject([{ status: 'COMPLETED' }]);
    await pollUntil(
      async () => mailTo('flow@held.example.org'),
      (n) => n > 0,
      15_000,
    );
    expect(mailTo('flow@held.example.org')).toBe(1);
  });

  describe('webhooks', () => {
    let heldReceiver: HttpReceiver;
    let otherReceiver: HttpReceiver;

    beforeAll(async () => {
      heldReceiver = await startHttpReceiver();
      otherReceiver = await startHttpReceiver();
    });

    afterAll(async () => {
      await heldReceiver?.close();
      await otherReceiver?.close();
    });

    it('a delivery waits while disabled (its retry does not go out); enabled, it succeeds once', async () => {
      const { held, other } = await projectPair();
      const endpoint = async (project: TestProject, receiver: HttpReceiver) => {
        const res = await as(project).req('POST', '/webhooks', {
          url: `${receiver.url}/hook`,
          events: ['webhook.test'],
        });
        expect(res.status).toBe(201);
        return res.body.data.id as string;
      };
      const heldEndpoint = await endpoint(held, heldReceiver);
      const otherEndpoint = await endpoint(other, otherReceiver);
      // The first attempt fails: the retry (1.5 s later) is the delivery that comes due while disabled.
      heldReceiver.answers = [{ status: 500, body: 'not yet' }];
      otherReceiver.answers = [{ status: 500, body: 'not yet' }];
      const heldTest = await as(held).req('POST', `/webhooks/${heldEndpoint}/test`);
      expect(heldTest.status).toBe(202);
      await heldReceiver.waitFor(1);
      await setEnabled(held, false);
      const otherTest = await as(other).req('POST', `/webhooks/${otherEndpoint}/test`);
      expect(otherTest.status).toBe(202);
      const delivery = async (id: string) =>
        (
          await db.query(
            'SELECT status, attempts, next_attempt_at AS "nextAttemptAt" FROM webhook_deliveries WHERE id = $1',
            [id],
          )
        )[0] as Json;

      // The other project's retry, due after the held one's, succeeds.
      expect(
        await pollUntil(
          () => delivery(otherTest.body.data.id),
          (d) => d.status === 'SUCCEEDED',
          20_000,
        ),
      ).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
      expect(otherReceiver.requests).toHaveLength(2);
      const waiting = await delivery(heldTest.body.data.id);
      expect(waiting).toMatchObject({ status: 'PENDING', attempts: 1 });
      expect(new Date(waiting.nextAttemptAt).getTime()).toBeLessThan(Date.now());
      expect(heldReceiver.requests).toHaveLength(1);

      await setEnabled(held, true);
      expect(
        await pollUntil(
          () => delivery(heldTest.body.data.id),
          (d) => d.status === 'SUCCEEDED',
          20_000,
        ),
      ).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
      expect(heldReceiver.requests).toHaveLength(2);
      expect(new Set(heldReceiver.requests.map((q) => q.headers['webhook-id']))).toEqual(
        new Set([heldTest.body.data.id]),
      );
    });
  });

  it('a check made inside a transaction reads the set through that connection, not a second one the full pool has no room for', async () => {
    const project = await t.app.createProject('Pool of one');
    await setEnabled(project, false);
    // A pool of one connection, which the transaction holds; a fresh instance has no timer and never
    // read the set, so the check reads it first. Through the pool it would wait for ever (the
    // transaction waits for the check): at shutdown, WEBHOOK steps ending held all 20 connections so.
    const pool = new DataSource(dataSourceOptions(t.db.url, 1));
    await pool.initialize();
    let timer: NodeJS.Timeout | undefined;
    try {
      const checks = new DisabledProjects(
        t.app.config,
        pool,
        new ProjectsRepository(),
        t.app.app.get(ParkedJobs),
      );
      const answer = await pool.transaction((manager) =>
        Promise.race([
          checks.isDisabled(project.id, manager),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error('the check waited for a second connection')),
              5_000,
            );
          }),
        ]),
      );
      expect(answer).toBe(true);
    } finally {
      clearTimeout(timer);
      await pool.destroy();
    }
  });
});
