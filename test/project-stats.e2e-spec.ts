import { DataSource } from 'typeorm';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * GET /project/stats (the Overview's 30 days against the 30 before) and GET /events/per-minute
 * (its live figure). Emails are written with back-dated outcome times: the windows are weeks
 * long, and only the times decide which window an email counts in.
 */
describe('project stats and events per minute (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let db: DataSource;
  let project: TestProject;
  let other: TestProject;

  async function contactOf(p: TestProject, email: string): Promise<string> {
    const res = await app.request({
      method: 'POST',
      url: '/contacts',
      key: p.secretKey,
      body: { email },
    });
    expect(res.status).toBe(201);
    return res.body.data.id;
  }

  /** `n` emails whose outcome came `daysAgo` days ago, with the given fields. */
  async function emails(
    p: TestProject,
    contactId: string,
    n: number,
    daysAgo: number,
    fields: { status?: string; opened?: boolean; clicked?: boolean } = {},
  ): Promise<void> {
    const status = fields.status ?? 'SENT';
    await db.query(
      `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, html, text,
                           status, priority, attempts, sent_at, bounced_at, opened_at, clicked_at)
       SELECT gen_random_uuid(), $1, $2, 'TRANSACTIONAL', 'x@example.org', 'hello@example.com', 'S', '<p>B</p>', 'B',
              $3::email_status, 1, 1,
              CASE WHEN $3 = 'BOUNCED' THEN NULL ELSE now() - make_interval(days => $4) END,
              CASE WHEN $3 = 'BOUNCED' THEN now() - make_interval(days => $4) END,
              CASE WHEN $5 THEN now() - make_interval(days => $4) + interval '1 hour' END,
              CASE WHEN $6 THEN now() - make_interval(days => $4) + interval '2 hours' END
         FROM generate_series(1, $7::int)`,
      [p.id, contactId, status, daysAgo, !!fields.opened, !!fields.clicked, n],
    );
  }

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    db = app.app.get(DataSource);
    project = await app.createProject('Stats');
    other = await app.createProject('Other');
    const mine = await contactOf(project, 'ada@example.com');
    const theirs = await contactOf(other, 'bob@example.com');
    // The last 30 days: 10 out, 4 opened (2 of them clicked), 1 bounced, 1 complained.
    await emails(project, mine, 4, 1);
    await emails(project, mine, 2, 2, { opened: true });
    await emails(project, mine, 2, 29, { opened: true, clicked: true });
    await emails(project, mine, 1, 3, { status: 'BOUNCED' });
    await emails(project, mine, 1, 5, { status: 'COMPLAINED', opened: true });
    // The 30 days before: 5 out, 1 opened, 1 bounced.
    await emails(project, mine, 3, 31);
    await emails(project, mine, 1, 45, { opened: true });
    await emails(project, mine, 1, 59, { status: 'BOUNCED' });
    // Older than both windows, and another project's: not counted.
    await emails(project, mine, 3, 61, { opened: true });
    await emails(other, theirs, 7, 1, { opened: true });
    // Never sent: no outcome time.
    await db.query(
      `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, html, text, status, priority, attempts)
       VALUES (gen_random_uuid(), $1, $2, 'TRANSACTIONAL', 'x@example.org', 'h@example.com', 'S', 'B', 'B', 'QUEUED', 1, 0)`,
      [project.id, mine],
    );
  }, 60_000);

  afterAll(async () => {
    await ctx?.close();
  });

  const get = (url: string, key = project.secretKey) => app.request({ method: 'GET', url, key });

  it('counts the last 30 days against the 30 before, with rates of sent', async () => {
    const res = await get('/project/stats');
    expect(res.status).toBe(200);
    const { days, current, previous } = res.body.data;
    expect(days).toBe(30);
    expect(current).toMatchObject({
      sent: 10,
      opened: 5,
      clicked: 2,
      bounced: 1,
      complained: 1,
      openRate: 0.5,
      clickRate: 0.2,
      bounceRate: 0.1,
      complaintRate: 0.1,
    });
    expect(previous).toMatchObject({
      sent: 5,
      opened: 1,
      clicked: 0,
      bounced: 1,
      complained: 0,
      openRate: 0.2,
      clickRate: 0,
      bounceRate: 0.2,
      complaintRate: 0,
    });
    expect(Date.parse(current.to) - Date.parse(current.from)).toBe(30 * 86_400_000);
    expect(previous.to).toBe(current.from);
  });

  it('keeps its per-day counters equal to the emails through updates, deletes and compaction', async () => {
    const counted = await app.createProject('Counted');
    const contact = await contactOf(counted, 'cy@example.com');
    await emails(counted, contact, 6, 2);
    await emails(counted, contact, 3, 40, { opened: true });
    await emails(counted, contact, 2, 10, { status: 'BOUNCED' });
    // Exact counts of the emails themselves, by the UTC day of their outcome time.
    const exact = async () => {
      const [row] = await db.query(
        `WITH o AS (SELECT (COALESCE(sent_at, bounced_at) AT TIME ZONE 'UTC')::date AS day, * FROM emails
                     WHERE project_id = $1 AND COALESCE(sent_at, bounced_at) IS NOT NULL),
              w AS (SELECT (now() AT TIME ZONE 'UTC')::date - 29 AS mid)
         SELECT count(*) FILTER (WHERE day >= mid)::int AS sent,
                count(*) FILTER (WHERE day >= mid AND opened_at IS NOT NULL)::int AS opened,
                count(*) FILTER (WHERE day >= mid AND clicked_at IS NOT NULL)::int AS clicked,
                count(*) FILTER (WHERE day >= mid AND status = 'BOUNCED')::int AS bounced,
                count(*) FILTER (WHERE day >= mid AND status = 'COMPLAINED')::int AS complained,
                count(*) FILTER (WHERE day < mid AND day >= mid - 30)::int AS "previousSent",
                count(*) FILTER (WHERE day < mid AND day >= mid - 30 AND opened_at IS NOT NULL)::int AS "previousOpened"
           FROM o, w`,
        [counted.id],
      );
      return row;
    };
    const stats = async () => {
      const { current, previous } = (await get('/project/stats', counted.secretKey)).body.data;
      return {
        sent: current.sent,
        opened: current.opened,
        clicked: current.clicked,
        bounced: current.bounced,
        complained: current.complained,
        previousSent: previous.sent,
        previousOpened: previous.opened,
      };
    };
    expect(await stats()).toEqual({ ...(await exact()), sent: 8, bounced: 2, previousSent: 3 });

    const rows = () =>
      db.query(`SELECT * FROM email_outcome_days WHERE project_id = $1 ORDER BY 1, 2, 3`, [
        counted.id,
      ]);
    const before = await rows();
    // A statement that changes no outcome (a retry's attempt count) writes no counter.
    await db.query(`UPDATE emails SET attempts = attempts + 1 WHERE project_id = $1`, [counted.id]);
    expect(await rows()).toEqual(before);

    // Opens, a click, a complaint, and one of the old emails erased.
    await db.query(
      `UPDATE emails SET opened_at = now(), clicked_at = CASE WHEN bounced_at IS NULL THEN now() END
        WHERE id IN (SELECT id FROM emails WHERE project_id = $1 AND opened_at IS NULL ORDER BY id LIMIT 3)`,
      [counted.id],
    );
    await db.query(
      `UPDATE emails SET status = 'COMPLAINED'
        WHERE id = (SELECT id FROM emails WHERE project_id = $1 AND status = 'SENT' AND sent_at > now() - interval '5 days' LIMIT 1)`,
      [counted.id],
    );
    await db.query(
      `DELETE FROM emails WHERE id = (SELECT id FROM emails WHERE project_id = $1 AND sent_at < now() - interval '35 days' LIMIT 1)`,
      [counted.id],
    );
    const after = await exact();
    expect(after).toMatchObject({ sent: 8, complained: 1, previousSent: 2 });
    expect(after.opened + after.clicked).toBeGreaterThan(0);
    expect(await stats()).toEqual(after);

    // Compaction folds slots without changing a sum.
    await db.query('SELECT compact_counters()');
    expect(await stats()).toEqual(after);
  });

  it('takes another window, answers null rates when nothing went out, and refuses bad days', async () => {
    const week = (await get('/project/stats?days=7')).body.data;
    expect(week.current).toMatchObject({ sent: 8, opened: 3, bounced: 1, complained: 1 });
    expect(week.previous).toMatchObject({ sent: 0, openRate: null, bounceRate: null });

    const empty = await app.createProject('Empty');
    const none = (await get('/project/stats', empty.secretKey)).body.data;
    expect(none.current).toMatchObject({ sent: 0, openRate: null, clickRate: null });

    for (const bad of ['0', '91', 'x', '1.5']) {
      const res = await get(`/project/stats?days=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('BAD_REQUEST');
      expect(res.body.error.errors[0].field).toBe('days');
    }
  });

  it('counts events per minute over the last minutes, zeros filled in', async () => {
    for (const event of ['signed-up', 'upgraded', 'upgraded']) {
      const res = await app.request({
        method: 'POST',
        url: '/v1/track',
        key: project.secretKey,
        body: { email: 'ada@example.com', event },
      });
      expect(res.status).toBeLessThan(300);
    }
    const res = await get('/events/per-minute?minutes=5');
    expect(res.status).toBe(200);
    const { minutes, points } = res.body.data;
    expect(minutes).toBe(5);
    expect(points).toHaveLength(5);
    const starts = points.map((p: { minute: string }) => Date.parse(p.minute));
    for (let i = 1; i < 5; i++) expect(starts[i] - starts[i - 1]).toBe(60_000);
    expect(starts[0] % 60_000).toBe(0);
    const since = new Date(starts[0]).toISOString();
    const listed = await get(`/events?since=${encodeURIComponent(since)}&limit=1`);
    const total = points.reduce((sum: number, p: { count: number }) => sum + p.count, 0);
    expect(total).toBeGreaterThanOrEqual(3);
    expect(total).toBe(listed.body.data.total);

    // Another project sees its own minutes only.
    const theirs = (await get('/events/per-minute', other.secretKey)).body.data;
    expect(theirs.points).toHaveLength(60);
    const theirTotal = theirs.points.reduce(
      (sum: number, p: { count: number }) => sum + p.count,
      0,
    );
    expect(theirTotal).toBeLessThan(total);

    for (const bad of ['0', '121', 'abc']) {
      const r = await get(`/events/per-minute?minutes=${bad}`);
      expect(r.status).toBe(400);
      expect(r.body.error.errors[0].field).toBe('minutes');
    }
  });
});
