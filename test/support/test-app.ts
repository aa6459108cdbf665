import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { AppConfig, loadConfig } from '../../src/config/config';
import { createApp } from '../../src/create-app';
import { prepareDatabase } from '../../src/database/prepare-database';
import { ProjectsService } from '../../src/projects/projects.service';
import { createRedis } from '../../src/queue/redis';

export const PG_ADMIN_URL =
  process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** A database of its own for one test file, migrated, dropped by drop(). */
export async function createTestDatabase(): Promise<{
  url: string;
  name: string;
  drop: () => Promise<void>;
}> {
  const name = uniqueName('mw_test');
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  await prepareDatabase(url.toString());
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const admin = new Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** Deletes every Redis key under a test's queue prefix. */
export async function flushPrefix(prefix: string): Promise<void> {
  const redis = createRedis(TEST_REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * DELIVERY_GROUP_RATES for tests that are not about pacing: every provider group far above what a
 * test sends, so EMAIL_RATE_PER_SECOND alone limits delivery, as before pacing existed.
 */
export const LIFTED_GROUP_RATES =
  'google=100000,microsoft=100000,yahoo=100000,apple=100000,other=100000';

/** Environment for a test instance: quiet logs, an outbox in a temp dir, a fixed secret, lifted group rates. */
export function testConfig(
  databaseUrl: string,
  queuePrefix: string,
  env: Record<string, string> = {},
): AppConfig {
  const cwd = mkdtempSync(join(tmpdir(), 'mw-test-'));
  return loadConfig(
    {
      DATABASE_URL: databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      MAIL_OUTBOX_DIR: join(cwd, 'outbox'),
      AUTH_FAILURE_LIMIT_PER_MINUTE: '1000',
      DELIVERY_GROUP_RATES: LIFTED_GROUP_RATES,
      ...env,
    },
    cwd,
  );
}

export interface TestProject {
  id: string;
  secretKey: string;
  publicKey: string;
  /** Authorization header with the secret key. */
  auth: { authorization: string };
}

export interface InjectOptions {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  /** The socket's peer address as the server sees it (default 127.0.0.1). */
  remoteAddress?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted field by field in tests
export interface InjectResult<T = any> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: T;
  raw: string;
}

export class TestApp {
  constructor(
    readonly app: NestFastifyApplication,
    readonly config: AppConfig,
  ) {}

  async createProject(name = 'Test project'): Promise<TestProject> {
    const created = await this.app.get(ProjectsService).createProject(name);
    return {
      id: created.project.id,
      secretKey: created.secretKey,
      publicKey: created.publicKey,
      auth: { authorization: `Bearer ${created.secretKey}` },
    };
  }

  /** One HTTP request through Fastify's inject; `key` becomes the bearer header. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see InjectResult
  async request<T = any>(options: InjectOptions): Promise<InjectResult<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await this.app.inject({
      method: options.method,
      url: options.url,
      headers,
      payload,
      remoteAddress: options.remoteAddress,
    });
    let body: T;
    try {
      body = JSON.parse(res.body) as T;
    } catch {
      body = res.body as unknown as T;
    }
    return { status: res.statusCode, headers: res.headers, body, raw: res.body };
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}

export async function startTestApp(config: AppConfig): Promise<TestApp> {
  return new TestApp(await createApp(config), config);
}

/**
 * The usual setup of an e2e file: its own database and queue prefix, one app
 * (APP_ROLE=all unless env says otherwise), torn down by close().
 */
export async function setupTestApp(env: Record<string, string> = {}): Promise<{
  app: TestApp;
  db: { url: string; name: string };
  prefix: string;
  close: () => Promise<void>;
}> {
  const db = await createTestDatabase();
  const prefix = uniqueName('mwt');
  const app = await startTestApp(testConfig(db.url, prefix, env));
  return {
    app,
    db,
    prefix,
    close: async () => {
      await app.close();
      await flushPrefix(prefix);
      await db.drop();
    },
  };
}

/**
 * Apps of several configurations over one test database, each on a queue prefix of its own (specs
 * that compare settings). Call `open` in beforeAll and `close` in afterAll: it closes every app,
 * flushes their prefixes and drops the database.
 */
export function appsOnOneDatabase(tag: string) {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const apps: TestApp[] = [];
  const prefixes: string[] = [];
  return {
    async open(): Promise<void> {
      db = await createTestDatabase();
    },
    async start(env: Record<string, string>): Promise<TestApp> {
      if (!db) throw new Error('appsOnOneDatabase: open() first');
      const prefix = uniqueName(tag);
      prefixes.push(prefix);
      const app = await startTestApp(testConfig(db.url, prefix, env));
      apps.push(app);
      return app;
    },
    async close(): Promise<void> {
      for (const app of apps) await app.close();
      for (const prefix of prefixes) await flushPrefix(prefix);
      await db?.drop();
    },
  };
}

export { uniqueName };
