import { AsyncLocalStorage } from 'node:async_hooks';
import * as pg from 'pg';

/** The two bounds of a process's statements (API_STATEMENT_TIMEOUT_MS, BACKGROUND_STATEMENT_TIMEOUT_MS). */
export interface StatementTimeouts {
  apiMs: number;
  backgroundMs: number;
}

/** What is known of the API request a piece of work belongs to. */
interface ApiRequestScope {
  /** The project that authenticated, once the guard knows it. */
  projectId?: string;
}

/** Marks the asynchronous work of one API request; anything outside it is background work. */
const requestScope = new AsyncLocalStorage<ApiRequestScope>();

/** Runs `run` (and everything it starts) as an API request's work: its statements get the API bound. */
export function runAsApiRequest<T>(run: () => T): T {
  return requestScope.run({}, run);
}

/** Whether the caller runs as an API request's work (runAsApiRequest). */
export function isApiRequest(): boolean {
  return requestScope.getStore() !== undefined;
}

/** Records the project of the calling API request (the auth guard, once it authenticated). */
export function setApiRequestProject(projectId: string): void {
  const scope = requestScope.getStore();
  if (scope) scope.projectId = projectId;
}

/** The project of the calling API request, when it authenticated (work that has no tenant argument). */
export function apiRequestProject(): string | undefined {
  return requestScope.getStore()?.projectId;
}

function boundOfCaller(timeouts: StatementTimeouts): number {
  return requestScope.getStore() !== undefined ? timeouts.apiMs : timeouts.backgroundMs;
}

type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  release: (release?: unknown) => void,
) => void;

/** How a pool's connections reach Postgres (database.module.ts). */
export interface PoolMode {
  /**
   * The connections go through a pooler in transaction mode (PgBouncer): a server connection
   * serves other clients between transactions, so nothing may be set per session (a startup
   * parameter is refused or dropped, a session SET would leak to the next client). Each statement
   * then carries its bound with `SET LOCAL` inside its own transaction.
   */
  transactionPooled: boolean;
  /** false: a query's `name` is dropped, so pg never makes a named prepared statement. */
  preparedStatements: boolean;
}

const DIRECT: PoolMode = { transactionPooled: false, preparedStatements: true };

/**
 * The `pg` module for TypeORM's `driver` option: the same module with a Pool whose connections
 * carry Postgres' `statement_timeout` of the work that checks them out. A process with both roles
 * (APP_ROLE=all) shares one pool between requests and jobs, so the bound is chosen per checkout,
 * from the caller's asynchronous context (an API request or not). On a direct connection it is
 * applied with a session `SET` only when the connection last served the other kind; connections
 * open with the bound the process mostly needs (`defaultMs`), so a single-role process never pays
 * that round trip. Behind a transaction pooler (`mode.transactionPooled`) it is a `SET LOCAL` in
 * every transaction instead (transactionLocalTimeouts).
 * A transaction holds its connection from start to end, so each one runs under one bound.
 */
export function statementTimeoutDriver(
  timeouts: StatementTimeouts,
  defaultMs: number,
  mode: PoolMode = DIRECT,
): typeof pg {
  const bounds = new WeakMap<pg.PoolClient, number>();
  const wrapped = new WeakSet<pg.PoolClient>();

  class StatementTimeoutPool extends pg.Pool {
    constructor(config?: pg.PoolConfig) {
      // Pooled: pipelined, so a statement's own transaction (runInOwnTransaction) costs no extra
      // round trips; TypeORM awaits each query, so nothing else changes.
      super(
        mode.transactionPooled
          ? { ...config, pipeline: true }
          : { ...config, statement_timeout: defaultMs },
      );
    }

    override connect(): Promise<pg.PoolClient>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
      // Read here, synchronously in the caller's context: the pool may hand the connection over
      // later from another context (the one that released it).
      const wanted = boundOfCaller(timeouts);
      if (!callback) {
        return new Promise((resolve, reject) =>
          this.checkout(wanted, (error, client) =>
            error || !client ? reject(error) : resolve(client),
          ),
        );
      }
      this.checkout(wanted, callback);
    }

    private checkout(wanted: number, callback: ConnectCallback): void {
      super.connect((error, client, release) => {
        if (error || !client) {
          callback(error, client, release);
          return;
        }
        if (mode.transactionPooled || !mode.preparedStatements) {
          if (!wrapped.has(client)) {
            wrapped.add(client);
            wrapQueries(client, mode, () => bounds.get(client) ?? defaultMs);
          }
          if (mode.transactionPooled) {
            // Nothing to send: the next transaction carries the bound.
            bounds.set(client, wanted);
            callback(undefined, client, release);
            return;
          }
        }
        if ((bounds.get(client) ?? defaultMs) === wanted) {
          callback(undefined, client, release);
          return;
        }
        // Checked out, so not inside a transaction: a session SET, not one a rollback would undo.
        client.query(`SET statement_timeout = ${Math.trunc(wanted)}`).then(
          () => {
            bounds.set(client, wanted);
            callback(undefined, client, release);
          },
          (failure: Error) => {
            release(failure);
            callback(failure, undefined, () => undefined);
          },
        );
      });
    }
  }

  return Object.create(pg, { Pool: { value: StatementTimeoutPool } }) as typeof pg;
}

