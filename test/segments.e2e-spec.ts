import { DataSource } from 'typeorm';
import type { ConditionGroup } from '../src/conditions/condition.types';
import { ConditionsService } from '../src/conditions/conditions.service';
import { newId } from '../src/database/id';
import { SegmentsRepository } from '../src/segments/segments.repository';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * Segments end to end: a fixture of a few hundred contacts and events is
 * written straight into the tables, and for each condition the members the
 * API answers are compared with a plain JavaScript filter over the fixture.
 */
const DAY = 24 * 60 * 60 * 1000;

interface Fixture {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAgo: number;
  events: Array<{ name: string; ago: number }>;
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function buildFixture(count: number): Fixture[] {
  const random = rng(42);
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)];
  const contacts: Fixture[] = [];
  for (let i = 0; i < count; i++) {
    const data: Record<string, unknown> = {};
    const plan = pick(['pro', 'Pro', 'PRO', 'free', 'team', null, undefined]);
    if (plan !== undefined) data.plan = plan;
    const age = Math.floor(random() * 60) + 10;
    const ageForm = pick(['number', 'string', 'string-padded', 'garbage', 'missing']);
    if (ageForm === 'number') data.age = age;
    if (ageForm === 'string') data.age = String(age);
    if (ageForm === 'string-padded') data.age = ` ${age}.0`;
    if (ageForm === 'garbage') data.age = 'unknown';
    const city = pick(['Paris', 'paris', 'Berlin', 'Lisbon', undefined]);
    if (city !== undefined) data.city = city;
    if (random() < 0.6)
      data.tags = [pick(['beta', 'Beta', 'alpha']), pick(['vip', 'news'])].slice(
        0,
        1 + Math.floor(random() * 2),
      );
    if (random() < 0.3) data.vip = pick([true, false, 'true']);
    // Whole days plus half a day, so no value sits on a window boundary measured in whole days.
    data.signupAt = new Date(
      Date.UTC(2024, Math.floor(random() * 12), 1 + Math.floor(random() * 28)),
    )
      .toISOString()
      .slice(0, 10);
    const events: Fixture['events'] = [];
    const eventCount = Math.floor(random() * 6);
    for (let e = 0; e < eventCount; e++) {
      events.push({
        name: pick([
          'purchase',
          'purchase',
          'signup',
          'page.view',
          'email.opened',
          'email.clicked',
          'email.sent',
        ]),
        ago: (Math.floor(random() * 30) + 0.5) * DAY,
      });
    }
    contacts.push({
      id: newId(),
      email: `${pick(['ana', 'ben', 'vipcarl', 'dee', 'eli'])}.${i}@${pick(['example.com', 'acme.io', 'mail.org'])}`,
      subscribed: random() < 0.7,
      data,
      createdAgo: (Math.floor(random() * 40) + 0.5) * DAY,
      events,
    });
  }
  return contacts;
}

// ---- the independent JavaScript semantics used for the expectations ----
const lower = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v);
const num = (v: unknown): number | null => {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v)) return Number(v);
  return null;
};
const has = (c: Fixture, key: string) => c.data[key] !== undefined && c.data[key] !== null;
const eventsOf = (c: Fixture, name: string, withinDays?: number) =>
  c.events.filter((e) => e.name === name && (withinDays === undefined || e.ago < withinDays * DAY));
const plainPro = (c: Fixture) => lower(c.data.plan) === 'pro';

type Condition = ConditionGroup;
const and = (...conditions: unknown[]): Condition => ({
  logic: 'AND',
  conditions: conditions as Condition['conditions'],
});
const or = (...conditions: unknown[]): Condition => ({
  logic: 'OR',
  conditions: conditions as Condition['conditions'],
});
const r = (field: string, operator: string, value?: unknown) =>
  value === undefined ? { field, operator } : { field, operator, value };

