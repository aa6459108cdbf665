import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

/** Arbitrary constant: one migration run at a time across every process sharing the database. */
const MIGRATION_LOCK_KEY = 727_001;

/**
 * Creates the database named in the URL when it does not exist yet. A role
 * without CREATEDB simply gets the connection error that follows.
 */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  try {
    await client.connect();
  } catch {
    return;
  }
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    }
  } catch (error) {
    // 42P04 duplicate_database / 23505: another process created it first.
    const code = (error as { code?: string }).code;
    if (code !== '42P04' && code !== '23505' && code !== '42501') throw error;
  } finally {
    await client.end();
  }
}

/** Applies pending migrations under an advisory lock, so parallel starts do not race. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const dataSource = new DataSource(dataSourceOptions(databaseUrl));
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await runner
      .query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      .catch(() => undefined);
    await runner.release();
    await dataSource.destroy();
  }
}

export async function prepareDatabase(databaseUrl: string): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  return runMigrations(databaseUrl);
}
