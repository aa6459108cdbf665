import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetRows } from '../database/keyset-rows';
import { preparedRows, queryRows } from '../database/query-rows';
import { WebhookDelivery, WebhookDeliveryStatus } from './webhook-delivery.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';

/** A PENDING delivery and the state its job id is made of. */
export interface PendingDelivery {
  id: string;
  endpointId: string;
  retries: number;
  attempts: number;
  nextAttemptAt: Date | null;
}

export interface AttemptOutcome {
  status: WebhookDeliveryStatus;
  responseStatus: number | null;
  lastError: string | null;
  /** Null when final. */
  nextAttemptAt: Date | null;
}

/** A delivery claimed for an attempt, with its endpoint's target and sealed secret. */
export interface ClaimedDelivery {
  id: string;
  projectId: string;
  endpointId: string;
  payload: string;
  attempts: number;
  retries: number;
  url: string;
  enabled: boolean;
  secretSealed: string;
  /** The URL with its credentials, sealed; null when `url` is the URL to call. */
  urlSealed: string | null;
  /** The claim's lease end as Postgres wrote it (microseconds kept), so releasing the claim touches only this claim. */
  leasedUntil: string;
}

/** An enabled endpoint's filter (what the after-commit dispatch needs). */
export interface EndpointFilter {
  id: string;
  events: string[];
}

const PENDING_COLUMNS =
  'id, endpoint_id AS "endpointId", retries, attempts, next_attempt_at AS "nextAttemptAt"';

/** Every statement on webhook endpoints and deliveries. */
@Injectable()
export class WebhooksRepository {
  /**
   * Serialises endpoint creation within a project (transaction-scoped advisory lock), so the
   * quota counted next cannot be passed by concurrent creates.
   */
  async lockEndpointsOf(manager: EntityManager, projectId: string): Promise<number> {
    await queryRows(
      manager,
      `SELECT pg_advisory_xact_lock(hashtext('mailwright:webhook-endpoints:' || $1))`,
      [projectId],
    );
    const [row] = await queryRows<{ n: string }>(
      manager,
      `SELECT count(*) AS n FROM webhook_endpoints WHERE project_id = $1`,
      [projectId],
    );
    return Number(row.n);
  }