describe('Segments API', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let a: TestProject;
  let b: TestProject;
  const fixture = buildFixture(300);

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    a = await app.createProject('A');
    b = await app.createProject('B');
    const db = app.app.get(DataSource);
    const now = Date.now();
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT x.id, $1, x.email, x.subscribed, x.data, x.created_at, x.created_at
       FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, email text, subscribed boolean, data jsonb, created_at timestamptz)`,
      [
        a.id,
        JSON.stringify(
          fixture.map((c) => ({
            id: c.id,
            email: c.email,
            subscribed: c.subscribed,
            data: c.data,
            created_at: new Date(now - c.createdAgo),
          })),
        ),
      ],
    );
    const events = fixture.flatMap((c) =>
      c.events.map((e) => ({
        id: newId(),
        contact_id: c.id,
        name: e.name,
        created_at: new Date(now - e.ago),
      })),
    );
    await db.query(
      `INSERT INTO events (id, project_id, contact_id, name, created_at)
       SELECT x.id, $1, x.contact_id, x.name, x.created_at
       FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, contact_id uuid, name text, created_at timestamptz)`,
      [a.id, JSON.stringify(events)],
    );
    // Project B holds look-alikes: a pro contact with purchases that must never show up in A's segments.
    const twin = newId();
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, 'ana.0@example.com', true, '{"plan":"pro"}')`,
      [twin, b.id],
    );
    await db.query(
      `INSERT INTO events (id, project_id, contact_id, name) VALUES ($1, $2, $3, 'purchase')`,
      [newId(), b.id, twin],
    );
  }, 120_000);
  afterAll(async () => env?.close());

  const post = (url: string, body: unknown, key = a.secretKey) =>
    app.request({ method: 'POST', url, key, body });
  const get = (url: string, key = a.secretKey) => app.request({ method: 'GET', url, key });
  const patch = (url: string, body: unknown, key = a.secretKey) =>
    app.request({ method: 'PATCH', url, key, body });
  const del = (url: string, key = a.secretKey) => app.request({ method: 'DELETE', url, key });

  async function createSegment(
    condition: unknown,
    name = 'S',
    key = a.secretKey,
  ): Promise<{ id: string; memberCount: number }> {
    const res = await post('/segments', { name, condition }, key);
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function allMembers(id: string): Promise<{ ids: string[]; totals: number[] }> {
    const ids: string[] = [];
    const totals: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(
        `/segments/${id}/contacts?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      ids.push(...res.body.data.items.map((item: { id: string }) => item.id));
      totals.push(res.body.data.total);
      cursor = res.body.data.nextCursor;
      expect(res.body.data.hasMore).toBe(cursor !== null);
    } while (cursor);
    return { ids, totals };
  }

  describe('membership equals an independent JavaScript filter', () => {
    let proSegmentId: string;

    beforeAll(async () => {
      proSegmentId = (await createSegment(and(r('data.plan', 'equals', 'pro')), 'Pro')).id;
    });

    const cases: Array<[string, () => Condition, (c: Fixture) => boolean]> = [
      ['string equality is case-insensitive', () => and(r('data.plan', 'equals', 'PRO')), plainPro],
      [
        'notEquals includes missing and null keys',
        () => and(r('data.plan', 'notEquals', 'pro')),
        (c) => !plainPro(c),
      ],
      [
        'numbers stored as strings compare numerically',
        () => and(r('data.age', 'greaterThanOrEqual', 30)),
        (c) => (num(c.data.age) ?? -Infinity) >= 30,
      ],
      [
        'AND of a number range and a boolean column',
        () => and(r('data.age', 'lessThan', 25), r('subscribed', 'equals', true)),
        (c) => num(c.data.age) !== null && (num(c.data.age) as number) < 25 && c.subscribed,
      ],
      [
        'OR of email rules',
        () => or(r('email', 'endsWith', '@EXAMPLE.com'), r('email', 'contains', 'vip')),
        (c) => c.email.endsWith('@example.com') || c.email.includes('vip'),
      ],
      [
        'contains on an array is element membership',
        () => and(r('data.tags', 'contains', 'beta')),
        (c) => Array.isArray(c.data.tags) && c.data.tags.some((t) => lower(t) === 'beta'),
      ],
      [
        'in over strings',
        () => and(r('data.city', 'in', ['Paris', 'berlin'])),
        (c) => ['paris', 'berlin'].includes(lower(c.data.city) as string),
      ],
      ['notExists', () => and(r('data.city', 'notExists')), (c) => !has(c, 'city')],
      [
        'createdAt within 10 days',
        () => and(r('createdAt', 'within', { amount: 10, unit: 'days' })),
        (c) => c.createdAgo < 10 * DAY,
      ],
      [
        'event triggeredWithin',
        () => and(r('event.purchase', 'triggeredWithin', { amount: 7, unit: 'days' })),
        (c) => eventsOf(c, 'purchase', 7).length > 0,
      ],
      [
        'event triggeredAtLeast',
        () => and(r('event.purchase', 'triggeredAtLeast', { count: 3 })),
        (c) => eventsOf(c, 'purchase').length >= 3,
      ],
      [
        'notTriggered AND engagement',
        () => and(r('event.purchase', 'notTriggered'), r('email.opened', 'triggered')),
        (c) => eventsOf(c, 'purchase').length === 0 && eventsOf(c, 'email.opened').length > 0,
      ],
      [
        'engagement window OR a boolean data key',
        () =>
          or(
            r('email.clicked', 'triggeredWithin', { amount: 14, unit: 'days' }),
            r('data.vip', 'equals', true),
          ),
        (c) =>
          eventsOf(c, 'email.clicked', 14).length > 0 ||
          c.data.vip === true ||
          c.data.vip === 'true',
      ],
      [
        'membership of another segment AND a date in data',
        () =>
          and(r('segment', 'in', proSegmentId), r('data.signupAt', 'greaterThan', '2024-06-01')),
        (c) => plainPro(c) && Date.parse(c.data.signupAt as string) > Date.parse('2024-06-01'),
      ],
      [
        'nested groups with notIn and segment notIn',
        () =>
          or(
            and(
              r('data.plan', 'in', ['team', 'free']),
              or(r('data.age', 'notIn', [20, 21, 22]), and(r('event.signup', 'triggered'))),
            ),
            and(
              r('segment', 'notIn', proSegmentId),
              r('subscribed', 'equals', false),
              r('data.tags', 'exists'),
            ),
          ),
        (c) =>
          (['team', 'free'].includes(lower(c.data.plan) as string) &&
            (![20, 21, 22].includes(num(c.data.age) as number) ||
              eventsOf(c, 'signup').length > 0)) ||
          (!plainPro(c) && !c.subscribed && has(c, 'tags')),
      ],
      [
        'the benchmark shape: data equality, numeric range, subscribed, triggeredWithin',
        () =>
          and(
            r('data.plan', 'equals', 'pro'),
            r('data.age', 'greaterThanOrEqual', 20),
            r('data.age', 'lessThan', 50),
            r('subscribed', 'equals', true),
            r('event.purchase', 'triggeredWithin', { amount: 7, unit: 'days' }),
          ),
        (c) => {
          const age = num(c.data.age);
          return (
            plainPro(c) &&
            age !== null &&
            age >= 20 &&
            age < 50 &&
            c.subscribed &&
            eventsOf(c, 'purchase', 7).length > 0
          );
        },
      ],
    ];

    it.each(cases)('%s', async (_title, condition, predicate) => {
      const expected = fixture
        .filter(predicate)
        .map((c) => c.id)
        .sort()
        .reverse();
      const segment = await createSegment(condition());
      expect(segment.memberCount).toBe(expected.length);
      const { ids, totals } = await allMembers(segment.id);
      expect(ids).toEqual(expected);
      expect(totals.every((total) => total === expected.length)).toBe(true);
      const preview = await post('/segments/preview', { condition: condition() });
      expect(preview.status).toBe(200);
      expect(preview.body.data.count).toBe(expected.length);
      expect(preview.body.data.sample.map((s: { id: string }) => s.id)).toEqual(
        expected.slice(0, 10),
      );
    });

    it('the fixture exercises every case with both members and non-members', () => {
      for (const [title, , predicate] of cases) {
        const n = fixture.filter(predicate).length;
        expect({ title, some: n > 0, notAll: n < fixture.length }).toEqual({
          title,
          some: true,
          notAll: true,
        });
      }
    });
  });

  describe('the shared entry points for campaigns and workflows', () => {
    // Outside a transaction, as a service that has none passes dataSource.manager.
    const manager = () => app.app.get(DataSource).manager;
    const condition = () =>
      and(
        r('data.plan', 'equals', 'pro'),
        or(
          r('event.purchase', 'triggeredWithin', { amount: 7, unit: 'days' }),
          r('subscribed', 'equals', false),
        ),
      );
    const predicate = (c: Fixture) =>
      plainPro(c) && (eventsOf(c, 'purchase', 7).length > 0 || !c.subscribed);

    it('matchesContact answers for one contact, and never for another project', async () => {
      const conditions = app.app.get(ConditionsService);
      for (const c of fixture.slice(0, 40)) {
        expect({
          id: c.id,
          matches: await conditions.matchesContact(manager(), a.id, c.id, condition()),
        }).toEqual({ id: c.id, matches: predicate(c) });
      }
      const member = fixture.find(predicate) as Fixture;
      expect(await conditions.matchesContact(manager(), b.id, member.id, condition())).toBe(false);
    });

    it('validate reports paths under the caller prefix, count matches the filter', async () => {
      const conditions = app.app.get(ConditionsService);
      const errors = await conditions.validate(
        manager(),
        and(r('data.plan', 'equals', 'pro'), or(r('segment', 'in', newId()))),
        {
          projectId: a.id,
          path: 'audienceFilter',
        },
      );
      expect(errors).toEqual([
        expect.objectContaining({
          field: 'audienceFilter.conditions[1].conditions[0].value',
          code: 'custom',
        }),
      ]);
      expect(await conditions.count(manager(), a.id, condition())).toBe(
        fixture.filter(predicate).length,
      );
    });

    it("compile fits into a larger query after the caller's own parameters", async () => {
      const conditions = app.app.get(ConditionsService);
      const compiled = await conditions.compile(manager(), condition(), {
        projectId: a.id,
        contactAlias: 'ct',
        paramOffset: 1,
      });
      const rows: Array<{ id: string }> = await app.app
        .get(DataSource)
        .query(
          `SELECT ct.id FROM contacts ct WHERE ct.subscribed = $1 AND ${compiled.sql} ORDER BY ct.id`,
          [true, ...compiled.params],
        );
      expect(rows.map((row) => row.id)).toEqual(
        fixture
          .filter((c) => predicate(c) && c.subscribed)
          .map((c) => c.id)
          .sort(),
      );
    });

    const sparse = (c: Fixture) =>
      eventsOf(c, 'purchase').length >= 3 && lower(c.data.city) === 'lisbon';
    it.each([
      ['dense', condition, predicate],
      [
        'sparse, with triggeredAtLeast',
        () =>
          and(
            r('event.purchase', 'triggeredAtLeast', { count: 3 }),
            r('data.city', 'equals', 'Lisbon'),
          ),
        sparse,
      ],
    ] as Array<[string, () => Condition, (c: Fixture) => boolean]>)(
      'member pages walked in id windows equal one pass over all contacts (%s)',
      async (_shape, makeCondition, matches) => {
        const conditions = app.app.get(ConditionsService);
        const repository = app.app.get(SegmentsRepository);
        const compiled = await conditions.compileBoth(manager(), makeCondition(), a.id);
        const expected = fixture
          .filter(matches)
          .map((c) => c.id)
          .sort()
          .reverse();
        expect(expected.length).toBeGreaterThan(2);
        // Window 1 switches to the single last-resort query early; 100,000 covers everything at once.
        for (const firstWindow of [1, 3, 7, 1000, 100_000]) {
          const ids: string[] = [];
          let before: string | undefined;
          for (;;) {
            // In a transaction, as SegmentsService runs it (the last-resort query uses SET LOCAL).
            const rows = await app.app
              .get(DataSource)
              .transaction((m) => repository.members(m, a.id, compiled, 2, before, firstWindow));
            ids.push(...rows.map((row) => row.id));
            if (rows.length < 2) break;
            before = rows[rows.length - 1].id;
          }
          expect({ firstWindow, ids }).toEqual({ firstWindow, ids: expected });
        }
      },
    );
  });

  describe('CRUD', () => {
    it('creates, reads, lists, updates and deletes a segment', async () => {
      const created = await post('/segments', {
        name: '  Parisians ',
        description: 'Lives in Paris',
        condition: and(r('data.city', 'equals', 'paris')),
      });
      expect(created.status).toBe(201);
      const expectedCount = fixture.filter((c) => lower(c.data.city) === 'paris').length;
      expect(created.body.data).toMatchObject({
        name: 'Parisians',
        description: 'Lives in Paris',
        condition: and(r('data.city', 'equals', 'paris')),
        memberCount: expectedCount,
      });
      const id = created.body.data.id;
      expect(Object.keys(created.body.data).sort()).toEqual([
        'condition',
        'createdAt',
        'description',
        'id',
        'memberCount',
        'name',
        'updatedAt',
      ]);

      const got = await get(`/segments/${id}`);
      expect(got.status).toBe(200);
      expect(got.body.data).toEqual(created.body.data);

      const list = await get('/segments?limit=2');
      expect(list.status).toBe(200);
      expect(list.body.data.items[0].id).toBe(id);
      expect(list.body.data).toMatchObject({ hasMore: true });
      expect(list.body.data.total).toBeGreaterThan(2);

      const renamed = await patch(`/segments/${id}`, { name: 'Paris', description: null });
      expect(renamed.status).toBe(200);
      expect(renamed.body.data).toMatchObject({
        name: 'Paris',
        description: null,
        memberCount: expectedCount,
      });

      const changed = await patch(`/segments/${id}`, {
        condition: and(r('data.city', 'equals', 'lisbon')),
      });
      expect(changed.body.data.memberCount).toBe(
        fixture.filter((c) => lower(c.data.city) === 'lisbon').length,
      );

      const deleted = await del(`/segments/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body.data).toEqual({ id, deleted: true });
      expect((await get(`/segments/${id}`)).body.error.code).toBe('SEGMENT_NOT_FOUND');
    });

    it('refuses to delete a segment another one refers to (409), and allows it afterwards', async () => {
      const inner = await createSegment(and(r('subscribed', 'equals', true)), 'Inner');
      const outer = await createSegment(and(r('segment', 'in', inner.id)), 'Outer');
      const refused = await del(`/segments/${inner.id}`);
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('CONFLICT');
      expect(refused.body.error.message).toContain(outer.id);
      expect((await del(`/segments/${outer.id}`)).status).toBe(200);
      expect((await del(`/segments/${inner.id}`)).status).toBe(200);
    });

    it('validates name and the presence of condition like any body', async () => {
      const res = await post('/segments', { name: '', extra: 1 });
      expect(res.status).toBe(422);
      const fields = res.body.error.errors.map(
        (e: { field: string; code: string }) => `${e.field}:${e.code}`,
      );
      expect(fields).toEqual(
        expect.arrayContaining(['name:too_small', 'condition:required', 'extra:unrecognized_keys']),
      );
    });

    it('answers 400 for an id that is not a UUID and 404 for an unknown one', async () => {
      expect((await get('/segments/nope')).status).toBe(400);
      const missing = await get(`/segments/${newId()}/contacts`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('SEGMENT_NOT_FOUND');
      const existing = await createSegment(and(r('subscribed', 'equals', true)));
      expect((await get(`/segments/${existing.id}/contacts?cursor=garbage`)).status).toBe(400);
      expect((await get(`/segments/${existing.id}/contacts?limit=101`)).status).toBe(400);
    });
  });

  describe('validation errors point into the condition', () => {
    async function errorsFor(
      condition: unknown,
      url = '/segments',
      method: 'POST' | 'PATCH' = 'POST',
    ) {
      const body =
        method === 'POST' && url === '/segments' ? { name: 'Bad', condition } : { condition };
      const res = method === 'POST' ? await post(url, body) : await patch(url, body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      return res.body.error.errors.map((e: { field: string; code: string }) => ({
        field: e.field,
        code: e.code,
      }));
    }

    it('unknown field', async () => {
      expect(
        await errorsFor(and(r('email', 'equals', 'x'), or(r('phone', 'equals', '1')))),
      ).toEqual([
        { field: 'condition.conditions[1].conditions[0].field', code: 'invalid_enum_value' },
      ]);
    });

    it('operator not allowed for the field', async () => {
      expect(
        await errorsFor(and(r('email', 'equals', 'x'), or(r('subscribed', 'greaterThan', true)))),
      ).toEqual([
        { field: 'condition.conditions[1].conditions[0].operator', code: 'invalid_enum_value' },
      ]);
    });

    it('value of the wrong type', async () => {
      expect(
        await errorsFor(
          and(
            r('data.age', 'greaterThan', { n: 1 }),
            r('event.x', 'triggeredWithin', { amount: '7', unit: 'days' }),
          ),
        ),
      ).toEqual([
        { field: 'condition.conditions[0].value', code: 'invalid_type' },
        { field: 'condition.conditions[1].value.amount', code: 'invalid_type' },
      ]);
    });

    it('nesting deeper than 5 levels', async () => {
      const deep = and(or(and(or(and(or(r('subscribed', 'equals', true)))))));
      expect(await errorsFor(deep)).toEqual([
        {
          field: 'condition.conditions[0].conditions[0].conditions[0].conditions[0].conditions[0]',
          code: 'too_big',
        },
      ]);
    });

    it('more than 50 rules', async () => {
      const rules = Array.from({ length: 51 }, (_, i) => r(`data.k${i}`, 'exists'));
      expect(await errorsFor(or(and(...rules.slice(0, 30)), and(...rules.slice(30))))).toEqual([
        { field: 'condition', code: 'too_big' },
      ]);
    });

    it('unknown segment id, and a segment of another project', async () => {
      const foreign = await createSegment(
        and(r('subscribed', 'equals', true)),
        'Foreign',
        b.secretKey,
      );
      expect(
        await errorsFor(and(r('segment', 'in', newId()), or(r('segment', 'notIn', foreign.id)))),
      ).toEqual([
        { field: 'condition.conditions[0].value', code: 'custom' },
        { field: 'condition.conditions[1].conditions[0].value', code: 'custom' },
      ]);
    });

    it('a segment that refers to itself directly or through others', async () => {
      const first = await createSegment(and(r('subscribed', 'equals', true)), 'First');
      const second = await createSegment(or(r('segment', 'in', first.id)), 'Second');
      expect(
        await errorsFor(and(r('segment', 'in', first.id)), `/segments/${first.id}`, 'PATCH'),
      ).toEqual([{ field: 'condition.conditions[0].value', code: 'custom' }]);
      expect(
        await errorsFor(
          and(r('email', 'contains', 'a'), and(r('segment', 'notIn', second.id))),
          `/segments/${first.id}`,
          'PATCH',
        ),
      ).toEqual([{ field: 'condition.conditions[1].conditions[0].value', code: 'custom' }]);
      // Nothing was stored: the first segment still has its original condition.
      expect((await get(`/segments/${first.id}`)).body.data.condition).toEqual(
        and(r('subscribed', 'equals', true)),
      );
    });

    it('a condition too large once the segments it names are inlined, also through an update', async () => {
      const rules50 = Array.from({ length: 50 }, (_, i) => r(`data.k${i}`, 'exists'));
      const base = await createSegment(and(...rules50), 'Fifty rules');
      const x4 = await createSegment(
        or(...Array.from({ length: 4 }, () => r('segment', 'in', base.id))),
        'Four times',
      );
      expect(
        await errorsFor(
          and(
            r('segment', 'in', base.id),
            ...Array.from({ length: 10 }, () => r('segment', 'in', base.id)),
          ),
        ),
      ).toEqual([{ field: 'condition', code: 'too_big' }]);
      const top = await createSegment(
        and(r('segment', 'in', x4.id), r('segment', 'notIn', x4.id)),
        'Twice four times',
      );
      const grown = or(
        ...Array.from({ length: 5 }, () => r('segment', 'in', base.id)),
        r('subscribed', 'equals', true),
      );
      const res = await patch(`/segments/${x4.id}`, { condition: grown });
      expect(res.status).toBe(422);
      expect(res.body.error.errors).toEqual([
        expect.objectContaining({ field: 'condition', code: 'too_big' }),
      ]);
      expect(res.body.error.errors[0].message).toContain(top.id);
    });

    it('accepts a segment id in upper case', async () => {
      const inner = await createSegment(and(r('data.city', 'equals', 'paris')), 'Paris');
      const outer = await createSegment(
        and(r('segment', 'in', inner.id.toUpperCase())),
        'Paris again',
      );
      expect(outer.memberCount).toBe(inner.memberCount);
      expect(inner.memberCount).toBeGreaterThan(0);
    });

    it('the preview validates the same way', async () => {
      expect(await errorsFor({ logic: 'NAND', conditions: [] }, '/segments/preview')).toEqual([
        { field: 'condition.logic', code: 'invalid_enum_value' },
      ]);
    });
  });

  describe('project isolation', () => {
    it("another project's segment is not found, and its members never appear", async () => {
      const mine = await createSegment(and(r('event.purchase', 'triggered')), 'Purchasers');
      for (const url of [`/segments/${mine.id}`, `/segments/${mine.id}/contacts`]) {
        const res = await get(url, b.secretKey);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('SEGMENT_NOT_FOUND');
      }
      expect((await patch(`/segments/${mine.id}`, { name: 'x' }, b.secretKey)).status).toBe(404);
      expect((await del(`/segments/${mine.id}`, b.secretKey)).status).toBe(404);
      const theirs = await createSegment(
        and(r('event.purchase', 'triggered')),
        'B purchasers',
        b.secretKey,
      );
      expect(theirs.memberCount).toBe(1);
      expect(mine.memberCount).toBe(
        fixture.filter((c) => eventsOf(c, 'purchase').length > 0).length,
      );
    });
  });
});
