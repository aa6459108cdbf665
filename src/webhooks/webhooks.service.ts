import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isIP } from 'node:net';
import type { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { SecretBox } from '../common/crypto/secret-box';
import { ApiException } from '../common/errors/api-exception';
import { isPublicAddress } from '../common/http/outbound-http';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf, PaginationQueryDto } from '../common/pagination/pagination';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { newId } from '../database/id';
import type { CreateWebhookDto } from './dto/create-webhook.dto';
import type { ListDeliveriesQueryDto } from './dto/list-deliveries.query';
import type { UpdateWebhookDto } from './dto/update-webhook.dto';
import {
  toDeliveryResponse,
  toWebhookResponse,
  WebhookDeliveryResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook.response';
import { WebhookDeliveryStatus } from './webhook-delivery.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';
import { WebhookDispatcher } from './webhook-dispatcher';
import { newWebhookSecret } from './webhook-signature';
import { WEBHOOK_SECRET_BOX } from './webhooks.constants';
import { WebhooksRepository } from './webhooks.repository';
import {
  endpointUrlAad,
  hasCredentials,
  isMaskedCredentials,
  MASK,
  maskCredentials,
  restoreCredentials,
} from './url-credentials';

/**
 * Outbound webhook endpoints: CRUD, the secret (shown once, rotatable), a
 * test event, and their deliveries (list, manual retry). Every change to a
 * project's endpoints drops this process's cached filters at once (other
 * processes within 5 s; the outbox trigger always reads the table).
 */
@Injectable()
export class WebhooksService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(WEBHOOK_SECRET_BOX) private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
    private readonly dispatcher: WebhookDispatcher,
  ) {}

  async create(projectId: string, dto: CreateWebhookDto): Promise<WebhookWithSecretResponse> {
    this.assertTarget(dto.url);
    const id = newId();
    const secret = newWebhookSecret();
    const row = await this.dataSource.transaction(async (manager) => {
      // A quota per project: each endpoint multiplies every event into a delivery row.
      const existing = await this.repository.lockEndpointsOf(manager, projectId);
      if (existing >= this.config.maxWebhookEndpoints) {
        throw ApiException.conflict(
          `A project may have at most ${this.config.maxWebhookEndpoints} webhook endpoints (MAX_WEBHOOK_ENDPOINTS)`,
          'Delete an endpoint you no longer use, or subscribe one endpoint to several events.',
        );
      }
      return this.repository.insertEndpoint(manager, {
        id,
        projectId,
        ...this.sealUrl(id, dto.url),
        events: dto.events,
        description: dto.description ?? null,
        enabled: dto.enabled ?? true,
        secretSealed: this.seal(id, secret),
      });
    });
    this.dispatcher.invalidate(projectId);
    return { ...toWebhookResponse(row), secret };
  }

  async list(projectId: string, query: PaginationQueryDto): Promise<Page<WebhookResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.repository.pageEndpoints(
      this.dataSource.manager,
      projectId,
      afterId,
      limit,
    );
    return pageOf(rows, limit, total, toWebhookResponse, (row) => row.id);
  }

  async get(projectId: string, id: string): Promise<WebhookResponse> {
    return toWebhookResponse(await this.find(this.dataSource.manager, projectId, id));
  }

  /**
   * Enabling again clears a system disable and the failing streak. The row is
   * read under its lock: a sender's disable either commits first (and is seen,
   * so cleared) or finds the streak cleared and does nothing.
   */
  async update(projectId: string, id: string, dto: UpdateWebhookDto): Promise<WebhookResponse> {
    if (dto.url !== undefined) this.assertTarget(dto.url);
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await this.find(manager, projectId, id, true);
      const changes: QueryDeepPartialEntity<WebhookEndpoint> = {};
      if (dto.url !== undefined)
        Object.assign(changes, this.sealUrl(current.id, this.urlOf(current, dto.url)));
      if (dto.events !== undefined) changes.events = dto.events;
      if (dto.description !== undefined) changes.description = dto.description;
      if (dto.enabled !== undefined) {
        changes.enabled = dto.enabled;
        if (dto.enabled && !current.enabled) {
          changes.disabledReason = null;
          changes.failingSince = null;
        }
      }
      return Object.keys(changes).length > 0
        ? this.repository.updateEndpoint(manager, current.id, changes)
        : current;
    });
    this.dispatcher.invalidate(projectId);
    return toWebhookResponse(row);
  }

  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    if (!(await this.repository.deleteEndpoint(this.dataSource.manager, projectId, id)))
      throw ApiException.notFound('webhook', id);
    this.dispatcher.invalidate(projectId);
    return { id, deleted: true };
  }

  /** A new secret signs every attempt from now on (deliveries already pending included). */
  async rotateSecret(projectId: string, id: string): Promise<WebhookWithSecretResponse> {
    const secret = newWebhookSecret();
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await this.find(manager, projectId, id, true);
      return this.repository.updateEndpoint(manager, current.id, {
        secretSealed: this.seal(current.id, secret),
      });
    });
    return { ...toWebhookResponse(row), secret };
  }

  /** A `webhook.test` delivery to this endpoint alone, sent like any other. */
  async test(projectId: string, id: string): Promise<WebhookDeliveryResponse> {
    const endpoint = await this.find(this.dataSource.manager, projectId, id);
    const deliveryId = newId();
    const timestamp = new Date().toISOString();
    const delivery = await this.repository.insertDelivery(this.dataSource.manager, {
      id: deliveryId,
      projectId,
      endpointId: endpoint.id,
      eventId: null,
      eventType: 'webhook.test',
      payload: JSON.stringify({
        type: 'webhook.test',
        timestamp,
        data: { endpointId: endpoint.id, message: 'This is a test event from Mailwright.' },
      }),
    });
    await this.dispatcher.enqueue([
      { id: delivery.id, endpointId: endpoint.id, retries: 0, attempts: 0, nextAttemptAt: null },
    ]);
    return toDeliveryResponse(delivery);
  }

  async deliveries(
    projectId: string,
    id: string,
    query: ListDeliveriesQueryDto,
  ): Promise<Page<WebhookDeliveryResponse>> {
    const endpoint = await this.find(this.dataSource.manager, projectId, id);
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.repository.pageDeliveries(
      this.dataSource.manager,
      endpoint.id,
      query.status,
      afterId,
      limit,
    );
    return pageOf(rows, limit, total, toDeliveryResponse, (row) => row.id);
  }

  /** Sends a delivery again now, with a fresh retry schedule (also a SUCCEEDED one: the receiver asked for it). */
  async retry(projectId: string, id: string, deliveryId: string): Promise<WebhookDeliveryResponse> {
    const row = await this.dataSource.transaction(async (manager) => {
      const endpoint = await this.find(manager, projectId, id);
      const delivery = await this.repository.findDelivery(manager, endpoint.id, deliveryId);
      if (!delivery) throw ApiException.notFound('delivery', deliveryId);
      // Deleted since the read (with its endpoint): 404, not a cast null.
      const retried = await this.repository.retryDelivery(manager, delivery.id);
      if (!retried) throw ApiException.notFound('delivery', deliveryId);
      return retried;
    });
    if (row.status === WebhookDeliveryStatus.PENDING) {
      await this.dispatcher.enqueue([
        {
          id: row.id,
          endpointId: row.endpointId,
          retries: row.retries,
          attempts: row.attempts,
          nextAttemptAt: null,
        },
      ]);
    }
    return toDeliveryResponse(row);
  }

  private seal(endpointId: string, secret: string): string {
    return this.box.seal(secret, endpointId).toString('base64');
  }

  /** What to store for a URL: as it is without credentials; with them, masked, and the real one sealed. */
  private sealUrl(endpointId: string, url: string): { url: string; urlSealed: string | null } {
    if (!hasCredentials(url)) return { url, urlSealed: null };
    return {
      url: maskCredentials(url),
      urlSealed: this.box.seal(url, endpointUrlAad(endpointId)).toString('base64'),
    };
  }

  /**
   * The URL a PATCH asks for: `***` credentials (as answers show them) keep
   * the stored ones, on the same origin only; credentials are never carried
   * to a host they were not given for.
   */
  private urlOf(current: WebhookEndpoint, url: string): string {
    if (!isMaskedCredentials(url)) return url;
    let stored: string | null = current.url;
    try {
      if (current.urlSealed)
        stored = this.box.openString(
          Buffer.from(current.urlSealed, 'base64'),
          endpointUrlAad(current.id),
        );
    } catch {
      stored = null;
    }
    const restored = stored === null ? null : restoreCredentials(url, stored);
    if (restored === null) {
      throw ApiException.validation([
        {
          field: 'url',
          message: `${MASK} stands for the endpoint's stored credentials, and it has none for ${new URL(url).origin}: send the credentials in full`,
          code: 'custom',
        },
      ]);
    }
    return restored;
  }

  /**
   * What can be refused before any DNS: a literal private address or
   * `localhost` (unless WEBHOOK_ALLOW_PRIVATE). Names are checked again on
   * every attempt, on the address actually connected to.
   */
  private assertTarget(url: string): void {
    if (this.config.webhookAllowPrivate) return;
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const privateLiteral = isIP(host) !== 0 && !isPublicAddress(host);
    if (privateLiteral || host === 'localhost' || host.endsWith('.localhost')) {
      throw ApiException.validation([
        {
          field: 'url',
          message: `${host} is not a public address (WEBHOOK_ALLOW_PRIVATE is off)`,
          code: 'custom',
        },
      ]);
    }
  }

  private async find(
    manager: EntityManager,
    projectId: string,
    id: string,
    lock = false,
  ): Promise<WebhookEndpoint> {
    const row = await this.repository.findEndpoint(manager, projectId, id, lock);
    if (!row) throw ApiException.notFound('webhook', id);
    return row;
  }
}