const TRANSACTION_START = /^\s*(START\s+TRANSACTION|BEGIN)\b/i;

type QueryFn = (config: unknown, values?: unknown, callback?: unknown) => Promise<unknown>;

/**
 * Replaces `client.query` on one pooled client (TypeORM calls it with a text or a config object and
 * values, awaiting the promise). Behind a transaction pooler:
 * - TypeORM's `START TRANSACTION` goes out as `START TRANSACTION; SET LOCAL statement_timeout = n`
 *   in one round trip (a later `SET TRANSACTION ISOLATION LEVEL` still works: SET takes no snapshot);
 * - a statement outside a transaction runs in one of its own (`BEGIN; SET LOCAL …`, the statement,
 *   `COMMIT`, pipelined in one round trip): a bound that cannot leak to the pooler's other
 *   clients. Submittables (cursors, streams) pass through unchanged (pg refuses cursors on a
 *   pipelined client; the service uses none).
 * With prepared statements off, a query's `name` is dropped (pg prepares only named queries).
 */
function wrapQueries(client: pg.PoolClient, mode: PoolMode, boundOf: () => number): void {
  const original = client.query.bind(client) as QueryFn;
  const local = () => `SET LOCAL statement_timeout = ${Math.trunc(boundOf())}`;
  const promised = (config: unknown, values: unknown): Promise<unknown> => {
    let query = config;
    if (!mode.preparedStatements && typeof query === 'object' && 'name' in (query as object)) {
      const { name: _unnamed, ...rest } = query as { name?: string };
      query = rest;
    }
    if (!mode.transactionPooled) return original(query, values);
    const text = typeof query === 'string' ? query : (query as { text?: string }).text;
    const hasValues = Array.isArray(values) && values.length > 0;
    if (typeof text === 'string' && !hasValues && TRANSACTION_START.test(text)) {
      // A multi-statement text answers one result each; the caller expects the first.
      return original(`${text}; ${local()}`).then((result) =>
        Array.isArray(result) ? result[0] : result,
      );
    }
    // 'I': idle, outside a transaction block (the last ReadyForQuery said so).
    if (client.getTransactionStatus?.() !== 'I') return original(query, values);
    return runInOwnTransaction(original, local(), query, values);
  };
  const patched: QueryFn = (config, values, callback) => {
    if (config === null || typeof (config as { submit?: unknown }).submit === 'function') {
      return original(config, values, callback);
    }
    // The callback form is pg-pool's `pool.query` (preparedRows outside a transaction uses it).
    const done = typeof values === 'function' ? values : callback;
    if (typeof done !== 'function') return promised(config, values);
    const given = typeof values === 'function' ? undefined : values;
    promised(config, given).then(
      (result) => (done as (error: unknown, result?: unknown) => void)(undefined, result),
      (error: unknown) => (done as (error: unknown) => void)(error),
    );
    return undefined as unknown as Promise<unknown>;
  };
  (client as unknown as { query: QueryFn }).query = patched;
}

async function runInOwnTransaction(
  query: QueryFn,
  local: string,
  config: unknown,
  values: unknown,
): Promise<unknown> {
  // Written together (the pool's clients pipeline): one round trip. A failing statement aborts
  // the transaction and the COMMIT behind it then ends it as a rollback, without an error.
  const begin = query(`BEGIN; ${local}`);
  const run = query(config, values);
  const commit = query('COMMIT');
  const settle = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      () => undefined,
    );
  try {
    await begin;
  } catch (error) {
    await Promise.all([settle(run), settle(commit)]);
    throw error;
  }
  let result: unknown;
  try {
    result = await run;
  } catch (error) {
    await settle(commit);
    throw error;
  }
  await commit;
  return result;
}
