import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, flushPrefix, TEST_REDIS_URL, uniqueName } from './support/test-app';
import { DIST_CLI, freePort, startService, waitForHttp } from './support/processes';

/**
 * `.env` in the working directory is read by the service and the CLI; a
 * variable of the real environment wins over the same one in the file.
 */
beforeAll(() => {
  if (!existsSync(DIST_CLI))
    throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
});

describe('.env in the working directory (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_dotenv');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-dotenv-'));
  let filePort: number;

  /** The CLI run in `cwd` with nothing of this process's environment but PATH/HOME. */
  const cli = (args: string[], env: Record<string, string> = {}) => {
    const res = spawnSync(process.execPath, [DIST_CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      cwd,
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: res.status, stdout: res.stdout, stderr: res.stderr };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    filePort = await freePort();
    writeFileSync(
      join(cwd, '.env'),
      [
        '# written by test/dotenv.e2e-spec.ts',
        `PORT=${filePort}`,
        'HOST=127.0.0.1',
        'APP_ROLE=api',
        `DATABASE_URL=${db.url}`,
        `REDIS_URL=${TEST_REDIS_URL}`,
        `QUEUE_PREFIX=${prefix}`,
        'APP_SECRET="test-secret-test-secret-test-secret-0123456789"',
        'LOG_LEVEL=silent',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await flushPrefix(prefix);
    await db.drop();
  });

  it('the service listens on the PORT of .env, or on the one of the environment when both set it', async () => {
    const fromFile = startService({}, cwd);
    try {
      await waitForHttp(`http://127.0.0.1:${filePort}/health/live`);
    } finally {
      fromFile.child.kill('SIGTERM');
      await fromFile.exited;
    }

    const envPort = await freePort();
    const fromEnv = startService({ PORT: String(envPort) }, cwd);
    try {
      await waitForHttp(`http://127.0.0.1:${envPort}/health/live`);
      await expect(fetch(`http://127.0.0.1:${filePort}/health/live`)).rejects.toThrow();
    } finally {
      fromEnv.child.kill('SIGTERM');
      await fromEnv.exited;
    }
  }, 90_000);

  it('the CLI reads DATABASE_URL from .env, and the environment wins over it', async () => {
    const created = cli(['projects', 'create', '--name', 'From dotenv', '--json']);
    expect(created.status).toBe(0);
    const { project } = JSON.parse(created.stdout);
    // It went to the test database named only in .env, not the default one.
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const { rows } = await pg.query('SELECT name FROM projects WHERE id = $1', [project.id]);
      expect(rows).toEqual([{ name: 'From dotenv' }]);
    } finally {
      await pg.end();
    }
    const listed = JSON.parse(cli(['projects', 'list', '--json']).stdout);
    expect(listed.projects.map((p: { id: string }) => p.id)).toContain(project.id);

    const overridden = cli(['projects', 'list', '--json'], {
      DATABASE_URL: 'mysql://elsewhere/db',
    });
    expect(overridden.status).toBe(1);
    expect(JSON.parse(overridden.stdout).error).toEqual({
      code: 'CONFIG',
      message: expect.stringContaining('DATABASE_URL: expected a postgres: or postgresql: URL'),
    });
  });
});
