import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetRows } from '../database/keyset-rows';
import { queryRows } from '../database/query-rows';
import { WebhookDelivery, WebhookDeliveryStatus } from './webhook-delivery.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';

/** What an attempt needs: the delivery, its endpoint's target and secret. */
export interface DeliveryToSend {
  id: string;
  projectId: string;
  endpointId: string;
  eventType: string;
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  retries: number;
  url: string;
  enabled: boolean;
  secretSealed: string;
}

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

/** Project → its enabled endpoints' filters (what the after-commit dispatch needs). */
export interface ProjectFilters {
  projectId: string;
  events: string[];
}

const PENDING_COLUMNS = 'id, endpoint_id AS "endpointId", retries, attempts, next_attempt_at AS "nextAttemptAt"';

/** Every statement on webhook endpoints and deliveries. */
@Injectable()
export class WebhooksRepository {
  async insertEndpoint(manager: EntityManager, fields: QueryDeepPartialEntity<WebhookEndpoint>): Promise<WebhookEndpoint> {
    await manager.createQueryBuilder().insert().into(WebhookEndpoint).values(fields).updateEntity(false).execute();
    return (await manager.findOne(WebhookEndpoint, { where: { id: fields.id as string } })) as WebhookEndpoint;
  }

  pageEndpoints(manager: EntityManager, projectId: string, afterId: string | null, limit: number): Promise<{ rows: WebhookEndpoint[]; total: number }> {
    const qb = manager.createQueryBuilder(WebhookEndpoint, 'w').where('w.project_id = :projectId', { projectId });
    return keysetRows(qb, 'w.id', afterId, limit);
  }

  findEndpoint(manager: EntityManager, projectId: string, id: string): Promise<WebhookEndpoint | null> {
    return manager.findOne(WebhookEndpoint, { where: { id, projectId } });
  }

  async updateEndpoint(manager: EntityManager, id: string, changes: QueryDeepPartialEntity<WebhookEndpoint>): Promise<WebhookEndpoint> {
    await manager.createQueryBuilder().update(WebhookEndpoint).set(changes).where('id = :id', { id }).execute();
    return (await manager.findOne(WebhookEndpoint, { where: { id } })) as WebhookEndpoint;
  }

  /** One statement: of concurrent deletes, one gets the row. Its deliveries go with it. */
  async deleteEndpoint(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows(manager, 'DELETE FROM webhook_endpoints WHERE id = $1 AND project_id = $2 RETURNING id', [id, projectId]);
    return rows.length > 0;
  }

  /** The enabled endpoints' filters of these projects. */
  filtersOf(manager: EntityManager, projectIds: string[]): Promise<ProjectFilters[]> {
    return queryRows<ProjectFilters>(
      manager,
      'SELECT project_id AS "projectId", events FROM webhook_endpoints WHERE project_id = ANY($1::uuid[]) AND enabled',
      [projectIds],
    );
  }

  /** A delivery that is no event of the store (`webhook.test`), for one endpoint. */
  async insertDelivery(manager: EntityManager, fields: QueryDeepPartialEntity<WebhookDelivery>): Promise<WebhookDelivery> {
    await manager.createQueryBuilder().insert().into(WebhookDelivery).values(fields).updateEntity(false).execute();
    return (await manager.findOne(WebhookDelivery, { where: { id: fields.id as string } })) as WebhookDelivery;
  }

  /** The PENDING deliveries the outbox trigger wrote for these events. */
  pendingOfEvents(manager: EntityManager, eventIds: string[]): Promise<PendingDelivery[]> {
    return queryRows<PendingDelivery>(
      manager,
      `SELECT ${PENDING_COLUMNS} FROM webhook_deliveries WHERE event_id = ANY($1::uuid[]) AND status = 'PENDING'`,
      [eventIds],
    );
  }