  async insertEndpoint(
    manager: EntityManager,
    fields: QueryDeepPartialEntity<WebhookEndpoint>,
  ): Promise<WebhookEndpoint> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(WebhookEndpoint)
      .values(fields)
      .updateEntity(false)
      .execute();
    return (await manager.findOne(WebhookEndpoint, {
      where: { id: fields.id as string },
    })) as WebhookEndpoint;
  }

  pageEndpoints(
    manager: EntityManager,
    projectId: string,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: WebhookEndpoint[]; total: number }> {
    const qb = manager
      .createQueryBuilder(WebhookEndpoint, 'w')
      .where('w.project_id = :projectId', { projectId });
    return keysetRows(qb, 'w.id', afterId, limit);
  }

  /** `lock`: holds the row until the transaction ends, so a change decided from what was read is not based on a stale view. */
  findEndpoint(
    manager: EntityManager,
    projectId: string,
    id: string,
    lock = false,
  ): Promise<WebhookEndpoint | null> {
    return manager.findOne(WebhookEndpoint, {
      where: { id, projectId },
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
  }

  async updateEndpoint(
    manager: EntityManager,
    id: string,
    changes: QueryDeepPartialEntity<WebhookEndpoint>,
  ): Promise<WebhookEndpoint> {
    await manager
      .createQueryBuilder()
      .update(WebhookEndpoint)
      .set(changes)
      .where('id = :id', { id })
      .execute();
    return (await manager.findOne(WebhookEndpoint, { where: { id } })) as WebhookEndpoint;
  }

  /** One statement: of concurrent deletes, one gets the row. Its deliveries go with it. */
  async deleteEndpoint(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows(
      manager,
      'DELETE FROM webhook_endpoints WHERE id = $1 AND project_id = $2 RETURNING id',
      [id, projectId],
    );
    return rows.length > 0;
  }

  /** The enabled endpoints' filters of these projects. */
  filtersOf(
    manager: EntityManager,
    projectIds: string[],
  ): Promise<Array<{ projectId: string; endpointId: string; events: string[] }>> {
    return queryRows(
      manager,
      'SELECT project_id AS "projectId", id AS "endpointId", events FROM webhook_endpoints WHERE project_id = ANY($1::uuid[]) AND enabled',
      [projectIds],
    );
  }

  /** A delivery that is no event of the store (`webhook.test`), for one endpoint. */
  async insertDelivery(
    manager: EntityManager,
    fields: QueryDeepPartialEntity<WebhookDelivery>,
  ): Promise<WebhookDelivery> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(WebhookDelivery)
      .values(fields)
      .updateEntity(false)
      .execute();
    return (await manager.findOne(WebhookDelivery, {
      where: { id: fields.id as string },
    })) as WebhookDelivery;
  }

  /**
   * For each endpoint (at most `limit`) with a PENDING delivery overdue by
   * more than `graceMs` (its job was lost, or its claim's lease is over), the
   * oldest such delivery: waking the endpoint's drain sends them all. One
   * probe of the pending index per endpoint, whatever the backlog. Endpoints
   * of disabled projects are left out: their deliveries wait, and come back
   * here once the project is enabled.
   */
  overdue(manager: EntityManager, graceMs: number, limit: number): Promise<PendingDelivery[]> {
    return queryRows<PendingDelivery>(
      manager,
      `SELECT d.*
         FROM webhook_endpoints w
         JOIN projects p ON p.id = w.project_id AND p.enabled
         CROSS JOIN LATERAL (
           SELECT ${PENDING_COLUMNS} FROM webhook_deliveries
            WHERE endpoint_id = w.id AND status = 'PENDING'
              AND next_attempt_at < now() - make_interval(secs => $1::double precision / 1000)
              AND (leased_until IS NULL OR leased_until < now() - make_interval(secs => $1::double precision / 1000))
            ORDER BY next_attempt_at LIMIT 1
         ) d
        ORDER BY d."nextAttemptAt" LIMIT $2`,
      [graceMs, limit],
    );
  }

  /**
   * One statement for a drain's round: records a batch of attempts on one
   * endpoint and claims up to `limit` more of its due deliveries (either may
   * be empty).
   *
   * Recording: each attempt on a delivery still PENDING with the attempt
   * count and manual retries its sender saw (a duplicate attempt records
   * nothing), its lease cleared; and the endpoint's failing streak, cleared
   * by any success recorded, else started (when the endpoint was enabled).
   *
   * Claiming: the oldest due PENDING deliveries (rows another worker holds or
   * has leased are skipped; none while the endpoint's project is disabled), leased for `leaseMs` (leased_until, not indexed:
   * a HOT update that writes no index entry), with what the attempts need
   * (body, attempt count, target, secret). A worker that dies with them
   * leaves rows the dispatch sweep finds overdue once the lease is over.
   *
   * Answers the rows recorded with their new state, since when the endpoint
   * fails (null when it does not, or was not touched), and the rows claimed.
   * A named prepared statement: planned once per connection.
   */
  async recordAndClaim(
    manager: EntityManager,
    endpointId: string,
    endpointEnabled: boolean,
    attempts: Array<{ id: string; attempts: number; retries: number; outcome: AttemptOutcome }>,
    limit: number,
    leaseMs: number,
  ): Promise<{
    rows: Array<PendingDelivery & { status: WebhookDeliveryStatus }>;
    failingSince: Date | null;
    claimed: ClaimedDelivery[];
  }> {
    const [result] = await preparedRows<{
      recorded: Array<
        Omit<PendingDelivery, 'nextAttemptAt'> & {
          status: WebhookDeliveryStatus;
          nextAttemptAt: string | null;
        }
      >;
      failingSince: Date | null;
      claimed: ClaimedDelivery[];
    }>(
      manager,
      `WITH u AS (
         SELECT * FROM unnest($3::uuid[], $4::int[], $5::int[], $6::text[], $7::int[], $8::text[], $9::timestamptz[])
           AS u(id, attempts, retries, status, response_status, last_error, next_attempt_at)
       ), rec AS (
         UPDATE webhook_deliveries d
            SET status = u.status::webhook_delivery_status, attempts = d.attempts + 1, response_status = u.response_status,
                last_error = u.last_error, last_attempt_at = now(), next_attempt_at = u.next_attempt_at, leased_until = NULL,
                updated_at = now()
           FROM u
          WHERE d.id = u.id AND d.status = 'PENDING' AND d.attempts = u.attempts AND d.retries = u.retries
         RETURNING d.id, d.endpoint_id AS "endpointId", d.retries, d.attempts, d.next_attempt_at AS "nextAttemptAt", d.status
       ), ep AS (
         UPDATE webhook_endpoints w
            SET failing_since = CASE WHEN s.any_ok THEN NULL ELSE COALESCE(w.failing_since, now()) END
           FROM (SELECT bool_or(status = 'SUCCEEDED') AS any_ok FROM rec) s
          WHERE w.id = $1 AND s.any_ok IS NOT NULL AND CASE WHEN s.any_ok THEN w.failing_since IS NOT NULL ELSE $2::boolean END
         RETURNING w.failing_since
       ), due AS (
         SELECT id FROM webhook_deliveries
          WHERE endpoint_id = $1 AND status = 'PENDING' AND next_attempt_at <= now()
            AND (leased_until IS NULL OR leased_until <= now()) AND id <> ALL($3::uuid[])
            AND EXISTS (SELECT 1 FROM webhook_endpoints we JOIN projects p ON p.id = we.project_id
                         WHERE we.id = $1 AND p.enabled)
          ORDER BY next_attempt_at LIMIT $10 FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_deliveries d SET leased_until = now() + make_interval(secs => $11::double precision / 1000)
           FROM due, webhook_endpoints w
          WHERE d.id = due.id AND w.id = d.endpoint_id
         RETURNING d.id, d.project_id AS "projectId", d.endpoint_id AS "endpointId", d.payload, d.attempts, d.retries,
                   w.url, w.enabled, w.secret_sealed AS "secretSealed", w.url_sealed AS "urlSealed", d.leased_until AS "leasedUntil"
       )
       SELECT COALESCE((SELECT json_agg(rec) FROM rec), '[]') AS recorded,
              (SELECT failing_since FROM ep) AS "failingSince",
              COALESCE((SELECT json_agg(claimed) FROM claimed), '[]') AS claimed`,
      [
        endpointId,
        endpointEnabled,
        attempts.map((a) => a.id),
        attempts.map((a) => a.attempts),
        attempts.map((a) => a.retries),
        attempts.map((a) => a.outcome.status),
        attempts.map((a) => a.outcome.responseStatus),
        attempts.map((a) => a.outcome.lastError),
        attempts.map((a) => a.outcome.nextAttemptAt),
        limit,
        leaseMs,
      ],
    );
    return {
      rows: result.recorded.map((r) => ({
        ...r,
        nextAttemptAt: r.nextAttemptAt === null ? null : new Date(r.nextAttemptAt),
      })),
      failingSince: result.failingSince,
      claimed: result.claimed,
    };
  }

  /**
   * Gives claimed deliveries back before their lease ends (their drain could
   * not get a slot of the endpoint), without counting an attempt. A row whose
   * lease already lapsed and was claimed again has another lease end and is
   * left to that claim.
   */
  async releaseClaims(
    manager: EntityManager,
    claimed: Array<Pick<ClaimedDelivery, 'id' | 'leasedUntil'>>,
  ): Promise<void> {
    if (claimed.length === 0) return;
    await queryRows(
      manager,
      `UPDATE webhook_deliveries d SET leased_until = NULL
         FROM unnest($1::uuid[], $2::timestamptz[]) AS c(id, leased_until)
        WHERE d.id = c.id AND d.leased_until = c.leased_until AND d.status = 'PENDING'`,
      [claimed.map((c) => c.id), claimed.map((c) => c.leasedUntil)],
    );
  }

  /**
   * Disables an enabled endpoint whose current failing streak is at least
   * `afterMs` old; false when it is not (already disabled, or re-enabled
   * since the caller read the streak: a re-enable clears it, and the
   * condition is evaluated again on the row as it is once its lock is free).
   */
  async disableEndpoint(
    manager: EntityManager,
    endpointId: string,
    reason: string,
    afterMs: number,
  ): Promise<boolean> {
    const rows = await queryRows(
      manager,
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
        WHERE id = $1 AND enabled AND failing_since <= now() - make_interval(secs => $3::double precision / 1000)
        RETURNING id`,
      [endpointId, reason, afterMs],
    );
    return rows.length > 0;
  }

  /** Every endpoint's sealed secret, locked until the transaction ends (secrets rotate). */
  lockSealedSecrets(manager: EntityManager): Promise<Array<{ id: string; secretSealed: string }>> {
    return queryRows(
      manager,
      'SELECT id, secret_sealed AS "secretSealed" FROM webhook_endpoints ORDER BY id FOR UPDATE',
    );
  }

  async replaceSealedSecret(manager: EntityManager, id: string, sealed: string): Promise<void> {
    await queryRows(manager, 'UPDATE webhook_endpoints SET secret_sealed = $2 WHERE id = $1', [
      id,
      sealed,
    ]);
  }

  /** Every workflow's sealed WEBHOOK signing secret (same box as endpoints'), locked until the transaction ends. */
  lockSealedWorkflowSecrets(
    manager: EntityManager,
  ): Promise<Array<{ id: string; secretSealed: string }>> {
    return queryRows(
      manager,
      'SELECT id, secret_sealed AS "secretSealed" FROM workflows WHERE secret_sealed IS NOT NULL ORDER BY id FOR UPDATE',
    );
  }

  async replaceSealedWorkflowSecret(
    manager: EntityManager,
    id: string,
    sealed: string,
  ): Promise<void> {
    await queryRows(manager, 'UPDATE workflows SET secret_sealed = $2 WHERE id = $1', [id, sealed]);
  }

  /** Every endpoint's sealed URL (with credentials), locked until the transaction ends. */
  lockSealedUrls(manager: EntityManager): Promise<Array<{ id: string; secretSealed: string }>> {
    return queryRows(
      manager,
      'SELECT id, url_sealed AS "secretSealed" FROM webhook_endpoints WHERE url_sealed IS NOT NULL ORDER BY id FOR UPDATE',
    );
  }

  async replaceSealedUrl(manager: EntityManager, id: string, sealed: string): Promise<void> {
    await queryRows(manager, 'UPDATE webhook_endpoints SET url_sealed = $2 WHERE id = $1', [
      id,
      sealed,
    ]);
  }

  /** Endpoints saved with credentials in the clear (before they were sealed), locked. */
  lockClearCredentialUrls(manager: EntityManager): Promise<Array<{ id: string; url: string }>> {
    return queryRows(
      manager,
      `SELECT id, url FROM webhook_endpoints WHERE url_sealed IS NULL AND url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@' ORDER BY id FOR UPDATE`,
    );
  }

  async sealUrl(manager: EntityManager, id: string, url: string, sealed: string): Promise<void> {
    await queryRows(
      manager,
      'UPDATE webhook_endpoints SET url = $2, url_sealed = $3 WHERE id = $1',
      [id, url, sealed],
    );
  }

  /** Every workflow's sealed WEBHOOK step credentials, locked until the transaction ends. */
  lockSealedWorkflowSteps(
    manager: EntityManager,
  ): Promise<Array<{ id: string; secretSealed: string }>> {
    return queryRows(
      manager,
      'SELECT id, step_secrets_sealed AS "secretSealed" FROM workflows WHERE step_secrets_sealed IS NOT NULL ORDER BY id FOR UPDATE',
    );
  }

  async replaceSealedWorkflowSteps(
    manager: EntityManager,
    id: string,
    sealed: string,
  ): Promise<void> {
    await queryRows(manager, 'UPDATE workflows SET step_secrets_sealed = $2 WHERE id = $1', [
      id,
      sealed,
    ]);
  }

  pageDeliveries(
    manager: EntityManager,
    endpointId: string,
    status: WebhookDeliveryStatus | undefined,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: WebhookDelivery[]; total: number }> {
    const qb = manager
      .createQueryBuilder(WebhookDelivery, 'd')
      .where('d.endpoint_id = :endpointId', { endpointId });
    if (status) qb.andWhere('d.status = :status', { status });
    return keysetRows(qb, 'd.id', afterId, limit);
  }

  findDelivery(
    manager: EntityManager,
    endpointId: string,
    id: string,
  ): Promise<WebhookDelivery | null> {
    return manager.findOne(WebhookDelivery, { where: { id, endpointId } });
  }

  /** Back to PENDING now with a fresh retry schedule and one more manual retry (a new job id); answers the row, null when it is gone. */
  async retryDelivery(manager: EntityManager, id: string): Promise<WebhookDelivery | null> {
    await queryRows(
      manager,
      `UPDATE webhook_deliveries SET status = 'PENDING', attempts = 0, next_attempt_at = now(), leased_until = NULL, retries = retries + 1, updated_at = now() WHERE id = $1`,
      [id],
    );
    return manager.findOne(WebhookDelivery, { where: { id } });
  }
}
