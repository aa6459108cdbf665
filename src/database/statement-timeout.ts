import { AsyncLocalStorage } from 'node:async_hooks';
import * as pg from 'pg';

/** The two bounds of a process's statements (API_STATEMENT_TIMEOUT_MS, BACKGROUND_STATEMENT_TIMEOUT_MS). */
export interface StatementTimeouts {
  apiMs: number;
  backgroundMs: number;
}

/** Marks the asynchronous work of one API request; anything outside it is background work. */
const requestScope = new AsyncLocalStorage<true>();

/** Runs `run` (and everything it starts) as an API request's work: its statements get the API bound. */
export function runAsApiRequest<T>(run: () => T): T {
  return requestScope.run(true, run);
}

/** Whether the caller runs as an API request's work (runAsApiRequest). */
export function isApiRequest(): boolean {
  return requestScope.getStore() === true;
}

function boundOfCaller(timeouts: StatementTimeouts): number {
  return requestScope.getStore() ? timeouts.apiMs : timeouts.backgroundMs;
}

type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  release: (release?: unknown) => void,
) => void;

/**
 * The `pg` module for TypeORM's `driver` option: the same module with a Pool whose connections
 * carry Postgres' `statement_timeout` of the work that checks them out. A process with both roles
 * (APP_ROLE=all) shares one pool between requests and jobs, so the bound is chosen per checkout,
 * from the caller's asynchronous context (an API request or not), and applied with a session
 * `SET` only when the connection last served the other kind; connections open with the bound the
 * process mostly needs (`defaultMs`), so a single-role process never pays that round trip.
 * A transaction holds its connection from start to end, so each one runs under one bound.
 */
export function statementTimeoutDriver(timeouts: StatementTimeouts, defaultMs: number): typeof pg {
  const bounds = new WeakMap<pg.PoolClient, number>();

  class StatementTimeoutPool extends pg.Pool {
    constructor(config?: pg.PoolConfig) {
      super({ ...config, statement_timeout: defaultMs });
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
        if (error || !client || (bounds.get(client) ?? defaultMs) === wanted) {
          callback(error, client, release);
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
