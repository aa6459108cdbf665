import { Client } from 'pg';
import { createTestDatabase } from '../../test/support/test-app';
import { newId } from '../database/id';
import { compileCondition } from './condition-compiler';
import { validateConditionShape } from './condition-validator';
import type { ConditionGroup, ConditionNode } from './condition.types';

/**
 * The compiler's output is executed against a real Postgres scratch database
 * (migrated like production), so these tests check what a segment answers,
 * not what the SQL text looks like.
 */
jest.setTimeout(60_000);

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const INJECTION_KEY = "a'; drop table contacts; --";

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pg: Client;
const projectId = newId();
const otherProjectId = newId();
const ids: Record<string, string> = {};

interface FixtureContact {
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  ageMs: number;
  updatedAgoMs?: number;
}

const CONTACTS: FixtureContact[] = [
  {
    email: 'ann@example.com',
    subscribed: true,
    ageMs: 2 * DAY,
    data: {
      plan: 'Pro',
      age: 30,
      score: '42',
      tags: ['VIP', 'beta'],
      signup: '2024-01-15',
      address: { city: 'Paris', zip: '75001' },
      flag: true,
      nothing: null,
      seen: new Date(Date.now() - 3 * DAY).toISOString(),
    },
  },
  {
    email: 'bob@example.com',
    subscribed: false,
    ageMs: 10 * DAY,
    updatedAgoMs: 1 * DAY,
    data: {
      plan: 'free',
      age: '25',
      score: 7,
      tags: [],
      signup: '2024-03-01T12:00:00+02:00',
      address: { city: 'berlin' },
      flag: 'false',
      seen: new Date(Date.now() - 30 * DAY).toISOString(),
    },
  },
  {
    email: 'cid@other.org',
    subscribed: true,
    ageMs: 40 * DAY,
    data: {
      plan: 'pro%',
      age: 'abc',
      signup: 'not a date',
      [INJECTION_KEY]: 'x',
      'dotted.key': 'yes',
      score: '1e2',
    },
  },
  { email: 'dee@other.org', subscribed: true, ageMs: 1 * 60 * MINUTE, data: {} },
  {
    email: 'eve_x@z.net',
    subscribed: false,
    ageMs: 400 * DAY,
    data: { age: 1000, plan: null, score: '  12.5 ', signup: '2024-02-30', tags: 'VIP' },
  },
];

interface FixtureEvent {
  email: string;
  name: string;
  agoMs: number;
}

const EVENTS: FixtureEvent[] = [
  { email: 'ann@example.com', name: 'purchase', agoMs: 1 * DAY },
  { email: 'ann@example.com', name: 'purchase', agoMs: 5 * DAY },
  { email: 'ann@example.com', name: 'purchase', agoMs: 20 * DAY },
  { email: 'ann@example.com', name: 'email.opened', agoMs: 1 * DAY },
  { email: 'bob@example.com', name: 'purchase', agoMs: 30 * DAY },
  { email: 'cid@other.org', name: "it's; drop", agoMs: 2 * DAY },
  { email: 'eve_x@z.net', name: 'email.sent', agoMs: 3 * DAY },
  { email: 'eve_x@z.net', name: 'email.bounced', agoMs: 2 * DAY },
];