  /** PENDING deliveries whose attempt is overdue by more than `graceMs` (their job was lost), oldest first. */
  overdue(manager: EntityManager, graceMs: number, limit: number): Promise<PendingDelivery[]> {
    return queryRows<PendingDelivery>(
      manager,
      `SELECT ${PENDING_COLUMNS} FROM webhook_deliveries
        WHERE status = 'PENDING' AND next_attempt_at < now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY next_attempt_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  async loadForSend(manager: EntityManager, deliveryId: string): Promise<DeliveryToSend | null> {
    const rows = await queryRows<DeliveryToSend>(
      manager,
      `SELECT d.id, d.project_id AS "projectId", d.endpoint_id AS "endpointId", d.event_type AS "eventType", d.payload,
              d.status, d.attempts, d.retries, w.url, w.enabled, w.secret_sealed AS "secretSealed"
         FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
        WHERE d.id = $1`,
      [deliveryId],
    );
    return rows[0] ?? null;
  }

  /**
   * Records an attempt on a delivery still PENDING with the attempts the
   * sender saw (a concurrent duplicate attempt records nothing). Answers the
   * row's new state, or null.
   */
  async recordAttempt(manager: EntityManager, deliveryId: string, attemptsBefore: number, outcome: AttemptOutcome): Promise<PendingDelivery | null> {
    const rows = await queryRows<PendingDelivery>(
      manager,
      `UPDATE webhook_deliveries
          SET status = $3::webhook_delivery_status, attempts = attempts + 1, response_status = $4, last_error = $5,
              last_attempt_at = now(), next_attempt_at = $6, updated_at = now()
        WHERE id = $1 AND status = 'PENDING' AND attempts = $2
       RETURNING ${PENDING_COLUMNS}`,
      [deliveryId, attemptsBefore, outcome.status, outcome.responseStatus, outcome.lastError, outcome.nextAttemptAt],
    );
    return rows[0] ?? null;
  }

  /** A success clears the endpoint's failing streak. */
  async endpointSucceeded(manager: EntityManager, endpointId: string): Promise<void> {
    await queryRows(manager, 'UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [endpointId]);
  }

  /** A failure starts (or continues) the endpoint's failing streak; answers since when it fails. */
  async endpointFailed(manager: EntityManager, endpointId: string): Promise<Date | null> {
    const rows = await queryRows<{ failingSince: Date }>(
      manager,
      'UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()) WHERE id = $1 RETURNING failing_since AS "failingSince"',
      [endpointId],
    );
    return rows[0]?.failingSince ?? null;
  }

  /** Disables an enabled endpoint; false when it already was. */
  async disableEndpoint(manager: EntityManager, endpointId: string, reason: string): Promise<boolean> {
    const rows = await queryRows(
      manager,
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1 AND enabled RETURNING id`,
      [endpointId, reason],
    );
    return rows.length > 0;
  }

  /** Every endpoint's sealed secret, locked until the transaction ends (secrets rotate). */
  lockSealedSecrets(manager: EntityManager): Promise<Array<{ id: string; secretSealed: string }>> {
    return queryRows(manager, 'SELECT id, secret_sealed AS "secretSealed" FROM webhook_endpoints ORDER BY id FOR UPDATE');
  }

  async replaceSealedSecret(manager: EntityManager, id: string, sealed: string): Promise<void> {
    await queryRows(manager, 'UPDATE webhook_endpoints SET secret_sealed = $2 WHERE id = $1', [id, sealed]);
  }

  pageDeliveries(
    manager: EntityManager,
    endpointId: string,
    status: WebhookDeliveryStatus | undefined,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: WebhookDelivery[]; total: number }> {
    const qb = manager.createQueryBuilder(WebhookDelivery, 'd').where('d.endpoint_id = :endpointId', { endpointId });
    if (status) qb.andWhere('d.status = :status', { status });
    return keysetRows(qb, 'd.id', afterId, limit);
  }

  findDelivery(manager: EntityManager, endpointId: string, id: string): Promise<WebhookDelivery | null> {
    return manager.findOne(WebhookDelivery, { where: { id, endpointId } });
  }

  /** Back to PENDING now with a fresh retry schedule and one more manual retry (a new job id); answers the row. */
  async retryDelivery(manager: EntityManager, id: string): Promise<WebhookDelivery> {
    await queryRows(
      manager,
      `UPDATE webhook_deliveries SET status = 'PENDING', attempts = 0, next_attempt_at = now(), retries = retries + 1, updated_at = now() WHERE id = $1`,
      [id],
    );
    return (await manager.findOne(WebhookDelivery, { where: { id } })) as WebhookDelivery;
  }
}