beforeAll(async () => {
  db = await createTestDatabase();
  pg = new Client({ connectionString: db.url });
  await pg.connect();
  for (const [id, name] of [
    [projectId, 'P'],
    [otherProjectId, 'Other'],
  ]) {
    await pg.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [id, name]);
  }
  const now = Date.now();
  for (const contact of CONTACTS) {
    ids[contact.email] = newId();
    await pg.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        ids[contact.email],
        projectId,
        contact.email,
        contact.subscribed,
        contact.data,
        new Date(now - contact.ageMs),
        new Date(now - (contact.updatedAgoMs ?? contact.ageMs)),
      ],
    );
  }
  for (const event of EVENTS) {
    await pg.query(
      'INSERT INTO events (id, project_id, contact_id, name, created_at) VALUES ($1, $2, $3, $4, $5)',
      [newId(), projectId, ids[event.email], event.name, new Date(now - event.agoMs)],
    );
  }
  // A look-alike of ann in another project, with her events: it must never match.
  const twin = newId();
  await pg.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, 'ann@example.com', true, $3)`,
    [twin, otherProjectId, CONTACTS[0].data],
  );
  await pg.query(
    `INSERT INTO events (id, project_id, contact_id, name) VALUES ($1, $2, $3, 'purchase')`,
    [newId(), otherProjectId, twin],
  );
});

afterAll(async () => {
  await pg?.end();
  await db?.drop();
});

function group(logic: 'AND' | 'OR', ...conditions: ConditionNode[]): ConditionGroup {
  return { logic, conditions };
}

function rule(field: string, operator: string, value?: unknown): ConditionGroup {
  return group('AND', value === undefined ? { field, operator } : { field, operator, value });
}

/** Members as both purposes compile them: the "count" shape of the SQL must select exactly the same contacts. */
async function members(
  condition: ConditionGroup,
  segments = new Map<string, ConditionGroup>(),
): Promise<string[]> {
  const shape = validateConditionShape(condition, 'condition');
  expect(shape.errors).toEqual([]);
  const answers: string[][] = [];
  for (const purpose of ['rows', 'count'] as const) {
    const compiled = compileCondition(condition, {
      projectId,
      contactAlias: 'c',
      segments,
      purpose,
    });
    const { rows } = await pg.query<{ email: string }>(
      `SELECT c.email FROM contacts c WHERE ${compiled.sql} ORDER BY c.email`,
      compiled.params,
    );
    answers.push(rows.map((row) => row.email));
  }
  expect(answers[1]).toEqual(answers[0]);
  return answers[0];
}

const ANN = 'ann@example.com';
const BOB = 'bob@example.com';
const CID = 'cid@other.org';
const DEE = 'dee@other.org';
const EVE = 'eve_x@z.net';
const ALL = [ANN, BOB, CID, DEE, EVE];
const except = (...emails: string[]) => ALL.filter((email) => !emails.includes(email));

describe('contact columns', () => {
  it.each([
    ['equals', 'ANN@Example.com', [ANN]],
    ['notEquals', 'ann@example.com', except(ANN)],
    ['contains', 'OTHER', [CID, DEE]],
    ['notContains', 'other', [ANN, BOB, EVE]],
    ['startsWith', 'b', [BOB]],
    ['endsWith', '.ORG', [CID, DEE]],
    ['in', ['Bob@example.com', 'dee@other.org', 'nobody@x.y'], [BOB, DEE]],
    ['notIn', ['bob@example.com'], except(BOB)],
  ])('email %s %j', async (operator, value, expected) => {
    expect(await members(rule('email', operator, value))).toEqual(expected);
  });

  it('treats LIKE wildcards in a value literally', async () => {
    expect(await members(rule('email', 'contains', '_'))).toEqual([EVE]);
    expect(await members(rule('email', 'contains', '%'))).toEqual([]);
    expect(await members(rule('data.plan', 'startsWith', 'pro%'))).toEqual([CID]);
  });

  it('compares subscribed as a boolean', async () => {
    expect(await members(rule('subscribed', 'equals', true))).toEqual([ANN, CID, DEE]);
    expect(await members(rule('subscribed', 'notEquals', true))).toEqual([BOB, EVE]);
  });

  it('compares createdAt and updatedAt as instants and windows', async () => {
    const fiveDaysAgo = new Date(Date.now() - 5 * DAY).toISOString();
    expect(await members(rule('createdAt', 'greaterThan', fiveDaysAgo))).toEqual([ANN, DEE]);
    expect(await members(rule('createdAt', 'lessThanOrEqual', fiveDaysAgo))).toEqual([
      BOB,
      CID,
      EVE,
    ]);
    expect(await members(rule('createdAt', 'within', { amount: 3, unit: 'days' }))).toEqual([
      ANN,
      DEE,
    ]);
    expect(await members(rule('createdAt', 'within', { amount: 90, unit: 'minutes' }))).toEqual([
      DEE,
    ]);
    expect(await members(rule('createdAt', 'olderThan', { amount: 30, unit: 'days' }))).toEqual([
      CID,
      EVE,
    ]);
    expect(await members(rule('updatedAt', 'within', { amount: 36, unit: 'hours' }))).toEqual([
      BOB,
      DEE,
    ]);
    // A date without a time is midnight UTC.
    expect(await members(rule('createdAt', 'greaterThanOrEqual', '2000-01-01'))).toEqual(ALL);
  });
});

describe('data keys', () => {
  it('compares strings case-insensitively, and missing or null keys never equal anything', async () => {
    expect(await members(rule('data.plan', 'equals', 'PRO'))).toEqual([ANN]);
    expect(await members(rule('data.plan', 'notEquals', 'pro'))).toEqual([BOB, CID, DEE, EVE]);
    expect(await members(rule('data.address.city', 'equals', 'Berlin'))).toEqual([BOB]);
    expect(await members(rule('data.address.zip', 'equals', 75001))).toEqual([ANN]);
  });

  it('compares numbers numerically, including numbers stored as strings', async () => {
    expect(await members(rule('data.age', 'greaterThan', 26))).toEqual([ANN, EVE]);
    expect(await members(rule('data.age', 'lessThan', 100))).toEqual([ANN, BOB]);
    expect(await members(rule('data.age', 'equals', 25))).toEqual([BOB]);
    expect(await members(rule('data.age', 'equals', '25'))).toEqual([BOB]);
    // "42" > 8 numerically although "42" < "8" as text; " 12.5 " and "1e2" are numbers too.
    expect(await members(rule('data.score', 'greaterThan', 8))).toEqual([ANN, CID, EVE]);
    expect(await members(rule('data.score', 'greaterThanOrEqual', 100))).toEqual([CID]);
    expect(await members(rule('data.score', 'lessThanOrEqual', 12.5))).toEqual([BOB, EVE]);
    // Non-numeric text ("abc") and missing keys are neither above nor below a number.
    expect(await members(rule('data.age', 'lessThan', 1e9))).toEqual([ANN, BOB, EVE]);
    expect(await members(rule('data.age', 'notEquals', 30))).toEqual(except(ANN));
  });

  it('compares ISO dates as instants and ignores values that are not dates', async () => {
    expect(await members(rule('data.signup', 'greaterThan', '2024-02-01'))).toEqual([BOB]);
    expect(await members(rule('data.signup', 'lessThan', '2024-03-01T10:00:01Z'))).toEqual([
      ANN,
      BOB,
    ]);
    expect(await members(rule('data.signup', 'lessThan', '2024-03-01T10:00:00Z'))).toEqual([ANN]);
    expect(await members(rule('data.signup', 'equals', '2024-03-01T10:00:00.000Z'))).toEqual([BOB]);
    expect(await members(rule('data.seen', 'within', { amount: 7, unit: 'days' }))).toEqual([ANN]);
    expect(await members(rule('data.seen', 'olderThan', { amount: 7, unit: 'days' }))).toEqual([
      BOB,
    ]);
  });

  it('matches booleans stored as booleans or as strings', async () => {
    expect(await members(rule('data.flag', 'equals', true))).toEqual([ANN]);
    expect(await members(rule('data.flag', 'equals', false))).toEqual([BOB]);
    expect(await members(rule('data.flag', 'notEquals', true))).toEqual(except(ANN));
  });

  it('exists / notExists: a JSON null counts as missing', async () => {
    expect(await members(rule('data.plan', 'exists'))).toEqual([ANN, BOB, CID]);
    expect(await members(rule('data.plan', 'notExists'))).toEqual([DEE, EVE]);
    expect(await members(rule('data.nothing', 'exists'))).toEqual([]);
    expect(await members(rule('data.address.city', 'exists'))).toEqual([ANN, BOB]);
    expect(await members(rule('data.tags', 'exists'))).toEqual([ANN, BOB, EVE]);
  });

  it('contains: substring of a scalar, element of an array', async () => {
    expect(await members(rule('data.plan', 'contains', 'R'))).toEqual([ANN, BOB, CID]);
    expect(await members(rule('data.tags', 'contains', 'vip'))).toEqual([ANN, EVE]);
    expect(await members(rule('data.tags', 'contains', 'vi'))).toEqual([EVE]);
    expect(await members(rule('data.tags', 'notContains', 'vip'))).toEqual([BOB, CID, DEE]);
    expect(await members(rule('data.address', 'contains', 'paris'))).toEqual([]);
    expect(await members(rule('data.plan', 'endsWith', 'EE'))).toEqual([BOB]);
  });

  it('in / notIn over strings, numbers and array elements', async () => {
    expect(await members(rule('data.plan', 'in', ['pro', 'FREE']))).toEqual([ANN, BOB]);
    expect(await members(rule('data.age', 'in', [25, 1000]))).toEqual([BOB, EVE]);
    expect(await members(rule('data.tags', 'in', ['beta', 'x']))).toEqual([ANN]);
    expect(await members(rule('data.plan', 'notIn', ['pro', 'free']))).toEqual([CID, DEE, EVE]);
  });

  it('treats a hostile key or value as data, never as SQL', async () => {
    expect(await members(rule(`data.${INJECTION_KEY}`, 'equals', 'x'))).toEqual([CID]);
    expect(await members(rule('data.plan', 'equals', "'; drop table contacts; --"))).toEqual([]);
    expect(await members(rule('event.' + "it's; drop", 'triggered'))).toEqual([CID]);
    const compiled = compileCondition(rule(`data.${INJECTION_KEY}`, 'equals', "x'); --"), {
      projectId,
    });
    expect(compiled.sql).not.toContain('drop');
    expect(compiled.params).toContain(INJECTION_KEY);
    const { rows } = await pg.query('SELECT count(*)::int AS n FROM contacts');
    expect(rows[0].n).toBe(CONTACTS.length + 1);
  });

  it('a key with a dot cannot be addressed: dots always separate keys', async () => {
    expect(await members(rule('data.dotted.key', 'exists'))).toEqual([]);
  });
});

describe('event and engagement rules', () => {
  it.each([
    ['triggered', undefined, [ANN, BOB]],
    ['notTriggered', undefined, [CID, DEE, EVE]],
    ['triggeredWithin', { amount: 7, unit: 'days' }, [ANN]],
    ['triggeredWithin', { amount: 12, unit: 'hours' }, []],
    ['notTriggeredWithin', { amount: 7, unit: 'days' }, except(ANN)],
    ['triggeredAtLeast', { count: 3 }, [ANN]],
    ['triggeredAtLeast', { count: 1 }, [ANN, BOB]],
    ['triggeredAtLeast', { count: 2, amount: 10, unit: 'days' }, [ANN]],
    ['triggeredAtLeast', { count: 3, amount: 10, unit: 'days' }, []],
  ])('purchase %s %j', async (operator, value, expected) => {
    expect(await members(rule('event.purchase', operator, value))).toEqual(expected);
  });

  it('reads engagement from the system email.* events', async () => {
    expect(await members(rule('email.opened', 'triggered'))).toEqual([ANN]);
    expect(
      await members(rule('email.sent', 'triggeredWithin', { amount: 4, unit: 'days' })),
    ).toEqual([EVE]);
    expect(await members(rule('email.bounced', 'notTriggered'))).toEqual(except(EVE));
    expect(await members(rule('email.clicked', 'triggered'))).toEqual([]);
  });
});

describe('count-shaped SQL', () => {
  it('aggregates triggeredAtLeast once, also under OR and inside a negated segment', async () => {
    const atLeast3 = rule('event.purchase', 'triggeredAtLeast', { count: 3 });
    const compiled = compileCondition(atLeast3, { projectId, purpose: 'count' });
    expect(compiled.sql).toContain('GROUP BY');
    expect(compiled.rules).toEqual({ data: 0, event: 1 });
    expect(
      await members(
        group('OR', ...atLeast3.conditions, { field: 'email', operator: 'equals', value: DEE }),
      ),
    ).toEqual([ANN, DEE]);
    const seg = newId();
    expect(await members(rule('segment', 'notIn', seg), new Map([[seg, atLeast3]]))).toEqual(
      except(ANN),
    );
  });
});

describe('groups and membership', () => {
  it('combines AND / OR groups nested five levels deep', async () => {
    const condition = group(
      'OR',
      group(
        'AND',
        { field: 'subscribed', operator: 'equals', value: true },
        { field: 'data.age', operator: 'lessThan', value: 40 },
      ),
      group(
        'AND',
        { field: 'email', operator: 'endsWith', value: '.net' },
        group('OR', group('AND', group('OR', { field: 'email.bounced', operator: 'triggered' }))),
      ),
    );
    expect(await members(condition)).toEqual([ANN, EVE]);
  });

  it('empty groups: AND matches everyone, OR nobody', async () => {
    expect(await members(group('AND'))).toEqual(ALL);
    expect(await members(group('OR'))).toEqual([]);
    expect(
      await members(
        group('AND', group('OR'), { field: 'subscribed', operator: 'equals', value: true }),
      ),
    ).toEqual([]);
  });

  it('inlines the condition of another segment, in and notIn', async () => {
    const pro = newId();
    const segments = new Map([[pro, rule('data.plan', 'equals', 'pro')]]);
    expect(await members(rule('segment', 'in', pro), segments)).toEqual([ANN]);
    expect(await members(rule('segment', 'notIn', pro), segments)).toEqual(except(ANN));
    const nested = newId();
    segments.set(
      nested,
      group(
        'OR',
        { field: 'segment', operator: 'in', value: pro },
        { field: 'email', operator: 'equals', value: DEE },
      ),
    );
    expect(await members(rule('segment', 'in', nested), segments)).toEqual([ANN, DEE]);
  });

  it('a missing segment matches nobody and a cycle terminates', async () => {
    expect(await members(rule('segment', 'in', newId()))).toEqual([]);
    const a = newId();
    const b = newId();
    const segments = new Map([
      [
        a,
        group(
          'OR',
          { field: 'segment', operator: 'in', value: b },
          { field: 'email', operator: 'equals', value: ANN },
        ),
      ],
      [
        b,
        group(
          'OR',
          { field: 'segment', operator: 'in', value: a },
          { field: 'email', operator: 'equals', value: BOB },
        ),
      ],
    ]);
    expect(await members(rule('segment', 'in', a), segments)).toEqual([ANN, BOB]);
  });

  it('numbers its placeholders after paramOffset so it fits into a larger query', async () => {
    const compiled = compileCondition(rule('data.plan', 'equals', 'pro'), {
      projectId,
      contactAlias: 'ct',
      paramOffset: 2,
    });
    expect(compiled.sql).toContain('$3::uuid');
    expect(compiled.sql).not.toMatch(/\$[12]\b/);
    const { rows } = await pg.query(
      `SELECT ct.email FROM contacts ct WHERE ct.subscribed = $1 AND ct.email <> $2 AND ${compiled.sql}`,
      [true, 'x', ...compiled.params],
    );
    expect(rows.map((row) => row.email)).toEqual([ANN]);
  });

  it('refuses an alias that is not an identifier', () => {
    expect(() => compileCondition(group('AND'), { projectId, contactAlias: 'c; drop' })).toThrow();
  });
});
